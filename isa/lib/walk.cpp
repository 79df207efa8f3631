#include "walk.h"
#include <sstream>

namespace spyre::isa::detail {

std::string mnemonicText(const Instr &in) {
  std::string m(opInfo(in.op).mnemonic);
  if (in.fmt != Format::None)
    m += "." + std::string(formatName(in.fmt));
  return m;
}

void instrError(const Kernel &k, int core, const Instr &in, const std::string &operand,
                const std::string &what) {
  std::string msg = "kernel " + k.name + ", core " + std::to_string(core) + ", line " +
                    std::to_string(in.line) + ", " + mnemonicText(in);
  if (!operand.empty())
    msg += " " + operand;
  throw Error(msg + ": " + what);
}

int64_t regValue(const Kernel &k, const ScalarState &s, const Instr &in, int r) {
  if (r < 0)
    return 0;
  if (r >= kNumSRegs)
    instrError(k, s.core, in, "r" + std::to_string(r),
               "scalar register out of range r0..r" + std::to_string(kNumSRegs - 1));
  return s.r[r];
}

namespace {

class Walker {
public:
  Walker(const Kernel &k, WalkVisitor &v, uint64_t maxVisits, std::string_view why)
      : k_(k), v_(v), maxVisits_(maxVisits), visitsLeft_(maxVisits), why_(why) {}

  void body(const std::vector<Instr> &b, ScalarState &s, uint64_t w, int depth) {
    for (const auto &in : b)
      step(in, s, w, depth);
  }

private:
  const Kernel &k_;
  WalkVisitor &v_;
  uint64_t maxVisits_, visitsLeft_;
  std::string_view why_;

  [[noreturn]] void tooCostly(const ScalarState &s) const {
    std::string msg = "kernel " + k_.name + ", core " + std::to_string(s.core) + ": the dry run needs more than " +
                      std::to_string(maxVisits_) + " instruction visits (KernelLimits::maxDryRunVisits)";
    if (!why_.empty())
      msg += "; the symbolic check could not summarise it: " + std::string(why_);
    throw DryRunBudgetExceeded(msg);
  }

  [[noreturn]] void overflow(const Instr &in, const ScalarState &s) const {
    instrError(k_, s.core, in, "", "scalar arithmetic overflows 64 bits");
  }

  void set(const Instr &in, ScalarState &s, int64_t value) const {
    int rd = in.r[0];
    if (rd < 0 || rd >= kNumSRegs)
      instrError(k_, s.core, in, "r" + std::to_string(rd),
                 "scalar register out of range r0..r" + std::to_string(kNumSRegs - 1));
    if (rd > 0) // r0 is read-only: the interpreter ignores the write, the verifier rejects it
      s.r[rd] = value;
  }

  void step(const Instr &in, ScalarState &s, uint64_t w, int depth) {
    if (visitsLeft_-- == 0)
      tooCostly(s);
    v_.visit(in, s, w, depth);
    int64_t out = 0;
    switch (in.op) {
    case Opcode::Li: set(in, s, in.imm); return;
    case Opcode::Addi:
      if (__builtin_add_overflow(regValue(k_, s, in, in.r[1]), in.imm, &out))
        overflow(in, s);
      set(in, s, out);
      return;
    case Opcode::Muli:
      if (__builtin_mul_overflow(regValue(k_, s, in, in.r[1]), in.imm, &out))
        overflow(in, s);
      set(in, s, out);
      return;
    case Opcode::Tbl:
      if (s.core >= static_cast<int>(in.table.size()))
        instrError(k_, s.core, in, "", "per-core table has no entry for core " + std::to_string(s.core));
      set(in, s, in.table[s.core]);
      return;
    case Opcode::Loop: loop(in, s, w, depth); return;
    default: return;
    }
  }

  static bool sameDelta(const ScalarState &a, const ScalarState &b, const ScalarState &c) {
    // b - a == c - b, computed without overflow.
    for (int i = 0; i < kNumSRegs; ++i)
      if (static_cast<__int128>(b.r[i]) - a.r[i] != static_cast<__int128>(c.r[i]) - b.r[i])
        return false;
    return true;
  }

  /// s0 + k·(s1 - s0), exactly; overflow is an error attributed to the loop.
  ScalarState extrapolate(const Instr &loopIn, const ScalarState &s0, const ScalarState &s1,
                          int64_t k) const {
    ScalarState out = s0;
    for (int i = 0; i < kNumSRegs; ++i) {
      __int128 d = static_cast<__int128>(s1.r[i]) - s0.r[i], v = 0;
      if (__builtin_mul_overflow(d, static_cast<__int128>(k), &v) || (v += s0.r[i]) > INT64_MAX ||
          v < INT64_MIN)
        instrError(k_, s0.core, loopIn, "",
                   "scalar register r" + std::to_string(i) + " overflows 64 bits in this loop");
      out.r[i] = static_cast<int64_t>(v);
    }
    return out;
  }

  // Periods up to this are recognised (p = 2 is double buffering, 3 triple buffering).
  static constexpr int kMaxPeriod = 4;
  static constexpr int kHistory = 2 * kMaxPeriod + 1;

  void loop(const Instr &in, ScalarState &s, uint64_t w, int depth) {
    const int64_t n = in.imm;
    if (n <= 0)
      return;
    // hist[i % kHistory] = entry state of iteration i (the last kHistory iterations).
    std::array<ScalarState, kHistory> hist;
    ScalarState cur = s;
    for (int64_t i = 0; i < n; ++i) {
      hist[i % kHistory] = cur;
      // Period-p translation from j = i - 2p (walk.h, with F^p for F): iterations j..i-1, two
      // consecutive members of every residue class mod p, were visited; the last p iterations
      // (the last member of each class) stand for all iterations i..n-1.
      // The jump also waits until n - i is a multiple of p: the last iteration visited before
      // it (i - 1) then has the residue of iteration n - p - 1, whose effects (outstanding DMAs
      // and the LX they touch, which alternate with the buffers) the next visit must see.
      for (int64_t p = 1; p <= kMaxPeriod && 2 * p <= i && n - i >= p; ++p) {
        if ((n - i) % p != 0)
          continue;
        if (!sameDelta(hist[(i - 2 * p) % kHistory], hist[(i - p) % kHistory], cur))
          continue;
        const int64_t j = i - 2 * p;
        for (int64_t x = n - p; x < n; ++x) {
          int64_t r = (x - j) % p;
          ScalarState st = extrapolate(in, hist[(j + r) % kHistory], hist[(j + r + p) % kHistory], (x - j - r) / p);
          // Iterations in [i, n) congruent to x mod p.
          uint64_t count = static_cast<uint64_t>((x - (i + (x - i) % p)) / p + 1), xw = 0;
          if (__builtin_mul_overflow(w, count, &xw))
            instrError(k_, s.core, in, "", "more than 2^64 dynamic instructions");
          body(in.body, st, xw, depth + 1);
          if (x == n - 1)
            s = st;
        }
        return;
      }
      body(in.body, cur, w, depth + 1);
    }
    s = cur;
  }
};

} // namespace

void walkProgram(const Kernel &k, const CoreProgram &p, int core, WalkVisitor &v, std::string_view why,
                 uint64_t maxVisits) {
  ScalarState s;
  s.core = core;
  s.r[0] = core;
  Walker(k, v, maxVisits, why).body(p.body, s, 1, 0);
}

void walkStructure(const Kernel &k, const CoreProgram &p, int core, WalkVisitor &v) {
  ScalarState s;
  s.core = core;
  s.r[0] = core;
  forEachNested(p.body, uint64_t{1}, [&](const Instr &in, uint64_t w, int depth, uint64_t &inner) {
    v.visit(in, s, w, depth);
    if (in.op != Opcode::Loop || in.imm <= 0)
      return false;
    if (__builtin_mul_overflow(w, static_cast<uint64_t>(in.imm), &inner))
      instrError(k, core, in, "", "more than 2^64 dynamic instructions");
    return true;
  });
}

} // namespace spyre::isa::detail
