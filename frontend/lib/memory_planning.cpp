// Memory planning: intermediates share DDR buffers when their lifetimes (kernel ranges) do not
// overlap. See memory_planning.h.
#include "memory_planning.h"
#include "lowering.h"
#include <algorithm>

namespace spyre::frontend::detail {

void planMemory(const Graph &g, const std::vector<KernelDraft> &drafts, const std::set<int> &lxValues,
                std::map<int, int> &bufferOf, isa::JobPlan &plan, const std::function<SpyreTensorLayout(int)> &layoutOf,
                const std::function<int(int)> &newBuffer) {
  std::map<int, std::pair<size_t, size_t>> live; // value -> first, last kernel
  for (size_t ni = 0; ni < drafts.size(); ++ni)
    for (int v : drafts[ni].tensorValues) {
      if (lxValues.count(v) || bufferOf.count(v))
        continue; // LX-resident, or a graph input / output
      auto [it, fresh] = live.try_emplace(v, ni, ni);
      if (!fresh)
        it->second.second = ni;
    }
  std::vector<std::pair<int, std::pair<size_t, size_t>>> order(live.begin(), live.end());
  std::stable_sort(order.begin(), order.end(),
                   [](const auto &a, const auto &b) { return a.second.first < b.second.first; });
  struct Slot {
    int buffer;
    size_t freeAfter; // last kernel of its current value
  };
  std::vector<Slot> slots;
  for (const auto &[v, range] : order) {
    const Value &val = g.values[v];
    SpyreTensorLayout layout = layoutOf(v);
    const int64_t bytes = layout.deviceBytes();
    int best = -1;
    for (size_t si = 0; si < slots.size(); ++si) {
      if (slots[si].freeAfter >= range.first)
        continue;
      const int64_t have = plan.buffers[slots[si].buffer].layout.deviceBytes();
      if (best < 0) {
        best = static_cast<int>(si);
        continue;
      }
      const int64_t cur = plan.buffers[slots[best].buffer].layout.deviceBytes();
      // Smallest slot that fits, else the largest (it grows least).
      if ((have >= bytes && (cur < bytes || have < cur)) || (cur < bytes && have > cur))
        best = static_cast<int>(si);
    }
    if (best < 0) {
      slots.push_back({newBuffer(v), range.second});
      continue;
    }
    isa::BufferSpec &b = plan.buffers[slots[best].buffer];
    b.name += "|" + val.name;
    if (bytes > b.layout.deviceBytes()) {
      b.hostShape = val.shape;
      b.hostType = val.dtype;
      b.layout = layout;
    }
    slots[best].freeAfter = range.second;
    bufferOf[v] = slots[best].buffer;
  }
}

int Lowering::root(int v) const {
  for (auto it = aliasOf.find(v); it != aliasOf.end(); it = aliasOf.find(v))
    v = it->second;
  return v;
}

// After layout propagation every value's shape is its device shape, whose generic layout holds
// its bytes; a buffer records the host shape and the SpyreTensorLayout that maps it (what a
// graph output's host tensor is read through).
int Lowering::bufferFor(int v, isa::BufferSpec::Kind kind, int index) {
  auto it = bufferOf.find(v);
  if (it != bufferOf.end())
    return it->second;
  const Value &val = g.values[v];
  isa::BufferSpec b;
  b.name = val.name;
  b.kind = kind;
  b.index = index;
  b.hostShape = hostShapeOf(g, v);
  b.hostType = val.dtype;
  b.layout = deviceTensorLayout(g, v);
  plan.buffers.push_back(b);
  bufferOf[v] = static_cast<int>(plan.buffers.size()) - 1;
  return bufferOf[v];
}

void assignGraphBuffers(Lowering &l) {
  const Graph &g = l.g;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    l.plan.inputs.push_back(l.bufferFor(g.inputs[i], isa::BufferSpec::Kind::Input, static_cast<int>(i)));
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    int v = g.outputs[i];
    auto inIt = std::find(g.inputs.begin(), g.inputs.end(), v);
    bool isInput = inIt != g.inputs.end();
    l.plan.outputAliasesInput.push_back(isInput ? static_cast<int>(inIt - g.inputs.begin()) : -1);
    l.plan.outputs.push_back(isInput ? l.bufferOf[v]
                                     : l.bufferFor(v, isa::BufferSpec::Kind::Output, static_cast<int>(i)));
  }
}

void planBuffers(Lowering &l) {
  planMemory(l.g, l.drafts, l.lx.lxValues, l.bufferOf, l.plan, [&](int v) { return deviceTensorLayout(l.g, v); },
             [&](int v) { return l.bufferFor(v, isa::BufferSpec::Kind::Intermediate, 0); });
  for (Node &n : l.g.nodes)
    if (auto it = l.bufferOf.find(l.root(n.output)); it != l.bufferOf.end())
      n.notes["buffer"] = Attr(static_cast<double>(it->second));
}

} // namespace spyre::frontend::detail
