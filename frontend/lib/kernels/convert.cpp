// to_dtype: a format conversion (or an identity copy) keeping the shape.
#include "kernels.h"
#include "spyre/frontend/ops.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <map>
#include <numeric>

namespace spyre::frontend::detail {

using isa::SdscTensor;
using isa::SuperDsc;

KernelDraft convertKernel(const Graph &g, const Node &n, size_t index, int maxCores) {
  const auto &[in, out, where] = unaryNode(g, n, "to_dtype");
  if (in.shape != out.shape)
    throw Error(where + ": to_dtype keeps the shape");
  DataFormat fi = deviceFormat(in.dtype, where), fo = deviceFormat(out.dtype, where);
  if (in.dtype == HostType::Bool || out.dtype == HostType::Bool)
    throw Unsupported("bool conversions (" + where + ")");
  std::vector<int64_t> N = iterationSizes(in.shape, where);
  size_t r = N.size();
  auto labels = dimLabels(r);
  std::vector<bool> splittable(r, true);
  splittable[r - 1] = false; // dtype ops keep the stick dim on one core
  auto splits = divideWorkWithSpan(N, splittable,
                                   {genericSpanTensor(in.name, identityDims(r), N, elemsPerStick(fi)),
                                    genericSpanTensor(out.name, identityDims(r), N, elemsPerStick(fo))},
                                   maxCores);
  KernelDraft kd = newDraft(index, fi == fo ? "identity" : fi == DataFormat::SEN169_FP16 ? "dl16tofp32" : "fp32todl16", "sfp",
                            labels, N, splits);
  SuperDsc &s = kd.s;
  s.primaryDsInfo["OUTPUT"] = genericLayout(labels, elemsPerStick(fo));
  if (fi != fo)
    s.primaryDsInfo["KERNEL"] = genericLayout(labels, elemsPerStick(fi));
  // The stick dim is never split here (slice 0), so its split unit does not matter.
  const std::vector<int64_t> perCore = perCoreElems(N, splits, {r - 1}, elemsPerStick(fo));
  auto place = [&](int ldsIdx, DataFormat f, const char *type) {
    SdscTensor t;
    t.ldsIdx = ldsIdx;
    t.dsName = "Tensor" + std::to_string(ldsIdx);
    t.dsType = type;
    t.scale.assign(r, 1);
    t.dataFormat = f;
    placeTensor(s, t, perCore);
    s.labeledDs.push_back(t);
  };
  place(0, fi, fi == fo ? "OUTPUT" : "KERNEL");
  place(1, fo, "OUTPUT");
  setUnaryOperands(kd, n.inputs[0], n.output);
  return kd;
}

} // namespace spyre::frontend::detail
