// A generator of random *valid* kernels for differential testing of the engines: scalar
// li/addi/muli/tbl, nested loops with small static trip counts (including 0), DMA in/out with
// random in-bounds shapes and strides (unaligned DDR too), dma.gather (valid and faulting
// indices), multicast dma.mc (absolute addresses
// in programs whose core range is whole cohorts, so every member makes the same transfer), ld/st/ld.pad in every format, every
// SFP instruction of the ISA table in every format, PT tiles (pt.mm with and without
// accumulation, pt.out, pt.tr) on disjoint LX tiles, multi-core `.core` ranges and `bar` phases,
// and ring traffic: a per-kernel plan of ring.send in phase p and ring.recv / ring.psum.{dl16,f32}
// in phase p+1 (same bytes per direction on every core, so sends and receives pair).
//
// Validity by construction: LX address registers (r1..r4) and DDR address registers (r5..r7)
// carry an interval of the values they may hold at each point (across cores and loop
// iterations), and every address is chosen so that the whole interval stays in bounds; r8..r31
// hold arbitrary scalar junk and never form addresses. The token protocol is tracked the same
// way, with the LX span of every outstanding DMA: an access that may overlap LX an outstanding
// dma.in is filling (or, for writes, a dma.out is reading) waits that token first. Every kernel
// is still run through isa::verifyKernel, and rejected ones are counted.
#pragma once
#include "spyre/isa/dl16.h"
#include "spyre/isa/program.h"
#include "spyre/isa/verifier.h"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace spyre::testing {

struct RandomKernelOptions {
  int maxCores = 4;
  int64_t lxBytes = 24576; ///< the LX window each core may use (verified with this limit)
  int maxPhases = 3;
  int maxInstrs = 12;      ///< top-level instructions per phase
  int maxDepth = 2;        ///< loop nesting
  int maxArgs = 3;
  int ptPercent = 3;   ///< share of generated instructions that are PT tiles
  int ringPercent = 35; ///< chance that a phase sends ring traffic to the next one
};

struct RandomCase {
  isa::Kernel kernel;
  std::vector<uint64_t> argBytes;
};

class KernelGenerator {
public:
  explicit KernelGenerator(uint64_t seed, RandomKernelOptions o = {}) : g_(seed), o_(o) {
    for (const auto &info : isa::allOps())
      if (info.unit == isa::Unit::Sfp)
        sfp_.push_back(&info);
  }

  /// The next kernel that passes the verifier.
  RandomCase next() {
    for (;;) {
      RandomCase c = generate();
      try {
        isa::verifyKernel(c.kernel, c.argBytes, o_.lxBytes);
        return c;
      } catch (const std::exception &e) {
        ++rejected_;
        lastRejection_ = e.what();
      }
    }
  }
  uint64_t rejected() const { return rejected_; }
  const std::string &lastRejection() const { return lastRejection_; }

  /// Random bytes for DDR or LX: raw bits (NaN payloads, huge/tiny values), DL16 codes of
  /// ordinary numbers and fp32 special values, mixed per 4-byte word.
  void fill(uint8_t *p, size_t n) {
    uint64_t state = g_(); // splitmix64 from one draw: the bulk fill is a hot loop of the test
    auto next = [&state] {
      uint64_t z = (state += 0x9E3779B97F4A7C15ull);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      return z ^ (z >> 31);
    };
    for (size_t i = 0; i < n; i += 8) {
      uint64_t r = next(); // one draw: the kind and raw bits
      uint32_t w = static_cast<uint32_t>(r >> 32);
      switch (r & 3) {
      case 0: break;
      case 1: {
        float f = special();
        std::memcpy(&w, &f, 4);
        break;
      }
      default: { // two DL16 codes of ordinary numbers: a random exponent near 0 and mantissa
        auto code = [](uint32_t x) { return static_cast<uint16_t>((x & 0x81FF) | ((28 + (x >> 9) % 8) << 9)); };
        w = code(w) | static_cast<uint32_t>(code(w >> 16)) << 16;
        break;
      }
      }
      uint32_t w2 = static_cast<uint32_t>(r) ^ w;
      std::memcpy(p + i, &w, std::min<size_t>(4, n - i));
      if (i + 4 < n)
        std::memcpy(p + i + 4, &w2, std::min<size_t>(4, n - i - 4));
    }
  }

private:
  using Instr = isa::Instr;
  using Opcode = isa::Opcode;
  static constexpr int kLxRegs[] = {1, 2, 3, 4};
  static constexpr int kDdrRegs[] = {5, 6, 7};
  struct Iv {
    int64_t lo = 0, hi = 0;
  };
  /// The LX bytes an outstanding DMA may touch (over every value its base register may hold).
  struct Span {
    int64_t lo = 0, hi = 0;
    bool fills = false; ///< dma.in (writes LX) rather than dma.out (reads LX)
  };
  /// Per program: register intervals, outstanding tokens and their LX spans.
  struct State {
    Iv reg[isa::kNumSRegs];
    std::set<int> outstanding;
    std::map<int, Span> span;
  };
  /// One ring transfer of the kernel's plan: sent in phase p in `sends` chunks, received in
  /// phase p+1 in `recvs` chunks (sticks; op RingRecv or RingPsum with a format).
  struct RingXfer {
    int dir = 0;
    std::vector<int64_t> sends;
    std::vector<std::pair<int64_t, isa::Format>> recvs; ///< Format::None = ring.recv
  };

  std::mt19937_64 g_;
  RandomKernelOptions o_;
  std::vector<const isa::OpInfo *> sfp_;
  uint64_t rejected_ = 0;
  std::string lastRejection_;
  // The kernel being generated.
  int cores_ = 1;
  std::vector<uint64_t> argBytes_;
  std::optional<isa::LxAddr> lastB_; ///< B of the last pt.mm (reused to hit the JIT's decoded-B cache)
  int progFirst_ = 0, progLast_ = 0; ///< core range of the program being generated

  int pick(int n) { return static_cast<int>(g_() % static_cast<uint64_t>(n)); }
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(g_() % static_cast<uint64_t>(hi - lo + 1)); }
  bool chance(int percent) { return pick(100) < percent; }
  float normal() { return std::normal_distribution<float>(0, 4)(g_); }
  float special() {
    static const float s[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 2.0f, -3.5f, 1e-5f, 65504.0f, 8.6e9f, -8.6e9f, 1e-30f,
                              INFINITY, -INFINITY, NAN, 1.0f + 1.0f / 1024, 0.1f, 88.7f, -88.7f, 20.0f, 1e38f, 7.0f};
    return pick(3) == 0 ? normal() : s[pick(static_cast<int>(std::size(s)))];
  }

  RandomCase generate() {
    RandomCase c;
    isa::Kernel &k = c.kernel;
    cores_ = 1 + pick(o_.maxCores);
    k.numCores = cores_;
    lastB_.reset();
    k.name = "rnd";
    int nargs = 1 + pick(o_.maxArgs);
    argBytes_.clear();
    for (int i = 0; i < nargs; ++i) {
      k.args.push_back("a" + std::to_string(i));
      argBytes_.push_back(static_cast<uint64_t>(128 * range(2, 24) + (chance(30) ? range(1, 127) : 0)));
    }
    c.argBytes = argBytes_;
    // 1..3 programs over contiguous core ranges, all with the same number of phases.
    int phases = 1 + pick(o_.maxPhases);
    // The ring plan, shared by every program: what is sent in phase p is received in p+1.
    std::vector<std::vector<RingXfer>> ring(phases);
    for (int ph = 0; ph + 1 < phases; ++ph)
      for (int x = 0, nx = chance(o_.ringPercent) ? 1 + pick(2) : 0; x < nx; ++x) {
        RingXfer r;
        r.dir = pick(2);
        int64_t total = range(1, 4);
        int64_t first = chance(50) ? range(1, total) : total;
        r.sends = {first};
        if (first < total)
          r.sends.push_back(total - first);
        for (int64_t left = total; left > 0;) {
          int64_t n = chance(60) ? left : range(1, left);
          const isa::Format fmts[] = {isa::Format::None, isa::Format::DL16, isa::Format::F32};
          r.recvs.push_back({n, fmts[pick(3)]});
          left -= n;
        }
        ring[ph].push_back(r);
      }
    int programs = 1 + pick(std::min(3, cores_));
    std::vector<int> cuts{0};
    std::set<int> inner;
    while (static_cast<int>(inner.size()) < programs - 1)
      inner.insert(1 + pick(cores_ - 1));
    cuts.insert(cuts.end(), inner.begin(), inner.end());
    cuts.push_back(cores_);
    for (size_t p = 0; p + 1 < cuts.size(); ++p) {
      isa::CoreProgram prog;
      prog.firstCore = cuts[p];
      prog.lastCore = cuts[p + 1] - 1;
      progFirst_ = prog.firstCore;
      progLast_ = prog.lastCore;
      State s;
      // r0 = core id: junk for arithmetic; every other register starts at 0.
      for (int ph = 0; ph < phases; ++ph) {
        // This phase's ring operations (receives of the previous phase's sends, then its own
        // sends), each at a random point between the generated instructions, in order.
        std::vector<Instr> ringOps;
        if (ph > 0)
          for (const auto &r : ring[ph - 1])
            for (auto [n, f] : r.recvs)
              ringOps.push_back(ringInstr(f == isa::Format::None ? Opcode::RingRecv : Opcode::RingPsum, f, n, r.dir));
        for (const auto &r : ring[ph])
          for (int64_t n : r.sends)
            ringOps.push_back(ringInstr(Opcode::RingSend, isa::Format::None, n, r.dir));
        int n = 1 + pick(o_.maxInstrs);
        std::vector<int> at;
        for (size_t i = 0; i < ringOps.size(); ++i)
          at.push_back(pick(n + 1));
        std::sort(at.begin(), at.end());
        size_t next = 0;
        for (int i = 0; i <= n; ++i) {
          for (; next < ringOps.size() && at[next] == i; ++next)
            placeRing(prog.body, s, ringOps[next]);
          if (i < n)
            genInstr(prog.body, s, 0);
        }
        waitAll(prog.body, s, s.outstanding);
        if (ph + 1 < phases) {
          Instr bar;
          bar.op = Opcode::Bar;
          prog.body.push_back(bar);
        }
      }
      k.programs.push_back(std::move(prog));
    }
    return c;
  }

  void waitAll(std::vector<Instr> &body, State &s, std::set<int> tokens) {
    if (tokens.empty())
      return;
    Instr w;
    w.op = Opcode::Wait;
    w.tokens.assign(tokens.begin(), tokens.end());
    std::shuffle(w.tokens.begin(), w.tokens.end(), g_);
    for (int t : tokens) {
      s.outstanding.erase(t);
      s.span.erase(t);
    }
    body.push_back(w);
  }

  /// The LX bytes [lo, hi) an access of `bytes` at `a` may touch, over the base register's range.
  Span lxSpan(const State &s, const isa::LxAddr &a, int64_t bytes) const {
    Iv b = a.base >= 0 ? s.reg[a.base] : Iv{};
    return {b.lo + a.offset, b.hi + a.offset + bytes, false};
  }
  /// Waits every outstanding DMA whose LX span the access may conflict with (the verifier's rule:
  /// no access to LX a dma.in is filling, no write to LX a dma.out is reading).
  void settle(std::vector<Instr> &body, State &s, const Span &acc, bool write) {
    std::set<int> conflict;
    for (int t : s.outstanding) {
      auto it = s.span.find(t);
      if (it == s.span.end())
        continue;
      const Span &d = it->second;
      if (acc.hi > d.lo && d.hi > acc.lo && (d.fills || write))
        conflict.insert(t);
    }
    waitAll(body, s, conflict);
  }
  void settle(std::vector<Instr> &body, State &s, const isa::LxAddr &a, int64_t bytes, bool write) {
    settle(body, s, lxSpan(s, a, bytes), write);
  }

  Instr ringInstr(Opcode op, isa::Format f, int64_t sticks, int dir) {
    Instr in;
    in.op = op;
    in.fmt = f;
    in.imm = sticks;
    in.imms[0] = dir;
    return in;
  }
  void placeRing(std::vector<Instr> &body, State &s, Instr in) {
    in.lx = lxAddr(s, in.imm * 128);
    settle(body, s, in.lx, in.imm * 128, in.op != Opcode::RingSend);
    body.push_back(in);
  }

  /// pt.mm / pt.out / pt.tr on LX tiles that do not overlap each other (over the registers'
  /// ranges); skipped when no disjoint placement is found quickly. A pt.mm often takes the B
  /// operand of the previous one (when still in bounds), so that the writes generated in
  /// between exercise the invalidation of the JIT's decoded-B cache.
  void genPt(std::vector<Instr> &body, State &s) {
    Instr in;
    std::vector<std::pair<int64_t, bool>> tiles; // bytes, written
    int which = pick(3);
    if (which == 0) {
      in.op = Opcode::PtMm;
      in.imm = range(1, 6);                          // M (4-row blocks and remainders)
      in.imms = {64, 64, static_cast<int64_t>(pick(2))}; // N, K, acc
      tiles = {{64 / 32 * in.imm * 128, true}, {64 / 64 * in.imm * 128, false}, {64 / 64 * 64 * 128, false}};
    } else if (which == 1) {
      in.op = Opcode::PtOut;
      in.imm = range(1, 4);                  // M
      in.imms[0] = chance(70) ? 64 : 128;    // N
      tiles = {{in.imms[0] / 64 * in.imm * 128, true}, {in.imms[0] / 32 * in.imm * 128, false}};
    } else {
      in.op = Opcode::PtTr;
      in.imm = 64;     // R
      in.imms[0] = 64; // C
      tiles = {{64 * 64 * 2, true}, {64 * 64 * 2, false}};
    }
    isa::LxAddr *addr[3] = {&in.lx, &in.lx2, &in.lx3};
    std::vector<Span> placed;
    for (size_t i = 0; i < tiles.size(); ++i) {
      bool ok = false;
      for (int attempt = 0; attempt < 8 && !ok; ++attempt) {
        *addr[i] = lxAddr(s, tiles[i].first);
        bool reuseB = in.op == Opcode::PtMm && i == 2 && attempt == 0 && lastB_ && chance(60);
        if (reuseB) {
          Span b = lxSpan(s, *lastB_, tiles[i].first);
          if (b.lo >= 0 && b.hi <= o_.lxBytes)
            *addr[i] = *lastB_;
        }
        Span sp = lxSpan(s, *addr[i], tiles[i].first);
        ok = true;
        for (const Span &o : placed)
          ok &= sp.hi <= o.lo || o.hi <= sp.lo;
        if (ok)
          placed.push_back(sp);
      }
      if (!ok)
        return;
    }
    for (size_t i = 0; i < tiles.size(); ++i)
      settle(body, s, placed[i], tiles[i].second);
    if (in.op == Opcode::PtMm)
      lastB_ = in.lx3;
    body.push_back(in);
    if (in.op == Opcode::PtMm && chance(40)) {
      // Overwrite one stick of B and multiply again: a stale decoded B would show in C.
      Instr st;
      st.op = Opcode::St;
      st.fmt = isa::Format::DL16;
      st.v[0] = vreg();
      st.lx = in.lx3;
      st.lx.offset += 128 * pick(64);
      settle(body, s, st.lx, 128, true);
      body.push_back(st);
      in.imms[2] = 1;
      body.push_back(in);
    }
  }

  int junkReg() { return 8 + pick(isa::kNumSRegs - 8); }
  int anyReg() { return pick(isa::kNumSRegs); }
  int vreg() { return pick(isa::kNumVRegs); }

  /// An LX address for `bytes` bytes at rows up to `extent` past the base, valid for every value
  /// the base register may hold; absolute when no register fits.
  isa::LxAddr lxAddr(const State &s, int64_t extent) {
    isa::LxAddr a;
    int64_t limit = o_.lxBytes - extent; // base + offset must lie in [0, limit]
    if (limit < 0)
      limit = 0;
    if (chance(75)) {
      int r = kLxRegs[pick(4)];
      const Iv &iv = s.reg[r];
      int64_t lo = ceil128(-iv.lo), hi = floor128(limit - iv.hi); // offset range
      if (lo <= hi) {
        a.base = r;
        a.offset = 128 * range(lo / 128, hi / 128);
        return a;
      }
    }
    a.offset = 128 * range(0, floor128(limit) / 128);
    return a;
  }
  static int64_t floor128(int64_t x) { return x >= 0 ? x / 128 * 128 : -((-x + 127) / 128 * 128); }
  static int64_t ceil128(int64_t x) { return -floor128(-x); }

  isa::DdrAddr ddrAddr(const State &s, int arg, int64_t extent) {
    isa::DdrAddr a;
    a.arg = arg;
    int64_t limit = static_cast<int64_t>(argBytes_[arg]) - extent;
    bool aligned = chance(50);
    if (chance(60)) {
      int r = kDdrRegs[pick(3)];
      const Iv &iv = s.reg[r];
      int64_t lo = -iv.lo, hi = limit - iv.hi;
      if (lo <= hi) {
        a.base = r;
        a.offset = range(lo, hi);
        if (aligned && floor128(hi) >= ceil128(lo))
          a.offset = 128 * range(ceil128(lo) / 128, floor128(hi) / 128);
        return a;
      }
    }
    a.offset = range(0, limit);
    if (aligned)
      a.offset = 128 * range(0, limit / 128);
    return a;
  }

  /// The tokens no DMA holds.
  static std::vector<int> freeTokens(const State &s) {
    std::vector<int> free;
    for (int t = 0; t < isa::kNumTokens; ++t)
      if (!s.outstanding.count(t))
        free.push_back(t);
    return free;
  }

  void genDma(std::vector<Instr> &body, State &s, std::set<int> &issuedHere) {
    std::vector<int> free = freeTokens(s);
    if (free.empty())
      return;
    Instr d;
    d.op = chance(50) ? Opcode::DmaIn : Opcode::DmaOut;
    // A multicast needs its cohort inside this program's core range, all members at the same
    // addresses: absolute ones (address registers may differ between cores).
    int cohort = 0;
    for (int k : {4, 2})
      if (!cohort && progFirst_ % k == 0 && (progLast_ + 1) % k == 0)
        cohort = k;
    const bool multicast = d.op == Opcode::DmaIn && cohort && chance(30);
    if (multicast) {
      d.op = Opcode::DmaMc;
      d.imm = cohort;
    }
    auto &sh = d.dma;
    sh.n = {range(1, 2), range(1, 3), range(1, 3)};
    auto dense = isa::DmaShape::dense(sh.n);
    sh.lxStride = dense;
    sh.ddrStride = dense;
    for (int i = 0; i < 2; ++i) {
      if (chance(40))
        sh.lxStride[i] = 128 * range(0, 4);
      if (chance(40))
        sh.ddrStride[i] = range(0, 400);
    }
    int64_t run = sh.n[2] * 128;
    int64_t lxExtent = (sh.n[0] - 1) * sh.lxStride[0] + (sh.n[1] - 1) * sh.lxStride[1] + run;
    int64_t ddrExtent = (sh.n[0] - 1) * sh.ddrStride[0] + (sh.n[1] - 1) * sh.ddrStride[1] + run;
    int arg = pick(static_cast<int>(argBytes_.size()));
    if (lxExtent > o_.lxBytes || ddrExtent > static_cast<int64_t>(argBytes_[arg]))
      return;
    d.lx = lxAddr(s, lxExtent);
    d.ddr = ddrAddr(s, arg, ddrExtent);
    if (multicast) {
      d.lx = {-1, 128 * range(0, (o_.lxBytes - lxExtent) / 128)};
      d.ddr = {arg, -1, range(0, static_cast<int64_t>(argBytes_[arg]) - ddrExtent)};
    }
    // Strides may be zero or smaller than a row: the span covers [base, base + extent).
    settle(body, s, d.lx, lxExtent, isa::isDmaToLx(d.op));
    free = freeTokens(s);
    d.outToken = free[pick(static_cast<int>(free.size()))];
    s.outstanding.insert(d.outToken);
    Span sp = lxSpan(s, d.lx, lxExtent);
    sp.fills = isa::isDmaToLx(d.op);
    s.span[d.outToken] = sp;
    issuedHere.insert(d.outToken);
    body.push_back(d);
  }

  /// dma.gather / dma.scatter: a random box per entry, a table of `rows` rows rowStride apart,
  /// the index list apart from the boxes. Mostly the indices are valid: written just before by
  /// iota.f32 / cvt.i32 / st.i32 (the values 0..31 of one stick, rows >= the last one used);
  /// otherwise they are whatever LX holds, and the launch's device fault (the first bad index;
  /// a gather zero-fills its box, a scatter skips it) must be the same on both engines. A
  /// scatter's entries may repeat a row (a zero rowstride, or lxstep 0): the last one wins.
  void genIndexed(std::vector<Instr> &body, State &s, std::set<int> &issuedHere, bool scatter) {
    std::vector<int> free = freeTokens(s);
    if (free.empty())
      return;
    Instr d;
    d.op = scatter ? Opcode::DmaScatter : Opcode::DmaGather;
    auto &sh = d.dma;
    sh.n = {1, range(1, 2), range(1, 2)};
    sh.lxStride = sh.ddrStride = isa::DmaShape::dense(sh.n);
    if (chance(40))
      sh.ddrStride[1] = range(0, 300);
    if (chance(30))
      sh.lxStride[1] = 128 * range(0, 3);
    const int64_t run = sh.n[2] * 128;
    const int64_t boxLx = (sh.n[1] - 1) * sh.lxStride[1] + run, boxDdr = (sh.n[1] - 1) * sh.ddrStride[1] + run;
    const int64_t n = range(1, 8), k = range(0, 32 - n);
    const int64_t lxStep = chance(15) ? 0 : (boxLx + 127) / 128 * 128 + 128 * range(0, 1);
    const int64_t boxExtent = (n - 1) * lxStep + boxLx;
    const bool valid = chance(75);
    const int64_t rows = valid ? range(k + n, k + n + 8) : range(1, 40), rowStride = range(0, 128);
    const int arg = pick(static_cast<int>(argBytes_.size()));
    const int64_t ddrExtent = (rows - 1) * rowStride + boxDdr;
    if (boxExtent + 128 > o_.lxBytes || ddrExtent > static_cast<int64_t>(argBytes_[arg]))
      return;
    isa::LxAddr idx;
    bool placed = false;
    for (int attempt = 0; attempt < 8 && !placed; ++attempt) {
      d.lx = lxAddr(s, boxExtent);
      idx = lxAddr(s, 128);
      Span a = lxSpan(s, d.lx, boxExtent), b = lxSpan(s, idx, 128);
      placed = a.hi <= b.lo || b.hi <= a.lo;
    }
    if (!placed)
      return;
    if (valid) {
      const int v = vreg();
      body.push_back(sfpOp(Opcode::Iota, isa::Format::F32, v, -1));
      body.push_back(sfpOp(Opcode::Cvt, isa::Format::I32, v, v));
      Instr st;
      st.op = Opcode::St;
      st.fmt = isa::Format::I32;
      st.v[0] = v;
      st.lx = idx;
      settle(body, s, st.lx, 128, true);
      body.push_back(st);
    }
    d.lx2 = idx;
    d.lx2.offset += 4 * k;
    settle(body, s, d.lx2, 4 * n, false);
    d.ddr = ddrAddr(s, arg, ddrExtent);
    d.imm = n;
    d.imms = {rows, rowStride, lxStep};
    settle(body, s, d.lx, boxExtent, !scatter);
    free = freeTokens(s);
    d.outToken = free[pick(static_cast<int>(free.size()))];
    s.outstanding.insert(d.outToken);
    Span sp = lxSpan(s, d.lx, boxExtent);
    if (scatter) { // it holds its index list too (the verifier's hull)
      const Span is = lxSpan(s, d.lx2, 4 * n);
      sp.lo = std::min(sp.lo, is.lo);
      sp.hi = std::max(sp.hi, is.hi);
    }
    sp.fills = !scatter;
    s.span[d.outToken] = sp;
    issuedHere.insert(d.outToken);
    body.push_back(d);
  }
  static Instr sfpOp(Opcode op, isa::Format f, int vd, int va) {
    Instr in;
    in.op = op;
    in.fmt = f;
    in.v[0] = vd;
    in.v[1] = va;
    return in;
  }

  Instr sfpInstr(const isa::OpInfo &info) {
    Instr in;
    in.op = info.op;
    std::vector<isa::Format> fmts;
    if (info.formats == isa::FMT_NONE)
      fmts.push_back(isa::Format::None);
    if (info.formats & isa::FMT_DL16)
      fmts.push_back(isa::Format::DL16);
    if (info.formats & isa::FMT_F32)
      fmts.push_back(isa::Format::F32);
    if (info.formats & isa::FMT_I32)
      fmts.push_back(isa::Format::I32);
    in.fmt = fmts[pick(static_cast<int>(fmts.size()))];
    for (int &v : in.v)
      v = vreg();
    if (in.v[0] == in.v[1]) // two-result ops (widen) need distinct destinations
      in.v[1] = (in.v[0] + 1 + pick(isa::kNumVRegs - 1)) % isa::kNumVRegs;
    in.fimm = special();
    in.fimm2 = special();
    if (info.mnemonic == "softplus") {
      in.fimm = std::uniform_real_distribution<float>(0.5f, 2.0f)(g_);
      in.fimm2 = 20.0f;
    }
    in.imm = pick(isa::kLanes); // the I operand of SFP ops is a lane
    return in;
  }

  void genInstr(std::vector<Instr> &body, State &s, int depth) {
    std::set<int> unused;
    genInstr(body, s, depth, unused);
  }

  void genInstr(std::vector<Instr> &body, State &s, int depth, std::set<int> &issuedHere) {
    int kind = pick(100);
    Instr in;
    if (kind < 10) { // scalar junk
      int which = pick(4);
      in.r[0] = junkReg();
      if (which == 0) {
        in.op = Opcode::Li;
        in.imm = chance(20) ? static_cast<int64_t>(g_()) : range(-100000, 100000);
      } else if (which == 3) {
        in.op = Opcode::Tbl;
        for (int c = 0; c < cores_; ++c)
          in.table.push_back(range(-1000, 1000));
      } else {
        in.op = which == 1 ? Opcode::Addi : Opcode::Muli;
        in.r[1] = anyReg();
        in.imm = range(-9, 9);
        if (which == 1 && chance(30))
          in.imm = static_cast<int64_t>(g_());
      }
      body.push_back(in);
    } else if (kind < 16 && depth == 0) { // address registers: only at the top level
      bool lx = chance(60);
      int r = lx ? kLxRegs[pick(4)] : kDdrRegs[pick(3)];
      int64_t limit = lx ? o_.lxBytes - 128 : static_cast<int64_t>(*std::max_element(argBytes_.begin(), argBytes_.end()));
      auto value = [&] { return lx ? 128 * range(0, limit / 128) : range(0, limit); };
      in.r[0] = r;
      int which = pick(3);
      if (which == 0) {
        in.op = Opcode::Li;
        in.imm = value();
        s.reg[r] = {in.imm, in.imm};
      } else if (which == 1) {
        in.op = Opcode::Tbl;
        for (int c = 0; c < cores_; ++c)
          in.table.push_back(value());
        s.reg[r] = {*std::min_element(in.table.begin(), in.table.end()), *std::max_element(in.table.begin(), in.table.end())};
      } else {
        in.op = Opcode::Addi;
        in.r[1] = r;
        in.imm = lx ? 128 * range(-4, 4) : range(-300, 300);
        s.reg[r].lo += in.imm;
        s.reg[r].hi += in.imm;
      }
      body.push_back(in);
    } else if (kind < 34) { // ld / st / ld.pad
      in.op = chance(60) ? Opcode::Ld : Opcode::St;
      const isa::Format f[] = {isa::Format::DL16, isa::Format::F32, isa::Format::I32};
      in.fmt = f[pick(3)];
      if (in.op == Opcode::Ld && in.fmt != isa::Format::I32 && chance(25)) {
        in.op = Opcode::LdPad;
        in.imm = range(0, in.fmt == isa::Format::DL16 ? 64 : 32);
        in.fimm = special();
      }
      in.v[0] = vreg();
      if (in.fmt != isa::Format::I32 && in.op != Opcode::LdPad && chance(20)) {
        // ldu / stu: n elements at an element offset into a 256-byte window
        in.op = in.op == Opcode::Ld ? Opcode::Ldu : Opcode::Stu;
        const int64_t esize = in.fmt == isa::Format::DL16 ? 2 : 4, width = 128 / esize;
        in.imm = range(1, width);
        in.lx = lxAddr(s, 256);
        in.lx.offset += esize * range(0, width - 1);
        settle(body, s, in.lx, 128, in.op == Opcode::Stu);
        body.push_back(in);
        return;
      }
      in.lx = lxAddr(s, 128);
      settle(body, s, in.lx, 128, in.op == Opcode::St);
      body.push_back(in);
    } else if (kind < 42) {
      if (chance(20))
        genIndexed(body, s, issuedHere, chance(50));
      else
        genDma(body, s, issuedHere);
    } else if (kind < 46) {
      std::vector<int> out(s.outstanding.begin(), s.outstanding.end());
      std::set<int> some;
      for (int t : out)
        if (chance(50))
          some.insert(t);
      waitAll(body, s, some);
    } else if (kind < 53 && depth < o_.maxDepth) {
      genLoop(body, s, depth);
    } else if (kind < 53 + o_.ptPercent) {
      genPt(body, s);
    } else {
      body.push_back(sfpInstr(*sfp_[pick(static_cast<int>(sfp_.size()))]));
    }
  }

  void genLoop(std::vector<Instr> &body, State &s, int depth) {
    Instr loop;
    loop.op = Opcode::Loop;
    loop.imm = chance(10) ? 0 : range(1, 4);
    int64_t n = std::max<int64_t>(loop.imm, 1);
    // Address registers stepped at the end of each iteration and reset after the loop.
    std::vector<std::pair<int, int64_t>> steps;
    State inner = s;
    for (int r : kLxRegs)
      if (chance(30))
        steps.push_back({r, 128 * range(-2, 2)});
    for (int r : kDdrRegs)
      if (chance(20))
        steps.push_back({r, range(-200, 200)});
    for (auto [r, inc] : steps) {
      inner.reg[r].lo += std::min<int64_t>(0, (n - 1) * inc);
      inner.reg[r].hi += std::max<int64_t>(0, (n - 1) * inc);
    }
    std::set<int> issued;
    int count = 1 + pick(std::max(1, o_.maxInstrs / 2));
    for (int i = 0; i < count; ++i)
      genInstr(loop.body, inner, depth + 1, issued);
    // A token issued in the body is reissued by the next iteration: wait it in the body.
    std::set<int> pending;
    for (int t : issued)
      if (inner.outstanding.count(t))
        pending.insert(t);
    waitAll(loop.body, inner, pending);
    for (auto [r, inc] : steps) {
      Instr a;
      a.op = Opcode::Addi;
      a.r[0] = a.r[1] = r;
      a.imm = inc;
      loop.body.push_back(a);
    }
    // Tokens from outside the loop that the body waited are no longer outstanding; those issued
    // outside and still outstanding stay so.
    std::set<int> stillOut;
    for (int t : s.outstanding)
      if (inner.outstanding.count(t))
        stillOut.insert(t);
    if (loop.imm > 0)
      s.outstanding = stillOut;
    body.push_back(loop);
    for (auto [r, inc] : steps) {
      Instr a;
      a.op = Opcode::Addi;
      a.r[0] = a.r[1] = r;
      a.imm = -inc * loop.imm;
      body.push_back(a);
    }
  }
};

} // namespace spyre::testing
