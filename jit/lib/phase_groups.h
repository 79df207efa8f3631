// Which (core program, phase) pairs of a kernel can share one compiled function.
//
// Kernels with one program per core (K-split matmuls: 32 programs) repeat the same code with
// different `li` immediates (each core's DDR and LX offsets), and each copy used to cost a full
// O2 code generation (≈ 4 ms). Phases that are equal up to `li` immediates compile once; an
// immediate that differs between them is read from a per-core table indexed by the core id,
// exactly as the `tbl` instruction does, so the semantics are unchanged.
#pragma once
#include "spyre/isa/program.h"
#include <cstdint>
#include <optional>
#include <vector>

namespace spyre::jit {

struct PhaseGroup {
  size_t phase = 0;
  std::vector<size_t> programs; ///< programs[0] is compiled; the others alias its function
  /// One entry per `li` of the phase in pre-order (loop bodies in place): the per-core values
  /// (indexed by core id, 0 for cores outside the group) if they differ between the programs,
  /// else nullopt (the immediate stays a constant).
  std::vector<std::optional<std::vector<int64_t>>> liTables;
};

/// The groups of the non-empty phases of `k`, in (phase, first program) order.
std::vector<PhaseGroup> groupPhases(const isa::Kernel &k);

} // namespace spyre::jit
