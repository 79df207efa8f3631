// Layer norm as torch-spyre runs it: three SuperDSCs over the rows of x (the last dim is the
// normalised one).
//   exx2(%x) : f32[.., 2]            one fp32 EXX2 stick per row: lane 0 = E[x], lane 1 = E[x^2]
//   layernormscale(%s, eps=e) : f32[.., 1]   rsqrt(E[x^2] - E[x]^2 + eps) per row
//   layernormnorm(%x, %s, %r[, %w][, %b]) : x's type   (x - E[x]) * rstd * w + b
// A missing weight or bias is a constant 1 or 0 operand (attributes weight=0 / bias=0).
// The statistics are sparse sticks (scale_ -2 on the stick dim); their buffers are the generic
// layouts of the [.., 2] and [.., 1] fp32 host shapes, which put one stick per row.
#include "kernels.h"
#include "spyre/backend/backend.h"
#include "spyre/frontend/ops.h"
#include "spyre/frontend/compiler.h"
#include "spyre/frontend/work_division.h"
#include "spyre/isa/error.h"
#include <numeric>
#include <optional>

namespace spyre::frontend::detail {

using isa::SdscTensor;
using isa::SuperDsc;


namespace {

void requireFloat(const Value &v, const std::string &where) {
  if (v.dtype != HostType::F16 && v.dtype != HostType::BF16 && v.dtype != HostType::F32)
    throw Unsupported(std::string(dtypeShortName(v.dtype)) + " tensors in " + where);
}


/// The row shape [.., 1|2] of a statistic of x.
bool isStatOf(const Value &st, const Value &x, int64_t last) {
  if (st.dtype != HostType::F32 || st.shape.size() != x.shape.size())
    return false;
  for (size_t d = 0; d + 1 < x.shape.size(); ++d)
    if (st.shape[d] != x.shape[d])
      return false;
  return st.shape.back() == last;
}

/// The first weight / bias operand of layernormnorm `n` (operands 3.. ) that is not a [C] tensor
/// of x's dtype, or null.
const Value *misfitAffineParam(const Graph &g, const Node &n, const Value &x) {
  for (size_t i = 3; i < n.inputs.size(); ++i) {
    const Value &p = g.values[n.inputs[i]];
    if (p.shape != std::vector<int64_t>{x.shape.back()} || p.dtype != x.dtype)
      return &p;
  }
  return nullptr;
}

} // namespace

KernelDraft layerNormKernel(const Graph &g, const Node &n, size_t index, int maxCores, bool splitReductions) {
  const Value &out = g.values[n.output];
  const std::string where = "node %" + out.name + " = " + n.op;
  const bool isExx2 = isOp(n.op, OpId::Exx2), isScale = isOp(n.op, OpId::LayerNormScale);
  checkAttrs(n, where);
  const bool hasW = attrOr(n, "weight", 1.0) != 0.0, hasB = attrOr(n, "bias", 1.0) != 0.0;
  const size_t arity = isExx2 || isScale ? 1 : 3 + hasW + hasB;
  if (n.inputs.size() != arity)
    throw Error(where + ": expected " + std::to_string(arity) + " tensor operand(s), got " +
                std::to_string(n.inputs.size()));
  // The value whose dims are the iteration space (x; the statistic for layernormscale).
  const Value &x = g.values[n.inputs[0]];
  requireFloat(x, where);
  if (x.shape.empty())
    throw Unsupported("layer norm of a 0-d tensor (" + where + ")");
  requireNonEmpty(x.shape, where);
  const size_t r = x.shape.size();
  if (isExx2) {
    std::vector<int64_t> expect = x.shape;
    expect.back() = 2;
    if (out.dtype != HostType::F32 || out.shape != expect)
      throw Error(where + ": exx2 of " + std::string(dtypeShortName(x.dtype)) + " [.., C] gives f32[.., 2]");
  } else if (isScale) {
    if (!isStatOf(x, x, 2) || !isStatOf(out, x, 1))
      throw Error(where + ": layernormscale takes the f32[.., 2] exx2 statistic and gives f32[.., 1]");
  } else {
    if (out.shape != x.shape || out.dtype != x.dtype)
      throw Error(where + ": layernormnorm keeps the shape and dtype of x");
    if (!isStatOf(g.values[n.inputs[1]], x, 2) || !isStatOf(g.values[n.inputs[2]], x, 1))
      throw Error(where + ": layernormnorm takes x, the f32[.., 2] exx2 statistic and the f32[.., 1] rstd");
    if (const Value *p = misfitAffineParam(g, n, x))
      throw Unsupported("layernormnorm weight/bias %" + p->name + " other than a [" + std::to_string(x.shape.back()) +
                        "] " + std::string(dtypeShortName(x.dtype)) + " tensor (" + where + ")");
  }
  const DataFormat xf = deviceFormat(x.dtype, where);
  const int64_t eps = elemsPerStick(xf);
  auto labels = dimLabels(r);
  const std::vector<int64_t> &N = x.shape;
  std::vector<int64_t> adjusted = stickAdjusted(N, eps);
  // layernormnorm is elementwise (every dim, the stick dim in whole sticks); the statistics ops
  // make one value per row, so only rows split.
  std::vector<bool> splittable(r, true);
  if (isScale || isExx2)
    splittable[r - 1] = false;
  const std::vector<SpanTensor> spans = {
      genericSpanTensor(x.name, identityDims(r), N, eps),
      genericSpanTensor(out.name, identityDims(r), out.shape, elemsPerStick(deviceFormat(out.dtype, where)))};
  // Rows that no even split spreads over the cores (1151, a prime) split unevenly; exx2 over
  // rows that leave cores idle: its stick dim splits too (partials on the ring chain, over even
  // row splits).
  std::vector<bool> stickOnly(r, false);
  stickOnly[r - 1] = true;
  auto stickSplitOf = [&](const std::vector<int64_t> &sp) -> int64_t {
    return isExx2 ? stickReductionSplit(sp, stickOnly, adjusted, genericSpanTensor(x.name, identityDims(r), N, eps),
                                        true, splitReductions, maxCores)
                  : 1;
  };
  auto [splits, stickSplit] = divideRowsThenStick(adjusted, splittable, spans, maxCores, stickSplitOf);

  KernelDraft kd = newDraft(index, n.op, "sfp", labels, N, splits);
  SuperDsc &s = kd.s;
  if (stickSplit > 1)
    stickFastCores(s);
  else
    unevenDimsSlowest(s, adjusted);
  const std::vector<int64_t> perCore = perCoreElems(N, splits, {r - 1}, eps);
  std::vector<int> all(r, 1), sparse(r, 1), column(r, -1);
  sparse[r - 1] = -2;
  column[r - 1] = 1;
  auto place = [&](int v, const std::vector<int> &scale, DataFormat f, const char *type) {
    SdscTensor t;
    t.ldsIdx = static_cast<int>(s.labeledDs.size());
    t.dsName = "Tensor" + std::to_string(t.ldsIdx);
    t.dsType = type;
    t.scale = scale;
    t.dataFormat = f;
    placeTensor(s, t, perCore);
    s.labeledDs.push_back(t);
    kd.tensorValues.push_back(v);
    return t.ldsIdx;
  };
  const DataFormat f32 = DataFormat::IEEE_FP32;
  if (isExx2) {
    s.primaryDsInfo["OUTPUT"] = genericLayout(labels, 32);
    s.primaryDsInfo["KERNEL"] = genericLayout(labels, eps);
    int in = place(n.inputs[0], all, xf, "KERNEL");
    int o = place(n.output, sparse, f32, "OUTPUT");
    s.inputs = {in, o}; // torch-spyre: a reduction accumulates into its output
    s.inputConsts = {"", ""};
    s.outputs = {o};
    return kd;
  }
  if (isScale) {
    s.primaryDsInfo["OUTPUT"] = genericLayout(labels, 32);
    int in = place(n.inputs[0], sparse, f32, "OUTPUT");
    int o = place(n.output, sparse, f32, "OUTPUT");
    s.inputs = {in};
    s.inputConsts = {""};
    s.outputs = {o};
    s.constants["eps"] = attrOr(n, "eps", 1e-5);
    return kd;
  }
  s.primaryDsInfo["OUTPUT"] = genericLayout(labels, eps);
  s.primaryDsInfo["KERNEL"] = genericLayout(labels, 32);
  s.primaryDsInfo["INPUT"] = genericLayout({labels.back()}, eps);
  s.inputs.push_back(place(n.inputs[0], all, xf, "OUTPUT"));
  s.inputs.push_back(place(n.inputs[1], sparse, f32, "KERNEL"));
  s.inputs.push_back(place(n.inputs[2], sparse, f32, "KERNEL"));
  s.inputConsts = {"", "", ""};
  size_t next = 3;
  for (auto [present, name, value] : {std::tuple{hasW, "weight", 1.0}, std::tuple{hasB, "bias", 0.0}}) {
    if (present) {
      s.inputs.push_back(place(n.inputs[next++], column, xf, "INPUT"));
      s.inputConsts.push_back("");
    } else {
      s.inputs.push_back(-1);
      s.inputConsts.push_back(name);
      s.constants[name] = value;
    }
  }
  s.outputs = {place(n.output, all, xf, "OUTPUT")};
  return kd;
}


std::optional<KernelDraft> layerNormFusedKernel(const Graph &g, const std::vector<int> &members, size_t index,
                                                int maxCores) {
  if (members.size() != 3)
    return std::nullopt;
  const Node &e = g.nodes[members[0]], &sc = g.nodes[members[1]], &n = g.nodes[members[2]];
  if (!isOp(e.op, OpId::Exx2) || !isOp(sc.op, OpId::LayerNormScale) || !isOp(n.op, OpId::LayerNormNorm))
    return std::nullopt;
  const bool hasW = attrOr(n, "weight", 1.0) != 0.0, hasB = attrOr(n, "bias", 1.0) != 0.0;
  if (n.inputs.size() != 3u + hasW + hasB || e.inputs.size() != 1 || sc.inputs.size() != 1 ||
      n.inputs[0] != e.inputs[0] || n.inputs[1] != e.output || sc.inputs[0] != e.output || n.inputs[2] != sc.output)
    return std::nullopt;
  const Value &x = g.values[n.inputs[0]], &out = g.values[n.output];
  const std::string where = "node %" + out.name + " = " + n.op + " (row-fused layer norm)";
  requireFloat(x, where);
  if (x.shape.empty() || out.shape != x.shape || out.dtype != x.dtype)
    return std::nullopt;
  requireNonEmpty(x.shape, where);
  if (misfitAffineParam(g, n, x))
    return std::nullopt;
  const size_t r = x.shape.size();
  const DataFormat xf = deviceFormat(x.dtype, where);
  const int64_t eps = elemsPerStick(xf);
  const auto labels = dimLabels(r);
  const std::vector<int64_t> &N = x.shape;
  const std::vector<int64_t> adjusted = stickAdjusted(N, eps);
  // Whole rows per core (the row walk needs the stick dim whole): the rows split, unevenly
  // where that spreads them further (1151 rows: 31 x 36 + 35).
  std::vector<bool> splittable(r, true);
  splittable[r - 1] = false;
  const std::vector<SpanTensor> spans = {genericSpanTensor(x.name, identityDims(r), N, eps),
                                         genericSpanTensor(out.name, identityDims(r), N, eps)};
  auto [splits, stickSplit] =
      divideRowsThenStick(adjusted, splittable, spans, maxCores, [](const std::vector<int64_t> &) { return int64_t{1}; });
  (void)stickSplit;
  KernelDraft kd = newDraft(index, isa::kFusedOpFunc, "sfp", labels, N, splits,
                            "fused_exx2_layernormscale_layernormnorm");
  SuperDsc &s = kd.s;
  unevenDimsSlowest(s, adjusted);
  const std::vector<int64_t> perCore = perCoreElems(N, splits, {r - 1}, eps);
  s.primaryDsInfo["OUTPUT"] = genericLayout(labels, eps);
  s.primaryDsInfo["KERNEL"] = genericLayout({labels.back()}, eps);
  std::vector<int> all(r, 1), column(r, -1);
  column[r - 1] = 1;
  auto place = [&](int v, const std::vector<int> &scale, const char *type) {
    SdscTensor t;
    t.ldsIdx = static_cast<int>(s.labeledDs.size());
    t.dsName = "Tensor" + std::to_string(t.ldsIdx);
    t.dsType = type;
    t.scale = scale;
    t.dataFormat = xf;
    placeTensor(s, t, perCore);
    s.labeledDs.push_back(t);
    kd.tensorValues.push_back(v);
    return t.ldsIdx;
  };
  // Inputs x[, w][, b], then the output; computeOp_: exx2 (a row reduction: E[x] and E[x^2]),
  // layernormscale on it (a row op), layernormnorm (per stick) storing the output.
  const int xi = place(n.inputs[0], all, "OUTPUT");
  s.inputs.push_back(xi);
  isa::SdscComputeOp stat, scale, norm;
  stat.opFuncName = "exx2";
  stat.inputs = {xi};
  stat.inputConsts = {""};
  scale.opFuncName = "layernormscale";
  scale.inputs = {isa::fusedResultRef(0)};
  scale.inputConsts = {""};
  s.constants["op1_eps"] = attrOr(sc, "eps", 1e-5);
  norm.opFuncName = "layernormnorm";
  norm.inputs = {xi, isa::fusedResultRef(0), isa::fusedResultRef(1)};
  norm.inputConsts = {"", "", ""};
  size_t next = 3;
  for (auto [present, name, value] : {std::tuple{hasW, "weight", 1.0}, std::tuple{hasB, "bias", 0.0}}) {
    if (present) {
      const int ti = place(n.inputs[next++], column, "KERNEL");
      s.inputs.push_back(ti);
      norm.inputs.push_back(ti);
      norm.inputConsts.push_back("");
    } else {
      norm.inputs.push_back(-1);
      norm.inputConsts.push_back(std::string("op2_") + name);
      s.constants[std::string("op2_") + name] = value;
    }
  }
  s.inputConsts.assign(s.inputs.size(), "");
  const int o = place(n.output, all, "OUTPUT");
  s.outputs = {o};
  norm.outputs = {o};
  s.fusedOps = {stat, scale, norm};
  // Rows that do not fit LX: the three kernels.
  if (!backend::supportsRowFused(s))
    return std::nullopt;
  return kd;
}

} // namespace spyre::frontend::detail
