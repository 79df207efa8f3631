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

/// The SuperDSC opFunc converting fi to fo ("identity" where the device bytes agree: int64 is
/// int32 on the card, bool is DL16 0 / 1). A conversion to bool reaches here only with 0 / 1
/// values (decomposeOps turns to_dtype(x -> bool) into ne(x, 0)), so it is a format change.
const char *convertOpFunc(DataFormat fi, DataFormat fo) {
  using F = DataFormat;
  if (fi == fo)
    return "identity";
  if (fi == F::SEN169_FP16)
    return fo == F::IEEE_FP32 ? "dl16tofp32" : "dl16toint32";
  if (fo == F::SEN169_FP16)
    return fi == F::IEEE_FP32 ? "fp32todl16" : "int32todl16";
  return fo == F::IEEE_INT32 ? "fp32toint32" : "int32tofp32";
}

KernelDraft convertKernel(const Graph &g, const Node &n, size_t index, int maxCores) {
  const auto &[in, out, where] = unaryNode(g, n, "to_dtype");
  if (in.shape != out.shape)
    throw Error(where + ": to_dtype keeps the shape");
  DataFormat fi = deviceFormatOrInt(in.dtype, where), fo = deviceFormatOrInt(out.dtype, where);
  std::vector<int64_t> N = iterationSizes(in.shape, where);
  size_t r = N.size();
  auto labels = dimLabels(r);
  std::vector<bool> splittable(r, true);
  splittable[r - 1] = false; // dtype ops keep the stick dim on one core
  auto splits = divideWorkWithSpan(N, splittable,
                                   {genericSpanTensor(in.name, identityDims(r), N, elemsPerStick(fi)),
                                    genericSpanTensor(out.name, identityDims(r), N, elemsPerStick(fo))},
                                   maxCores);
  KernelDraft kd = newDraft(index, convertOpFunc(fi, fo), "sfp", labels, N, splits);
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
