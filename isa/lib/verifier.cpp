#include "spyre/isa/verifier.h"
#include "spyre/isa/limits.h"
#include <array>
#include <functional>
#include "verifier_checks.h"
#include "walk.h"
#include <algorithm>
#include <string>

namespace spyre::isa {
using detail::Row;
namespace {

using detail::instrError;
using detail::ScalarState;

std::string rangeText(int first, int last) {
  return first == last ? std::to_string(first) : std::to_string(first) + ".." + std::to_string(last);
}

[[noreturn]] void kernelError(const Kernel &k, const std::string &what) {
  throw Error("kernel " + k.name + ": " + what);
}

std::string formatSuffixes(uint8_t mask) {
  std::string s;
  if (mask & FMT_DL16) s += " .dl16";
  if (mask & FMT_F32) s += " .f32";
  if (mask & FMT_I32) s += " .i32";
  return s;
}

// ---------------------------------------------------------------------------------------------
// Static rules: everything that does not depend on register values. Checked once per program
// (reported for its first core) before any dry run, so the walker only sees valid operands.
// ---------------------------------------------------------------------------------------------
class StaticChecker {
public:
  StaticChecker(const Kernel &k, int core) : k_(k), core_(core) {}

  void body(const std::vector<Instr> &b, int depth) {
    for (const auto &in : b)
      instr(in, depth);
  }

private:
  const Kernel &k_;
  int core_;

  [[noreturn]] void fail(const Instr &in, const std::string &operand, const std::string &what) const {
    instrError(k_, core_, in, operand, what);
  }
  void sreg(const Instr &in, int r, bool optional) const {
    if ((optional && r == -1) || (r >= 0 && r < kNumSRegs))
      return;
    fail(in, "r" + std::to_string(r), "scalar register out of range r0..r" + std::to_string(kNumSRegs - 1));
  }
  void token(const Instr &in, int t) const {
    if (t < 0 || t >= kNumTokens)
      fail(in, "t" + std::to_string(t), "token out of range t0..t" + std::to_string(kNumTokens - 1));
  }

  void instr(const Instr &in, int depth) {
    const OpInfo &info = opInfo(in.op);
    if (info.formats == FMT_NONE && in.fmt != Format::None)
      fail(in, "", "takes no format suffix");
    if (info.formats != FMT_NONE) {
      uint8_t bit = in.fmt == Format::DL16 ? FMT_DL16
                    : in.fmt == Format::F32 ? FMT_F32
                    : in.fmt == Format::I32 ? FMT_I32
                                            : 0;
      if (!(info.formats & bit))
        fail(in, "", "needs a format suffix, one of" + formatSuffixes(info.formats));
    }
    std::string_view ops = info.operands;
    int vi = 0, ri = 0, li = 0;
    for (size_t pos = 0; pos < ops.size(); pos += 2) {
      switch (ops[pos]) {
      case 'V': {
        int v = in.v[vi++];
        if (v < 0 || v >= kNumVRegs)
          fail(in, "v" + std::to_string(v), "vector register out of range v0..v" + std::to_string(kNumVRegs - 1));
        break;
      }
      case 'R': sreg(in, in.r[ri++], false); break;
      case 'L': sreg(in, (li == 0 ? in.lx : li == 1 ? in.lx2 : in.lx3).base, true); ++li; break;
      case 'D':
        sreg(in, in.ddr.base, true);
        if (in.ddr.arg < 0 || in.ddr.arg >= static_cast<int>(k_.args.size()))
          fail(in, ddrText(in.ddr, k_),
               "argument index " + std::to_string(in.ddr.arg) + " is not one of the kernel's " +
                   std::to_string(k_.args.size()) + " arguments");
        break;
      case 'S':
        for (int d = 0; d < 3; ++d)
          if (in.dma.n[d] < 1)
            fail(in, shapeText(in.dma),
                 "DMA shape entry n" + std::to_string(2 - d) + " = " + std::to_string(in.dma.n[d]) +
                     " must be >= 1");
        break;
      case 'O': token(in, in.outToken); break;
      case 'T':
        if (in.tokens.empty())
          fail(in, "", "needs at least one token");
        for (int t : in.tokens)
          token(in, t);
        break;
      case 'X':
        if (static_cast<int64_t>(in.table.size()) != k_.numCores)
          fail(in, "[...]", "per-core table has " + std::to_string(in.table.size()) +
                                " entries but the kernel has " + std::to_string(k_.numCores) + " cores");
        break;
      case 'N':
        if (in.imm < 0)
          fail(in, std::to_string(in.imm), "loop count must be >= 0");
        break;
      default: break;
      }
    }
    switch (in.op) {
#define INST(E, M, U, O, F, T, S) case Opcode::E: rule(Row<Opcode::E>{}, in, depth); break;
#include "spyre/isa/instructions.def"
#undef INST
    }
  }

  // One static rule per row of instructions.def (defined below the class).
// A rule per instruction that has checks beyond its operand kinds (defined below the class); every
  // other row of instructions.def gets the no-op template, so a new instruction needs no entry here.
  template <Opcode Op> void rule(Row<Op>, const Instr &, int) {}
  void rule(Row<Opcode::Li>, const Instr &in, int depth);
  void rule(Row<Opcode::Addi>, const Instr &in, int depth);
  void rule(Row<Opcode::Muli>, const Instr &in, int depth);
  void rule(Row<Opcode::Tbl>, const Instr &in, int depth);
  void rule(Row<Opcode::Loop>, const Instr &in, int depth);
  void rule(Row<Opcode::DmaMc>, const Instr &in, int depth);
  void rule(Row<Opcode::DmaGather>, const Instr &in, int depth);
  void rule(Row<Opcode::DmaScatter>, const Instr &in, int depth);
  void indexedDma(const Instr &in, const char *what) const;
  void rule(Row<Opcode::Splat>, const Instr &in, int depth);
  void rule(Row<Opcode::LdPad>, const Instr &in, int depth);
  void rule(Row<Opcode::Ldu>, const Instr &in, int depth);
  void rule(Row<Opcode::Stu>, const Instr &in, int depth);
  void rule(Row<Opcode::Bar>, const Instr &in, int depth);
  void scalarDest(const Instr &in) const;
  void elementCount(const Instr &in) const;
};

/// li, addi, muli, tbl: the destination is not r0.
void StaticChecker::scalarDest(const Instr &in) const {
  if (in.r[0] == 0)
    fail(in, "r0", "writes r0, which holds the core id and is read-only");
}
void StaticChecker::rule(Row<Opcode::Li>, const Instr &in, int) { scalarDest(in); }
void StaticChecker::rule(Row<Opcode::Addi>, const Instr &in, int) { scalarDest(in); }
void StaticChecker::rule(Row<Opcode::Muli>, const Instr &in, int) { scalarDest(in); }
void StaticChecker::rule(Row<Opcode::Tbl>, const Instr &in, int) { scalarDest(in); }
void StaticChecker::rule(Row<Opcode::Loop>, const Instr &in, int depth) { body(in.body, depth + 1); }

void StaticChecker::rule(Row<Opcode::DmaMc>, const Instr &in, int) {
  if (in.imm < 2 || in.imm > kMaxCohort)
    fail(in, std::to_string(in.imm), "multicast cohort size must be in 2.." + std::to_string(kMaxCohort));
}

/// dma.gather, dma.scatter: at least one entry and one table row; whole-stick LX boxes a
/// non-negative step apart.
void StaticChecker::indexedDma(const Instr &in, const char *what) const {
  const std::string w = what;
  if (in.imm < 1)
    fail(in, std::to_string(in.imm), w + " entry count n must be >= 1");
  if (in.imms[0] < 1)
    fail(in, std::to_string(in.imms[0]), w + " table rows must be >= 1");
  if (in.imms[1] < 0)
    fail(in, std::to_string(in.imms[1]), w + " row stride must be >= 0");
  if (in.imm > 1 && (in.imms[2] < 0 || in.imms[2] % 128 != 0))
    fail(in, std::to_string(in.imms[2]), w + " lxstep must be a non-negative multiple of 128");
}
void StaticChecker::rule(Row<Opcode::DmaGather>, const Instr &in, int) { indexedDma(in, "gather"); }
void StaticChecker::rule(Row<Opcode::DmaScatter>, const Instr &in, int) { indexedDma(in, "scatter"); }

void StaticChecker::rule(Row<Opcode::Splat>, const Instr &in, int) {
  if (in.imm < 0 || in.imm >= kLanes)
    fail(in, std::to_string(in.imm), "splat lane must be in 0..63");
}

/// ld.pad keeps n lanes (0 = all padding); ldu / stu move n >= 1 elements.
void StaticChecker::elementCount(const Instr &in) const {
  const int64_t lanes = in.fmt == Format::DL16 ? kLanes : kLanes / 2, least = in.op == Opcode::LdPad ? 0 : 1;
  if (in.imm < least || in.imm > lanes)
    fail(in, std::to_string(in.imm),
         std::string(opInfo(in.op).mnemonic) + (in.op == Opcode::LdPad ? " lane" : " element") +
             " count must be in " + std::to_string(least) + ".." + std::to_string(lanes) + " for " +
             std::string(formatName(in.fmt)));
}
void StaticChecker::rule(Row<Opcode::LdPad>, const Instr &in, int) { elementCount(in); }
void StaticChecker::rule(Row<Opcode::Ldu>, const Instr &in, int) { elementCount(in); }
void StaticChecker::rule(Row<Opcode::Stu>, const Instr &in, int) { elementCount(in); }

void StaticChecker::rule(Row<Opcode::Bar>, const Instr &in, int depth) {
  if (depth > 0)
    fail(in, "", "barrier inside a loop; bar is only allowed at the top level");
}


int topLevelBarriers(const CoreProgram &p) {
  return static_cast<int>(std::count_if(p.body.begin(), p.body.end(),
                                        [](const Instr &in) { return in.op == Opcode::Bar; }));
}

} // namespace

namespace {
/// Bytes each core sends and receives on the ring, per phase and direction (exact weights).
class RingTally final : public detail::WalkVisitor {
public:
  std::vector<std::array<uint64_t, 2>> sent{{0, 0}}, received{{0, 0}};
  void visit(const Instr &in, const detail::ScalarState &, uint64_t w, int depth) override {
    if (in.op == Opcode::Bar && depth == 0) {
      sent.push_back({0, 0});
      received.push_back({0, 0});
      return;
    }
    if (opInfo(in.op).unit != Unit::Ring || in.imms[0] < 0 || in.imms[0] > 1)
      return;
    uint64_t bytes = w * static_cast<uint64_t>(in.imm) * 128;
    (in.op == Opcode::RingSend ? sent : received).back()[in.imms[0]] += bytes;
  }
};
} // namespace

namespace {
/// One executed multicast as its cohort must agree on it: the resolved DDR and LX addresses,
/// the shape and the cohort size, in issue order per phase (weights included: a loop's
/// iterations are the same visits on every member that runs the same program).
struct McTransfer {
  const Instr *in;
  int phase;
  int64_t cohort, ddrArg, ddr, lx;
  uint64_t weight;
  bool sameTransfer(const McTransfer &o) const {
    return phase == o.phase && cohort == o.cohort && ddrArg == o.ddrArg && ddr == o.ddr && lx == o.lx &&
           weight == o.weight && in->dma.n == o.in->dma.n && in->dma.ddrStride == o.in->dma.ddrStride &&
           in->dma.lxStride == o.in->dma.lxStride;
  }
};

class McLog final : public detail::WalkVisitor {
public:
  explicit McLog(const Kernel &k) : k_(k) {}
  std::vector<McTransfer> transfers;
  void visit(const Instr &in, const detail::ScalarState &s, uint64_t w, int depth) override {
    if (in.op == Opcode::Bar && depth == 0)
      ++phase_;
    if (in.op != Opcode::DmaMc)
      return;
    transfers.push_back({&in, phase_, in.imm, in.ddr.arg, detail::regValue(k_, s, in, in.ddr.base) + in.ddr.offset,
                         detail::regValue(k_, s, in, in.lx.base) + in.lx.offset, w});
  }

private:
  const Kernel &k_;
  int phase_ = 0;
};

std::string mcText(const Kernel &k, const McTransfer &t) {
  return "line " + std::to_string(t.in->line) + " dma.mc of cohort " + std::to_string(t.cohort) + " in phase " +
         std::to_string(t.phase) + ": ddr[" + k.args[t.ddrArg] + "+" + hexText(t.ddr) + "], lx[" + hexText(t.lx) +
         "], " + shapeText(t.in->dma) + (t.weight > 1 ? " (x" + std::to_string(t.weight) + ")" : "");
}

/// Multicast agreement: every member of a cohort issues the same multicast transfers in the same
/// order as the cohort's first core. That is what makes "one DDR read, every member's LX
/// receives it" equal to the per-core copies the engines perform.
void checkMulticastCohorts(const Kernel &k) {
  std::vector<McLog> logs(k.numCores, McLog(k));
  for (int c = 0; c < k.numCores; ++c)
    detail::walkProgram(k, *k.programFor(c), c, logs[c]);
  auto fail = [&](int c, const std::string &what) {
    throw Error("kernel " + k.name + ", core " + std::to_string(c) + ": multicast cohort mismatch: " + what);
  };
  for (int c = 0; c < k.numCores; ++c) {
    for (const McTransfer &t : logs[c].transfers) {
      const int lead = cohortLeader(c, static_cast<int>(t.cohort));
      if (lead + t.cohort > k.numCores)
        fail(c, mcText(k, t) + " names cores " + std::to_string(lead) + ".." +
                    std::to_string(lead + t.cohort - 1) + " but the kernel has " + std::to_string(k.numCores) +
                    " cores");
    }
    if (logs[c].transfers.empty())
      continue;
    // Every member of c's cohort (by its first multicast) issues exactly c's transfers: none
    // skipped, added or changed (so a member without any multicast is caught too).
    const int size = static_cast<int>(logs[c].transfers[0].cohort), lead = cohortLeader(c, size);
    const auto &theirs = logs[c].transfers;
    for (int m = lead; m < lead + size; ++m) {
      const auto &mine = logs[m].transfers;
      for (size_t i = 0; i < std::max(mine.size(), theirs.size()); ++i) {
        if (i >= mine.size())
          fail(m, "core " + std::to_string(c) + " issues " + mcText(k, theirs[i]) + " but this core does not");
        if (i >= theirs.size())
          fail(m, "this core issues " + mcText(k, mine[i]) + " but core " + std::to_string(c) + " does not");
        if (!mine[i].sameTransfer(theirs[i]))
          fail(m, "this core issues " + mcText(k, mine[i]) + " where core " + std::to_string(c) + " issues " +
                      mcText(k, theirs[i]));
      }
    }
  }
}
} // namespace

namespace {
/// Whether programs execute ring or multicast instructions, and how many instructions they have.
struct UnitScan final : detail::WalkVisitor {
  bool ring = false, multicast = false;
  uint64_t instructions = 0; ///< of the last program walked, dead loop bodies excluded
  void visit(const Instr &in, const detail::ScalarState &, uint64_t, int) override {
    ++instructions;
    ring |= opInfo(in.op).unit == Unit::Ring;
    multicast |= in.op == Opcode::DmaMc;
  }
};
} // namespace

void verifyKernel(const Kernel &k, const std::vector<uint64_t> &argBytes, int64_t lxBytes) {
  checkKernelLimits(k); // first: every walk below relies on its depth bound
  if (k.numCores < 1 || k.numCores > 32)
    kernelError(k, "cores=" + std::to_string(k.numCores) + " is outside 1..32");
  if (argBytes.size() != k.args.size())
    kernelError(k, "declares " + std::to_string(k.args.size()) + " arguments but " +
                       std::to_string(argBytes.size()) + " argument sizes were bound");
  if (k.scalarArgs.size() > static_cast<size_t>(kMaxScalarArgs))
    kernelError(k, "declares " + std::to_string(k.scalarArgs.size()) + " scalar arguments; at most " +
                       std::to_string(kMaxScalarArgs) + " fit the LX argument block");
  for (const auto &a : k.scalarArgs)
    if (a.index < 0 || (a.fmt != Format::DL16 && a.fmt != Format::F32))
      kernelError(k, "scalar argument $" + std::to_string(a.index) + " needs a number >= 0 and format dl16 or f32");
  for (const auto &p : k.programs)
    if (p.firstCore < 0 || p.lastCore < p.firstCore || p.lastCore >= k.numCores)
      kernelError(k, ".core " + rangeText(p.firstCore, p.lastCore) + " is not a core range inside 0.." +
                         std::to_string(k.numCores - 1));
  // Coverage: each core runs exactly one program.
  for (int c = 0; c < k.numCores; ++c) {
    std::vector<const CoreProgram *> owners;
    for (const auto &p : k.programs)
      if (c >= p.firstCore && c <= p.lastCore)
        owners.push_back(&p);
    if (owners.empty())
      kernelError(k, "core " + std::to_string(c) + " is not covered by any .core range");
    if (owners.size() > 1)
      kernelError(k, "core " + std::to_string(c) + " is covered by more than one .core range (" +
                         rangeText(owners[0]->firstCore, owners[0]->lastCore) + " and " +
                         rangeText(owners[1]->firstCore, owners[1]->lastCore) + ")");
  }
  for (const auto &p : k.programs)
    StaticChecker(k, p.firstCore).body(p.body, 0);
  // Barriers are top level only (checked above), so counting them statically is exact.
  const CoreProgram &p0 = k.programs.front();
  for (const auto &p : k.programs)
    if (topLevelBarriers(p) != topLevelBarriers(p0))
      kernelError(k, "cores " + rangeText(p.firstCore, p.lastCore) + " reach " +
                         std::to_string(topLevelBarriers(p)) + " barriers but cores " +
                         rangeText(p0.firstCore, p0.lastCore) + " reach " +
                         std::to_string(topLevelBarriers(p0)) + "; every core must reach the same number");
  UnitScan kinds;
  for (const auto &p : k.programs) {
    kinds.instructions = 0;
    detail::walkStructure(k, p, p.firstCore, kinds);
    // The exact dry run costs a few visits per instruction for the kernels we generate; a deep
    // loop nest makes it exponential. Past a budget linear in the program the symbolic pass
    // (linear in the program, sound) decides instead, and the dry run again only when that
    // gives up, to decide exactly and word the error.
    const uint64_t quick = 16 * kinds.instructions + 4096;
    for (int c = p.firstCore; c <= p.lastCore; ++c) {
      try {
        detail::checkDynamic(k, p, c, argBytes, lxBytes, {}, quick);
        continue;
      } catch (const detail::DryRunBudgetExceeded &) {
      }
      if (std::optional<std::string> why = detail::proveDynamic(k, p, c, argBytes, lxBytes))
        detail::checkDynamic(k, p, c, argBytes, lxBytes, *why);
    }
  }
  const bool anyRing = kinds.ring, anyMulticast = kinds.multicast;
  if (anyMulticast)
    checkMulticastCohorts(k);
  // Ring pairing: what core c receives from direction d in phase p is exactly what its
  // neighbour sent in direction d in phase p-1 (and nothing sent goes unreceived).
  if (anyRing) {
    const int n = k.numCores;
    std::vector<RingTally> tally(n);
    for (int c = 0; c < n; ++c)
      detail::walkStructure(k, *k.programFor(c), c, tally[c]); // counts: weights only
    for (int c = 0; c < n; ++c)
      for (int d = 0; d < 2; ++d) {
        int from = d == 0 ? (c + n - 1) % n : (c + 1) % n;
        size_t phases = std::max(tally[c].received.size(), tally[from].sent.size() + 1);
        for (size_t p = 0; p < phases; ++p) {
          uint64_t got = p < tally[c].received.size() ? tally[c].received[p][d] : 0;
          uint64_t sent = p >= 1 && p - 1 < tally[from].sent.size() ? tally[from].sent[p - 1][d] : 0;
          if (got != sent)
            kernelError(k, "ring: core " + std::to_string(c) + " receives " + std::to_string(got) +
                               " bytes from direction " + std::to_string(d) + " in phase " + std::to_string(p) +
                               " but core " + std::to_string(from) + " sends it " + std::to_string(sent) +
                               " bytes in the phase before");
        }
      }
  }
}

} // namespace spyre::isa
