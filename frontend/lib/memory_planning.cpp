// Memory planning: intermediates share DDR buffers when their lifetimes (kernel ranges) do not
// overlap. See memory_planning.h.
#include "memory_planning.h"
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

} // namespace spyre::frontend::detail
