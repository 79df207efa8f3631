// The verifier's checkers (private to spyre_isa): each dispatches every row of instructions.def to
// rule(Row<Opcode>, ...), an overload where the instruction has a rule of its own, else a no-op.
#pragma once
#include "spyre/isa/program.h"
#include <cstdint>
#include <vector>

namespace spyre::isa::detail {

/// Tag selecting the verifier rule of one instruction (overload resolution picks a rule of its own
/// over the no-op template).
template <Opcode Op> struct Row {};

/// The dynamic rules (addresses and the token protocol) on the dry run of core `core` running
/// `p` (verifier_dynamic.cpp). Throws spyre::Error on the first violation.
void checkDynamic(const Kernel &k, const CoreProgram &p, int core, const std::vector<uint64_t> &argBytes,
                  int64_t lxBytes);

} // namespace spyre::isa::detail
