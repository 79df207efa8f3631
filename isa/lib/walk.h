// The dry run shared by the verifier and the timing model (internal to spyre_isa).
//
// It executes only the scalar part of one core's program (li/addi/muli/tbl and counted loops;
// registers start at 0 except r0 = core id) and shows every executed instruction to a visitor
// with the scalar state it sees. Everything a static check or a cost needs is a function of
// that state, so a visitor can be exact without touching data.
//
// Loops of millions of iterations are walked in a handful of visits, exactly: every scalar
// instruction is affine, so one loop iteration maps the register state s to A·s + b. Once
// three consecutive entry states satisfy s[j+2] - s[j+1] == s[j+1] - s[j] = d, then A·d = d and
// every later entry state is s[j] + (i - j)·d; every value computed inside the body (addresses
// included) is then affine in the iteration number i. The walker therefore visits iterations
// 0.., j, j+1 (two consecutive ones: alignment of an affine sequence is decided by its first
// value and its step) and the last one (range: an affine function is extreme at its ends),
// and gives the last visit the weight of all iterations it stands for. The same holds with
// period p <= 4 for F^p (double/triple buffering alternates addresses): once s[j+2p] - s[j+p]
// == s[j+p] - s[j], each residue class of iterations mod p has affine entry states, so the
// walker visits iterations j..j+2p-1 and the last p iterations, jumping only when the
// remaining count is a multiple of p so that the iteration visited just before the jump has the
// residue of the one really before it (outstanding DMAs alternate with the buffers they touch). Token state is also exact: a
// body's effect on "token outstanding" is idempotent (each touched token ends in the state its
// last issue/wait leaves it), so all iterations after the first start alike.
// 64-bit overflow of scalar arithmetic is an error (the affine argument needs exact integers,
// and a wrapped address is a bug anyway). Loops whose state never becomes a translation of
// period <= 4 (e.g. a register doubling each iteration) are walked iteration by iteration,
// still exactly.
#pragma once
#include "spyre/isa/limits.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/program.h"
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace spyre::isa::detail {

struct ScalarState {
  int core = 0;
  std::array<int64_t, kNumSRegs> r{};
};

class WalkVisitor {
public:
  virtual ~WalkVisitor() = default;
  /// Called for every executed instruction (a loop once per entry, before its body) with the
  /// scalar state it reads. `weight` is how many dynamic executions this visit stands for
  /// (>= 1); `depth` is the loop nesting depth (0 = top level).
  virtual void visit(const Instr &in, const ScalarState &s, uint64_t weight, int depth) = 0;
};

/// Dry-runs `p` as core `core` of `k`. Throws spyre::Error (see instrError) on a scalar register
/// index out of range, a per-core table without an entry for the core, or 64-bit overflow, and
/// when it needs more than KernelLimits::maxDryRunVisits visits (a deep nest of loops costs the
/// product of a few visits per level; `why`, when given, is added to that error: the reason the
/// symbolic check could not do without the dry run).
void walkProgram(const Kernel &k, const CoreProgram &p, int core, WalkVisitor &v, std::string_view why = {},
                 uint64_t maxVisits = kKernelLimits.maxDryRunVisits);

/// What walkProgram throws when it runs out of visits (a spyre::Error with the message above).
class DryRunBudgetExceeded : public Error {
public:
  using Error::Error;
};

/// Shows every instruction of `p` once, in program order, with `weight` = its exact dynamic
/// execution count (the product of the trip counts around it; bodies of loops that run 0 times
/// are skipped) and a state holding only r0: for visitors that count and never read registers.
/// O(program size), iterative.
void walkStructure(const Kernel &k, const CoreProgram &p, int core, WalkVisitor &v);

/// Value of scalar register `r` (-1 = no register = 0).
int64_t regValue(const Kernel &k, const ScalarState &s, const Instr &in, int r);

/// "ld.dl16", "dma.in", ...
std::string mnemonicText(const Instr &in);

/// Throws spyre::Error("kernel K, core C, line L, <mnemonic>[ <operand>]: <what>").
[[noreturn]] void instrError(const Kernel &k, int core, const Instr &in, const std::string &operand,
                             const std::string &what);

} // namespace spyre::isa::detail
