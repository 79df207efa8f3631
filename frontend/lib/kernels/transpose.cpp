// transpose: the PT unit swaps the last two dims.
#include "kernels.h"
#include "spyre/frontend/ops.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <map>
#include <numeric>

namespace spyre::frontend::detail {

using isa::SdscTensor;
using isa::SuperDsc;

KernelDraft transposeKernel(const Graph &g, const Node &n, size_t index, int maxCores) {
  const auto &[in, out, where] = unaryNode(g, n, "transpose");
  size_t r = in.shape.size();
  if (r < 2 || r > 4)
    throw Unsupported("transpose of a rank-" + std::to_string(r) + " tensor (" + where + ")");
  std::vector<int64_t> expect = in.shape;
  std::swap(expect[r - 1], expect[r - 2]);
  if (out.shape != expect || out.dtype != in.dtype)
    throw Error(where + ": transpose swaps the last two dims");
  if (in.dtype != HostType::F16 && in.dtype != HostType::BF16)
    throw Unsupported(std::string(dtypeShortName(in.dtype)) + " transpose (" + where + "); fp16/bf16 only");
  requireNonEmpty(in.shape, where);
  static const char *batchNames[] = {"y", "x"};
  std::vector<std::string> labels(batchNames + (4 - r), batchNames + 2);
  labels.push_back("mb");
  labels.push_back("out");
  const std::vector<int64_t> &N = in.shape;
  const int64_t CT = (N[r - 1] + 63) / 64;
  std::vector<int64_t> adjusted = N;
  adjusted[r - 1] = CT;
  std::vector<bool> splittable(r, true);
  splittable[r - 2] = false; // rows stay on one core
  std::vector<int> outDims = identityDims(r);
  std::swap(outDims[r - 1], outDims[r - 2]);
  auto splits = divideWorkWithSpan(adjusted, splittable,
                                   {genericSpanTensor(in.name, identityDims(r), in.shape, 64),
                                    genericSpanTensor(out.name, outDims, out.shape, 64)},
                                   maxCores);
  KernelDraft kd = newDraft(index, "transpose", "pt", labels, N, splits);
  SuperDsc &s = kd.s;
  std::vector<std::string> outLabels(labels.begin(), labels.end() - 2);
  outLabels.push_back("out");
  outLabels.push_back("mb");
  s.primaryDsInfo["INPUT"] = genericLayout(labels, 64);
  s.primaryDsInfo["OUTPUT"] = genericLayout(outLabels, 64);
  // Per-core start addresses: batch slices and the core's first C tile (input: tiles; output:
  // rows of the C dim).
  const std::vector<int64_t> perCore = perCoreElems(N, splits, {r - 1}, 64);
  auto place = [&](int ldsIdx, const char *type) {
    SdscTensor t;
    t.ldsIdx = ldsIdx;
    t.dsName = "Tensor" + std::to_string(ldsIdx);
    t.dsType = type;
    t.dataFormat = DataFormat::SEN169_FP16;
    t.scale.assign(r, 1);
    placeTensor(s, t, perCore);
    s.labeledDs.push_back(t);
  };
  place(0, "INPUT");
  place(1, "OUTPUT");
  setUnaryOperands(kd, n.inputs[0], n.output);
  return kd;
}

} // namespace spyre::frontend::detail
