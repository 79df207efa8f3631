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
//            A multicast (dma.mc, cohort of k cores) reads DDR once for the cohort: each member
//            is charged bytes / k. The members run the same instruction stream (the verifier
//            checks they issue the same transfers), so they reach it together; a skew between
//            them is not modelled.
// Per core per phase: overlapped = max over units (decoupled units that overlap perfectly);
// serial = sum over units (each unit waits for the previous one, the way the public Python
// interpreter of Spyre kernels counts compute + memory + comm).
// Phase time = max over cores. Kernel time = H.kernelLaunchNs + Σ phases + #bar · H.barrierNs.
//
// The scheduled time (the one reported as the kernel's simulated time) is the replay in
// schedule.h.
#include "spyre/isa/timing.h"
#include "spyre/isa/limits.h"
#include "schedule.h"
#include "walk.h"
#include <algorithm>

namespace spyre::isa {


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
      cur.ddrBytes += w * static_cast<uint64_t>(dmaDdrBytes(in));
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

/// The program executes a DMA (a loop with zero trips executes nothing).
bool issuesDma(const std::vector<Instr> &body) {
  for (const Instr &in : body) {
    if (opInfo(in.op).timing == TimingClass::Dma)
      return true;
    if (in.op == Opcode::Loop && in.imm > 0 && issuesDma(in.body))
      return true;
  }
  return false;
}

/// Cores whose program executes a DMA (they share the card's DDR bandwidth). A loop body runs
/// iff its trip count is > 0, so this equals the dry run's count.
int dmaActiveCores(const Kernel &k) {
  int active = 0;
  for (const CoreProgram &p : k.programs)
    if (issuesDma(p.body))
      active += p.lastCore - p.firstCore + 1;
  return active;
}

int topLevelBarriers(const CoreProgram &p) {
  return static_cast<int>(
      std::count_if(p.body.begin(), p.body.end(), [](const Instr &in) { return in.op == Opcode::Bar; }));
}

/// Per phase, the max over the kernel's core programs of the scheduled replay (timing depends
/// only on a program's structure: one replay per program, not per core).
std::vector<double> scheduledPhases(const Kernel &k, const HardwareConfig &hw, int activeCores, bool *approximate) {
  detail::Scheduler sched(hw, activeCores);
  std::vector<double> phases;
  for (const CoreProgram &p : k.programs) {
    auto ranges = phaseRanges(p);
    if (phases.size() < ranges.size())
      phases.resize(ranges.size(), 0.0);
    for (size_t ph = 0; ph < ranges.size(); ++ph)
      phases[ph] = std::max(phases[ph], sched.phase(p.body, ranges[ph].first, ranges[ph].second));
  }
  if (approximate)
    *approximate = sched.approximate();
  return phases;
}

} // namespace

std::vector<TimelineSlice> scheduleTimeline(const Kernel &k, const CoreProgram &p, const HardwareConfig &hw,
                                            size_t maxSlicesPerUnit) {
  checkKernelLimits(k);
  detail::Scheduler sched(hw, dmaActiveCores(k));
  std::vector<TimelineSlice> out;
  auto ranges = phaseRanges(p);
  for (size_t ph = 0; ph < ranges.size(); ++ph)
    sched.phase(p.body, ranges[ph].first, ranges[ph].second, static_cast<int>(ph), &out, maxSlicesPerUnit);
  return out;
}

double scheduledKernelUs(const Kernel &k, const HardwareConfig &hw) {
  int barriers = 0;
  for (const CoreProgram &p : k.programs)
    barriers = std::max(barriers, topLevelBarriers(p));
  double cycles = 0;
  for (double c : scheduledPhases(k, hw, dmaActiveCores(k), nullptr))
    cycles += c;
  return hw.kernelLaunchNs / 1e3 + barriers * hw.barrierNs / 1e3 + cycles / hw.cyclesPerUs();
}

TimingReport timeKernel(const Kernel &k, const HardwareConfig &hw) {
  checkKernelLimits(k); // the replay recurses over loop nests: bounded by the depth limit
  TimingReport rep;
  rep.kernel = k.name;
  std::vector<std::vector<Work>> work(std::max(0, k.numCores));
  size_t numPhases = 0;
  for (int c = 0; c < k.numCores; ++c) {
    const CoreProgram *p = k.programFor(c);
    if (!p)
      throw Error("kernel " + k.name + ": core " + std::to_string(c) + " has no program");
    Counter count;
    detail::walkStructure(k, *p, c, count); // exact counts from the trip counts, O(program)
    // A trailing `bar` leaves an empty last phase in the counter; phaseRanges() has none.
    if (count.phases.size() > 1 && !p->body.empty() && p->body.back().op == Opcode::Bar)
      count.phases.pop_back();
    work[c] = std::move(count.phases);
    numPhases = std::max(numPhases, work[c].size());
    rep.barriers = std::max(rep.barriers, topLevelBarriers(*p));
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
  // The scheduled replay depends only on a program's structure: once per core program.
  rep.phaseScheduledCycles = scheduledPhases(k, hw, rep.activeCores, &rep.scheduleApproximate);
  rep.phaseScheduledCycles.resize(numPhases, 0.0);
  rep.launchUs = hw.kernelLaunchNs / 1e3;
  rep.barrierUs = rep.barriers * hw.barrierNs / 1e3;
  double ov = 0, se = 0, sc = 0;
  for (size_t ph = 0; ph < numPhases; ++ph) {
    ov += rep.phaseOverlappedCycles[ph];
    se += rep.phaseSerialCycles[ph];
    sc += rep.phaseScheduledCycles[ph];
  }
  rep.overlappedUs = rep.launchUs + rep.barrierUs + ov / hw.cyclesPerUs();
  rep.serialUs = rep.launchUs + rep.barrierUs + se / hw.cyclesPerUs();
  rep.scheduledUs = rep.launchUs + rep.barrierUs + sc / hw.cyclesPerUs();
  return rep;
}

} // namespace spyre::isa
