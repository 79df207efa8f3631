// Data movement ops that copy between device layouts without arithmetic.
//   slice(%x, dim=d, start=s, end=e[, step=k]) : x's dtype, dim d of size ceil((e - s) / k)
//     (a step on the stick dim is first transposed to another dim by the decomposition pass;
//     the view then carries our SuperDSC extension steps_)
//     -> SuperDSC `slice`: the output's iteration space; the input is a view of x
//        (maxDimSizes_ = x's size and offsets_ = s on dim d). On the stick dim an offset that is
//        not a stick multiple moves lanes (the backend copies through the PE array; DL16 only,
//        the stick dim is then not split over cores).
//   permute(%x, dims=[p0, ..]) : x's dtype, output dim k = input dim p_k (materialised)
//     -> SuperDSC `ReStickifyOpHBM` over x's dims: the output's layout class is the generic
//        layout of the permuted dims. Same stick dim: stick copies (sfp); a new stick dim: the
//        PE-array transpose (pt; DL16 only; the new stick dim stays on one core).
//   cat(%a, %b, .., dim=d) : the operands joined along d
//     -> one SuperDSC `identity` per operand, over that operand's dims, whose output is a view of
//        the cat's buffer (maxDimSizes_ = its size, offsets_ = the operand's start on d). Along
//        the stick dim a start inside a stick makes a lane-moving copy that merges the boundary
//        stick (fp16/bf16/f32/int32; that operand's stick dim is not split over cores).
#include "kernels.h"
#include "spyre/frontend/ops.h"
#include "spyre/frontend/compiler.h"
#include "spyre/frontend/work_division.h"
#include "spyre/isa/error.h"
#include <cmath>
#include <numeric>

namespace spyre::frontend::detail {

using isa::SdscTensor;
using isa::SuperDsc;

namespace {
/// The operands of a copy: Tensor0 (value `in`, layout class inType) -> Tensor1 (value `out`,
/// outType), scale 1 on every dim, both in `fmt`. Tensor `view` (0, 1, or -1 for none) is a
/// view of an allocation of allocSizes (-1: the view's own size) starting at viewOffsets.
void addCopyOperands(KernelDraft &kd, int in, int out, DataFormat fmt, const char *inType, const char *outType,
                     const std::vector<int64_t> &perCore, int view, const std::vector<int64_t> &allocSizes,
                     const std::vector<int64_t> &viewOffsets) {
  SuperDsc &s = kd.s;
  const size_t r = s.dims.size();
  for (int i = 0; i < 2; ++i) {
    SdscTensor t;
    t.ldsIdx = i;
    t.dsName = "Tensor" + std::to_string(i);
    t.dsType = i == 0 ? inType : outType;
    t.scale.assign(r, 1);
    t.dataFormat = fmt;
    if (i == view) {
      t.maxDimSizes = allocSizes;
      t.offsets = viewOffsets;
    }
    placeTensor(s, t, perCore);
    s.labeledDs.push_back(t);
  }
  setUnaryOperands(kd, in, out);
}

} // namespace

void addCopyOperands(KernelDraft &kd, int in, int out, DataFormat fmt, const char *inType, const char *outType,
                     const std::vector<int64_t> &perCore) {
  addCopyOperands(kd, in, out, fmt, inType, outType, perCore, -1, std::vector<int64_t>{}, std::vector<int64_t>{});
}

namespace {

/// The same with tensor `view` a view of an allocation `allocSize` long on `dim` from `offset`.
void addCopyOperands(KernelDraft &kd, int in, int out, DataFormat fmt, const char *inType, const char *outType,
                     const std::vector<int64_t> &perCore, int view, size_t dim, int64_t allocSize, int64_t offset) {
  const size_t r = kd.s.dims.size();
  std::vector<int64_t> sizes(r, -1), offsets(r, 0);
  sizes[dim] = allocSize;
  offsets[dim] = offset;
  addCopyOperands(kd, in, out, fmt, inType, outType, perCore, view, sizes, offsets);
}
} // namespace

KernelDraft fullKernel(const Graph &g, const Node &n, size_t index, int maxCores) {
  const std::string where = "node %" + g.values[n.output].name + " = " + n.op;
  checkAttrs(n, where);
  if (!n.inputs.empty())
    throw Error(where + ": full takes no tensor operand");
  const double value = attrOr(n, "value", 0.0);
  // The identity SuperDSC with a constant operand writes the value to every element.
  Node fill{"clone", {}, n.output, {{"scalar", Attr(value)}}, {}};
  return pointwiseKernel(g, fill, index, maxCores);
}

std::vector<KernelDraft> copyIntoKernels(const Graph &g, const Node &n, size_t index, int maxCores) {
  const Value &out = g.values[n.output];
  const std::string where = "node %" + out.name + " = " + n.op;
  checkAttrs(n, where);
  if (n.inputs.size() != 2)
    throw Error(where + ": copy_into takes a fill and a source tensor");
  const Value &x = g.values[n.inputs[1]];
  const size_t r = out.shape.size();
  auto it = n.attrs.find("offsets");
  if (it == n.attrs.end() || it->second.values.size() != r || x.shape.size() != r || x.dtype != out.dtype)
    throw Error(where + ": copy_into needs offsets=[..] and a source of the output's rank and dtype");
  std::vector<int64_t> offsets;
  for (size_t d = 0; d < r; ++d) {
    const double o = it->second.values[d];
    const bool whole = o == static_cast<double>(static_cast<int64_t>(o));
    if (o < 0 || !whole || static_cast<int64_t>(o) + x.shape[d] > out.shape[d])
      throw Error(where + ": the source does not fit the output at offsets on dim " + std::to_string(d));
    offsets.push_back(static_cast<int64_t>(o));
  }
  if (r == 0 || offsets[r - 1] != 0 || x.shape[r - 1] != out.shape[r - 1])
    throw Unsupported("copy_into a view that starts or ends inside the stick dim (" + where +
                      "; the copy would overwrite the output's lanes past the source)");
  requireNonEmpty(x.shape, where);
  std::vector<KernelDraft> kds;
  // 1: the fill (the first operand broadcast to the whole output).
  Node fill{"expand", {n.inputs[0]}, n.output, {}, {}};
  kds.push_back(pointwiseKernel(g, fill, index, maxCores));
  // 2: the source into its view of the output (whole sticks: the stick dim is not offset).
  const DataFormat fmt = deviceFormatOrInt(out.dtype, where);
  const int64_t eps = elemsPerStick(fmt);
  auto labels = dimLabels(r);
  const std::vector<int64_t> &N = x.shape;
  std::vector<int64_t> adjusted = stickAdjusted(N, eps);
  // Pass 1 sees the output view with its allocation's extents (an upper bound of its span).
  auto splits = divideWorkWithSpan(adjusted, std::vector<bool>(r, true),
                                   {genericSpanTensor(x.name, identityDims(r), N, eps),
                                    genericSpanTensor(out.name, identityDims(r), out.shape, eps)},
                                   maxCores);
  KernelDraft kd = newDraft(index + 1, "identity", "sfp", labels, N, splits);
  kd.s.primaryDsInfo["OUTPUT"] = genericLayout(labels, eps);
  const std::vector<int64_t> perCore = perCoreElems(N, splits, {r - 1}, eps);
  addCopyOperands(kd, n.inputs[1], n.output, fmt, "OUTPUT", "OUTPUT", perCore, 1, out.shape, offsets);
  kds.push_back(std::move(kd));
  return kds;
}

KernelDraft sliceKernel(const Graph &g, const Node &n, size_t index, int maxCores) {
  const auto &[x, out, where] = unaryNode(g, n, "slice");
  const size_t r = x.shape.size();
  if (r == 0)
    throw Error(where + ": slice of a 0-d tensor");
  const int64_t dim = static_cast<int64_t>(attrOr(n, "dim", 0)), start = static_cast<int64_t>(attrOr(n, "start", 0)),
                end = static_cast<int64_t>(attrOr(n, "end", 0)), step = static_cast<int64_t>(attrOr(n, "step", 1));
  if (dim < 0 || dim >= static_cast<int64_t>(r) || start < 0 || end > x.shape[dim] || start >= end || step < 1)
    throw Error(where + ": slice [" + std::to_string(start) + ", " + std::to_string(end) + ") step " +
                std::to_string(step) + " of dim " + std::to_string(dim) + " is outside " + std::to_string(r) +
                "-d shape (or the step is not >= 1)");
  if (step != 1 && static_cast<size_t>(dim) == r - 1)
    throw Unsupported("a slice with step " + std::to_string(step) + " of the stick dim (" + where +
                      "; the decomposition pass transposes it to another dim first)");
  std::vector<int64_t> expect = x.shape;
  expect[dim] = (end - start + step - 1) / step;
  if (out.shape != expect || out.dtype != x.dtype)
    throw Error(where + ": the output of a slice must be x's dtype with dim " + std::to_string(dim) + " of size " +
                std::to_string(expect[dim]));
  requireNonEmpty(x.shape, where);
  const DataFormat fmt = deviceFormatOrInt(x.dtype, where);
  const int64_t eps = elemsPerStick(fmt);
  const bool laneShift = static_cast<size_t>(dim) == r - 1 && start % eps != 0;
  auto labels = dimLabels(r);
  const std::vector<int64_t> &N = out.shape;
  std::vector<int64_t> adjusted = stickAdjusted(N, eps);
  std::vector<bool> splittable(r, true);
  if (laneShift)
    splittable[r - 1] = false;
  // Pass 1 sees the input view with its allocation's extents (an upper bound of its span).
  auto splits = divideWorkWithSpan(adjusted, splittable,
                                   {genericSpanTensor(x.name, identityDims(r), x.shape, eps),
                                    genericSpanTensor(out.name, identityDims(r), N, eps)},
                                   maxCores);
  KernelDraft kd = newDraft(index, "slice", "sfp", labels, N, splits);
  SuperDsc &s = kd.s;
  s.primaryDsInfo["OUTPUT"] = genericLayout(labels, eps);
  const std::vector<int64_t> perCore = perCoreElems(N, splits, {r - 1}, eps);
  addCopyOperands(kd, n.inputs[0], n.output, fmt, "OUTPUT", "OUTPUT", perCore, 0, dim, x.shape[dim], start);
  if (step != 1) { // the input view walks dim `dim` `step` elements at a time (steps_)
    kd.s.labeledDs[0].steps.assign(r, 1);
    kd.s.labeledDs[0].steps[dim] = step;
    placeTensor(kd.s, kd.s.labeledDs[0], perCore);
  }
  return kd;
}

KernelDraft permuteKernel(const Graph &g, const Node &n, size_t index, int maxCores) {
  const auto &[x, out, where] = unaryNode(g, n, "permute");
  const size_t r = x.shape.size();
  auto it = n.attrs.find("dims");
  if (it == n.attrs.end() || it->second.values.size() != r)
    throw Error(where + ": permute needs dims=[..] with one entry per dim of x");
  std::vector<size_t> perm;
  std::vector<bool> seen(r, false);
  for (double v : it->second.values) {
    if (v < 0 || v >= static_cast<double>(r) || seen[static_cast<size_t>(v)])
      throw Error(where + ": dims is not a permutation of 0.." + std::to_string(r - 1));
    perm.push_back(static_cast<size_t>(v));
    seen[perm.back()] = true;
  }
  std::vector<int64_t> expect;
  for (size_t p : perm)
    expect.push_back(x.shape[p]);
  if (out.shape != expect || out.dtype != x.dtype)
    throw Error(where + ": the output of a permute must be x's dtype with the permuted shape");
  requireNonEmpty(x.shape, where);
  const DataFormat fmt = deviceFormatOrInt(x.dtype, where);
  const int64_t eps = elemsPerStick(fmt);
  const size_t cDim = r - 1, rDim = perm[r - 1]; // input and output stick dims (input dim ids)
  const bool restick = cDim != rDim;
  if (restick && fmt != DataFormat::SEN169_FP16)
    throw Unsupported("a permute that changes the last dim of a " + std::string(dtypeShortName(x.dtype)) + " tensor (" +
                      where + "; fp16/bf16 only: it goes through the PE array)");
  auto labels = dimLabels(r);
  std::vector<std::string> outLabels;
  for (size_t p : perm)
    outLabels.push_back(labels[p]);
  const std::vector<int64_t> &N = x.shape;
  std::vector<int64_t> adjusted = N;
  adjusted[cDim] = (N[cDim] + eps - 1) / eps;
  std::vector<bool> splittable(r, true);
  if (restick)
    splittable[rDim] = false; // rows of the PE-array transpose stay on one core
  std::vector<int> outDims(perm.begin(), perm.end());
  auto splits = divideWorkWithSpan(adjusted, splittable,
                                   {genericSpanTensor(x.name, identityDims(r), x.shape, eps),
                                    genericSpanTensor(out.name, outDims, out.shape, eps)},
                                   maxCores);
  KernelDraft kd = newDraft(index, "ReStickifyOpHBM", restick ? "pt" : "sfp", labels, N, splits, "restickify");
  SuperDsc &s = kd.s;
  s.primaryDsInfo["INPUT"] = genericLayout(labels, eps);
  s.primaryDsInfo["OUTPUT"] = genericLayout(outLabels, eps);
  // The input's stick dim splits in sticks; in the output (sticked elsewhere) the same split
  // moves whole rows, which placeTensor handles per tensor.
  const std::vector<int64_t> perCore = perCoreElems(N, splits, {cDim}, eps);
  addCopyOperands(kd, n.inputs[0], n.output, fmt, "INPUT", "OUTPUT", perCore);
  return kd;
}

std::vector<KernelDraft> catKernels(const Graph &g, const Node &n, size_t index, int maxCores) {
  const Value &out = g.values[n.output];
  const std::string where = "node %" + out.name + " = " + n.op;
  checkAttrs(n, where);
  if (n.inputs.empty())
    throw Error(where + ": cat of no tensors");
  const size_t r = out.shape.size();
  const int64_t dim = static_cast<int64_t>(attrOr(n, "dim", 0));
  if (r == 0 || dim < 0 || dim >= static_cast<int64_t>(r))
    throw Error(where + ": cat dim " + std::to_string(dim) + " of a rank-" + std::to_string(r) + " output");
  const DataFormat fmt = deviceFormatOrInt(out.dtype, where);
  const int64_t eps = elemsPerStick(fmt);
  int64_t offset = 0;
  std::vector<KernelDraft> kds;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Value &x = g.values[n.inputs[i]];
    std::vector<int64_t> expect = out.shape;
    expect[dim] = x.shape.size() == r ? x.shape[dim] : -1;
    if (x.shape != expect || x.dtype != out.dtype)
      throw Error(where + ": operand %" + x.name + " does not match the output but for dim " + std::to_string(dim));
    requireNonEmpty(x.shape, where);
    // Along the stick dim at an offset inside a stick the copy moves lanes (PE array, 16-bit words) and
    // merges the boundary stick with what earlier operands wrote; the stick dim stays whole.
    const bool laneShift = static_cast<size_t>(dim) == r - 1 && offset % eps != 0;
    auto labels = dimLabels(r);
    const std::vector<int64_t> &N = x.shape;
    std::vector<int64_t> adjusted = stickAdjusted(N, eps);
    std::vector<bool> splittable(r, true);
    splittable[r - 1] = !laneShift;
    auto splits = divideWorkWithSpan(adjusted, splittable,
                                     {genericSpanTensor(x.name, identityDims(r), N, eps),
                                      genericSpanTensor(out.name, identityDims(r), out.shape, eps)},
                                     maxCores);
    KernelDraft kd = newDraft(index + i, "identity", "sfp", labels, N, splits);
    SuperDsc &s = kd.s;
    s.primaryDsInfo["OUTPUT"] = genericLayout(labels, eps);
    const std::vector<int64_t> perCore = perCoreElems(N, splits, {r - 1}, eps);
    addCopyOperands(kd, n.inputs[i], n.output, fmt, "OUTPUT", "OUTPUT", perCore, 1, dim, out.shape[dim], offset);
    kds.push_back(std::move(kd));
    offset += x.shape[dim];
  }
  if (offset != out.shape[dim])
    throw Error(where + ": the operands' dim " + std::to_string(dim) + " sizes add up to " + std::to_string(offset) +
                ", not " + std::to_string(out.shape[dim]));
  return kds;
}

} // namespace spyre::frontend::detail

namespace spyre::frontend::detail {

KernelDraft rotateHalfKernel(const Graph &g, const Node &n, size_t index, int maxCores) {
  const auto &[x, out, where] = unaryNode(g, n, "rotate_half");
  const size_t r = x.shape.size();
  if (r == 0 || out.shape != x.shape || out.dtype != x.dtype)
    throw Error(where + ": rotate_half keeps x's shape and dtype (rank >= 1)");
  requireNonEmpty(x.shape, where);
  const DataFormat fmt = deviceFormat(x.dtype, where);
  if (fmt != DataFormat::SEN169_FP16)
    throw Unsupported("rotate_half of a " + std::string(dtypeShortName(x.dtype)) + " tensor (" + where +
                      "; fp16/bf16 only)");
  const int64_t eps = elemsPerStick(fmt), L = x.shape[r - 1];
  if (L % eps != 0)
    throw Unsupported("rotate_half with a last dim of " + std::to_string(L) + " (" + where +
                      "; the last dim must fill whole sticks)");
  // The SuperDSC sees x and the output as [d0, mid, L]: dim 0, the middle dims merged, the last
  // dim (the generic layout stores both shapes at the same bytes: sticks [mid][tile][d0]). Dims
  // 0 and 1 split over the cores; each core moves its rows' lanes in LX (docs/superdsc.md §6.12).
  int64_t d0 = r >= 2 ? x.shape[0] : 1, mid = 1;
  for (size_t d = 1; d + 1 < r; ++d)
    mid *= x.shape[d];
  auto labels = dimLabels(3);
  const std::vector<int64_t> N = {d0, mid, L};
  const std::vector<int64_t> adjusted = stickAdjusted(N, eps);
  auto splits = divideWorkWithSpan(adjusted, {true, true, false},
                                   {genericSpanTensor(x.name, identityDims(3), N, eps),
                                    genericSpanTensor(out.name, identityDims(3), N, eps)},
                                   maxCores);
  KernelDraft kd = newDraft(index, "rotatehalf", "sfp", labels, N, splits);
  kd.s.primaryDsInfo["OUTPUT"] = genericLayout(labels, eps);
  const std::vector<int64_t> perCore = perCoreElems(N, splits, {2}, eps);
  addCopyOperands(kd, n.inputs[0], n.output, fmt, "OUTPUT", "OUTPUT", perCore);
  return kd;
}

} // namespace spyre::frontend::detail
