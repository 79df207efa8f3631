// The timing report's arithmetic and text (timing.h); the model itself is timing.cpp.
#include "spyre/isa/timing.h"
#include <algorithm>
#include <cstdio>

namespace spyre::isa {

double UnitCycles::overlapped() const { return std::max({dma, lsu, sfp, pt, ring, scalar, sync}); }
double UnitCycles::serial() const { return dma + lsu + sfp + pt + ring + scalar + sync; }

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

void JobTiming::add(const TimingReport &r, const HardwareConfig &hw) {
  scheduledUs += r.scheduledUs, overlappedUs += r.overlappedUs, serialUs += r.serialUs;
  launchUs += r.launchUs, barrierUs += r.barrierUs;
  ddrBytes += r.ddrBytes, lsuSticks += r.lsuSticks, sfpStickOps += r.sfpStickOps, ptMacs += r.ptMacs;
  const double perUs = hw.cyclesPerUs();
  for (int ph = 0; ph < r.numPhases(); ++ph) {
    const UnitCycles m = r.phaseMax(ph);
    unitUs.dma += m.dma / perUs, unitUs.lsu += m.lsu / perUs, unitUs.sfp += m.sfp / perUs;
    unitUs.pt += m.pt / perUs, unitUs.ring += m.ring / perUs;
    unitUs.scalar += m.scalar / perUs, unitUs.sync += m.sync / perUs;
  }
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
  line("%-7s %12s %12s %12s %12s %12s %12s %12s %12s %12s %12s\n", "phase", "dma", "lsu", "sfp", "pt",
       "ring", "scalar", "sync", "scheduled", "overlapped", "serial");
  for (int ph = 0; ph < numPhases(); ++ph) {
    UnitCycles m = phaseMax(ph);
    line("%-7d %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f\n", ph, m.dma, m.lsu,
         m.sfp, m.pt, m.ring, m.scalar, m.sync, phaseScheduledCycles[ph], phaseOverlappedCycles[ph],
         phaseSerialCycles[ph]);
  }
  UnitCycles tot = totals();
  double ov = 0, se = 0, sc = 0;
  for (int ph = 0; ph < numPhases(); ++ph)
    ov += phaseOverlappedCycles[ph], se += phaseSerialCycles[ph], sc += phaseScheduledCycles[ph];
  line("%-7s %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f\n", "total", tot.dma,
       tot.lsu, tot.sfp, tot.pt, tot.ring, tot.scalar, tot.sync, sc, ov, se);
  line("(cycles; per phase the max over cores of each unit; phase time = max over cores)\n");
  line("launch %.3f us + barriers %.3f us\n", launchUs, barrierUs);
  line("kernel time: %.3f us scheduled%s (bounds: overlapped %.3f us, serial %.3f us)\n", scheduledUs,
       scheduleApproximate ? " (approximate: a loop never settled)" : "", overlappedUs, serialUs);
  line("work: DDR %llu B, LSU %llu sticks, SFP %llu stick-ops, PT %llu MACs, ring %llu B\n",
       static_cast<unsigned long long>(ddrBytes), static_cast<unsigned long long>(lsuSticks),
       static_cast<unsigned long long>(sfpStickOps), static_cast<unsigned long long>(ptMacs),
       static_cast<unsigned long long>(ringBytes));
  return s;
}

} // namespace spyre::isa
