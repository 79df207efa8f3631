// The reference interpreter: defines what every instruction does. Deliberately simple; the
// JIT is where speed comes from.
#include "spyre/isa/limits.h"
#include "spyre/isa/semantics.h"
#include "spyre/sim/engine.h"
#include <cmath>
#include <cstring>
#include <string>

namespace spyre::sim {
namespace {

using namespace isa;

/// Lanes 0..n-1 of v = the n elements at p (dl16: 2-byte codes decoded; f32/i32: 4-byte words),
/// the other lanes 0: ld (n = the stick's width, aligned) and ldu.
void loadLanes(Format f, float *v, const uint8_t *p, int64_t n) {
  std::memset(v, 0, kLanes * sizeof(float));
  if (f != Format::DL16) {
    std::memcpy(v, p, static_cast<size_t>(n) * 4);
    return;
  }
  for (int64_t l = 0; l < n; ++l) {
    uint16_t h;
    std::memcpy(&h, p + 2 * l, 2);
    v[l] = dl16::toFloat(h);
  }
}

/// The n elements at p = lanes 0..n-1 of v (dl16: encoded): st and stu.
void storeLanes(Format f, const float *v, uint8_t *p, int64_t n) {
  if (f != Format::DL16) {
    std::memcpy(p, v, static_cast<size_t>(n) * 4);
    return;
  }
  for (int64_t l = 0; l < n; ++l) {
    uint16_t h = dl16::fromFloat(v[l]);
    std::memcpy(p + 2 * l, &h, 2);
  }
}

class Interp final : public PreparedKernel {
public:
  Interp(Kernel k, WorkCounters *counters) : k_(std::move(k)), counters_(counters) {
    for (const auto &p : k_.programs)
      phases_.push_back(phaseRanges(p));
    numPhases_ = k_.numPhases();
    vregs_ = usedVectorRegisters(k_);
  }
  const Kernel &kernel() const override { return k_; }
  int numPhases() const override { return numPhases_; }
  uint32_t vectorRegisters() const override { return vregs_; }

  void runPhase(int phase, int core, CoreState &cs, const LaunchArgs &args) const override {
    size_t pi = 0;
    for (; pi < k_.programs.size(); ++pi)
      if (core >= k_.programs[pi].firstCore && core <= k_.programs[pi].lastCore)
        break;
    if (pi == k_.programs.size())
      return;
    const auto &ranges = phases_[pi];
    if (phase >= static_cast<int>(ranges.size()))
      return;
    Ctx c{core, cs, args};
    const auto &body = k_.programs[pi].body;
    for (size_t i = ranges[phase].first; i < ranges[phase].second; ++i)
      exec(body[i], c);
  }

private:
  int numPhases_ = 0;
  uint32_t vregs_ = 0;
  struct Ctx {
    int core;
    CoreState &cs;
    const LaunchArgs &args;
  };
  Kernel k_;
  WorkCounters *counters_ = nullptr;
  std::vector<std::vector<std::pair<size_t, size_t>>> phases_;

  /// Counts the work of one executed instruction (same rules as isa/lib/timing.cpp).
  void count(const Instr &in) const {
    if (!counters_)
      return;
    const auto relaxed = std::memory_order_relaxed;
    switch (opInfo(in.op).timing) {
    case TimingClass::Dma: counters_->ddrBytes.fetch_add(dmaDdrBytes(in), relaxed); break;
    case TimingClass::Lsu: counters_->lsuSticks.fetch_add(1, relaxed); break;
    case TimingClass::Sfp:
    case TimingClass::SfpTrans: counters_->sfpStickOps.fetch_add(1, relaxed); break;
    case TimingClass::Pt: counters_->ptMacs.fetch_add(in.imm * in.imms[0] * in.imms[1], relaxed); break;
    case TimingClass::PtOut: counters_->sfpStickOps.fetch_add(in.imm * (in.imms[0] / 64), relaxed); break;
    case TimingClass::Ring: counters_->ringBytes.fetch_add(in.imm * 128, relaxed); break;
    default: break;
    }
  }

  [[noreturn]] void fault(const Instr &in, const Ctx &c, const std::string &what) const {
    throw Error("kernel " + k_.name + ", core " + std::to_string(c.core) + ", line " +
                std::to_string(in.line) + " (" + std::string(opInfo(in.op).mnemonic) + "): " + what);
  }
  int64_t reg(const Ctx &c, int r) const { return r < 0 ? 0 : c.cs.r[r]; }
  uint8_t *lxPtr(const Instr &in, Ctx &c, const LxAddr &a, int64_t bytes) const {
    int64_t addr = reg(c, a.base) + a.offset;
    if (addr < 0 || addr + bytes > kLxBytes)
      fault(in, c, "LX access [" + std::to_string(addr) + ", " + std::to_string(addr + bytes) +
                       ") outside the 2 MiB scratchpad");
    return c.cs.lx + addr;
  }
  uint8_t *ddrPtr(const Instr &in, Ctx &c, int64_t off, int64_t bytes) const {
    int arg = in.ddr.arg;
    if (arg < 0 || arg >= static_cast<int>(c.args.base.size()))
      fault(in, c, "kernel argument " + std::to_string(arg) + " is not bound");
    if (off < 0 || off + bytes > static_cast<int64_t>(c.args.size[arg]))
      fault(in, c, "DDR access [" + std::to_string(off) + ", " + std::to_string(off + bytes) +
                       ") outside argument " + k_.args[arg] + " of " +
                       std::to_string(c.args.size[arg]) + " bytes");
    return c.args.ddr + c.args.base[arg] + off;
  }
  void setReg(Ctx &c, int r, int64_t v) const {
    if (r > 0)
      c.cs.r[r] = v;
  }

  void dma(const Instr &in, Ctx &c, bool toLx) const {
    const DmaShape &d = in.dma;
    int64_t ddrBase = reg(c, in.ddr.base) + in.ddr.offset;
    int64_t run = d.n[2] * 128;
    for (int64_t i2 = 0; i2 < d.n[0]; ++i2)
      for (int64_t i1 = 0; i1 < d.n[1]; ++i1) {
        int64_t doff = ddrBase + i2 * d.ddrStride[0] + i1 * d.ddrStride[1];
        LxAddr la = in.lx;
        la.offset += i2 * d.lxStride[0] + i1 * d.lxStride[1];
        uint8_t *lx = lxPtr(in, c, la, run);
        uint8_t *ddr = ddrPtr(in, c, doff, run);
        if (toLx)
          std::memcpy(lx, ddr, run);
        else
          std::memcpy(ddr, lx, run);
      }
  }

  sim::GatherShape indexedDma(const Instr &in, Ctx &c) const;
  /// One handler per row of instructions.def (defined below): a row without an `exec<Enum>`
  /// fails to link (used but never defined). SFP rows need none: every SFP instruction runs the
  /// shared semantics (isa::sfpApply, the definition the JIT matches bit for bit) through execSfp.
#define INST(E, M, U, O, F, T, S) void exec##E(const Instr &in, Ctx &c) const;
#include "spyre/isa/instructions.def"
#undef INST
  void execSfp(const Instr &in, Ctx &c) const;
  void unaligned(const Instr &in, Ctx &c, bool load) const;

  void exec(const Instr &in, Ctx &c) const {
    count(in);
    switch (in.op) {
#define INST(E, M, U, O, F, T, S)                                                                    \
  case Opcode::E:                                                                                  \
    if constexpr (Unit::U == Unit::Sfp)                                                            \
      execSfp(in, c);                                                                              \
    else                                                                                           \
      exec##E(in, c);                                                                              \
    return;
#include "spyre/isa/instructions.def"
#undef INST
    }
    fault(in, c, "instruction not implemented by the interpreter");
  }
};

// Scalar / control.
void Interp::execLi(const Instr &in, Ctx &c) const { setReg(c, in.r[0], in.imm); }
void Interp::execAddi(const Instr &in, Ctx &c) const {
  setReg(c, in.r[0], static_cast<int64_t>(static_cast<uint64_t>(reg(c, in.r[1])) + static_cast<uint64_t>(in.imm)));
}
void Interp::execMuli(const Instr &in, Ctx &c) const {
  setReg(c, in.r[0], static_cast<int64_t>(static_cast<uint64_t>(reg(c, in.r[1])) * static_cast<uint64_t>(in.imm)));
}
void Interp::execTbl(const Instr &in, Ctx &c) const {
  if (c.core >= static_cast<int>(in.table.size()))
    fault(in, c, "per-core table has no entry for this core");
  setReg(c, in.r[0], in.table[c.core]);
}
void Interp::execLoop(const Instr &in, Ctx &c) const {
  for (int64_t i = 0; i < in.imm; ++i)
    for (const auto &b : in.body)
      exec(b, c);
}

// DMA; every cohort member of dma.mc copies (verified identical).
void Interp::execDmaIn(const Instr &in, Ctx &c) const { dma(in, c, true); }
void Interp::execDmaMc(const Instr &in, Ctx &c) const { dma(in, c, true); }
void Interp::execDmaOut(const Instr &in, Ctx &c) const { dma(in, c, false); }
// The gather and the scatter check what the verifier proves (the corner boxes of rows 0 and
// rows-1, every LX box, the index list), then run the semantics both engines share
// (simulator/lib/ring.cpp).
sim::GatherShape Interp::indexedDma(const Instr &in, Ctx &c) const {
  const DmaShape &d = in.dma;
  const int64_t n = in.imm, rows = in.imms[0], rowStride = in.imms[1], lxStep = in.imms[2], run = d.n[2] * 128;
  if (n < 1 || rows < 1)
    fault(in, c, std::string(opInfo(in.op).mnemonic) + " needs n >= 1 and rows >= 1");
  const int64_t base = reg(c, in.ddr.base) + in.ddr.offset;
  for (int64_t j : {int64_t{0}, rows - 1})
    for (int64_t i2 : {int64_t{0}, d.n[0] - 1})
      for (int64_t i1 : {int64_t{0}, d.n[1] - 1})
        ddrPtr(in, c, base + j * rowStride + i2 * d.ddrStride[0] + i1 * d.ddrStride[1], run);
  const auto [lo, hi] = dmaLxExtent(in);
  LxAddr box = in.lx;
  box.offset += lo;
  lxPtr(in, c, box, hi - lo);
  lxPtr(in, c, in.lx2, 4 * n);
  return {n, rows, rowStride, lxStep, d.n[0], d.n[1], run, d.lxStride[0], d.lxStride[1], d.ddrStride[0], d.ddrStride[1]};
}
void Interp::execDmaGather(const Instr &in, Ctx &c) const {
  const sim::GatherShape g = indexedDma(in, c);
  sim::dmaGather(*c.cs.ring, c.cs.lx + reg(c, in.lx.base) + in.lx.offset, lxPtr(in, c, in.lx2, 4 * g.n),
                 c.args.ddr + c.args.base[in.ddr.arg] + reg(c, in.ddr.base) + in.ddr.offset, g);
}
void Interp::execDmaScatter(const Instr &in, Ctx &c) const {
  const sim::GatherShape g = indexedDma(in, c);
  sim::dmaScatter(*c.cs.ring, c.args.ddr + c.args.base[in.ddr.arg] + reg(c, in.ddr.base) + in.ddr.offset,
                  c.cs.lx + reg(c, in.lx.base) + in.lx.offset, lxPtr(in, c, in.lx2, 4 * g.n), g);
}

// Sync: DMA completes synchronously in the functional model; timing counts waits.
void Interp::execWait(const Instr &, Ctx &) const {}
void Interp::execBar(const Instr &, Ctx &) const {}

// Ring.
void Interp::execRingSend(const Instr &in, Ctx &c) const {
  sim::ringSend(*c.cs.ring, static_cast<int>(in.imms[0]), lxPtr(in, c, in.lx, in.imm * 128), in.imm * 128);
}
void Interp::execRingRecv(const Instr &in, Ctx &c) const {
  sim::ringRecv(*c.cs.ring, static_cast<int>(in.imms[0]), lxPtr(in, c, in.lx, in.imm * 128), in.imm * 128, 0);
}
void Interp::execRingPsum(const Instr &in, Ctx &c) const {
  sim::ringRecv(*c.cs.ring, static_cast<int>(in.imms[0]), lxPtr(in, c, in.lx, in.imm * 128), in.imm * 128,
                in.fmt == Format::F32 ? 1 : 2);
}

// PT.
void Interp::execPtMm(const Instr &in, Ctx &c) const {
  const int64_t M = in.imm, N = in.imms[0], K = in.imms[1];
  uint8_t *C = lxPtr(in, c, in.lx, N / 32 * M * 128);
  const uint8_t *A = lxPtr(in, c, in.lx2, K / 64 * M * 128);
  const uint8_t *B = lxPtr(in, c, in.lx3, N / 64 * K * 128);
  ptMm(C, A, B, M, N, K, in.imms[2] != 0);
}
void Interp::execPtTr(const Instr &in, Ctx &c) const {
  const int64_t R = in.imm, C = in.imms[0];
  uint8_t *D = lxPtr(in, c, in.lx, R * C * 2);
  const uint8_t *S = lxPtr(in, c, in.lx2, R * C * 2);
  ptTr(D, S, R, C);
}
void Interp::execPtOut(const Instr &in, Ctx &c) const {
  const int64_t M = in.imm, N = in.imms[0];
  uint8_t *D = lxPtr(in, c, in.lx, N / 64 * M * 128);
  const uint8_t *C = lxPtr(in, c, in.lx2, N / 32 * M * 128);
  ptOut(D, C, M, N);
}

// Load / store.
void Interp::execLd(const Instr &in, Ctx &c) const {
  const int64_t width = in.fmt == Format::DL16 ? kLanes : kLanes / 2;
  loadLanes(in.fmt, c.cs.v[in.v[0]], lxPtr(in, c, in.lx, 128), width);
}
void Interp::execLdPad(const Instr &in, Ctx &c) const {
  execLd(in, c);
  float *v = c.cs.v[in.v[0]];
  const int64_t width = in.fmt == Format::DL16 ? kLanes : kLanes / 2;
  float fill = roundTo(in.fmt, in.fimm);
  for (int64_t l = in.imm; l < width; ++l)
    v[l] = fill;
}
void Interp::execSt(const Instr &in, Ctx &c) const {
  storeLanes(in.fmt, c.cs.v[in.v[0]], lxPtr(in, c, in.lx, 128), in.fmt == Format::DL16 ? kLanes : kLanes / 2);
}
void Interp::execLdu(const Instr &in, Ctx &c) const { unaligned(in, c, true); }
void Interp::execStu(const Instr &in, Ctx &c) const { unaligned(in, c, false); }
/// ldu (load) / stu: n elements at an element-aligned address.
void Interp::unaligned(const Instr &in, Ctx &c, bool load) const {
  const int64_t esize = in.fmt == Format::DL16 ? 2 : 4, n = in.imm;
  const int64_t addr = reg(c, in.lx.base) + in.lx.offset;
  if (addr % esize != 0)
    fault(in, c, "LX address " + std::to_string(addr) + " is not element aligned");
  uint8_t *p = lxPtr(in, c, in.lx, n * esize);
  if (load)
    loadLanes(in.fmt, c.cs.v[in.v[0]], p, n);
  else
    storeLanes(in.fmt, c.cs.v[in.v[0]], p, n);
}

// SFP: every row calls the one reference implementation, isa::sfpApply.
void Interp::execSfp(const Instr &in, Ctx &c) const {
  CoreState &cs = c.cs;
  if (in.op == Opcode::Widen || in.op == Opcode::Unpack) {
    sfpApply(in.op, in.fmt, cs.v[in.v[0]], cs.v[in.v[1]], cs.v[in.v[2]], nullptr, nullptr, 0, 0);
    return;
  }
  auto reg = [&](int r) -> float * { return r >= 0 ? cs.v[r] : nullptr; };
  // Splat carries its lane in the integer immediate.
  float i0 = in.op == Opcode::Splat ? static_cast<float>(in.imm) : in.fimm;
  sfpApply(in.op, in.fmt, cs.v[in.v[0]], nullptr, reg(in.v[1]), reg(in.v[2]), reg(in.v[3]), i0, in.fimm2);
}

class Interpreter final : public Engine {
public:
  explicit Interpreter(WorkCounters *counters) : counters_(counters) {}
  const char *name() const override { return "interp"; }
  std::shared_ptr<const PreparedKernel> prepare(const Kernel &k) override {
    isa::checkKernelLimits(k); // execution recurses over loop nests: bounded by the depth limit
    return std::make_shared<Interp>(k, counters_);
  }

private:
  WorkCounters *counters_;
};

} // namespace

std::unique_ptr<Engine> makeInterpreter(WorkCounters *counters) { return std::make_unique<Interpreter>(counters); }

} // namespace spyre::sim
