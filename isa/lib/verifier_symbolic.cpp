// The verifier's symbolic pass (verifier_checks.h): the dynamic rules of verifier_dynamic.cpp
// proved for all iterations of every loop at once, in time linear in the program size (not in
// the executed iterations, not exponential in the loop depth).
//
// Every register value is an affine form c + Σ k_i·t_i over the induction variables t_i ∈
// [0, n_i − 1] of the loops around the instruction. That is exact for a loop whose live-in
// registers (read in the body before being written) each advance by a constant per iteration
// (pointer increments, counters); every other register is written before it is read, so it is a
// function of those. Such a loop's body is walked once, its effect on the registers is an
// affine map computed once per loop (bottom up), and a check holds for every iteration when it
// holds over the box of the t_i: ranges from the extremes of the form, alignment from its
// coefficients. DMA tokens: a body in which every DMA it issues is waited before the body ends
// starts every later iteration with a subset of the outstanding DMAs of the first one, so one
// walk from the loop's entry state covers them all.
//
// The pass is sound, not complete: anything outside that model (a loop whose registers rotate
// or double, a DMA left in flight across iterations as double buffering does, an overlap the
// box cannot rule out, a possible overflow) makes it give up with a reason, and the verifier
// falls back to the exact dry run of walk.h, which reports the exact message. verifyKernel runs
// the dry run first with a budget linear in the program and this pass only past it.
#include "verifier_checks.h"
#include "walk.h"
#include <algorithm>
#include <climits>
#include <map>
#include <string>

namespace spyre::isa::detail {
namespace {

using i128 = __int128;

struct GiveUp {
  std::string why;
};

/// c + Σ k[i]·t_i; k may be shorter than the number of variables (missing coefficients are 0).
struct Aff {
  i128 c = 0;
  std::vector<i128> k;
};

i128 mul(i128 a, i128 b) {
  i128 r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw GiveUp{"affine coefficients overflow"};
  return r;
}
i128 add(i128 a, i128 b) {
  i128 r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw GiveUp{"affine coefficients overflow"};
  return r;
}

/// a + f·b
Aff axpy(const Aff &a, i128 f, const Aff &b) {
  Aff r = a;
  r.c = add(r.c, mul(f, b.c));
  if (r.k.size() < b.k.size())
    r.k.resize(b.k.size(), 0);
  for (size_t i = 0; i < b.k.size(); ++i)
    r.k[i] = add(r.k[i], mul(f, b.k[i]));
  return r;
}
Aff constant(i128 c) { return Aff{c, {}}; }
Aff plus(const Aff &a, i128 c) { return axpy(a, 1, constant(c)); }

/// One register after a code block as an affine function of the registers before it:
/// c + Σ coeff·in[reg], sparse (most rows name one or two registers).
struct Row {
  i128 c = 0;
  std::vector<std::pair<int, i128>> k;
  static Row of(int r) { return Row{0, {{r, 1}}}; }
  /// this + f·o
  Row &axpy(i128 f, const Row &o) {
    c = add(c, mul(f, o.c));
    for (const auto &[q, v] : o.k) {
      auto it = std::find_if(k.begin(), k.end(), [q = q](const auto &e) { return e.first == q; });
      if (it == k.end())
        k.emplace_back(q, mul(f, v));
      else
        it->second = add(it->second, mul(f, v));
    }
    std::erase_if(k, [](const auto &e) { return e.second == 0; });
    return *this;
  }
};

/// The registers after a code block as affine functions of those before it; only the rows of
/// registers the block changes are stored, so a summary costs memory in proportion to its body.
struct RegMap {
  std::vector<std::pair<int, Row>> rows;
  Row rowOf(int r) const {
    for (const auto &[q, row] : rows)
      if (q == r)
        return row;
    return Row::of(r);
  }
  void set(int r, Row row) {
    for (auto &[q, old] : rows)
      if (q == r) {
        old = std::move(row);
        return;
      }
    rows.emplace_back(r, std::move(row));
  }
  /// (this ∘ before): this map applied after `before`.
  RegMap after(const RegMap &before) const {
    RegMap out = before;
    for (const auto &[r, row] : rows) {
      Row composed{row.c, {}};
      for (const auto &[q, f] : row.k)
        composed.axpy(f, before.rowOf(q));
      out.set(r, std::move(composed));
    }
    return out;
  }
};

/// What a loop does, computed once per loop and core.
struct LoopSummary {
  std::array<bool, kNumSRegs> live{};    ///< read in the body before written
  std::array<bool, kNumSRegs> defined{}; ///< written on every execution of the body
  std::array<i128, kNumSRegs> step{};    ///< per-iteration increment of each live register
  RegMap loop;                           ///< all n iterations (n >= 1)
};

class Prover {
public:
  Prover(const Kernel &k, int core, const std::vector<uint64_t> &argBytes, int64_t lxBytes)
      : k_(k), core_(core), argBytes_(argBytes), lxBytes_(lxBytes) {}

  void program(const CoreProgram &p) {
    std::array<Aff, kNumSRegs> s;
    s[0] = constant(core_);
    walk(p.body, s, 0);
    endPhase();
  }

private:
  const Kernel &k_;
  int core_;
  const std::vector<uint64_t> &argBytes_;
  int64_t lxBytes_;
  std::vector<int64_t> range_; ///< the largest value of each induction variable
  std::map<const Instr *, LoopSummary> summaries_;
  std::array<const Instr *, kNumTokens> outstanding_{};
  std::array<std::pair<Aff, Aff>, kNumTokens> span_{};
  std::array<uint64_t, kNumTokens> serial_{}; ///< which issue a token's outstanding DMA is
  std::array<bool, kNumTokens> issued_{};
  uint64_t issues_ = 0;

  [[noreturn]] static void giveUp(const Instr &in, const std::string &why) {
    throw GiveUp{"line " + std::to_string(in.line) + ", " + mnemonicText(in) + ": " + why};
  }

  i128 lo(const Aff &a) const {
    i128 v = a.c;
    for (size_t i = 0; i < a.k.size(); ++i)
      if (a.k[i] < 0)
        v = add(v, mul(a.k[i], range_[i]));
    return v;
  }
  i128 hi(const Aff &a) const {
    i128 v = a.c;
    for (size_t i = 0; i < a.k.size(); ++i)
      if (a.k[i] > 0)
        v = add(v, mul(a.k[i], range_[i]));
    return v;
  }
  /// Every value of `a` is a multiple of m.
  bool multipleOf(const Aff &a, int64_t m) const {
    if (a.c % m != 0)
      return false;
    for (size_t i = 0; i < a.k.size(); ++i)
      if (range_[i] > 0 && a.k[i] % m != 0)
        return false;
    return true;
  }
  Aff scalarResult(const Instr &in, Aff v) const {
    if (lo(v) < INT64_MIN || hi(v) > INT64_MAX)
      giveUp(in, "scalar arithmetic may overflow 64 bits");
    return v;
  }
  static const Aff &reg(const std::array<Aff, kNumSRegs> &s, int r) {
    static const Aff zero;
    return r < 0 ? zero : s[r];
  }

  // ---- registers -----------------------------------------------------------------------------
  void walk(const std::vector<Instr> &body, std::array<Aff, kNumSRegs> &s, int depth) {
    for (const Instr &in : body) {
      visit(in, s, depth);
      const int rd = in.r[0];
      switch (in.op) {
      case Opcode::Li: if (rd > 0) s[rd] = constant(in.imm); break;
      case Opcode::Addi: if (rd > 0) s[rd] = scalarResult(in, plus(reg(s, in.r[1]), in.imm)); break;
      case Opcode::Muli: if (rd > 0) s[rd] = scalarResult(in, axpy(Aff{}, in.imm, reg(s, in.r[1]))); break;
      case Opcode::Tbl: if (rd > 0) s[rd] = constant(in.table[core_]); break;
      case Opcode::Loop: loop(in, s, depth); break;
      default: break;
      }
    }
  }

  static void reads(const Instr &in, std::array<bool, kNumSRegs> &live, const std::array<bool, kNumSRegs> &def) {
    auto use = [&](int r) {
      if (r >= 0 && !def[r])
        live[r] = true;
    };
    if (in.op == Opcode::Addi || in.op == Opcode::Muli)
      use(in.r[1]);
    for (const LxAddr *a : {&in.lx, &in.lx2, &in.lx3})
      use(a->base);
    use(in.ddr.base);
  }

  const LoopSummary &summary(const Instr &loopIn) {
    if (auto it = summaries_.find(&loopIn); it != summaries_.end())
      return it->second;
    LoopSummary sum;
    RegMap b;
    for (const Instr &in : loopIn.body) {
      if (in.op == Opcode::Loop) {
        if (in.imm <= 0)
          continue;
        const LoopSummary &inner = summary(in); // depth <= KernelLimits::maxLoopDepth
        for (int r = 0; r < kNumSRegs; ++r) {
          sum.live[r] = sum.live[r] || (inner.live[r] && !sum.defined[r]);
          sum.defined[r] = sum.defined[r] || inner.defined[r];
        }
        b = inner.loop.after(b);
        continue;
      }
      reads(in, sum.live, sum.defined);
      const int rd = in.r[0];
      if (rd <= 0 || opInfo(in.op).unit != Unit::Scalar)
        continue;
      Row row;
      if (in.op == Opcode::Li)
        row.c = in.imm;
      else if (in.op == Opcode::Tbl)
        row.c = in.table[core_];
      else
        row.axpy(in.op == Opcode::Addi ? 1 : in.imm, b.rowOf(in.r[1]));
      if (in.op == Opcode::Addi)
        row.c = add(row.c, in.imm);
      b.set(rd, std::move(row));
      sum.defined[rd] = true;
    }
    // Every live register must advance by a constant: its row is itself plus a constant.
    RegMap shift; // the live registers advanced n - 1 times
    for (int r = 0; r < kNumSRegs; ++r) {
      if (!sum.live[r])
        continue;
      Row row = b.rowOf(r);
      if (row.k.size() != 1 || row.k[0].first != r || row.k[0].second != 1)
        giveUp(loopIn, "register r" + std::to_string(r) + " does not advance by a constant per iteration");
      sum.step[r] = row.c;
      if (row.c != 0)
        shift.set(r, Row{mul(loopIn.imm - 1, row.c), {{r, 1}}});
    }
    // n iterations = one iteration entered with the live registers advanced n - 1 times.
    sum.loop = b.after(shift);
    return summaries_.emplace(&loopIn, sum).first->second;
  }

  void loop(const Instr &in, std::array<Aff, kNumSRegs> &s, int depth) {
    if (in.imm <= 0)
      return;
    const LoopSummary &sum = summary(in);
    const size_t var = range_.size();
    range_.push_back(in.imm - 1);
    std::array<Aff, kNumSRegs> inner = s;
    for (int r = 0; r < kNumSRegs; ++r)
      if (sum.live[r] && sum.step[r] != 0) {
        inner[r].k.resize(var + 1, 0);
        inner[r].k[var] = sum.step[r];
        scalarResult(in, inner[r]);
      }
    const auto before = serial_;
    const auto wasOutstanding = outstanding_;
    walk(in.body, inner, depth + 1);
    for (int t = 0; t < kNumTokens; ++t)
      if (outstanding_[t] && (!wasOutstanding[t] || serial_[t] != before[t]))
        giveUp(*outstanding_[t], "its token t" + std::to_string(t) +
                                     " is still outstanding at the end of the loop body it is issued in");
    range_.pop_back();
    std::array<Aff, kNumSRegs> out = s;
    for (const auto &[r, row] : sum.loop.rows) {
      Aff v = constant(row.c);
      for (const auto &[q, f] : row.k)
        v = axpy(v, f, s[q]);
      out[r] = std::move(v);
    }
    s = std::move(out);
  }

  // ---- the dynamic rules (verifier_dynamic.cpp), over every value of each form -----------------
  void inside(const Instr &in, const Aff &a, i128 bytes, int64_t align, i128 limit) const {
    if (lo(a) < 0 || hi(a) + bytes > limit)
      giveUp(in, "an access may leave its memory");
    if (!multipleOf(a, align))
      giveUp(in, "an address may be misaligned");
  }

  void touch(const Instr &in, const Aff &lo0, const Aff &hi0, bool write) const {
    for (int t = 0; t < kNumTokens; ++t) {
      const Instr *dma = outstanding_[t];
      if (!dma || dma == &in || (!isDmaToLx(dma->op) && !write))
        continue;
      // No overlap iff hi <= span.lo or span.hi <= lo for every value.
      if (hi(axpy(hi0, -1, span_[t].first)) <= 0 || hi(axpy(span_[t].second, -1, lo0)) <= 0)
        continue;
      giveUp(in, "may touch LX that the DMA at line " + std::to_string(dma->line) + " (token t" +
                     std::to_string(t) + ") has in flight");
    }
  }

  void access(const Instr &in, const LxAddr &at, const std::array<Aff, kNumSRegs> &s, int64_t bytes,
              int64_t align, bool write) const {
    Aff a = plus(reg(s, at.base), at.offset);
    inside(in, a, bytes, align, lxBytes_);
    touch(in, a, plus(a, bytes), write);
  }

  void dma(const Instr &in, const std::array<Aff, kNumSRegs> &s) {
    const DmaShape &d = in.dma;
    for (bool lx : {true, false}) {
      const auto &stride = lx ? d.lxStride : d.ddrStride;
      Aff base = lx ? plus(reg(s, in.lx.base), in.lx.offset) : plus(reg(s, in.ddr.base), in.ddr.offset);
      const i128 limit = lx ? lxBytes_ : static_cast<i128>(argBytes_[in.ddr.arg]);
      for (int64_t i2 : {int64_t{0}, d.n[0] - 1})
        for (int64_t i1 : {int64_t{0}, d.n[1] - 1})
          inside(in, plus(base, static_cast<i128>(i2) * stride[0] + static_cast<i128>(i1) * stride[1]),
                 static_cast<i128>(d.n[2]) * 128, lx ? 128 : 1, limit);
      if (lx)
        for (int dim = 0; dim < 2; ++dim)
          if (d.n[dim] > 1 && stride[dim] % 128 != 0)
            giveUp(in, "lx.stride is not a multiple of 128");
    }
    i128 first = 0, last = 0;
    for (int64_t i2 : {int64_t{0}, d.n[0] - 1})
      for (int64_t i1 : {int64_t{0}, d.n[1] - 1}) {
        i128 off = static_cast<i128>(i2) * d.lxStride[0] + static_cast<i128>(i1) * d.lxStride[1];
        first = std::min(first, off);
        last = std::max(last, off);
      }
    const Aff base = plus(reg(s, in.lx.base), in.lx.offset);
    Aff spanLo = plus(base, first), spanHi = plus(base, last + static_cast<i128>(d.n[2]) * 128);
    const int t = in.outToken;
    if (outstanding_[t])
      giveUp(in, "token t" + std::to_string(t) + " may be reused while outstanding");
    touch(in, spanLo, spanHi, isDmaToLx(in.op));
    span_[t] = {spanLo, spanHi};
    outstanding_[t] = &in;
    serial_[t] = ++issues_;
    issued_[t] = true;
  }

  void endPhase() {
    for (int t = 0; t < kNumTokens; ++t)
      if (outstanding_[t])
        giveUp(*outstanding_[t], "token t" + std::to_string(t) + " may not be waited before its phase ends");
    issued_.fill(false);
  }

  void visit(const Instr &in, const std::array<Aff, kNumSRegs> &s, int depth) {
    const int64_t esize = in.fmt == Format::DL16 ? 2 : 4;
    switch (in.op) {
    case Opcode::Ld:
      if (const Aff a = plus(reg(s, in.lx.base), in.lx.offset); hi(a) >= kScalarArgLxBase) {
        // The scalar-argument block (program.h): a declared slot of the right format is fine;
        // anything else is left to the dry run, which words the error.
        const i128 off = lo(a) - kScalarArgLxBase, slot = off / 128;
        if (lo(a) != hi(a) || off < 0 || off % 128 != 0 || slot >= static_cast<i128>(k_.scalarArgs.size()) ||
            k_.scalarArgs[static_cast<size_t>(slot)].fmt != in.fmt)
          giveUp(in, "an access may leave its memory");
        return;
      }
      access(in, in.lx, s, 128, 128, false);
      return;
    case Opcode::LdPad: access(in, in.lx, s, 128, 128, false); return;
    case Opcode::St: access(in, in.lx, s, 128, 128, true); return;
    case Opcode::Ldu: access(in, in.lx, s, in.imm * esize, esize, false); return;
    case Opcode::Stu: access(in, in.lx, s, in.imm * esize, esize, true); return;
    case Opcode::PtTr: {
      const int64_t R = in.imm, C = in.imms[0];
      if (R < 64 || C < 64 || R % 64 != 0 || C % 64 != 0)
        giveUp(in, "bad transpose shape");
      access(in, in.lx, s, R * C * 2, 128, true);
      access(in, in.lx2, s, R * C * 2, 128, false);
      return;
    }
    case Opcode::PtMm:
    case Opcode::PtOut: {
      const int64_t M = in.imm, N = in.imms[0], K = in.op == Opcode::PtMm ? in.imms[1] : 64;
      if (M < 1 || N < 64 || N % 64 != 0 || K < 64 || K % 64 != 0 ||
          (in.op == Opcode::PtMm && in.imms[2] != 0 && in.imms[2] != 1))
        giveUp(in, "bad tile shape");
      if (in.op == Opcode::PtMm) {
        access(in, in.lx, s, N / 32 * M * 128, 128, true);
        access(in, in.lx2, s, K / 64 * M * 128, 128, false);
        access(in, in.lx3, s, N / 64 * K * 128, 128, false);
      } else {
        access(in, in.lx, s, N / 64 * M * 128, 128, true);
        access(in, in.lx2, s, N / 32 * M * 128, 128, false);
      }
      return;
    }
    case Opcode::RingSend:
    case Opcode::RingRecv:
    case Opcode::RingPsum:
      if (in.imm < 1 || (in.imms[0] != 0 && in.imms[0] != 1))
        giveUp(in, "bad ring operands");
      access(in, in.lx, s, in.imm * 128, 128, in.op != Opcode::RingSend);
      return;
    case Opcode::DmaIn:
    case Opcode::DmaMc:
    case Opcode::DmaOut: dma(in, s); return;
    case Opcode::DmaGather: giveUp(in, "dma.gather is verified by the dry run");
    case Opcode::DmaScatter: giveUp(in, "dma.scatter is verified by the dry run");
    case Opcode::Wait:
      for (int t : in.tokens) {
        if (!outstanding_[t] && !issued_[t])
          giveUp(in, "waits a token that may not be issued in the phase");
        outstanding_[t] = nullptr;
      }
      return;
    case Opcode::Bar:
      if (depth == 0)
        endPhase();
      return;
    default: return;
    }
  }
};

} // namespace

std::optional<std::string> proveDynamic(const Kernel &k, const CoreProgram &p, int core,
                                        const std::vector<uint64_t> &argBytes, int64_t lxBytes) {
  try {
    Prover(k, core, argBytes, lxBytes).program(p);
    return std::nullopt;
  } catch (const GiveUp &g) {
    return g.why;
  }
}

} // namespace spyre::isa::detail
