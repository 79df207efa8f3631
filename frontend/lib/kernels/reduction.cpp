// Reductions: sum, mean, amax, amin over dims=[..] (stick reductions may split the stick dim).
#include "kernels.h"
#include "spyre/frontend/ops.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <map>
#include <numeric>

namespace spyre::frontend::detail {

using isa::SdscLayout;
using isa::SdscTensor;
using isa::SuperDsc;

/// Shape with the reduced dims kept as 1 (the layout a reduction writes).
std::vector<int64_t> keepdimShape(const std::vector<int64_t> &in, const std::vector<bool> &reduced) {
  std::vector<int64_t> k = in;
  for (size_t d = 0; d < k.size(); ++d)
    if (reduced[d])
      k[d] = 1;
  return k;
}

std::vector<bool> reducedDims(const Node &n, size_t rank, const std::string &where) {
  std::vector<bool> red(rank, false);
  auto it = n.attrs.find("dims");
  if (it == n.attrs.end() || it->second.values.empty()) {
    std::fill(red.begin(), red.end(), true);
    return red;
  }
  for (double dv : it->second.values) {
    int64_t d = static_cast<int64_t>(dv);
    if (d < 0)
      d += static_cast<int64_t>(rank);
    if (d < 0 || d >= static_cast<int64_t>(rank) || static_cast<double>(static_cast<int64_t>(dv)) != dv)
      throw Error(where + ": reduction dim " + std::to_string(dv) + " out of range for rank " + std::to_string(rank));
    red[d] = true;
  }
  return red;
}

int64_t stickReductionSplit(const std::vector<int64_t> &splits, const std::vector<bool> &reduced,
                            const std::vector<int64_t> &adjusted, const SpanTensor &input, bool addsPartials,
                            bool always, int maxCores) {
  const size_t r = reduced.size();
  if (!addsPartials || r == 0 || !reduced[r - 1] || std::count(reduced.begin(), reduced.end(), true) != 1)
    return 1;
  const int64_t used = std::accumulate(splits.begin(), splits.end(), int64_t{1}, std::multiplies<>());
  const int64_t room = maxCores / used;
  // By default only where a core's input span would exceed pass 1's 256 MiB: elsewhere the
  // serial ring chain (one hop per phase) and the LX the split stages (which keeps the graph's
  // LX-resident tensors out) cost more than the parallel sweep saves (layer norm over 1151 x
  // 8192: 674.5 -> 1072 us simulated). `always` (CompileOptions::splitReductions) splits
  // wherever cores are idle.
  if (!always && perCoreSpan(input, splits) <= kMaxSpanBytes)
    return 1;
  // Even then not for a few sticks per core: the ring phases and barriers cost more than they
  // save (a softmax over 129 columns stays unsplit).
  const int64_t sticks = std::accumulate(adjusted.begin(), adjusted.end(), int64_t{1}, std::multiplies<>());
  constexpr int64_t kMinSticksPerCore = 512;
  if (sticks / used < kMinSticksPerCore)
    return 1;
  return largestDivisor(adjusted[r - 1], room);
}

void stickFastCores(SuperDsc &s) {
  const size_t r = s.dims.size();
  const int64_t ks = s.numWkSlicesPerDim[r - 1];
  std::vector<int64_t> rest = s.numWkSlicesPerDim;
  rest[r - 1] = 1;
  const auto outer = coreSlices(rest, s.numCoresUsed / static_cast<int>(ks));
  for (int c = 0; c < s.numCoresUsed; ++c) {
    s.coreIdToWkSlice[c] = outer[static_cast<size_t>(c / ks)];
    s.coreIdToWkSlice[c][r - 1] = c % ks;
  }
}

KernelDraft reductionKernel(const Graph &g, const Node &n, size_t index, int maxCores, bool splitReductions) {
  const auto &[in, out, where] = unaryNode(g, n, "a reduction");
  // int32 -> int64 (torch's sum of ints) keeps the device format: int64 is int32 on the card.
  const bool ints = (in.dtype == HostType::I32 || in.dtype == HostType::I64) &&
                    (out.dtype == HostType::I32 || out.dtype == HostType::I64);
  if (in.dtype != out.dtype && !ints)
    throw Unsupported("reductions that change dtype (" + where + ")");
  if (in.dtype != HostType::F16 && in.dtype != HostType::BF16 && in.dtype != HostType::F32 && !ints)
    throw Unsupported(std::string(dtypeShortName(in.dtype)) + " reductions (" + where + ")");
  if (ints && isOp(n.op, OpId::Mean))
    throw Unsupported("mean of ints (" + where + ")");
  DataFormat fmt = deviceFormatOrInt(in.dtype, where);
  int64_t eps = elemsPerStick(fmt);
  std::vector<int64_t> N = iterationSizes(in.shape, where);
  size_t r = N.size();
  auto red = reducedDims(n, in.shape.size(), where);
  if (in.shape.empty())
    red = {true};
  auto labels = dimLabels(r);
  std::vector<int64_t> adjusted = stickAdjusted(N, eps);
  std::vector<bool> splittable(r);
  std::vector<int> inDims(r), outDims(r);
  std::vector<int64_t> outExt(r);
  for (size_t d = 0; d < r; ++d) {
    splittable[d] = !red[d];
    inDims[d] = static_cast<int>(d);
    outDims[d] = red[d] ? -1 : static_cast<int>(d);
    outExt[d] = red[d] ? 1 : adjusted[d];
  }
  const std::vector<SpanTensor> spans = {genericSpanTensor(in.name, inDims, adjusted),
                                         genericSpanTensor(out.name, outDims, outExt)};
  // Rows first (unevenly where that shrinks a core's share); the stick dim splits too only
  // where the rows leave cores idle, and then over even row splits (the ring chain's).
  bool stickReduced = red[r - 1];
  const OpInfo &op = opInfo(n.op);
  const std::string base(op.opFunc); // "nonstick" follows off the stick dim
  auto stickSplitOf = [&](const std::vector<int64_t> &sp) {
    return stickReductionSplit(sp, red, adjusted, genericSpanTensor(in.name, inDims, adjusted),
                               op.id == OpId::Sum || op.id == OpId::Mean, splitReductions, maxCores);
  };
  auto [splits, stickSplit] = divideRowsThenStick(adjusted, splittable, spans, maxCores, stickSplitOf);

  KernelDraft kd = newDraft(index, base + (stickReduced ? "" : "nonstick"), "sfp", labels, N, splits);
  SuperDsc &s = kd.s;
  if (stickSplit > 1)
    stickFastCores(s);
  else
    unevenDimsSlowest(s, adjusted);
  SdscLayout layout = genericLayout(labels, eps);
  std::vector<int> inScale(r, 1), outScale(r, 1);
  for (size_t d = 0; d < r; ++d)
    if (red[d])
      outScale[d] = d == r - 1 ? -2 : -1;
  s.primaryDsInfo["OUTPUT"] = layout;
  s.primaryDsInfo["KERNEL"] = layout;
  const std::vector<int64_t> perCore = perCoreElems(N, splits, {r - 1}, eps);
  auto place = [&](int ldsIdx, const std::vector<int> &sc, const char *type) {
    SdscTensor t;
    t.ldsIdx = ldsIdx;
    t.dsName = "Tensor" + std::to_string(ldsIdx);
    t.dsType = type;
    t.scale = sc;
    t.dataFormat = fmt;
    placeTensor(s, t, perCore);
    s.labeledDs.push_back(t);
  };
  place(0, inScale, "KERNEL");
  place(1, outScale, "OUTPUT");
  s.inputs = {0, 1}; // torch-spyre: a reduction accumulates into its output
  s.inputConsts = {"", ""};
  s.outputs = {1};
  kd.tensorValues = {n.inputs[0], n.output};
  return kd;
}

} // namespace spyre::frontend::detail
