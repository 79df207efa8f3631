// The dynamic rules of the verifier: addresses and the token protocol, on the dry run of one
// core (walk.h). One rule per row of instructions.def (the switch in visit is generated from
// it, so a row without a rule fails to compile).
#include "verifier_checks.h"
#include "walk.h"
#include <algorithm>
#include <array>
#include <climits>
#include <string>

namespace spyre::isa {
using detail::Row;
namespace {

using detail::instrError;
using detail::ScalarState;

class DynamicChecker final : public detail::WalkVisitor {
public:
  DynamicChecker(const Kernel &k, int core, const std::vector<uint64_t> &argBytes, int64_t lxBytes)
      : k_(k), core_(core), argBytes_(argBytes), lxBytes_(lxBytes) {}

  void visit(const Instr &in, const ScalarState &s, uint64_t, int depth) override {
    switch (in.op) {
#define INST(E, M, U, O, F, T, S)                                                                    \
  case Opcode::E: rule(Row<Opcode::E>{}, in, s, depth); return;
#include "spyre/isa/instructions.def"
#undef INST
    }
  }

  void endProgram() { endPhase(nullptr); }

private:
  const Kernel &k_;
  int core_;
  const std::vector<uint64_t> &argBytes_;
  int64_t lxBytes_;
  int phase_ = 0;
  std::array<const Instr *, kNumTokens> outstanding_{};
  std::array<std::pair<__int128, __int128>, kNumTokens> span_{}; ///< LX bytes of an outstanding DMA
  std::array<bool, kNumTokens> issued_{};

  [[noreturn]] void fail(const Instr &in, const std::string &operand, const std::string &what) const {
    instrError(k_, core_, in, operand, what);
  }
  int64_t reg(const Instr &in, const ScalarState &s, int r) const { return detail::regValue(k_, s, in, r); }
  static std::string num(__int128 v) {
    if (v >= INT64_MIN && v <= INT64_MAX)
      return std::to_string(static_cast<int64_t>(v));
    return v < 0 ? "< -2^63" : "> 2^63";
  }

  /// Checks every row of a DMA on the LX side (`lx`) or the DDR side. Rows start at
  /// base + i2·stride2 + i1·stride1 and are n0 sticks long; the start is affine in (i2, i1), so
  /// the extreme rows are corners and alignment follows from the base and the strides actually
  /// used (a stride only matters when its dimension has more than one row).
  /// `extra` moves the whole box (a dma.gather's entry i on the LX side, its row j on the DDR side).
  void dmaRows(const Instr &in, const ScalarState &s, bool lx, __int128 extra = 0) const {
    const DmaShape &d = in.dma;
    const auto &stride = lx ? d.lxStride : d.ddrStride;
    __int128 base = extra + (lx ? static_cast<__int128>(reg(in, s, in.lx.base)) + in.lx.offset
                                : static_cast<__int128>(reg(in, s, in.ddr.base)) + in.ddr.offset);
    __int128 run = static_cast<__int128>(d.n[2]) * 128;
    __int128 limit = lx ? lxBytes_ : static_cast<__int128>(argBytes_[in.ddr.arg]);
    std::string op = lx ? lxText(in.lx) : ddrText(in.ddr, k_);
    std::string what = lx ? "LX" : "DDR";
    std::string bound = lx ? "the usable LX [0, " + std::to_string(lxBytes_) + ")"
                           : "argument " + k_.args[in.ddr.arg] + " of " +
                                 std::to_string(argBytes_[in.ddr.arg]) + " bytes";
    for (int64_t i2 : {int64_t{0}, d.n[0] - 1})
      for (int64_t i1 : {int64_t{0}, d.n[1] - 1}) {
        __int128 start = base + static_cast<__int128>(i2) * stride[0] + static_cast<__int128>(i1) * stride[1];
        if (start < 0 || start + run > limit)
          fail(in, op, "DMA row (" + std::to_string(i2) + "," + std::to_string(i1) + ") covers " + what +
                           " [" + num(start) + ", " + num(start + run) + "), outside " + bound);
      }
    if (!lx)
      return;
    if (base % 128 != 0)
      fail(in, op, "LX address " + num(base) + " is not 128-byte aligned");
    for (int dim = 0; dim < 2; ++dim)
      if (d.n[dim] > 1 && stride[dim] % 128 != 0)
        fail(in, op, "lx.stride " + std::to_string(stride[dim]) + " of dimension n" +
                         std::to_string(2 - dim) + " is not a multiple of 128, so DMA rows are misaligned");
  }

  /// The LX bytes a DMA touches, as one interval from its lowest to its highest row.
  std::pair<__int128, __int128> dmaLxSpan(const Instr &in, const ScalarState &s) const {
    __int128 base = static_cast<__int128>(reg(in, s, in.lx.base)) + in.lx.offset;
    auto [lo, hi] = dmaLxExtent(in);
    return {base + lo, base + hi};
  }

  /// Asynchronous DMA: LX that an outstanding dma.in is filling may not be read or written, and
  /// LX that an outstanding dma.out is reading may not be written, until its token is waited.
  /// (This is what lets the engines complete a DMA at issue without any observable difference.)
  void touch(const Instr &in, const std::string &op, __int128 lo, __int128 hi, bool write) const {
    for (int t = 0; t < kNumTokens; ++t) {
      const Instr *dma = outstanding_[t];
      if (!dma || dma == &in || hi <= span_[t].first || span_[t].second <= lo)
        continue;
      bool filling = isDmaToLx(dma->op);
      if (!filling && !write)
        continue;
      fail(in, op, std::string(write ? "writes" : "reads") + " LX [" + num(lo) + ", " + num(hi) + ") while " +
                       detail::mnemonicText(*dma) + " at line " + std::to_string(dma->line) + " (token t" +
                       std::to_string(t) + ") is still " + (filling ? "filling" : "reading") + " LX [" +
                       num(span_[t].first) + ", " + num(span_[t].second) + "); wait t" + std::to_string(t) +
                       " first");
    }
  }

  void tokenFree(const Instr &in) const {
    int t = in.outToken;
    if (const Instr *prev = outstanding_[t])
      fail(in, "-> t" + std::to_string(t),
           "token t" + std::to_string(t) + " reused while still outstanding (issued by " +
               detail::mnemonicText(*prev) + " at line " + std::to_string(prev->line) + ", not yet waited)");
  }

  void issue(const Instr &in, __int128 lo, __int128 hi) {
    int t = in.outToken;
    span_[t] = {lo, hi};
    outstanding_[t] = &in;
    issued_[t] = true;
  }

  void endPhase(const Instr *bar) {
    for (int t = 0; t < kNumTokens; ++t) {
      const Instr *prev = outstanding_[t];
      if (!prev)
        continue;
      std::string what = "token t" + std::to_string(t) + " (issued by " + detail::mnemonicText(*prev) +
                         " at line " + std::to_string(prev->line) + ") is not waited before the end of phase " +
                         std::to_string(phase_);
      if (bar)
        fail(*bar, "", what);
      throw Error("kernel " + k_.name + ", core " + std::to_string(core_) + ", end of program: " + what);
    }
    issued_.fill(false);
    ++phase_;
  }

// A rule per instruction that has checks beyond its operand kinds (defined below the class); every
  // other row of instructions.def gets the no-op template, so a new instruction needs no entry here.
  template <Opcode Op> void rule(Row<Op>, const Instr &, const ScalarState &, int) {}
  void rule(Row<Opcode::Ld>, const Instr &in, const ScalarState &s, int depth);
  void rule(Row<Opcode::LdPad>, const Instr &in, const ScalarState &s, int depth);
  void rule(Row<Opcode::St>, const Instr &in, const ScalarState &s, int depth);
  void rule(Row<Opcode::Ldu>, const Instr &in, const ScalarState &s, int depth);
  void rule(Row<Opcode::Stu>, const Instr &in, const ScalarState &s, int depth);
  void rule(Row<Opcode::PtTr>, const Instr &in, const ScalarState &s, int depth);
  void rule(Row<Opcode::PtMm>, const Instr &in, const ScalarState &s, int depth);
  void rule(Row<Opcode::PtOut>, const Instr &in, const ScalarState &s, int depth);
  void rule(Row<Opcode::RingSend>, const Instr &in, const ScalarState &s, int depth);
  void rule(Row<Opcode::RingRecv>, const Instr &in, const ScalarState &s, int depth);
  void rule(Row<Opcode::RingPsum>, const Instr &in, const ScalarState &s, int depth);
  void rule(Row<Opcode::DmaIn>, const Instr &in, const ScalarState &s, int depth);
  void rule(Row<Opcode::DmaMc>, const Instr &in, const ScalarState &s, int depth);
  void rule(Row<Opcode::DmaOut>, const Instr &in, const ScalarState &s, int depth);
  void rule(Row<Opcode::DmaGather>, const Instr &in, const ScalarState &s, int depth);
  void rule(Row<Opcode::DmaScatter>, const Instr &in, const ScalarState &s, int depth);
  std::pair<__int128, __int128> indexList(const Instr &in, const ScalarState &s) const;
  void rule(Row<Opcode::Wait>, const Instr &in, const ScalarState &s, int depth);
  void rule(Row<Opcode::Bar>, const Instr &in, const ScalarState &s, int depth);
  void stickAccess(const Instr &in, const ScalarState &s);
  void elementAccess(const Instr &in, const ScalarState &s);
  void transpose(const Instr &in, const ScalarState &s);
  void ptTiles(const Instr &in, const ScalarState &s);
  void ringRange(const Instr &in, const ScalarState &s);
  void dma(const Instr &in, const ScalarState &s);
};

/// ld, ld.pad, st: one aligned stick inside LX.
void DynamicChecker::stickAccess(const Instr &in, const ScalarState &s) {
  __int128 a = static_cast<__int128>(reg(in, s, in.lx.base)) + in.lx.offset;
  std::string op = lxText(in.lx);
  if (in.op == Opcode::Ld && a >= kScalarArgLxBase && a < kScalarArgLxBase + kMaxScalarArgs * 128) {
    // The scalar-argument block (program.h): read-only, one declared slot per stick.
    const __int128 slot = (a - kScalarArgLxBase) / 128;
    if ((a - kScalarArgLxBase) % 128 != 0 || slot >= static_cast<__int128>(k_.scalarArgs.size()))
      fail(in, op, "LX address " + num(a) + " is not a scalar-argument slot of this kernel (" +
                       std::to_string(k_.scalarArgs.size()) + " declared by .scalars)");
    const ScalarArg &arg = k_.scalarArgs[static_cast<size_t>(slot)];
    if (arg.fmt != in.fmt)
      fail(in, op, "scalar-argument slot " + num(slot) + " ($" + std::to_string(arg.index) + ") holds " +
                       std::string(formatName(arg.fmt)) + ", read as " + std::string(formatName(in.fmt)));
    return;
  }
  if (a < 0 || a + 128 > lxBytes_)
    fail(in, op, "LX access [" + num(a) + ", " + num(a + 128) + ") is outside the usable LX [0, " +
                     std::to_string(lxBytes_) + ")");
  if (a % 128 != 0)
    fail(in, op, "LX address " + num(a) + " is not 128-byte aligned");
  touch(in, op, a, a + 128, in.op == Opcode::St);
}

/// ldu, stu: n element-aligned elements inside LX.
void DynamicChecker::elementAccess(const Instr &in, const ScalarState &s) {
  const int64_t esize = in.fmt == Format::DL16 ? 2 : 4, bytes = in.imm * esize;
  __int128 a = static_cast<__int128>(reg(in, s, in.lx.base)) + in.lx.offset;
  std::string op = lxText(in.lx);
  if (a < 0 || a + bytes > lxBytes_)
    fail(in, op, "LX access [" + num(a) + ", " + num(a + bytes) + ") is outside the usable LX [0, " +
                     std::to_string(lxBytes_) + ")");
  if (a % esize != 0)
    fail(in, op, "LX address " + num(a) + " is not " + std::to_string(esize) + "-byte (element) aligned");
  touch(in, op, a, a + bytes, in.op == Opcode::Stu);
}

/// pt.tr: two R x C tiles (multiples of 64) inside LX.
void DynamicChecker::transpose(const Instr &in, const ScalarState &s) {
  int64_t R = in.imm, C = in.imms[0];
  if (R < 64 || C < 64 || R % 64 != 0 || C % 64 != 0)
    fail(in, "", "transpose R=" + std::to_string(R) + " C=" + std::to_string(C) +
                     ": R and C must be positive multiples of 64");
  for (const LxAddr *a : {&in.lx, &in.lx2}) {
    __int128 lo = static_cast<__int128>(reg(in, s, a->base)) + a->offset;
    std::string op = lxText(*a);
    if (lo < 0 || lo + R * C * 2 > lxBytes_)
      fail(in, op, "tile [" + num(lo) + ", " + num(lo + R * C * 2) + ") is outside the usable LX [0, " +
                       std::to_string(lxBytes_) + ")");
    if (lo % 128 != 0)
      fail(in, op, "LX address " + num(lo) + " is not 128-byte aligned");
    touch(in, op, lo, lo + R * C * 2, a == &in.lx);
  }
}

/// pt.mm, pt.out: the tiles of their shapes inside LX.
void DynamicChecker::ptTiles(const Instr &in, const ScalarState &s) {
  int64_t M = in.imm, N = in.imms[0];
  int64_t K = in.op == Opcode::PtMm ? in.imms[1] : 64;
  if (M < 1 || N < 64 || N % 64 != 0 || K < 64 || K % 64 != 0)
    fail(in, "", "tile M=" + std::to_string(M) + " N=" + std::to_string(N) +
                     (in.op == Opcode::PtMm ? " K=" + std::to_string(K) : "") +
                     ": M must be >= 1 and N, K positive multiples of 64");
  if (in.op == Opcode::PtMm && in.imms[2] != 0 && in.imms[2] != 1)
    fail(in, std::to_string(in.imms[2]), "acc must be 0 or 1");
  auto range = [&](const LxAddr &a, int64_t bytes, const char *what, bool write) {
    __int128 lo = static_cast<__int128>(reg(in, s, a.base)) + a.offset;
    std::string op = lxText(a);
    if (lo < 0 || lo + bytes > lxBytes_)
      fail(in, op, std::string(what) + " tile [" + num(lo) + ", " + num(lo + bytes) +
                       ") is outside the usable LX [0, " + std::to_string(lxBytes_) + ")");
    if (lo % 128 != 0)
      fail(in, op, "LX address " + num(lo) + " is not 128-byte aligned");
    touch(in, op, lo, lo + bytes, write);
  };
  if (in.op == Opcode::PtMm) {
    range(in.lx, N / 32 * M * 128, "C", true);
    range(in.lx2, K / 64 * M * 128, "A", false);
    range(in.lx3, N / 64 * K * 128, "B", false);
  } else {
    range(in.lx, N / 64 * M * 128, "D", true);
    range(in.lx2, N / 32 * M * 128, "C", false);
  }
}

/// ring.send / recv / psum: n >= 1 sticks inside LX, a valid direction.
void DynamicChecker::ringRange(const Instr &in, const ScalarState &s) {
  int64_t n = in.imm, dir = in.imms[0];
  if (n < 1)
    fail(in, std::to_string(n), "stick count must be >= 1");
  if (dir != 0 && dir != 1)
    fail(in, std::to_string(dir), "ring direction must be 0 (clockwise) or 1 (counter-clockwise)");
  __int128 lo = static_cast<__int128>(reg(in, s, in.lx.base)) + in.lx.offset;
  std::string op = lxText(in.lx);
  if (lo < 0 || lo + n * 128 > lxBytes_)
    fail(in, op, "LX range [" + num(lo) + ", " + num(lo + n * 128) + ") is outside the usable LX [0, " +
                     std::to_string(lxBytes_) + ")");
  if (lo % 128 != 0)
    fail(in, op, "LX address " + num(lo) + " is not 128-byte aligned");
  touch(in, op, lo, lo + n * 128, in.op != Opcode::RingSend);
}

/// DMAs: every row inside LX and DDR, aligned LX rows, a free token.
void DynamicChecker::dma(const Instr &in, const ScalarState &s) {
  dmaRows(in, s, true);
  dmaRows(in, s, false);
  auto [lo, hi] = dmaLxSpan(in, s);
  tokenFree(in);
  touch(in, lxText(in.lx), lo, hi, isDmaToLx(in.op));
  issue(in, lo, hi);
}

void DynamicChecker::rule(Row<Opcode::Ld>, const Instr &in, const ScalarState &s, int) { stickAccess(in, s); }
void DynamicChecker::rule(Row<Opcode::LdPad>, const Instr &in, const ScalarState &s, int) { stickAccess(in, s); }
void DynamicChecker::rule(Row<Opcode::St>, const Instr &in, const ScalarState &s, int) { stickAccess(in, s); }
void DynamicChecker::rule(Row<Opcode::Ldu>, const Instr &in, const ScalarState &s, int) { elementAccess(in, s); }
void DynamicChecker::rule(Row<Opcode::Stu>, const Instr &in, const ScalarState &s, int) { elementAccess(in, s); }
void DynamicChecker::rule(Row<Opcode::PtTr>, const Instr &in, const ScalarState &s, int) { transpose(in, s); }
void DynamicChecker::rule(Row<Opcode::PtMm>, const Instr &in, const ScalarState &s, int) { ptTiles(in, s); }
void DynamicChecker::rule(Row<Opcode::PtOut>, const Instr &in, const ScalarState &s, int) { ptTiles(in, s); }
void DynamicChecker::rule(Row<Opcode::RingSend>, const Instr &in, const ScalarState &s, int) { ringRange(in, s); }
void DynamicChecker::rule(Row<Opcode::RingRecv>, const Instr &in, const ScalarState &s, int) { ringRange(in, s); }
void DynamicChecker::rule(Row<Opcode::RingPsum>, const Instr &in, const ScalarState &s, int) { ringRange(in, s); }
void DynamicChecker::rule(Row<Opcode::DmaIn>, const Instr &in, const ScalarState &s, int) { dma(in, s); }
void DynamicChecker::rule(Row<Opcode::DmaMc>, const Instr &in, const ScalarState &s, int) { dma(in, s); }
void DynamicChecker::rule(Row<Opcode::DmaOut>, const Instr &in, const ScalarState &s, int) { dma(in, s); }

/// dma.gather / dma.scatter: the boxes of entries 0 and n-1 inside LX (the lxstep is affine),
/// the boxes of table rows 0 and rows-1 inside DDR (every index in [0, rows) is then inside: the
/// values are checked at run time), the index list inside LX, 4-byte aligned and not being
/// filled by a DMA. Returns the index list's LX bytes.
std::pair<__int128, __int128> DynamicChecker::indexList(const Instr &in, const ScalarState &s) const {
  const int64_t n = in.imm, rows = in.imms[0];
  for (int64_t i : {int64_t{0}, n - 1})
    dmaRows(in, s, true, static_cast<__int128>(i) * in.imms[2]);
  for (int64_t j : {int64_t{0}, rows - 1})
    dmaRows(in, s, false, static_cast<__int128>(j) * in.imms[1]);
  const std::string idxOp = lxText(in.lx2);
  const __int128 ilo = static_cast<__int128>(reg(in, s, in.lx2.base)) + in.lx2.offset, ihi = ilo + 4 * static_cast<__int128>(n);
  if (ilo < 0 || ihi > lxBytes_)
    fail(in, idxOp, "index list [" + num(ilo) + ", " + num(ihi) + ") is outside the usable LX [0, " +
                        std::to_string(lxBytes_) + ")");
  if (ilo % 4 != 0)
    fail(in, idxOp, "index list address " + num(ilo) + " is not 4-byte aligned (int32 indices)");
  touch(in, idxOp, ilo, ihi, false);
  return {ilo, ihi};
}

/// dma.gather: as indexList, and the index list apart from the boxes it fills (entry i must not
/// overwrite the index of entry i+1).
void DynamicChecker::rule(Row<Opcode::DmaGather>, const Instr &in, const ScalarState &s, int) {
  const auto [ilo, ihi] = indexList(in, s);
  auto [lo, hi] = dmaLxSpan(in, s);
  if (ilo < hi && lo < ihi)
    fail(in, lxText(in.lx2), "index list [" + num(ilo) + ", " + num(ihi) + ") overlaps the LX [" + num(lo) + ", " +
                                 num(hi) + ") the gather fills");
  tokenFree(in);
  touch(in, lxText(in.lx), lo, hi, true);
  issue(in, lo, hi);
}

/// dma.scatter: as indexList. It reads both its boxes and its index list until its token is
/// waited, so the LX it holds is the hull of the two (nothing in it may be written meanwhile).
void DynamicChecker::rule(Row<Opcode::DmaScatter>, const Instr &in, const ScalarState &s, int) {
  const auto [ilo, ihi] = indexList(in, s);
  auto [lo, hi] = dmaLxSpan(in, s);
  tokenFree(in);
  touch(in, lxText(in.lx), lo, hi, false);
  issue(in, std::min(lo, ilo), std::max(hi, ihi));
}

void DynamicChecker::rule(Row<Opcode::Wait>, const Instr &in, const ScalarState &, int) {
  for (int t : in.tokens) {
    if (!outstanding_[t] && !issued_[t])
      fail(in, "t" + std::to_string(t),
           "waits a token never issued in phase " + std::to_string(phase_));
    outstanding_[t] = nullptr;
  }
}

void DynamicChecker::rule(Row<Opcode::Bar>, const Instr &in, const ScalarState &, int depth) {
  if (depth == 0)
    endPhase(&in);
}


} // namespace

void detail::checkDynamic(const Kernel &k, const CoreProgram &p, int core, const std::vector<uint64_t> &argBytes,
                          int64_t lxBytes, std::string_view why, uint64_t maxVisits) {
  DynamicChecker check(k, core, argBytes, lxBytes);
  detail::walkProgram(k, p, core, check, why, maxVisits);
  check.endProgram();
}

} // namespace spyre::isa
