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

std::optional<std::vector<int64_t>> matmulBatch(const std::vector<int64_t> &xs, const std::vector<int64_t> &ys) {
  if (xs.size() < 2 || ys.size() < 2)
    return std::nullopt;
  std::vector<int64_t> batch(xs.begin(), xs.end() - 2);
  if (ys.size() == 2)
    return batch;
  if (ys.size() != xs.size())
    return std::nullopt;
  for (size_t d = 0; d < batch.size(); ++d) {
    if (ys[d] != batch[d] && ys[d] != 1 && batch[d] != 1)
      return std::nullopt;
    batch[d] = std::max(batch[d], ys[d]);
  }
  return batch;
}

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
  const bool kvrep = n.attrs.count("kvrep") != 0;
  // heads=H (the split-heads pass): x [B, 1, M, K] and a 2-d y [K, H * D] (transb: a linear
  // weight [H * D, K] as stored) give [B, H, M, D]: head h reads y's columns h * D .. h * D + D
  // - 1, so the heads are written in place instead of permuted after the matmul.
  int64_t heads = 0;
  if (auto it = n.attrs.find("heads"); it != n.attrs.end()) {
    heads = static_cast<int64_t>(it->second.scalar());
    if (heads < 1 || kvrep || ra != 4 || rb != 2 || ro != 4 || a.shape[1] != 1 || out.shape[1] != heads ||
        N != heads * out.shape[3] || out.shape[3] % 64 != 0)
      throw Error(where + ": heads=" + std::to_string(heads) +
                  " needs x [B, 1, M, K], a 2-d y of N = heads * D columns and an output [B, heads, M, D], D a "
                  "multiple of 64");
    N = out.shape[3];
  }
  std::optional<std::vector<int64_t>> bcast =
      kvrep ? std::vector<int64_t>(a.shape.begin(), a.shape.end() - 2)
      : heads > 0 ? std::vector<int64_t>{a.shape[0], heads}
                  : matmulBatch(a.shape, b.shape);
  if (!bcast)
    throw Unsupported("matmul batch broadcasting other than a 2-d weight or batch dims of 1 (" + where + ")");
  if (ro != ra || out.shape[ro - 2] != M || out.shape[ro - 1] != N ||
      !std::equal(bcast->begin(), bcast->end(), out.shape.begin()))
    throw Error(where + ": output shape does not match [.., M, N] with the operands' batch dims");
  if (ra > 4)
    throw Unsupported("matmul with more than 2 batch dims (" + where + ")");
  std::vector<int64_t> batchShape = *bcast;
  // Per batch dim: whether x / y hold it (a dim of 1 against a larger one broadcasts: the
  // operand lacks that label, its one slice serves every index).
  std::vector<bool> xHas(batchShape.size(), true), yHas(batchShape.size(), rb != 2);
  if (heads > 0)
    xHas[1] = false;
  if (!kvrep && rb != 2)
    for (size_t d = 0; d < batchShape.size(); ++d) {
      xHas[d] = a.shape[d] == batchShape[d];
      yHas[d] = b.shape[d] == batchShape[d];
    }
  // kvrep=r (the repeat-heads pass): x [B, H, M, K], y [B, H / r, .., ..]; head h of x reads
  // head h / r of y. The kernel iterates [B, H / r, r, M, N, K]: in the generic layouts of x and
  // the output H is the outermost dim, so (H / r, r) address them as H does, and y lacks r.
  int64_t rep = 1;
  if (auto it = n.attrs.find("kvrep"); it != n.attrs.end()) {
    rep = static_cast<int64_t>(it->second.scalar());
    if (rep < 1 || ra != 4 || rb != 4 || b.shape[0] != a.shape[0] || b.shape[1] * rep != a.shape[1])
      throw Error(where + ": kvrep=" + std::to_string(rep) +
                  " needs x [B, H, M, K] and y [B, H / kvrep, .., ..] (rank 4)");
  }
  // Work division passes 1-3 (span limit, matmul cost model, largest divisors); a K split's
  // partial sums travel over the ring between adjacent cores. A transposed B: N before M, no K
  // split (transposedBDivision).
  std::vector<int64_t> splits = matmulWorkDivision({batchShape, rb != 2 || heads > 0, M, N, K, transB}, maxCores);
  if (rep > 1) {
    // The head split of [B, H] over (H / r, r): divisors of each, as many cores as they give.
    const int64_t hkv = b.shape[1], sH = splits[1];
    const int64_t sKv = std::gcd(sH, hkv), sRep = std::gcd(sH / sKv, rep);
    batchShape = {batchShape[0], hkv, rep};
    splits.erase(splits.begin() + 1);
    splits.insert(splits.begin() + 1, {sKv, sRep});
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
  auto withBatch = [&](const std::vector<bool> &has, std::vector<std::string> tail) {
    std::vector<std::string> l;
    for (size_t d = 0; d < batchLabels.size(); ++d)
      if (d >= has.size() || has[d])
        l.push_back(batchLabels[d]);
    l.insert(l.end(), tail.begin(), tail.end());
    return l;
  };
  // Layouts over each operand's own rank (a broadcast dim of 1 keeps its place in the layout, so
  // the bytes are the operand's generic layout), scale_ 1 only where it spans the dim.
  std::vector<bool> every(batchLabels.size(), true), yDims(batchLabels.size(), rb != 2);
  if (rep > 1) // y lacks the repeat dim (the last batch label)
    yDims.back() = false;
  const std::vector<std::string> yTail =
      transB ? std::vector<std::string>{"out", "in"} : std::vector<std::string>{"in", "out"};
  std::vector<std::string> xl = withBatch(every, {"mb", "in"}), yl = withBatch(yDims, yTail),
                           ol = withBatch(every, {"mb", "out"});
  s.primaryDsInfo["INPUT"] = layoutOver(xl);
  s.primaryDsInfo["KERNEL"] = layoutOver(yl);
  if (heads > 0) {
    // y's bytes: [K / 64][H * D][64] sticked on K (transb), [H * D / 64][K][64] sticked on N;
    // the head is the slower part of N. Layout dims innermost first, after the stick.
    isa::SdscLayout &y = s.primaryDsInfo["KERNEL"];
    y.layoutDimOrder = transB ? std::vector<std::string>{"out", "x", "in"} : std::vector<std::string>{"in", "out", "x"};
    y.stickDimOrder = {transB ? "in" : "out"};
    yl = {"x", "out", "in"};
  }
  s.primaryDsInfo["OUTPUT"] = layoutOver(ol);
  const std::vector<int64_t> perCore = perCoreElems(N_, splits, {r - 2, r - 1}, eps); // N and K in sticks
  auto place = [&](int ldsIdx, const char *type, const std::vector<std::string> &tl) {
    addTensor(s, ldsIdx, DataFormat::SEN169_FP16, type, labels, tl, perCore);
  };
  place(0, "INPUT", withBatch(xHas, {"mb", "in"}));
  place(1, "KERNEL", rep > 1 || rb == 2 ? yl : withBatch(yHas, yTail));
  place(2, "OUTPUT", ol);
  s.inputs = {0, 1};
  s.inputConsts = {"", ""};
  s.outputs = {2};
  kd.tensorValues = {n.inputs[0], n.inputs[1], n.output};
  return kd;
}

} // namespace spyre::frontend::detail

namespace spyre::frontend::detail {

std::optional<KernelDraft> matmulEpilogueKernel(const Graph &g, const std::vector<int> &members,
                                                const std::vector<KernelDraft> &drafts, size_t index) {
  if (members.size() < 2 || drafts.size() != members.size() || drafts[0].s.opFuncName != "batchmatmul")
    return std::nullopt;
  const SuperDsc &mm = drafts[0].s;
  const int dK = mm.dimIndex("in");
  // A K split sums partials over the ring (no output block to run the chain on).
  if (dK < 0 || mm.numWkSlicesPerDim[dK] > 1 || mm.outputs != std::vector<int>{2})
    return std::nullopt;
  const Value &out = g.values[g.nodes[members[0]].output];
  KernelDraft kd = drafts[0];
  SuperDsc &s = kd.s;
  std::string name = "fused_batchmatmul";
  for (size_t k = 1; k < drafts.size() && k < 4; ++k)
    name += "_" + drafts[k].s.opFuncName;
  s.name = std::to_string(index) + "_" + name;
  s.opFuncName = isa::kFusedOpFunc;
  const size_t r = s.dims.size();
  const std::vector<std::string> batchLabels(s.dims.begin(), s.dims.end() - 3);
  const std::vector<int64_t> perCore = perCoreElems(s.N, s.numWkSlicesPerDim, {r - 2, r - 1}, 64);
  std::vector<isa::SdscComputeOp> ops(1);
  ops[0].opFuncName = "batchmatmul";
  ops[0].inputs = {0, 1};
  ops[0].inputConsts = {"", ""};
  std::map<int, int> memberOf; // value -> member position
  for (size_t k = 0; k < members.size(); ++k)
    memberOf[g.nodes[members[k]].output] = static_cast<int>(k);
  std::map<int, int> extLds; // value -> ldsIdx
  for (size_t k = 1; k < members.size(); ++k) {
    const SuperDsc &d = drafts[k].s;
    if (d.outputs.size() != 1 || d.isFused())
      return std::nullopt;
    const std::string prefix = "op" + std::to_string(k) + "_";
    for (const auto &[cname, value] : d.constants)
      s.constants[prefix + cname] = value;
    for (const auto &[cname, arg] : d.constantArgs)
      s.constantArgs[prefix + cname] = arg;
    isa::SdscComputeOp op;
    op.opFuncName = d.opFuncName;
    for (size_t i = 0; i < d.inputs.size(); ++i) {
      op.inputConsts.emplace_back();
      if (d.inputs[i] < 0) {
        op.inputs.push_back(-1);
        op.inputConsts.back() = prefix + d.inputConsts.at(i);
        continue;
      }
      const SdscTensor &t = d.tensor(d.inputs[i]);
      const int v = drafts[k].tensorValues.at(static_cast<size_t>(d.inputs[i]));
      if (auto m = memberOf.find(v); m != memberOf.end()) {
        if (m->second >= static_cast<int>(k) || t.isView())
          return std::nullopt;
        op.inputs.push_back(isa::fusedResultRef(m->second));
        continue;
      }
      if (t.isView() || t.dataFormat != DataFormat::SEN169_FP16)
        return std::nullopt;
      auto [it, fresh] = extLds.try_emplace(v, static_cast<int>(s.labeledDs.size()));
      if (fresh) {
        // A full [.., M, N] operand in the output's layout class, or a row vector over N.
        const Value &x = g.values[v];
        const bool full = x.shape == out.shape;
        std::vector<std::string> present = full ? batchLabels : std::vector<std::string>{};
        if (full)
          present.insert(present.end(), {"mb", "out"});
        else
          present = {"out"};
        if (!full && !s.primaryDsInfo.count("LAYOUT4"))
          s.primaryDsInfo["LAYOUT4"] = genericLayout({"out"}, 64);
        addTensor(s, it->second, DataFormat::SEN169_FP16, full ? "OUTPUT" : "LAYOUT4", s.dims, present, perCore);
        kd.tensorValues.push_back(v);
        s.inputs.push_back(it->second);
        s.inputConsts.push_back("");
      }
      op.inputs.push_back(it->second);
    }
    ops.push_back(std::move(op));
  }
  if (static_cast<int>(s.labeledDs.size()) > isa::kMaxSegments)
    return std::nullopt;
  ops.back().outputs = {2};
  kd.tensorValues[2] = g.nodes[members.back()].output;
  s.fusedOps = std::move(ops);
  return kd;
}

} // namespace spyre::frontend::detail
