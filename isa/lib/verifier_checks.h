// The verifier's checkers, one rule per row of instructions.def in each (private to spyre_isa).
#pragma once
#include "spyre/isa/program.h"
#include <cstdint>
#include <vector>

namespace spyre::isa::detail {

/// The dynamic rules (addresses and the token protocol) on the dry run of core `core` running
/// `p` (verifier_dynamic.cpp). Throws spyre::Error on the first violation.
void checkDynamic(const Kernel &k, const CoreProgram &p, int core, const std::vector<uint64_t> &argBytes,
                  int64_t lxBytes);

} // namespace spyre::isa::detail
