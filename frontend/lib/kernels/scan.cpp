// cumsum(%x, dim=d): the inclusive prefix sum along d, one SuperDSC `cumsum` (our extension,
// docs/superdsc.md) with the dim in constantInfo_ `scanDim`. Input and output share the generic
// layout; cores split the other dims (neither d nor the stick dim: a scan runs in one core's
// LX). int64 is int32 on the card, so an int32 input may give an int64 output (torch's).
#include "kernels.h"
#include "spyre/isa/error.h"

namespace spyre::frontend::detail {

using isa::SdscTensor;
using isa::SuperDsc;

KernelDraft scanKernel(const Graph &g, const Node &n, size_t index, int maxCores) {
  const auto &[in, out, where] = unaryNode(g, n, "cumsum");
  if (in.shape != out.shape)
    throw Error(where + ": cumsum keeps the shape");
  const DataFormat fmt = deviceFormatOrInt(in.dtype, where);
  if (deviceFormatOrInt(out.dtype, where) != fmt)
    throw Unsupported("cumsum from " + std::string(dtypeShortName(in.dtype)) + " to " +
                      std::string(dtypeShortName(out.dtype)) + " (" + where + ")");
  const int64_t r = static_cast<int64_t>(in.shape.size());
  if (r == 0)
    throw Unsupported("cumsum of a 0-d tensor (" + where + ")");
  int64_t d = static_cast<int64_t>(attrOr(n, "dim", 0));
  if (d < 0)
    d += r;
  if (d < 0 || d >= r)
    throw Error(where + ": dim out of range for a rank-" + std::to_string(r) + " tensor");
  std::vector<int64_t> N = iterationSizes(in.shape, where);
  const size_t rr = N.size();
  const int64_t eps = elemsPerStick(fmt);
  auto labels = dimLabels(rr);
  std::vector<bool> splittable(rr, true);
  splittable[rr - 1] = false;
  splittable[static_cast<size_t>(d) + rr - static_cast<size_t>(r)] = false;
  auto splits = divideWorkWithSpan(N, splittable,
                                   {genericSpanTensor(in.name, identityDims(rr), N, eps),
                                    genericSpanTensor(out.name, identityDims(rr), N, eps)},
                                   maxCores);
  KernelDraft kd = newDraft(index, "cumsum", "sfp", labels, N, splits);
  SuperDsc &s = kd.s;
  s.primaryDsInfo["OUTPUT"] = genericLayout(labels, eps);
  const std::vector<int64_t> perCore = perCoreElems(N, splits, {rr - 1}, eps);
  for (int i = 0; i < 2; ++i) {
    SdscTensor t;
    t.ldsIdx = i;
    t.dsName = "Tensor" + std::to_string(i);
    t.dsType = "OUTPUT";
    t.scale.assign(rr, 1);
    t.dataFormat = fmt;
    placeTensor(s, t, perCore);
    s.labeledDs.push_back(t);
  }
  s.constants["scanDim"] = static_cast<double>(static_cast<size_t>(d) + rr - static_cast<size_t>(r));
  setUnaryOperands(kd, n.inputs[0], n.output);
  return kd;
}

} // namespace spyre::frontend::detail
