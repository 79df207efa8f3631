// LX scratchpad planning (torch-spyre `scratchpad/`, notes §4.7): which intermediate tensors
// stay in each core's LX between kernels instead of round-tripping through DDR, and where.
//
// The solver is torch-spyre's GreedyLayoutSolver over lifetime-bound buffers: buffers are
// sized per core, live over [start, end) in op order, and get one LX address that is the same
// on every core. At each transition time the buffers ending there are freed, then each buffer
// starting there is placed:
//   1. on an in-place parent's address, if the parent is live and at least as large;
//   2. else at 0 if nothing is live or the lowest live address leaves room below it;
//   3. else at the high-water mark (rounded up to the alignment) if it fits;
//   4. else in the first aligned gap between live allocations;
//   5. else nowhere: the buffer stays in DDR. No eviction, no defragmentation.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace spyre::frontend {

/// torch-spyre's usable LX per core (2 MiB less the 20 % reserve) and its alignment.
inline constexpr int64_t kLxUsableBytes = 1677721;
inline constexpr int64_t kLxAlign = 128;

struct LxBuffer {
  std::string name;
  int64_t size = 0;             ///< bytes per core
  int start = 0, end = 0;       ///< live over op indices [start, end)
  std::vector<int> inPlaceParents; ///< indices of buffers whose slot this one may take over
};

struct LxPlan {
  std::vector<std::optional<int64_t>> address; ///< per buffer; nullopt = stays in DDR
  int64_t peakBytes = 0;                      ///< highest end address ever allocated
  /// One line per buffer: "name size=N live=[s,e) -> lx 0x..." or "-> ddr".
  std::string summary(const std::vector<LxBuffer> &buffers) const;
};

/// The greedy solver. Throws spyre::Error for malformed buffers (size < 1, end <= start,
/// parent index out of range or not an earlier buffer).
LxPlan planLxGreedy(const std::vector<LxBuffer> &buffers, int64_t capacity = kLxUsableBytes,
                    int64_t align = kLxAlign);

} // namespace spyre::frontend
