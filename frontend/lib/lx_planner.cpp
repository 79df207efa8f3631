// torch-spyre's GreedyLayoutSolver (see lx_planner.h for the placement rules).
#include "spyre/frontend/lx_planner.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

namespace spyre::frontend {

namespace {
int64_t alignUp(int64_t x, int64_t a) { return (x + a - 1) / a * a; }
} // namespace

LxPlan planLxGreedy(const std::vector<LxBuffer> &buffers, int64_t capacity, int64_t align) {
  for (size_t i = 0; i < buffers.size(); ++i) {
    const LxBuffer &b = buffers[i];
    std::string where = "LX planning: buffer " + std::to_string(i) + " (" + b.name + ")";
    if (b.size < 1)
      throw Error(where + ": size " + std::to_string(b.size) + " must be >= 1");
    if (b.end <= b.start)
      throw Error(where + ": lifetime [" + std::to_string(b.start) + ", " + std::to_string(b.end) + ") is empty");
    for (int p : b.inPlaceParents)
      if (p < 0 || static_cast<size_t>(p) >= i)
        throw Error(where + ": in-place parent " + std::to_string(p) + " is not an earlier buffer");
  }
  LxPlan plan;
  plan.address.assign(buffers.size(), std::nullopt);
  std::set<int> times;
  for (const auto &b : buffers)
    times.insert({b.start, b.end});
  // Live allocations: index -> address (a parent and its in-place child may share one).
  std::map<int, int64_t> live;
  for (int t : times) {
    for (auto it = live.begin(); it != live.end();)
      it = buffers[it->first].end == t ? live.erase(it) : std::next(it);
    for (size_t i = 0; i < buffers.size(); ++i) {
      const LxBuffer &b = buffers[i];
      if (b.start != t)
        continue;
      std::optional<int64_t> at;
      for (int p : b.inPlaceParents)
        if (live.count(p) && b.size <= buffers[p].size) {
          at = live[p];
          break;
        }
      if (!at) {
        // Live ranges sorted by address.
        std::vector<std::pair<int64_t, int64_t>> used;
        for (auto [j, a] : live)
          used.push_back({a, a + buffers[j].size});
        std::sort(used.begin(), used.end());
        int64_t high = 0;
        for (auto [lo, hi] : used)
          high = std::max(high, hi);
        if (used.empty() || used.front().first >= b.size) {
          if (b.size <= capacity)
            at = 0;
        } else if (alignUp(high, align) + b.size <= capacity) {
          at = alignUp(high, align);
        } else {
          int64_t cursor = 0;
          for (auto [lo, hi] : used) {
            int64_t gap = alignUp(cursor, align);
            if (gap + b.size <= lo) {
              at = gap;
              break;
            }
            cursor = std::max(cursor, hi);
          }
        }
      }
      if (at) {
        plan.address[i] = at;
        live[static_cast<int>(i)] = *at;
        plan.peakBytes = std::max(plan.peakBytes, *at + b.size);
      }
    }
  }
  return plan;
}

std::string LxPlan::summary(const std::vector<LxBuffer> &buffers) const {
  std::string s;
  char buf[64];
  for (size_t i = 0; i < buffers.size(); ++i) {
    const LxBuffer &b = buffers[i];
    s += b.name + " size=" + std::to_string(b.size) + " live=[" + std::to_string(b.start) + "," +
         std::to_string(b.end) + ") -> ";
    if (address[i]) {
      std::snprintf(buf, sizeof buf, "lx 0x%llx", static_cast<unsigned long long>(*address[i]));
      s += buf;
    } else {
      s += "ddr";
    }
    s += "\n";
  }
  return s;
}

} // namespace spyre::frontend
