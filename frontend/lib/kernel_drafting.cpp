// Split, layout and work division: one drafted SuperDSC per graph node (lowering.h).
#include "fusion.h"
#include "lowering.h"
#include "spyre/frontend/ops.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <set>

namespace spyre::frontend::detail {

using isa::SdscTensor;
using isa::SuperDsc;

std::map<int, const Node *> foldableSlices(const Graph &g) {
  std::map<int, const Node *> out;
  for (const Node &n : g.nodes) {
    if (!isOp(n.op, OpId::Slice) || n.inputs.size() != 1)
      continue;
    const Value &x = g.values[n.inputs[0]], &y = g.values[n.output];
    const auto dim = static_cast<size_t>(attrOr(n, "dim", 0));
    if (x.shape.empty() || dim + 1 >= x.shape.size() || x.dtype != y.dtype ||
        std::find(g.outputs.begin(), g.outputs.end(), n.output) != g.outputs.end())
      continue;
    bool ok = true, used = false;
    for (const Node &c : g.nodes)
      for (int in : c.inputs)
        if (in == n.output) {
          used = true;
          ok = ok && isPointwiseOp(c.op) && g.values[c.output].shape == y.shape;
        }
    if (ok && used)
      out[n.output] = &n;
  }
  return out;
}

void readSlicesAsViews(const Graph &g, const std::map<int, const Node *> &slices, KernelDraft &kd) {
  SuperDsc &s = kd.s;
  for (size_t i = 0; i < kd.tensorValues.size(); ++i) {
    auto it = slices.find(kd.tensorValues[i]);
    if (it == slices.end())
      continue;
    const Node &sl = *it->second;
    SdscTensor &t = s.labeledDs[i];
    const size_t r = s.dims.size(), dim = static_cast<size_t>(attrOr(sl, "dim", 0));
    const Value &x = g.values[sl.inputs[0]];
    if (x.shape.size() != r || t.isView())
      throw Error("internal: slice view of %" + x.name + " read at rank " + std::to_string(r));
    for (int sc : t.scale)
      if (sc != 1)
        throw Error("internal: broadcast read of the sliced view of %" + x.name);
    t.maxDimSizes.assign(r, -1);
    t.offsets.assign(r, 0);
    t.maxDimSizes[dim] = x.shape[dim];
    t.offsets[dim] = static_cast<int64_t>(attrOr(sl, "start", 0));
    const auto step = static_cast<int64_t>(attrOr(sl, "step", 1));
    t.steps.clear();
    if (step != 1) {
      t.steps.assign(r, 1);
      t.steps[dim] = step;
    }
    const int64_t eps = elemsPerStick(t.dataFormat);
    placeTensor(s, t, perCoreElems(s.N, s.numWkSlicesPerDim, {r - 1}, eps));
    kd.tensorValues[i] = sl.inputs[0];
  }
}

namespace {

/// A reshape that keeps every element's device bytes is zero-copy: its value aliases its input's
/// buffer and no kernel runs (a graph output gets its own buffer: a copy kernel). Values are
/// immutable, so an internal clone (e.g. .contiguous() after a materialised permute) aliases
/// its input as well, and so does a to_dtype between int32 and int64 (both int32 on the card:
/// routing's int64 indices and their int32 uses).
bool aliasesItsInput(const Graph &g, const Node &n, const std::string &where) {
  if (n.inputs.size() != 1 || std::find(g.outputs.begin(), g.outputs.end(), n.output) != g.outputs.end())
    return false;
  const Value &in = g.values[n.inputs[0]], &out = g.values[n.output];
  const auto isInt = [](HostType t) { return t == HostType::I32 || t == HostType::I64; };
  if (isOp(n.op, OpId::ToDtype))
    return isInt(in.dtype) && isInt(out.dtype) && in.shape == out.shape;
  if (!(isOp(n.op, OpId::Reshape) || (isOp(n.op, OpId::Clone) && n.attrs.empty())))
    return false;
  return in.dtype == out.dtype &&
         reshapeKeepsDeviceBytes(in.shape, out.shape, elemsPerStick(deviceFormatOrInt(in.dtype, where)));
}

/// The kernels of node n (numbered from `index`), by its op class in ops.def.
std::vector<KernelDraft> nodeKernels(const Graph &g, const Node &n, size_t index, const CompileOptions &opts,
                                     const std::map<int, const Node *> &viewSlices) {
  const std::string where = "node %" + g.values[n.output].name + " = " + n.op;
  const int cores = opts.maxCores;
  // Every builder divides work by dimensions: none sees a zero-size operand or result.
  requireNonEmpty(g.values[n.output].shape, where);
  for (int v : n.inputs)
    requireNonEmpty(g.values[v].shape, where);
  switch (opInfo(n.op).cls) {
  case OpClass::Pointwise:
  case OpClass::Comparison: {
    KernelDraft kd = pointwiseKernel(g, n, index, cores);
    readSlicesAsViews(g, viewSlices, kd);
    return {std::move(kd)};
  }
  case OpClass::Reduction: return {reductionKernel(g, n, index, cores, opts.splitReductions)};
  case OpClass::Matmul: return {matmulKernel(g, n, index, cores)};
  case OpClass::Convert:
    // An fp32 <-> int32 conversion in a pointwise fusion group is drafted as the group's
    // members are (pointwise walk and division), so fusedKernel can take it in.
    if (n.notes.count("fused") && fusibleConversion(g, n))
      return {pointwiseKernel(g, n, index, cores)};
    return {convertKernel(g, n, index, cores)};
  case OpClass::Transpose: return {transposeKernel(g, n, index, cores)};
  case OpClass::LayerNorm: return {layerNormKernel(g, n, index, cores, opts.splitReductions)};
  case OpClass::Slice: return {sliceKernel(g, n, index, cores)};
  case OpClass::Reshape: return {reshapeKernel(g, n, index, cores)};
  case OpClass::Permute: return {permuteKernel(g, n, index, cores)};
  case OpClass::Full: return {fullKernel(g, n, index, cores)};
  case OpClass::Gather:
    return {isOp(n.op, OpId::IndexCopy) ? indexCopyKernel(g, n, index, cores) : embeddingKernel(g, n, index, cores)};
  case OpClass::Scan: return {scanKernel(g, n, index, cores)};
  case OpClass::RotateHalf: return {rotateHalfKernel(g, n, index, cores)};
  // Several copies (numbered in launch order, after every earlier draft).
  case OpClass::Cat: return catKernels(g, n, index, cores);
  case OpClass::CopyInto: return copyIntoKernels(g, n, index, cores);
  case OpClass::Decomposed: break;
  }
  throw Unsupported("op '" + n.op + "' (" + where + ")");
}

/// The split / layout / work-division decisions as notes: each node's kernels and their cores.
void noteWorkDivision(Lowering &l) {
  for (size_t ni = 0; ni < l.g.nodes.size(); ++ni) {
    Node &n = l.g.nodes[ni];
    std::vector<double> cores;
    const SuperDsc *only = nullptr;
    for (size_t k = 0; k < l.drafts.size(); ++k)
      if (l.nodeOfDraft[k] == static_cast<int>(ni)) {
        cores.push_back(l.drafts[k].s.numCoresUsed);
        only = &l.drafts[k].s;
      }
    if (l.aliasOf.count(n.output))
      n.notes["alias"] = Attr(1.0);
    else if (l.viewSlices.count(n.output))
      n.notes["view"] = Attr(1.0);
    else if (cores.size() == 1)
      n.notes["cores"] = Attr(cores[0]);
    else if (!cores.empty())
      n.notes["cores"] = Attr(cores);
    if (cores.size() == 1)
      n.notes["splits"] = Attr(std::vector<double>(only->numWkSlicesPerDim.begin(), only->numWkSlicesPerDim.end()));
  }
}

} // namespace

void draftKernels(Lowering &l, const CompileOptions &opts) {
  const Graph &g = l.g;
  // A slice along a row dim (not the stick dim) keeps every stick offset-free: when each of its
  // consumers is an elementwise op that reads it at the op's own shape, the consumers read a
  // view of the sliced tensor's buffer (maxDimSizes_ / offsets_ / steps_) and no slice kernel
  // runs. Otherwise (a graph output, a broadcast read, another op) the slice is a copy.
  l.viewSlices = foldableSlices(g);
  // Fusion groups (fusePointwise's `fused` notes): one kernel at the group's last member.
  std::map<int, std::vector<int>> groups;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni)
    if (auto it = g.nodes[ni].notes.find("fused"); it != g.nodes[ni].notes.end())
      groups[static_cast<int>(it->second.scalar())].push_back(static_cast<int>(ni));
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node &n = g.nodes[ni];
    if (l.viewSlices.count(n.output))
      continue;
    if (auto it = n.notes.find("fused"); it != n.notes.end()) {
      const std::vector<int> &members = groups[static_cast<int>(it->second.scalar())];
      if (members.back() != static_cast<int>(ni))
        continue;
      std::vector<KernelDraft> parts;
      for (int m : members)
        for (KernelDraft &kd : nodeKernels(g, g.nodes[m], l.drafts.size() + parts.size(), opts, l.viewSlices))
          parts.push_back(std::move(kd));
      if (isOp(g.nodes[members[0]].op, OpId::Matmul)) {
        // A matmul-fusion group: one kernel, else the matmul's own and its chain fused pointwise.
        auto fused = matmulEpilogueKernel(g, members, parts, l.drafts.size());
        // Each tensor its own buffer (own segment): not `x + x @ w`, nor an alias of x or y.
        std::set<int> roots;
        for (int v : fused ? fused->tensorValues : std::vector<int>{})
          roots.insert(l.root(v));
        if (fused && roots.size() == fused->tensorValues.size()) {
          l.drafts.push_back(std::move(*fused));
          l.nodeOfDraft.push_back(static_cast<int>(ni));
          continue;
        }
        l.drafts.push_back(std::move(parts[0]));
        l.nodeOfDraft.push_back(members[0]);
        std::vector<int> rest(members.begin() + 1, members.end());
        std::vector<KernelDraft> restParts;
        for (int m : rest)
          for (KernelDraft &kd : nodeKernels(g, g.nodes[m], l.drafts.size() + restParts.size(), opts, l.viewSlices))
            restParts.push_back(std::move(kd));
        std::optional<KernelDraft> chain;
        if (rest.size() > 1)
          chain = fusedKernel(g, rest, restParts, l.drafts.size());
        if (chain) {
          l.drafts.push_back(std::move(*chain));
          l.nodeOfDraft.push_back(static_cast<int>(ni));
          continue;
        }
        for (size_t k = 0; k < restParts.size(); ++k) {
          l.drafts.push_back(std::move(restParts[k]));
          l.nodeOfDraft.push_back(rest[std::min(k, rest.size() - 1)]);
        }
        continue;
      }
      // A layer norm (fuseRows' exx2 / layernormscale / layernormnorm): one row-fused kernel,
      // unless exx2's own kernel splits the stick dim (its partials' order is kept).
      if (isOp(g.nodes[members[0]].op, OpId::Exx2)) {
        std::optional<KernelDraft> fused;
        if (!parts.empty() && parts[0].s.numWkSlicesPerDim.back() == 1)
          fused = layerNormFusedKernel(g, members, l.drafts.size(), opts.maxCores);
        if (fused) {
          l.drafts.push_back(std::move(*fused));
          l.nodeOfDraft.push_back(static_cast<int>(ni));
          continue;
        }
      } else if (auto fused = fusedKernel(g, members, parts, l.drafts.size())) {
        l.drafts.push_back(std::move(*fused));
        l.nodeOfDraft.push_back(static_cast<int>(ni));
        continue;
      }
      // Not one walk after all: the members' own kernels, in order, at the last member.
      for (size_t k = 0; k < parts.size(); ++k) {
        l.drafts.push_back(std::move(parts[k]));
        l.nodeOfDraft.push_back(members[std::min(k, members.size() - 1)]);
      }
      continue;
    }
    // A clone of a view slice copies it (the view's elements are not its buffer's bytes in
    // order): only a materialised value can be aliased.
    if (!(n.inputs.size() == 1 && l.viewSlices.count(n.inputs[0])) &&
        aliasesItsInput(g, n, "node %" + g.values[n.output].name + " = " + n.op)) {
      l.aliasOf[n.output] = n.inputs[0];
      continue;
    }
    for (KernelDraft &kd : nodeKernels(g, n, l.drafts.size(), opts, l.viewSlices)) {
      l.drafts.push_back(std::move(kd));
      l.nodeOfDraft.push_back(static_cast<int>(ni));
    }
  }
  // Kernels see an alias through its own shape; its bytes live in the root value's buffer.
  for (KernelDraft &kd : l.drafts)
    for (int &v : kd.tensorValues)
      v = l.root(v);
  noteWorkDivision(l);
}

} // namespace spyre::frontend::detail
