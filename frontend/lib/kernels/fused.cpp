// Fused kernels: the SuperDSCs of a fusion group's members (pointwise.cpp, reduction.cpp)
// merged into one (our extension, docs/superdsc.md §6.9, §6.10 with row reductions): the
// external tensors once each, then the members' values read outside the group; one
// computeOp_ entry per member.
#include "kernels.h"
#include "spyre/backend/backend.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace spyre::frontend::detail {

using isa::SdscComputeOp;
using isa::SdscTensor;
using isa::SuperDsc;

namespace {

const char *const kLabels[] = {"OUTPUT", "KERNEL", "INPUT", "KERNEL_IDX", "LAYOUT4", "LAYOUT5", "LAYOUT6", "LAYOUT7"};

/// An external operand: the value and how the kernel reads it (broadcast, view).
using ExtKey = std::tuple<int, std::vector<int>, std::vector<int64_t>, std::vector<int64_t>, std::vector<int64_t>>;

ExtKey extKey(int value, const SdscTensor &t) { return {value, t.scale, t.maxDimSizes, t.offsets, t.steps}; }

/// A row reduction's draft (reduction.cpp, stick form): sum, mean, max or min.
bool isRowReduction(const SuperDsc &s) {
  return s.opFuncName == "sum" || s.opFuncName == "mean" || s.opFuncName == "max" || s.opFuncName == "min";
}

/// b may join the walk of a: the same iteration space and work division; in a row-fused
/// kernel (rows: the walk is a's, a row reduction's) the same rows, b over the full rows or
/// over one value per row (N 1 on the stick dim), re-placed on a's division.
bool sameWalk(const SuperDsc &a, const SuperDsc &b, bool rows) {
  const bool common = a.dims == b.dims && a.exUnit == b.exUnit && b.outputs.size() == 1 && b.lxReservedBytes == 0 &&
                      b.opFuncName != "ReStickifyOpHBM";
  if (!rows)
    return common && a.N == b.N && a.numWkSlicesPerDim == b.numWkSlicesPerDim && a.coreIdToWkSlice == b.coreIdToWkSlice;
  std::vector<int64_t> rowN = a.N;
  rowN.back() = 1;
  return common && (b.N == a.N || b.N == rowN) && (!isRowReduction(b) || b.numWkSlicesPerDim.back() == 1);
}

} // namespace

std::optional<KernelDraft> fusedKernel(const Graph &g, const std::vector<int> &members,
                                       const std::vector<KernelDraft> &drafts, size_t index) {
  if (members.size() < 2 || drafts.size() != members.size())
    return std::nullopt;
  // A row-fused kernel (fuseRows' groups, superdsc.md §6.10) walks its first reduction's rows.
  size_t walk = 0;
  while (walk < drafts.size() && !isRowReduction(drafts[walk].s))
    ++walk;
  const bool rows = walk < drafts.size();
  if (!rows)
    walk = 0;
  for (const KernelDraft &kd : drafts)
    if (!sameWalk(drafts[walk].s, kd.s, rows))
      return std::nullopt;
  // Row values (a reduction's, or an op's on them): one per row, never stored.
  std::vector<bool> rowValue(members.size(), false);
  for (size_t k = 0; k < members.size(); ++k)
    rowValue[k] = rows && (isRowReduction(drafts[k].s) || drafts[k].s.N != drafts[walk].s.N);
  std::map<int, int> memberOf; // value -> member position
  for (size_t k = 0; k < members.size(); ++k)
    memberOf[g.nodes[members[k]].output] = static_cast<int>(k);
  std::set<int> memberNodes(members.begin(), members.end());
  // The members' values the kernel stores: graph outputs and values read outside the group.
  std::vector<bool> stored(members.size(), false);
  for (size_t k = 0; k < members.size(); ++k) {
    const int v = g.nodes[members[k]].output;
    stored[k] = std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
    for (size_t ni = 0; ni < g.nodes.size() && !stored[k]; ++ni)
      if (!memberNodes.count(static_cast<int>(ni)))
        for (int in : g.nodes[ni].inputs)
          stored[k] = stored[k] || in == v;
    if (stored[k] && rowValue[k])
      return std::nullopt;
  }

  // Pass 1: the compute ops, external tensors numbered in first-use order.
  std::map<ExtKey, int> extIdx;
  struct Ext {
    int value;
    const SdscTensor *t; ///< as the member reads it
    const SuperDsc *s;   ///< the member's SuperDSC (its layout classes)
  };
  std::vector<Ext> ext;
  std::vector<SdscComputeOp> ops;
  std::map<std::string, double> constants;
  std::map<std::string, int> constantArgs;
  std::vector<std::string> names;
  for (size_t k = 0; k < members.size(); ++k) {
    const KernelDraft &kd = drafts[k];
    const SuperDsc &s = kd.s;
    const std::string prefix = "op" + std::to_string(k) + "_";
    for (const auto &[name, value] : s.constants)
      constants[prefix + name] = value;
    for (const auto &[name, arg] : s.constantArgs)
      constantArgs[prefix + name] = arg;
    SdscComputeOp op;
    op.opFuncName = s.opFuncName;
    names.push_back(s.opFuncName);
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      if (isRowReduction(s) && s.inputs[i] == s.outputs[0])
        continue; // a reduction lists its output among its inputs (it accumulates into it)
      op.inputConsts.emplace_back();
      if (s.inputs[i] < 0) {
        op.inputs.push_back(-1);
        op.inputConsts.back() = prefix + s.inputConsts.at(i);
        continue;
      }
      const SdscTensor &t = s.tensor(s.inputs[i]);
      const int v = kd.tensorValues.at(static_cast<size_t>(s.inputs[i]));
      auto m = memberOf.find(v);
      if (m != memberOf.end() && m->second < static_cast<int>(k)) {
        if (!rowValue[m->second] &&
            (t.isView() || std::any_of(t.scale.begin(), t.scale.end(), [](int sc) { return sc != 1; })))
          return std::nullopt; // a member's value read broadcast: not this walk (a row value is)
        op.inputs.push_back(isa::fusedResultRef(m->second));
        continue;
      }
      auto [it, fresh] = extIdx.try_emplace(extKey(v, t), static_cast<int>(ext.size()));
      if (fresh)
        ext.push_back({v, &t, &s});
      op.inputs.push_back(it->second);
    }
    ops.push_back(std::move(op));
  }
  const int nIn = static_cast<int>(ext.size());
  int nOut = 0;
  for (size_t k = 0; k < members.size(); ++k)
    if (stored[k])
      ops[k].outputs.push_back(nIn + nOut++);
  if (nOut == 0 || nIn + nOut > isa::kMaxSegments)
    return std::nullopt;

  // Pass 2: the SuperDSC. Layout classes are named in order of appearance, outputs first.
  const SuperDsc &first = drafts[walk].s;
  std::string name = "fused";
  for (size_t k = 0; k < names.size() && k < 4; ++k)
    name += "_" + names[k];
  KernelDraft out = newDraft(index, isa::kFusedOpFunc, first.exUnit, first.dims, first.N, first.numWkSlicesPerDim, name);
  SuperDsc &s = out.s;
  s.coreIdToWkSlice = first.coreIdToWkSlice;
  s.constants = std::move(constants);
  s.constantArgs = std::move(constantArgs);
  std::vector<SdscTensor> tensors;
  std::vector<const SuperDsc *> from;
  for (const Ext &e : ext) {
    tensors.push_back(*e.t);
    out.tensorValues.push_back(e.value);
    from.push_back(e.s);
  }
  for (size_t k = 0; k < members.size(); ++k)
    if (stored[k]) {
      tensors.push_back(drafts[k].s.tensor(drafts[k].s.outputs[0]));
      out.tensorValues.push_back(g.nodes[members[k]].output);
      from.push_back(&drafts[k].s);
    }
  std::map<std::pair<std::vector<std::string>, std::vector<int>>, std::string> labelOf;
  for (size_t pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < tensors.size(); ++i) {
      if ((i >= static_cast<size_t>(nIn)) != (pass == 0))
        continue;
      const isa::SdscLayout &layout = from[i]->primaryDsInfo.at(tensors[i].dsType);
      auto key = std::make_pair(layout.layoutDimOrder, tensors[i].scale);
      if (!labelOf.count(key)) {
        std::string label = kLabels[labelOf.size()];
        labelOf[key] = label;
        s.primaryDsInfo[label] = layout;
      }
      tensors[i].dsType = labelOf[key];
    }
  const size_t r = s.dims.size();
  for (size_t i = 0; i < tensors.size(); ++i) {
    SdscTensor &t = tensors[i];
    t.ldsIdx = static_cast<int>(i);
    t.dsName = "Tensor" + std::to_string(i);
    placeTensor(s, t, perCoreElems(s.N, s.numWkSlicesPerDim, {r - 1}, elemsPerStick(t.dataFormat)));
    s.labeledDs.push_back(t);
  }
  for (int i = 0; i < nIn; ++i) {
    s.inputs.push_back(i);
    s.inputConsts.push_back("");
  }
  for (int o = 0; o < nOut; ++o)
    s.outputs.push_back(nIn + o);
  s.fusedOps = std::move(ops);
  // Rows whose block does not fit LX, or more values than registers: the members' own kernels.
  if (rows && !backend::supportsRowFused(s))
    return std::nullopt;
  return out;
}

} // namespace spyre::frontend::detail
