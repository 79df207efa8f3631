// The LX planning pass: candidates and lifetimes from the drafted kernels, torch-spyre's greedy
// solver (lx_planner.cpp), then the rewrite of the drafts (memOrg_ lx, lxReservedBytes_).
#include "lx_planning.h"
#include "lowering.h"
#include "spyre/frontend/ops.h"
#include "spyre/backend/backend.h"
#include <algorithm>
#include <map>
#include <optional>

namespace spyre::frontend::detail {

namespace {

/// What one kernel sees of a tensor: its cores, each core's start offset in the tensor's
/// buffer, and the per-core extent of each of the tensor's device dims (outer -> inner, sticks
/// on the stick dim). Equal views = each core reads exactly the slice the producer's core wrote.
struct CoreView {
  int cores = 0;
  std::vector<int64_t> offsets;
  std::vector<int64_t> extents;
  bool operator==(const CoreView &) const = default;
  int64_t bytes() const {
    int64_t b = 128;
    for (int64_t e : extents)
      b *= e;
    return b;
  }
};

std::optional<CoreView> viewOf(const isa::SuperDsc &s, const isa::SdscTensor &t) {
  if (t.inLx || t.isView())
    return std::nullopt;
  const isa::SdscLayout &l = s.primaryDsInfo.at(t.dsType);
  CoreView v;
  v.cores = s.numCoresUsed;
  const uint64_t seg = static_cast<uint64_t>(t.ldsIdx) * isa::kSegmentBytes;
  for (int c = 0; c < s.numCoresUsed; ++c)
    v.offsets.push_back(static_cast<int64_t>(t.startAddress.at(c) - seg));
  // Device dims outer -> inner; the stick dim's entry counts sticks (its elements fill a stick).
  std::vector<std::string> dims(l.layoutDimOrder.rbegin(), l.layoutDimOrder.rend());
  const int64_t eps = l.stickSize.empty() ? 64 : l.stickSize[0];
  for (size_t k = 0; k < dims.size(); ++k) {
    int d = s.dimIndex(dims[k]);
    const bool stick = !l.stickDimOrder.empty() && dims[k] == l.stickDimOrder[0];
    int64_t e = 1;
    if (t.scale.at(d) == 1) {
      const int64_t units = stick ? (s.N[d] + eps - 1) / eps : s.N[d], splits = std::max<int64_t>(1, s.numWkSlicesPerDim[d]);
      e = (units + splits - 1) / splits; // uneven: the longest slice
    }
    v.extents.push_back(e);
  }
  return v;
}

bool producesLxReusable(const std::string &name) {
  // torch-spyre OP_OUTPUT_GOOD_FOR_LX_REUSE (max is our amax), plus (our extension) the kernels
  // whose lowerings write an LX-resident output: layer norm's three, matmul, dtype ops, and every
  // pointwise op (the SFP walk writes any of them in place: a cos no longer loses LX residency
  // when the x * 1 after it goes).
  const OpInfo *op = findOp(name);
  if (!op)
    return false;
  for (OpId o : {OpId::Amax, OpId::Sum, OpId::Exp, OpId::Sub, OpId::Mul, OpId::Mean, OpId::Add, OpId::Rsqrt})
    if (op->id == o)
      return true;
  return op->cls == OpClass::LayerNorm || op->cls == OpClass::Matmul || op->cls == OpClass::Convert ||
         op->cls == OpClass::Pointwise;
}

bool inPlaceOp(const std::string &name) {
  // torch-spyre OP_GOOD_FOR_LX_INPLACE.
  const OpInfo *op = findOp(name);
  return op && (op->id == OpId::Exp || op->id == OpId::Sub || op->id == OpId::Add || op->id == OpId::Rsqrt);
}

} // namespace

LxPlanningResult planLxResidency(const Graph &g, std::vector<KernelDraft> &drafts,
                                 const std::vector<int> &nodeOfDraft, int64_t capacity) {
  LxPlanningResult res;
  const int n = static_cast<int>(drafts.size());
  // LX the kernels keep for their own staging whatever the plan places (capacity <= usable).
  const int64_t staging = kLxUsableBytes - capacity;
  std::vector<bool> capable(n);
  for (int i = 0; i < n; ++i)
    capable[i] = backend::supportsLxReservation(drafts[i].s, staging);

  // Uses of every value: (kernel, ldsIdx) pairs, producer first.
  std::map<int, std::vector<std::pair<int, int>>> uses;
  for (int i = 0; i < n; ++i)
    for (size_t t = 0; t < drafts[i].tensorValues.size(); ++t)
      uses[drafts[i].tensorValues[t]].push_back({i, static_cast<int>(t)});
  auto isBoundary = [&](int v) {
    return std::find(g.inputs.begin(), g.inputs.end(), v) != g.inputs.end() ||
           std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
  };

  std::vector<LxBuffer> buffers;
  std::vector<int> bufferValue;
  std::map<int, int> bufferOf;
  std::vector<CoreView> bufferView;
  // The values each kernel produces: its node's, or every output of a fused kernel.
  std::map<int, const Node *> producer;
  for (const Node &nd : g.nodes)
    producer[nd.output] = &nd;
  std::vector<std::pair<int, int>> produced; // (kernel, value)
  for (int i = 0; i < n; ++i) {
    if (!drafts[i].s.isFused()) {
      produced.push_back({i, g.nodes.at(nodeOfDraft.at(i)).output});
      continue;
    }
    for (int o : drafts[i].s.outputs)
      produced.push_back({i, drafts[i].tensorValues.at(static_cast<size_t>(o))});
  }
  for (auto [i, v] : produced) {
    const Node &node = *producer.at(v);
    const auto &u = uses[v];
    if (isBoundary(v) || !producesLxReusable(node.op) || u.size() < 2 || u.front().first != i)
      continue;
    // Every kernel from the producer to the last reader must stage above lxReservedBytes_, and
    // every kernel touching the value must read/write it in place (a matmul's y or K-split
    // operands, a transpose, ...: backend::supportsLxResidentOperand).
    const int last = u.back().first;
    bool ok = true;
    for (int k = i; k <= last && ok; ++k)
      ok = capable[k];
    for (auto [k, t] : u)
      ok = ok && backend::supportsLxResidentOperand(drafts[k].s, drafts[k].s.labeledDs.at(t).ldsIdx, staging);
    // No core-division mismatch between the producer and any consumer.
    std::optional<CoreView> view;
    for (auto [k, t] : u) {
      if (!ok)
        break;
      auto vk = viewOf(drafts[k].s, drafts[k].s.labeledDs.at(t));
      ok = vk.has_value() && (!view || *vk == *view);
      if (!view)
        view = vk;
    }
    if (!ok)
      continue;
    LxBuffer b;
    b.name = g.values[v].name;
    b.size = view->bytes();
    b.start = i;
    b.end = last + 1;
    // In place: an input candidate whose last use is this op, of the same per-core view.
    if (inPlaceOp(node.op) && !drafts[i].s.isFused()) // a fused kernel's outputs could share a parent
      for (int in : node.inputs) {
        auto it = bufferOf.find(in);
        if (it != bufferOf.end() && buffers[it->second].end == i + 1 && bufferView[it->second] == *view)
          b.inPlaceParents.push_back(it->second);
      }
    bufferOf[v] = static_cast<int>(buffers.size());
    buffers.push_back(b);
    bufferValue.push_back(v);
    bufferView.push_back(*view);
  }
  if (buffers.empty())
    return res;

  LxPlan plan = planLxGreedy(buffers, capacity);
  res.summary = plan.summary(buffers);
  std::vector<int64_t> reserved(n, 0);
  for (size_t b = 0; b < buffers.size(); ++b) {
    if (!plan.address[b])
      continue;
    const int v = bufferValue[b];
    const int64_t addr = *plan.address[b];
    res.lxValues.insert(v);
    res.address[v] = addr;
    for (auto [k, t] : uses[v]) {
      isa::SdscTensor &ts = drafts[k].s.labeledDs.at(t);
      ts.inLx = true;
      ts.startAddress.assign(drafts[k].s.numCoresUsed, static_cast<uint64_t>(addr));
    }
    for (int k = buffers[b].start; k < buffers[b].end; ++k)
      reserved[k] = std::max(reserved[k], (addr + buffers[b].size + 127) / 128 * 128);
  }
  for (int k = 0; k < n; ++k)
    drafts[k].s.lxReservedBytes = reserved[k];
  return res;
}

void planLx(Lowering &l, const CompileOptions &opts) {
  if (!opts.lxPlanning)
    return;
  l.lx = planLxResidency(l.g, l.drafts, l.nodeOfDraft, opts.lxPlanBytes);
  if (!opts.dumpDir.empty())
    writeFile(opts.dumpDir + "/lx_plan.txt", l.lx.summary);
  for (Node &n : l.g.nodes)
    if (auto it = l.lx.address.find(n.output); it != l.lx.address.end())
      n.notes["lx"] = Attr(static_cast<double>(it->second));
}

} // namespace spyre::frontend::detail
