// Static timing model.
//
// Work per core per phase comes from the dry run (walk.h): every executed instruction with its
// exact dynamic count. Cycles per unit (H = HardwareConfig, c = corelets per core = 2):
//   scalar = (#li/addi/muli/tbl + #loop entries) · H.scalarCycles   (hardware loops: no per-
//            iteration cost)
//   sync   = #wait · H.waitCycles                                    (bar: kernel level, below)
//   lsu    = #ld/st sticks / (H.lsuSticksPerCycle · c)
//   sfp    = (#Sfp stick-ops + H.transcendentalCyclesPerStick · #SfpTrans stick-ops)
//            / (H.sfpSticksPerCycle · c)
//   pt     = MACs / H.ptMacsPerCycle
//   ring   = bytes / H.ringBytesPerCyclePerHop · hops
//   dma    = #DMA · H.dmaStartupNs · GHz + DDR bytes / (H.ddrBytesPerSecond / (GHz·1e9) / A)
//            where A = number of active cores in the kernel (cores that execute any DMA): the
//            card's DDR bandwidth is shared evenly by the cores streaming at the same time.
// Per core per phase: overlapped = max over units (decoupled units that overlap perfectly);
// serial = sum over units (each unit waits for the previous one, the way the public Python
// interpreter of Spyre kernels counts compute + memory + comm).
// Phase time = max over cores. Kernel time = H.kernelLaunchNs + Σ phases + #bar · H.barrierNs.
#include "spyre/isa/timing.h"
#include "walk.h"
#include <algorithm>
#include <cstdio>

namespace spyre::isa {

double UnitCycles::overlapped() const { return std::max({dma, lsu, sfp, pt, ring, scalar, sync}); }
double UnitCycles::serial() const { return dma + lsu + sfp + pt + ring + scalar + sync; }

namespace {

/// Raw dynamic work of one core in one phase.
struct Work {
  uint64_t dmaOps = 0, ddrBytes = 0, lsuSticks = 0, sfpOps = 0, sfpTransOps = 0, ptMacs = 0,
           ringBytes = 0, scalarOps = 0, waits = 0;
};

class Counter final : public detail::WalkVisitor {
public:
  std::vector<Work> phases{Work{}};

  void visit(const Instr &in, const detail::ScalarState &, uint64_t w, int depth) override {
    Work &cur = phases.back();
    switch (opInfo(in.op).timing) {
    case TimingClass::Scalar: cur.scalarOps += w; break;
    case TimingClass::Dma:
      cur.dmaOps += w;
      cur.ddrBytes += w * static_cast<uint64_t>(in.dma.sticks()) * 128;
      break;
    case TimingClass::Lsu: cur.lsuSticks += w; break;
    case TimingClass::Sfp: cur.sfpOps += w; break;
    case TimingClass::SfpTrans: cur.sfpTransOps += w; break;
    case TimingClass::Pt:
      cur.ptMacs += w * static_cast<uint64_t>(in.imm) * static_cast<uint64_t>(in.imms[0]) *
                    static_cast<uint64_t>(in.imms[1]);
      break;
    case TimingClass::PtOut: // fp32 -> DL16 conversion on the SFP, one stick-op per output stick
      cur.sfpOps += w * static_cast<uint64_t>(in.imm) * static_cast<uint64_t>(in.imms[0] / 64);
      break;
    case TimingClass::Ring: cur.ringBytes += w * static_cast<uint64_t>(in.imm) * 128; break;
    case TimingClass::Sync: cur.waits += w; break;
    case TimingClass::Barrier:
      // Phases split at top-level barriers only (the verifier rejects others). A trailing bar
      // does not open an empty phase, matching phaseRanges().
      if (depth == 0)
        phases.push_back(Work{});
      break;
    }
  }
};

UnitCycles cycles(const Work &w, const HardwareConfig &hw, int activeCores) {
  UnitCycles u;
  double c = hw.corelets;
  u.scalar = static_cast<double>(w.scalarOps) * hw.scalarCycles;
  u.sync = static_cast<double>(w.waits) * hw.waitCycles;
  u.lsu = static_cast<double>(w.lsuSticks) / (hw.lsuSticksPerCycle * c);
  u.sfp = (static_cast<double>(w.sfpOps) + hw.transcendentalCyclesPerStick * static_cast<double>(w.sfpTransOps)) /
          (hw.sfpSticksPerCycle * c);
  u.pt = static_cast<double>(w.ptMacs) / hw.ptMacsPerCycle;
  u.ring = static_cast<double>(w.ringBytes) / hw.ringBytesPerCyclePerHop;
  u.dma = static_cast<double>(w.dmaOps) * hw.nsToCycles(hw.dmaStartupNs) +
          (w.ddrBytes ? static_cast<double>(w.ddrBytes) / hw.ddrBytesPerCyclePerCore(activeCores) : 0.0);
  return u;
}

} // namespace

TimingReport timeKernel(const Kernel &k, const HardwareConfig &hw) {
  TimingReport rep;
  rep.kernel = k.name;
  std::vector<std::vector<Work>> work(std::max(0, k.numCores));
  size_t numPhases = 0;
  for (int c = 0; c < k.numCores; ++c) {
    const CoreProgram *p = k.programFor(c);
    if (!p)
      throw Error("kernel " + k.name + ": core " + std::to_string(c) + " has no program");
    Counter count;
    detail::walkProgram(k, *p, c, count);
    // A trailing `bar` leaves an empty last phase in the counter; phaseRanges() has none.
    if (count.phases.size() > 1 && !p->body.empty() && p->body.back().op == Opcode::Bar)
      count.phases.pop_back();
    work[c] = std::move(count.phases);
    numPhases = std::max(numPhases, work[c].size());
    rep.barriers = std::max(rep.barriers, static_cast<int>(std::count_if(
        p->body.begin(), p->body.end(), [](const Instr &in) { return in.op == Opcode::Bar; })));
  }
  for (const auto &phases : work) {
    bool active = false;
    for (const Work &w : phases) {
      active = active || w.dmaOps > 0;
      rep.ddrBytes += w.ddrBytes;
      rep.dmaOps += w.dmaOps;
      rep.sfpTransStickOps += w.sfpTransOps;
      rep.scalarOps += w.scalarOps;
      rep.waits += w.waits;
      rep.lsuSticks += w.lsuSticks;
      rep.sfpStickOps += w.sfpOps + w.sfpTransOps;
      rep.ptMacs += w.ptMacs;
      rep.ringBytes += w.ringBytes;
    }
    rep.activeCores += active;
  }
  rep.phaseOverlappedCycles.assign(numPhases, 0.0);
  rep.phaseSerialCycles.assign(numPhases, 0.0);
  for (auto &phases : work) {
    phases.resize(numPhases); // cores with fewer phases (unverified kernels) idle in the rest
    std::vector<UnitCycles> row;
    for (size_t ph = 0; ph < numPhases; ++ph) {
      row.push_back(cycles(phases[ph], hw, rep.activeCores));
      rep.phaseOverlappedCycles[ph] = std::max(rep.phaseOverlappedCycles[ph], row.back().overlapped());
      rep.phaseSerialCycles[ph] = std::max(rep.phaseSerialCycles[ph], row.back().serial());
    }
    rep.perCorePhase.push_back(std::move(row));
  }
  rep.launchUs = hw.kernelLaunchNs / 1e3;
  rep.barrierUs = rep.barriers * hw.barrierNs / 1e3;
  double ov = 0, se = 0;
  for (size_t ph = 0; ph < numPhases; ++ph) {
    ov += rep.phaseOverlappedCycles[ph];
    se += rep.phaseSerialCycles[ph];
  }
  rep.overlappedUs = rep.launchUs + rep.barrierUs + ov / hw.cyclesPerUs();
  rep.serialUs = rep.launchUs + rep.barrierUs + se / hw.cyclesPerUs();
  return rep;
}

UnitCycles TimingReport::phaseMax(int ph) const {
  UnitCycles m;
  for (const auto &core : perCorePhase) {
    const UnitCycles &u = core[ph];
    m.dma = std::max(m.dma, u.dma);
    m.lsu = std::max(m.lsu, u.lsu);
    m.sfp = std::max(m.sfp, u.sfp);
    m.pt = std::max(m.pt, u.pt);
    m.ring = std::max(m.ring, u.ring);
    m.scalar = std::max(m.scalar, u.scalar);
    m.sync = std::max(m.sync, u.sync);
  }
  return m;
}

UnitCycles TimingReport::totals() const {
  UnitCycles t;
  for (int ph = 0; ph < numPhases(); ++ph) {
    UnitCycles m = phaseMax(ph);
    t.dma += m.dma, t.lsu += m.lsu, t.sfp += m.sfp, t.pt += m.pt, t.ring += m.ring;
    t.scalar += m.scalar, t.sync += m.sync;
  }
  return t;
}

std::string TimingReport::summary() const {
  std::string s;
  char buf[256];
  auto line = [&](const char *fmt, auto... a) {
    std::snprintf(buf, sizeof buf, fmt, a...);
    s += buf;
  };
  line("kernel %s: %zu cores (%d active on DDR), %d phases, %d barriers\n", kernel.c_str(),
       perCorePhase.size(), activeCores, numPhases(), barriers);
  line("%-7s %12s %12s %12s %12s %12s %12s %12s %12s %12s\n", "phase", "dma", "lsu", "sfp", "pt",
       "ring", "scalar", "sync", "overlapped", "serial");
  for (int ph = 0; ph < numPhases(); ++ph) {
    UnitCycles m = phaseMax(ph);
    line("%-7d %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f\n", ph, m.dma, m.lsu,
         m.sfp, m.pt, m.ring, m.scalar, m.sync, phaseOverlappedCycles[ph], phaseSerialCycles[ph]);
  }
  UnitCycles tot = totals();
  double ov = 0, se = 0;
  for (int ph = 0; ph < numPhases(); ++ph)
    ov += phaseOverlappedCycles[ph], se += phaseSerialCycles[ph];
  line("%-7s %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f\n", "total", tot.dma,
       tot.lsu, tot.sfp, tot.pt, tot.ring, tot.scalar, tot.sync, ov, se);
  line("(cycles; per phase the max over cores of each unit; phase time = max over cores)\n");
  line("launch %.3f us + barriers %.3f us\n", launchUs, barrierUs);
  line("kernel time: overlapped %.3f us, serial %.3f us\n", overlappedUs, serialUs);
  line("work: DDR %llu B, LSU %llu sticks, SFP %llu stick-ops, PT %llu MACs, ring %llu B\n",
       static_cast<unsigned long long>(ddrBytes), static_cast<unsigned long long>(lsuSticks),
       static_cast<unsigned long long>(sfpStickOps), static_cast<unsigned long long>(ptMacs),
       static_cast<unsigned long long>(ringBytes));
  return s;
}

} // namespace spyre::isa
