// The verifier's checkers (private to spyre_isa): each dispatches every row of instructions.def to
// rule(Row<Opcode>, ...), an overload where the instruction has a rule of its own, else a no-op.
#pragma once
#include "spyre/isa/limits.h"
#include "spyre/isa/program.h"
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spyre::isa::detail {

/// Tag selecting the verifier rule of one instruction (overload resolution picks a rule of its own
/// over the no-op template).
template <Opcode Op> struct Row {};

/// The dynamic rules (addresses and the token protocol) on the dry run of core `core` running
/// `p` (verifier_dynamic.cpp). Throws spyre::Error on the first violation.
/// At most `maxVisits` visits (walk.h: DryRunBudgetExceeded past them); `why` is added to that error.
void checkDynamic(const Kernel &k, const CoreProgram &p, int core, const std::vector<uint64_t> &argBytes,
                  int64_t lxBytes, std::string_view why = {}, uint64_t maxVisits = kKernelLimits.maxDryRunVisits);

/// The same rules proved symbolically for every iteration at once, in time linear in the program
/// (verifier_symbolic.cpp). Sound, not complete: nullopt means every rule checkDynamic checks
/// holds; otherwise the reason it could not prove them (a possible violation, or a loop outside
/// its model), and checkDynamic decides exactly.
std::optional<std::string> proveDynamic(const Kernel &k, const CoreProgram &p, int core,
                                        const std::vector<uint64_t> &argBytes, int64_t lxBytes);

} // namespace spyre::isa::detail
