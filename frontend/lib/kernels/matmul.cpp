// matmul: torch-spyre's batchmatmul on the PE array.
#include "kernels.h"
#include "spyre/frontend/ops.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <map>
#include <numeric>

namespace spyre::frontend::detail {

using isa::SdscTensor;
using isa::SuperDsc;

KernelDraft matmulKernel(const Graph &g, const Node &n, size_t index, int maxCores) {
  const Value &out = g.values[n.output];
  std::string where = "node %" + out.name + " = " + n.op;
  checkAttrs(n, where);
  if (n.inputs.size() != 2)
    throw Error(where + ": matmul takes two tensor operands");
  // transb=1: the second operand is y^T as stored, [.., N, K] in its generic layout (sticked on
  // K); the kernel transposes its tiles in the PE array instead of a restickify kernel before it.
  const bool transB = n.attrs.count("transb") && n.attrs.at("transb").scalar() != 0;
  const Value &a = g.values[n.inputs[0]], &b = g.values[n.inputs[1]];
  for (const Value *v : {&a, &b, &out})
    if (v->dtype != HostType::F16 && v->dtype != HostType::BF16)
      throw Unsupported(std::string(dtypeShortName(v->dtype)) + " matmul (" + where + "); fp16/bf16 only");
  if (a.shape.size() < 2 || b.shape.size() < 2)
    throw Unsupported("matmul of rank < 2 operands (" + where + ")");
  size_t ra = a.shape.size(), rb = b.shape.size(), ro = out.shape.size();
  int64_t M = a.shape[ra - 2], K = a.shape[ra - 1], N = b.shape[transB ? rb - 2 : rb - 1];
  const int64_t bK = b.shape[transB ? rb - 1 : rb - 2];
  if (bK != K)
    throw Error(where + ": inner dims differ (" + std::to_string(K) + " vs " + std::to_string(bK) + ")");
  // The whole declared shape, batch dims included: the kernel writes the batch it computes, so
  // a larger declared batch would be read uninitialised and a smaller one written past
  // (fuzz_graph finding matmul_shape_ddr_overrun).
  if (ro != ra || out.shape[ro - 2] != M || out.shape[ro - 1] != N ||
      !std::equal(a.shape.begin(), a.shape.end() - 2, out.shape.begin()))
    throw Error(where + ": output shape does not match [.., M, N] with the first operand's batch dims");
  if (ra > 4)
    throw Unsupported("matmul with more than 2 batch dims (" + where + ")");
  std::vector<int64_t> batchShape(a.shape.begin(), a.shape.end() - 2);
  if (rb != 2) {
    if (rb != ra || !std::equal(batchShape.begin(), batchShape.end(), b.shape.begin()))
      throw Unsupported("matmul batch broadcasting other than a 2-d weight (" + where + ")");
  }
  // Dims: batch..., M, N, K labelled as torch-spyre: the last of [ki kj y x mb out in].
  static const char *all[] = {"ki", "kj", "y", "x", "mb", "out", "in"};
  size_t r = batchShape.size() + 3;
  std::vector<std::string> labels(all + 7 - r, all + 7);
  std::vector<int64_t> N_ = batchShape;
  N_.push_back(M);
  N_.push_back(N);
  N_.push_back(K);
  int64_t eps = 64;
  // Work division passes 1-3 (span limit, matmul cost model, largest divisors); a K split's
  // partial sums travel over the ring between adjacent cores. A transposed B: N before M, no K
  // split (transposedBDivision).
  std::vector<int64_t> splits = matmulWorkDivision({batchShape, rb != 2, M, N, K, transB}, maxCores);
  if (transB && (splits.back() > 1 || N % 64 != 0))
    throw Unsupported("matmul with transb=1 and " +
                      (N % 64 ? "N = " + std::to_string(N) + " not a multiple of 64" : std::string("a K split")) +
                      " (" + where + "); transpose the second operand first");

  KernelDraft kd = newDraft(index, "batchmatmul", "pt", labels, N_, splits);
  SuperDsc &s = kd.s;
  const int cores = s.numCoresUsed;
  // K-fast core order (SPYRE_CORE_ID_K_FAST_EMISSION): K partners sit on adjacent cores.
  s.coreIdToWkSlice.clear();
  for (int c = 0; c < cores; ++c) {
    std::vector<int64_t> slice(r);
    slice[r - 1] = c % splits[r - 1];
    int64_t div = splits[r - 1];
    for (size_t d = 0; d + 1 < r; ++d) {
      slice[d] = (c / div) % splits[d];
      div *= splits[d];
    }
    s.coreIdToWkSlice.push_back(slice);
  }
  // An uneven M split (never with a K split) numbers M slowest, so the cores of the shorter
  // last slice are consecutive (one program per run of equal slices in the backend).
  if (M % splits[r - 3] != 0) {
    std::vector<int64_t> adjusted = batchShape;
    adjusted.insert(adjusted.end(), {M, (N + eps - 1) / eps, (K + eps - 1) / eps});
    unevenDimsSlowest(s, adjusted);
  }
  // Each tensor's generic layout over its own dims (labels), e.g. x [.., M, K] -> (.., mb, in).
  auto layoutOver = [&](const std::vector<std::string> &l) { return genericLayout(l, eps); };
  std::vector<std::string> batchLabels(labels.begin(), labels.end() - 3);
  auto withBatch = [&](bool hasBatch, std::vector<std::string> tail) {
    std::vector<std::string> l = hasBatch ? batchLabels : std::vector<std::string>{};
    l.insert(l.end(), tail.begin(), tail.end());
    return l;
  };
  std::vector<std::string> xl = withBatch(true, {"mb", "in"}),
                           yl = withBatch(rb != 2, transB ? std::vector<std::string>{"out", "in"}
                                                          : std::vector<std::string>{"in", "out"}),
                           ol = withBatch(true, {"mb", "out"});
  s.primaryDsInfo["INPUT"] = layoutOver(xl);
  s.primaryDsInfo["KERNEL"] = layoutOver(yl);
  s.primaryDsInfo["OUTPUT"] = layoutOver(ol);
  const std::vector<int64_t> perCore = perCoreElems(N_, splits, {r - 2, r - 1}, eps); // N and K in sticks
  auto place = [&](int ldsIdx, const char *type, const std::vector<std::string> &tl) {
    addTensor(s, ldsIdx, DataFormat::SEN169_FP16, type, labels, tl, perCore);
  };
  place(0, "INPUT", xl);
  place(1, "KERNEL", yl);
  place(2, "OUTPUT", ol);
  s.inputs = {0, 1};
  s.inputConsts = {"", ""};
  s.outputs = {2};
  kd.tensorValues = {n.inputs[0], n.inputs[1], n.output};
  return kd;
}

} // namespace spyre::frontend::detail
