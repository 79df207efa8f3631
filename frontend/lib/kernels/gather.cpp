// embedding(%table, %indices): rows of a 2-d table chosen by int32/int64 indices (our SuperDSC
// op `embedding`, docs/superdsc.md; the backend's dma.gather). Dims [x,] mb, in, out: the
// indices [B,] S span x and mb, the table [V, D] in and out, the output [B,] S, D x, mb and out.
// Cores split x and mb, mb in whole index sticks (32 int32 indices).
#include "kernels.h"
#include "spyre/isa/error.h"
#include <algorithm>

namespace spyre::frontend::detail {

using isa::SdscTensor;
using isa::SuperDsc;

KernelDraft embeddingKernel(const Graph &g, const Node &n, size_t index, int maxCores) {
  const Value &out = g.values[n.output];
  const std::string where = "node %" + out.name + " = " + n.op;
  checkAttrs(n, where);
  if (n.inputs.size() != 2)
    throw Error(where + ": embedding takes two tensor operands (table, indices)");
  const Value &table = g.values[n.inputs[0]], &idx = g.values[n.inputs[1]];
  if (table.shape.size() != 2)
    throw Unsupported("embedding with a rank-" + std::to_string(table.shape.size()) + " table (" + where +
                      "); the table must be [rows, dim]");
  if (idx.shape.empty() || idx.shape.size() > 2)
    throw Unsupported("embedding with rank-" + std::to_string(idx.shape.size()) + " indices (" + where +
                      "); 1 or 2 dims");
  if (idx.dtype != HostType::I32 && idx.dtype != HostType::I64)
    throw Unsupported(std::string(dtypeShortName(idx.dtype)) + " embedding indices (" + where + "); int32/int64 only");
  std::vector<int64_t> expect = idx.shape;
  expect.push_back(table.shape[1]);
  if (out.shape != expect || out.dtype != table.dtype)
    throw Error(where + ": embedding's result is the indices' shape + [table dim] in the table's dtype");
  requireNonEmpty(table.shape, where);
  requireNonEmpty(idx.shape, where);
  const DataFormat fmt = deviceFormatOrInt(table.dtype, where);
  const bool batched = idx.shape.size() == 2;
  const int64_t B = batched ? idx.shape[0] : 1, S = idx.shape.back(), V = table.shape[0], D = table.shape[1];
  std::vector<std::string> dims = batched ? std::vector<std::string>{"x", "mb", "in", "out"}
                                          : std::vector<std::string>{"mb", "in", "out"};
  std::vector<int64_t> N = batched ? std::vector<int64_t>{B, S, V, D} : std::vector<int64_t>{S, V, D};
  const size_t dMb = batched ? 1 : 0;
  // Whole index sticks per core; x first (whole rows of indices), then mb.
  const int64_t ST = (S + 31) / 32;
  const int64_t sx = batched ? largestDivisor(B, maxCores) : 1;
  const int64_t sm = largestDivisor(ST, maxCores / sx);
  std::vector<int64_t> splits(N.size(), 1);
  if (batched)
    splits[0] = sx;
  splits[dMb] = sm;
  KernelDraft kd = newDraft(index, "embedding", "sfp", dims, N, splits);
  SuperDsc &s = kd.s;
  std::vector<std::string> idxLabels(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(dMb + 1));
  std::vector<std::string> outLabels = idxLabels;
  outLabels.push_back("out");
  s.primaryDsInfo["KERNEL"] = genericLayout({"in", "out"}, elemsPerStick(fmt));
  s.primaryDsInfo["INDEX"] = genericLayout(idxLabels, 32);
  s.primaryDsInfo["OUTPUT"] = genericLayout(outLabels, elemsPerStick(fmt));
  const std::vector<int64_t> perCore = perCoreElems(N, splits, {dMb}, 32);
  auto place = [&](int ldsIdx, DataFormat f, const char *type, const std::vector<std::string> &present) {
    SdscTensor t;
    t.ldsIdx = ldsIdx;
    t.dsName = "Tensor" + std::to_string(ldsIdx);
    t.dsType = type;
    t.dataFormat = f;
    for (const std::string &d : dims)
      t.scale.push_back(std::find(present.begin(), present.end(), d) != present.end() ? 1 : -1);
    placeTensor(s, t, perCore);
    s.labeledDs.push_back(t);
  };
  place(0, fmt, "KERNEL", {"in", "out"});
  place(1, DataFormat::IEEE_INT32, "INDEX", idxLabels);
  place(2, fmt, "OUTPUT", outLabels);
  s.inputs = {0, 1};
  s.inputConsts = {"", ""};
  s.outputs = {2};
  kd.tensorValues = {n.inputs[0], n.inputs[1], n.output};
  return kd;
}

} // namespace spyre::frontend::detail
