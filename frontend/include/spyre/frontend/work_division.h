// Work division: how an op's iteration space is split over the cores (torch-spyre
// `work_division.py`, notes §4.5), in its three passes:
//   pass 1 span reduction  — no core may span more than 256 MiB of any tensor (mandatory);
//   pass 2 matmul cost model — batchmatmul only, an analytic µs model over (b, m, n, k) splits;
//   pass 3 work distribution — the largest divisor per output dim in decreasing size, then at
//                              most one reduction dim; Pass-1 commits are lower bounds.
// Sizes are stick-adjusted: a dim that indexes a stick counts sticks, so splits fall on stick
// boundaries. Uneven splits (our extension, docs/superdsc.md §2: every slice ceil(n / splits)
// but a shorter last one) only for the kernels whose lowerings take them (allowUneven), and only
// where they shrink the largest core's share below the best even split's.
#pragma once
#include <functional>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace spyre::frontend {

inline constexpr int64_t kMaxSpanBytes = int64_t{256} << 20;

/// One tensor as pass 1 sees it: its device dims outer -> inner, each indexed by one iteration
/// dim (-1: none) with its extent in device units (rows, or sticks for the stick dim); the
/// innermost unit is one 128-byte stick.
struct SpanTensor {
  std::string name;
  std::vector<std::pair<int, int64_t>> dims;
};

/// Bytes one core spans of `t` under `splits`: the outermost device dim whose per-core extent
/// is > 1 contributes that extent, every inner dim its whole extent (torch-spyre's
/// get_per_core_span; once an outer dim is split down to one index per core, the span is
/// measured from the next dim in).
int64_t perCoreSpan(const SpanTensor &t, const std::vector<int64_t> &splits);

/// Pass 1: the splits (1 = none) each tensor larger than kMaxSpanBytes forces, walking its
/// device dims outer -> inner: the fewest cores that bring it within the limit, else the most
/// the core budget allows and on to the next dim. Commits of different tensors combine as lower
/// bounds. Throws Unsupported when more than one reduction dim would have to be split.
std::vector<int64_t> spanReduction(const std::vector<int64_t> &sizes, const std::vector<bool> &isReduction,
                                   const std::vector<SpanTensor> &tensors, int maxCores);

/// Pass 3 with Pass-1 commits: each output dim (decreasing size) takes its commit times the
/// largest divisor of the rest that fits the remaining cores; then, if cores remain and no
/// reduction dim was committed, the single reduction dim with the largest such divisor
/// (unless `splitReduction` is false: divideWork, whose other dims are never split).
/// allowUneven: the same walk with uneven splits of uncommitted output dims (unevenSplit) and no
/// reduction split, kept only if its largestShare is below the even plan's.
std::vector<int64_t> distributeWork(const std::vector<int64_t> &sizes, const std::vector<bool> &isReduction,
                                    const std::vector<int64_t> &commits, int maxCores, bool splitReduction = true,
                                    bool allowUneven = false);

/// The number of slices of an uneven split of n units over at most `limit` cores: slices of
/// q = ceil(n / min(n, limit)) units and a shorter last one, so ceil(n / q) of them (33 over 32
/// is 17 slices of 2 and one of 1 → 17; 1151 over 32 is 31 of 36 and one of 35 → 32).
int64_t unevenSplit(int64_t n, int64_t limit);
/// Units of the largest core's share: Π ceil(sizes[d] / splits[d]).
int64_t largestShare(const std::vector<int64_t> &sizes, const std::vector<int64_t> &splits);

/// Largest divisor of n that is <= limit (1 if none is larger).
int64_t largestDivisor(int64_t n, int64_t limit);

/// A tensor in the generic stick layout whose dim j is indexed by iteration dim iterDims[j]
/// (-1: broadcast) over extents[j] device units (sticks for the last dim, rows otherwise).
SpanTensor genericSpanTensor(std::string name, const std::vector<int> &iterDims, const std::vector<int64_t> &extents);
/// The sizes work division sees for a shape in the generic layout: the last (stick) dim counted
/// in sticks of `eps` elements, so splits fall on stick boundaries.
std::vector<int64_t> stickAdjusted(std::vector<int64_t> shape, int64_t eps);
/// The same from a tensor's element shape: its last dim in sticks of `eps` elements.
SpanTensor genericSpanTensor(std::string name, const std::vector<int> &iterDims, std::vector<int64_t> shape,
                             int64_t eps);
/// iterDims 0, 1, .., rank - 1: a tensor whose dims are the op's iteration dims in order.
std::vector<int> identityDims(size_t rank);

/// Passes 1 and 3 for ops other than matmul: the span commits of `tensors`, then the largest
/// divisors per splittable dim. A commit on a dim the op keeps on one core (!splittable) is
/// dropped: that span stays over 256 MiB (torch-spyre only warns when it cannot meet the limit).
std::vector<int64_t> divideWorkWithSpan(const std::vector<int64_t> &adjustedSizes, const std::vector<bool> &splittable,
                                        const std::vector<SpanTensor> &tensors, int maxCores, bool allowUneven = false);

/// The division of a row reduction whose stick dim may split too (reduction.cpp,
/// layernorm_ops.cpp): rows first, unevenly where that shrinks a core's share; where
/// `stickSplitOf` (given row splits) asks for a stick split, the rows are divided again evenly
/// (the ring chain's partners hold equal rows) and the last (stick) dim takes the split
/// stickSplitOf gives for those. Returns the splits and the stick split (1: none).
std::pair<std::vector<int64_t>, int64_t>
divideRowsThenStick(const std::vector<int64_t> &adjustedSizes, const std::vector<bool> &splittable,
                    const std::vector<SpanTensor> &tensors, int maxCores,
                    const std::function<int64_t(const std::vector<int64_t> &)> &stickSplitOf);

/// A batchmatmul as pass 2 sees it (element counts; N and K are split in sticks of 64).
struct MatmulProblem {
  std::vector<int64_t> batch; ///< batch dims of the output
  bool batchInBothInputs = true; ///< false for a 2-d weight shared over the batch
  int64_t M = 1, N = 1, K = 1;
  /// B arrives sticked on K (the kernel's transb): every core transposes the B tiles of its N
  /// slice, so matmulWorkDivision gives N (and B's own batch dims) the cores before M, and never
  /// splits K (transposedBDivision).
  bool transB = false;
};
struct MatmulSplit {
  std::vector<int64_t> batch;
  int64_t m = 1, n = 1, k = 1; ///< n, k in sticks
  double costUs = 0;
  int64_t cores() const;
};
/// torch-spyre's analytic cost of one split (µs): (compute + hbm + psum + tie) · b^1.4.
double matmulCostUs(const MatmulProblem &p, const MatmulSplit &s);
/// Pass 2: the cheapest split over all divisors with b·m·n·k <= maxCores (first minimum in
/// b, m, n, k order), or nullopt where torch-spyre declines: Pass 1 committed a split, not
/// exactly one row dim private to one input (a 2-d weight shared over batch dims), or the best
/// plan uses fewer cores than `pass3Cores`.
std::optional<MatmulSplit> costModelMatmulDivision(const MatmulProblem &p, int maxCores, bool pass1Committed,
                                                   int64_t pass3Cores);
/// Our extension: the cheapest split of M into m slices that m does not divide (every slice but
/// the last ceil(M/m) rows, the last shorter; no K split), costed as the padded problem
/// (ceil(M/m)·m rows); nullopt where none exists. matmulWorkDivision takes it only when it costs
/// less than kUnevenGain times the best even split.
std::optional<MatmulSplit> unevenMatmulDivision(const MatmulProblem &p, int maxCores);
inline constexpr double kUnevenGain = 0.8;
/// Our extension: rows of M per core below which the PT array's 8-row passes run part-empty.
/// Where pass 3 leaves each core fewer rows, matmulWorkDivision takes the cost model's plan even
/// when it uses fewer cores (torch-spyre declines then); a transposed-B division splits M no
/// finer than this. Small-M matmuls (a decoder's linears at seq 64) then load B on fewer cores:
/// 64x256x1000 14.69 -> 7.63 us simulated (docs/performance.md Log, 2026-12-03).
inline constexpr int64_t kPtFullRows = 8;
/// Rows of M per core at the least in a transposed-B division (where M is the only dim sharing
/// B): each core of an M split transposes and decodes the same B slice. 16 measured neutral in
/// simulated time against 8 (Llama 345.7 -> 345.5 us, ViT 397.3 -> 388.0, BERT 409.4 -> 410.1)
/// and 6-10 % less host time per warm forward (docs/performance.md Log, 2026-12-03).
inline constexpr int64_t kTransBMinRows = 16;

/// Our extension for a transposed B (MatmulProblem::transB; superdsc.md §2): the cores of one
/// N slice under an M split transpose the same B tiles (host work grows with m, simulated time
/// does not shrink), so the dims that give each core its own B (N, batch dims in both inputs)
/// take the cores first (pass 3's largest divisors, largest dim first), then the dims that
/// share B (M, possibly unevenly; batch dims of x only), never K. `commits` are pass 1's.
std::vector<int64_t> transposedBDivision(const MatmulProblem &p, const std::vector<int64_t> &commits, int maxCores);

/// All three passes for a batchmatmul over dims [batch..., M, N, K]: splits in that order
/// (N and K in sticks). `aBytes`... are derived from the shapes (DL16, generic layouts).
std::vector<int64_t> matmulWorkDivision(const MatmulProblem &p, int maxCores);

} // namespace spyre::frontend
