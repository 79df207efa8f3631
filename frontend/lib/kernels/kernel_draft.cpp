// The shared draft helpers (kernel_draft.h).
#include "kernel_draft.h"
#include "spyre/frontend/ops.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <numeric>

namespace spyre::frontend::detail {

using isa::SdscLayout;
using isa::SdscTensor;
using isa::SuperDsc;

DataFormat deviceFormat(HostType t, const std::string &where) {
  switch (t) {
  case HostType::F16:
  case HostType::BF16:
  case HostType::Bool: return DataFormat::SEN169_FP16;
  case HostType::F32: return DataFormat::IEEE_FP32;
  default: throw Unsupported(std::string(dtypeShortName(t)) + " tensors in " + where);
  }
}

DataFormat deviceFormatOrInt(HostType t, const std::string &where) {
  return t == HostType::I32 || t == HostType::I64 ? DataFormat::IEEE_INT32 : deviceFormat(t, where);
}

std::vector<std::string> dimLabels(size_t rank) {
  static const char *outer[] = {"mb", "x", "y"};
  if (rank > 4)
    throw Unsupported("ops on rank-" + std::to_string(rank) + " tensors (at most 4 dims)");
  std::vector<std::string> l;
  for (size_t i = 0; i + 1 < rank; ++i)
    l.push_back(outer[i]);
  l.push_back("out");
  return l;
}

/// torch-spyre's core -> work slice mapping: mixed radix over the dims in order (the first dim
/// varies fastest).
std::vector<std::vector<int64_t>> coreSlices(const std::vector<int64_t> &splits, int cores) {
  std::vector<std::vector<int64_t>> out;
  for (int c = 0; c < cores; ++c) {
    std::vector<int64_t> slice(splits.size());
    int64_t div = 1;
    for (size_t d = 0; d < splits.size(); ++d) {
      slice[d] = (c / div) % splits[d];
      div *= splits[d];
    }
    out.push_back(slice);
  }
  return out;
}

KernelDraft newDraft(size_t index, std::string opFuncName, std::string exUnit, std::vector<std::string> dims,
                     std::vector<int64_t> N, std::vector<int64_t> splits, const std::string &name) {
  KernelDraft kd;
  SuperDsc &s = kd.s;
  s.name = std::to_string(index) + "_" + (name.empty() ? opFuncName : name);
  s.opFuncName = std::move(opFuncName);
  s.exUnit = std::move(exUnit);
  s.dims = std::move(dims);
  s.N = std::move(N);
  s.numCoresUsed = static_cast<int>(std::accumulate(splits.begin(), splits.end(), int64_t{1}, std::multiplies<>()));
  s.coreIdToWkSlice = coreSlices(splits, s.numCoresUsed);
  s.numWkSlicesPerDim = std::move(splits);
  return kd;
}

void unevenDimsSlowest(SuperDsc &s, const std::vector<int64_t> &adjusted) {
  std::vector<size_t> order; // mixed radix, fastest first: even dims, then uneven ones
  for (int pass = 0; pass < 2; ++pass)
    for (size_t d = 0; d < s.dims.size(); ++d)
      if ((adjusted[d] % s.numWkSlicesPerDim[d] != 0) == (pass == 1))
        order.push_back(d);
  for (int c = 0; c < s.numCoresUsed; ++c) {
    int64_t div = 1;
    for (size_t d : order) {
      s.coreIdToWkSlice[c][d] = (c / div) % s.numWkSlicesPerDim[d];
      div *= s.numWkSlicesPerDim[d];
    }
  }
}

/// torch-spyre's generic stick layout over dim labels l (host order, stick dim last): device
/// dims [l1..l(k-2), tile(l(k-1)), l0, elem]; layoutDimOrder_ lists the non-elem dims inner ->
/// outer.
SdscLayout genericLayout(const std::vector<std::string> &l, int64_t eps) {
  size_t k = l.size();
  SdscLayout lay;
  lay.layoutDimOrder.push_back(l[0]);
  if (k > 1) {
    lay.layoutDimOrder.push_back(l[k - 1]);
    for (size_t d = k - 1; d-- > 1;)
      lay.layoutDimOrder.push_back(l[d]);
  }
  lay.stickDimOrder = {l[k - 1]};
  lay.stickSize = {eps};
  return lay;
}

/// Elements of each iteration dim one core's slice covers: dims in `stickDims` are split in
/// whole sticks of `eps` elements, the others in elements. An uneven split: every slice but
/// the last (which is shorter) covers the ceiling.
std::vector<int64_t> perCoreElems(const std::vector<int64_t> &N, const std::vector<int64_t> &splits,
                                  const std::vector<size_t> &stickDims, int64_t eps) {
  std::vector<int64_t> per(N.size());
  for (size_t d = 0; d < N.size(); ++d) {
    bool sticks = std::find(stickDims.begin(), stickDims.end(), d) != stickDims.end();
    const int64_t units = sticks ? (N[d] + eps - 1) / eps : N[d];
    per[d] = (units + splits[d] - 1) / splits[d] * (sticks ? eps : 1);
  }
  return per;
}

/// Start addresses of tensor t on every core of s (notes §2.4): its segment (= ldsIdx) plus,
/// over its device dims (its layout class, outer -> inner), the core's slice start times the
/// dim's stride. A tensor steps perCore[d] / eps sticks along its own stick dim and perCore[d]
/// rows along any other dim (so a dim split in sticks of another tensor moves whole rows).
void addTensor(SuperDsc &s, int ldsIdx, DataFormat f, const char *type, const std::vector<std::string> &dims,
               const std::vector<std::string> &present, const std::vector<int64_t> &perCore) {
  SdscTensor t;
  t.ldsIdx = ldsIdx;
  t.dsName = "Tensor" + std::to_string(ldsIdx);
  t.dsType = type;
  t.dataFormat = f;
  for (const std::string &d : dims)
    t.scale.push_back(std::find(present.begin(), present.end(), d) != present.end() ? 1 : -1);
  placeTensor(s, t, perCore);
  s.labeledDs.push_back(t);
}

void placeTensor(const SuperDsc &s, SdscTensor &t, const std::vector<int64_t> &perCore) {
  const SdscLayout &lay = s.primaryDsInfo.at(t.dsType);
  const std::string &stick = lay.stickDimOrder[0];
  int64_t eps = elemsPerStick(t.dataFormat);
  struct Dim {
    int d;
    int64_t extent, alloc;
    bool isStick;
  };
  std::vector<Dim> dims;
  for (auto li = lay.layoutDimOrder.rbegin(); li != lay.layoutDimOrder.rend(); ++li) {
    int d = s.dimIndex(*li);
    bool isStick = *li == stick;
    int64_t extent = t.scale[d] != 1 ? 1 : isStick ? (s.N[d] + eps - 1) / eps : s.N[d];
    int64_t alloc = extent;
    if (t.isView() && t.scale[d] == 1 && t.maxDimSizes[d] != -1) // a view: the allocation's strides
      alloc = isStick ? (t.maxDimSizes[d] + eps - 1) / eps : t.maxDimSizes[d];
    dims.push_back({d, extent, alloc, isStick});
  }
  std::vector<int64_t> strideBytes(dims.size());
  int64_t st = kStickBytes;
  for (size_t j = dims.size(); j-- > 0;) {
    strideBytes[j] = st;
    st *= dims[j].alloc;
  }
  int64_t viewOff = 0;
  if (t.isView())
    for (size_t j = 0; j < dims.size(); ++j)
      if (t.scale[dims[j].d] == 1)
        viewOff += (dims[j].isStick ? t.offsets[dims[j].d] / eps : t.offsets[dims[j].d]) * strideBytes[j];
  t.startAddress.clear();
  for (int c = 0; c < s.numCoresUsed; ++c) {
    int64_t off = viewOff;
    for (size_t j = 0; j < dims.size(); ++j)
      if (dims[j].extent > 1)
        off += s.coreIdToWkSlice[c][dims[j].d] * (dims[j].isStick ? perCore[dims[j].d] / eps : perCore[dims[j].d]) *
               strideBytes[j] * t.stepOf(dims[j].d);
    t.startAddress.push_back(t.ldsIdx * isa::kSegmentBytes + off);
  }
}

double attrOr(const Node &n, const char *key, double dflt) {
  auto it = n.attrs.find(key);
  return it == n.attrs.end() ? dflt : it->second.scalar();
}

void checkAttrs(const Node &n, const std::string &where, std::initializer_list<const char *> allowed) {
  for (const auto &[k, v] : n.attrs) {
    bool ok = false;
    for (const char *a : allowed)
      ok |= k == a;
    if (k == "alpha")
      ok = v.scalar() == 1.0;
    if (!ok)
      throw Unsupported("attribute " + k + " on " + where);
  }
}

void requireNonEmpty(const std::vector<int64_t> &shape, const std::string &where) {
  for (int64_t d : shape)
    if (d == 0)
      throw Unsupported("empty tensors in " + where);
}

std::vector<int64_t> iterationSizes(const std::vector<int64_t> &shape, const std::string &where) {
  requireNonEmpty(shape, where);
  return shape.empty() ? std::vector<int64_t>{1} : shape;
}

void setUnaryOperands(KernelDraft &kd, int inValue, int outValue) {
  kd.s.inputs = {0};
  kd.s.inputConsts = {""};
  kd.s.outputs = {1};
  kd.tensorValues = {inValue, outValue};
}

UnaryNode unaryNode(const Graph &g, const Node &n, const char *opName) {
  const Value &out = g.values[n.output];
  std::string where = "node %" + out.name + " = " + n.op;
  checkAttrs(n, where);
  if (n.inputs.size() != 1)
    throw Error(where + ": " + opName + " takes one tensor operand");
  return {g.values[n.inputs[0]], out, std::move(where)};
}

void checkAttrs(const Node &n, const std::string &where) {
  const OpInfo &op = opInfo(n.op);
  for (const auto &[k, v] : n.attrs) {
    const bool ok = k == "alpha" ? v.scalar() == 1.0 : op.allowsAttr(k);
    if (!ok)
      throw Unsupported("attribute " + k + " on " + where);
  }
}

} // namespace spyre::frontend::detail
