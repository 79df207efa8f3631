// embedding(%table, %indices): rows of a 2-d table chosen by int32/int64 indices (our SuperDSC
// op `embedding`, docs/superdsc.md; the backend's dma.gather). Dims [x,] mb, in, out: the
// indices [B,] S span x and mb, the table [V, D] in and out, the output [B,] S, D x, mb and out.
// Cores split x and mb, mb in whole index sticks (32 int32 indices).
// index_copy(%self, %indices, %source): self with rows of source written at the indices along
// dim -2 (our SuperDSC op `index_copy`; the backend's dma.scatter). Dims [x, [y,]] mb, in, out:
// x and y self's leading dims.
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
    addTensor(s, ldsIdx, f, type, dims, present, perCore);
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

KernelDraft indexCopyKernel(const Graph &g, const Node &n, size_t index, int maxCores) {
  const Value &out = g.values[n.output];
  const std::string where = "node %" + out.name + " = " + n.op;
  checkAttrs(n, where);
  if (n.inputs.size() != 3)
    throw Error(where + ": index_copy takes three tensor operands (self, indices, source)");
  const Value &self = g.values[n.inputs[0]], &idx = g.values[n.inputs[1]], &src = g.values[n.inputs[2]];
  if (self.shape.size() < 2 || self.shape.size() > 4)
    throw Unsupported("index_copy into a rank-" + std::to_string(self.shape.size()) + " tensor (" + where +
                      "); rank 2 to 4, rows on dim -2");
  if (idx.shape.size() != 1)
    throw Unsupported("index_copy with rank-" + std::to_string(idx.shape.size()) + " indices (" + where + "); 1 dim");
  if (idx.dtype != HostType::I32 && idx.dtype != HostType::I64)
    throw Unsupported(std::string(dtypeShortName(idx.dtype)) + " index_copy indices (" + where + "); int32/int64 only");
  std::vector<int64_t> expect = self.shape;
  expect[expect.size() - 2] = idx.shape[0];
  if (src.shape != expect || src.dtype != self.dtype)
    throw Error(where + ": index_copy's source must be self's shape with the indices' length on dim -2, in self's dtype");
  if (out.shape != self.shape || out.dtype != self.dtype)
    throw Error(where + ": index_copy's result has self's shape and dtype");
  requireNonEmpty(self.shape, where);
  requireNonEmpty(idx.shape, where);
  const DataFormat fmt = deviceFormatOrInt(self.dtype, where);
  // The leading dims are x (and y for rank 4), each tensor in the generic layout of its dims.
  const size_t lead = self.shape.size() - 2;
  const std::vector<std::string> leadNames{"x", "y"};
  std::vector<std::string> dims(leadNames.begin(), leadNames.begin() + static_cast<std::ptrdiff_t>(lead));
  std::vector<int64_t> N(self.shape.begin(), self.shape.begin() + static_cast<std::ptrdiff_t>(lead));
  const int64_t K = idx.shape[0], V = self.shape[lead], D = self.shape.back();
  dims.insert(dims.end(), {"mb", "in", "out"});
  N.insert(N.end(), {K, V, D});
  // Cores split the leading dims (whole slabs per core: no two cores write one row), x first.
  std::vector<int64_t> splits(N.size(), 1);
  int left = maxCores;
  for (size_t d = 0; d < lead; ++d) {
    splits[d] = largestDivisor(N[d], left);
    left /= static_cast<int>(splits[d]);
  }
  KernelDraft kd = newDraft(index, "index_copy", "sfp", dims, N, splits);
  SuperDsc &s = kd.s;
  std::vector<std::string> slab(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(lead)), rows = slab;
  slab.insert(slab.end(), {"in", "out"});
  rows.insert(rows.end(), {"mb", "out"});
  s.primaryDsInfo["INPUT"] = genericLayout(slab, elemsPerStick(fmt));
  s.primaryDsInfo["INDEX"] = genericLayout({"mb"}, 32);
  s.primaryDsInfo["KERNEL"] = genericLayout(rows, elemsPerStick(fmt));
  s.primaryDsInfo["OUTPUT"] = genericLayout(slab, elemsPerStick(fmt));
  const std::vector<int64_t> perCore = perCoreElems(N, splits, {lead}, 32);
  auto place = [&](int ldsIdx, DataFormat f, const char *type, const std::vector<std::string> &present) {
    addTensor(s, ldsIdx, f, type, dims, present, perCore);
  };
  place(0, fmt, "INPUT", slab);
  place(1, DataFormat::IEEE_INT32, "INDEX", {"mb"});
  place(2, fmt, "KERNEL", rows);
  place(3, fmt, "OUTPUT", slab);
  s.inputs = {0, 1, 2};
  s.inputConsts = {"", "", ""};
  s.outputs = {3};
  kd.tensorValues = {n.inputs[0], n.inputs[1], n.inputs[2], n.output};
  return kd;
}

} // namespace spyre::frontend::detail
