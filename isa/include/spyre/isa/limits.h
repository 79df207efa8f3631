// The bounds the ISA library accepts, as data: one place that says how big a kernel may be, so
// that every reader (the listing parser, the verifier, the timing model, the engines) works in
// bounded time and memory and rejects anything larger with a clear error. docs/isa.md §6
// ("Limits") lists them; the real kernels are far inside (loop depth ≤ 3, a few hundred
// instructions).
#pragma once
#include "spyre/isa/program.h"
#include <cstddef>
#include <cstdint>

namespace spyre::isa {

struct KernelLimits {
  /// Loops nested inside each other (a top-level `loop` is depth 1). Every walker over a loop
  /// nest may recurse this deep and no deeper.
  int maxLoopDepth = 64;
  /// Static instructions in one kernel, all core programs and loop bodies together.
  int64_t maxInstructions = int64_t{1} << 18;
  /// The product of the trip counts of the loops around any instruction (its dynamic execution
  /// count per entry of the program): products are computed exactly and must fit in int64.
  int64_t maxTripProduct = INT64_MAX;
  /// Instruction visits of the exact dry run of one core (walk.h). The verifier needs it only
  /// for loops its symbolic pass cannot summarise (rotating registers, DMAs in flight across
  /// iterations: double buffering), where a loop costs a few body walks per nesting level.
  uint64_t maxDryRunVisits = uint64_t{1} << 22;
  /// Bytes in one listing line (a 32-entry `tbl` of int64 values is under 1 KiB).
  size_t maxListingLineBytes = 64 * 1024;
};

/// The limits every tool and library entry point uses.
inline constexpr KernelLimits kKernelLimits{};

/// Throws spyre::Error naming the kernel, core, line and what was exceeded when `k` breaks one
/// of `limits` (loop depth, instruction count, trip-count product). Iterative: safe on any
/// in-memory kernel, however deep. verifyKernel calls it first; so do the engines' prepare().
void checkKernelLimits(const Kernel &k, const KernelLimits &limits = kKernelLimits);

} // namespace spyre::isa
