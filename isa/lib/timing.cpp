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
// Those two are bounds. The *scheduled* time (the one reported as the kernel's simulated time)
// replays each core's instruction stream in order against the units' availability, so it sees
// what the bounds cannot: a compute block that waits for its DMA, a DMA that waits for the
// compute that fills its buffer. Per core: a sequencer issues in program order (scalar ops and
// waits advance it; loop entries cost one scalar op); LSU, SFP, PT and ring instructions start
// when the sequencer reaches them and their unit is free, and occupy the unit for their cost
// (units pipeline: no register dependencies are modelled, as in the overlapped bound); one DMA
// engine runs DMAs in issue order, each starting when issued, when the engine is free and when
// every compute unit has drained (the LX it reads or overwrites is then final); a DMA's token
// completes when the DMA does; `wait` holds the sequencer until its tokens complete. A phase
// ends when every unit and the DMA engine are idle. Double-buffered staging (prefetch block
// i+1 before computing block i) is what brings this close to the overlapped bound; a
// synchronous DMA per block lands it near the serial one.
// Loops are replayed iteration by iteration until the state (every unit's free time, clamped
// to the sequencer's time) advances by the same vector twice in a row; then the remaining
// iterations are skipped by extrapolation, and the jump is verified by replaying the next
// iteration (it must advance by the same vector again, else half the jump is tried). Timing
// depends only on the program's structure (trip counts and shapes are immediates), so one
// replay per distinct core program suffices.
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

/// The scheduled replay of one core's phase (file comment).
class Scheduler {
public:
  Scheduler(const HardwareConfig &hw, int activeCores) : hw_(hw), activeCores_(activeCores) {}

  /// Cycles from phase start until every unit of the core is idle. With `rec`, the units'
  /// busy intervals are appended to it (at most `maxPerUnit` slices per unit; later work is
  /// merged into the last slice).
  double phase(const std::vector<Instr> &body, size_t begin, size_t end, int phaseIndex = 0,
               std::vector<TimelineSlice> *rec = nullptr, size_t maxPerUnit = 64) {
    t_.fill(0.0);
    rec_ = rec;
    phase_ = phaseIndex;
    maxPerUnit_ = maxPerUnit;
    perUnit_.fill(0);
    last_.fill(-1);
    busy_.fill(0);
    for (size_t i = begin; i < end; ++i)
      step(body[i]);
    rec_ = nullptr;
    return *std::max_element(t_.begin(), t_.end());
  }

  bool approximate() const { return approximate_; }

private:
  enum : int { Seq, Lsu, Sfp, Pt, Ring, Dma, Tok0, NumComp = Tok0 + kNumTokens };
  using State = std::array<double, NumComp>;
  static constexpr int kUnitsRecorded = 6; // Seq .. Dma

  const HardwareConfig &hw_;
  int activeCores_;
  State t_{};
  bool approximate_ = false;
  // Timeline recording (trace): slices per unit, index of each unit's last slice.
  std::vector<TimelineSlice> *rec_ = nullptr;
  int phase_ = 0;
  size_t maxPerUnit_ = 64;
  std::array<size_t, kUnitsRecorded> perUnit_{};
  std::array<long, kUnitsRecorded> last_{};
  std::array<double, kUnitsRecorded> busy_{}; ///< busy cycles per unit (recording only)

  static TimelineUnit timelineUnit(int u) {
    switch (u) {
    case Lsu: return TimelineUnit::Lsu;
    case Sfp: return TimelineUnit::Sfp;
    case Pt: return TimelineUnit::Pt;
    case Ring: return TimelineUnit::Ring;
    case Dma: return TimelineUnit::Dma;
    default: return TimelineUnit::Sequencer;
    }
  }

  /// Records [start, end) on unit u. Compute slices that continue the unit's last one (same
  /// name, no gap) extend it; past the cap everything extends the last slice.
  void record(int u, double start, double end, const std::string &what, bool mergeable, uint64_t count = 1) {
    if (!rec_ || end <= start)
      return;
    long li = last_[u];
    if (li >= 0) {
      TimelineSlice &l = (*rec_)[static_cast<size_t>(li)];
      bool contiguous = start <= l.end + 1e-9;
      if ((mergeable && contiguous && l.what == what) || perUnit_[u] >= maxPerUnit_) {
        l.end = std::max(l.end, end);
        l.count += count;
        if (perUnit_[u] >= maxPerUnit_ && l.what != what)
          l.what = "(more work, merged)";
        return;
      }
    }
    last_[u] = static_cast<long>(rec_->size());
    ++perUnit_[u];
    rec_->push_back({phase_, timelineUnit(u), start, end, what, count});
  }

  double corelets() const { return hw_.corelets; }

  void unit(int u, double cost, const char *what = nullptr) {
    double start = std::max(t_[u], t_[Seq]);
    t_[u] = start + cost;
    if (rec_) {
      busy_[u] += cost;
      record(u, start, t_[u], what ? what : "busy", true);
    }
  }

  void step(const Instr &in) {
    const double c = corelets();
    switch (opInfo(in.op).timing) {
    case TimingClass::Scalar:
      t_[Seq] += hw_.scalarCycles;
      if (in.op == Opcode::Loop)
        loop(in);
      return;
    case TimingClass::Lsu: unit(Lsu, 1.0 / (hw_.lsuSticksPerCycle * c), "ld/st"); return;
    case TimingClass::Sfp: unit(Sfp, 1.0 / (hw_.sfpSticksPerCycle * c), "sfp"); return;
    case TimingClass::SfpTrans:
      unit(Sfp, hw_.transcendentalCyclesPerStick / (hw_.sfpSticksPerCycle * c), "sfp");
      return;
    case TimingClass::Pt:
      unit(Pt,
           static_cast<double>(in.imm) * static_cast<double>(in.imms[0]) * static_cast<double>(in.imms[1]) /
               hw_.ptMacsPerCycle,
           "pt.mm");
      return;
    case TimingClass::PtOut:
      unit(Sfp, static_cast<double>(in.imm) * static_cast<double>(in.imms[0] / 64) / (hw_.sfpSticksPerCycle * c),
           "pt.out");
      return;
    case TimingClass::Ring:
      unit(Ring, static_cast<double>(in.imm) * 128 / hw_.ringBytesPerCyclePerHop, "ring");
      return;
    case TimingClass::Dma: {
      double start = std::max({t_[Seq], t_[Dma], t_[Lsu], t_[Sfp], t_[Pt], t_[Ring]});
      double bytes = static_cast<double>(dmaDdrBytes(in));
      t_[Dma] = start + hw_.nsToCycles(hw_.dmaStartupNs) + bytes / hw_.ddrBytesPerCyclePerCore(activeCores_);
      if (rec_) {
        char what[64];
        std::snprintf(what, sizeof what, "%s %lld sticks -> t%d", std::string(opInfo(in.op).mnemonic).c_str(),
                      static_cast<long long>(in.dma.sticks()), in.outToken);
        busy_[Dma] += t_[Dma] - start;
        record(Dma, start, t_[Dma], what, false);
      }
      if (in.outToken >= 0 && in.outToken < kNumTokens)
        t_[Tok0 + in.outToken] = t_[Dma];
      return;
    }
    case TimingClass::Sync: {
      double issued = t_[Seq];
      for (int tok : in.tokens)
        if (tok >= 0 && tok < kNumTokens)
          t_[Seq] = std::max(t_[Seq], t_[Tok0 + tok]);
      if (rec_ && t_[Seq] > issued + 1e-9)
        record(Seq, issued, t_[Seq], "wait (stalled on DMA)", false);
      t_[Seq] += hw_.waitCycles;
      return;
    }
    case TimingClass::Barrier: return; // phases are split by the caller
    }
  }

  /// A unit free before the sequencer's time is as good as free at it: clamping loses nothing
  /// and makes states comparable across iterations.
  void clamp() {
    for (int i = 1; i < NumComp; ++i)
      t_[i] = std::max(t_[i], t_[Seq]);
  }

  static bool near(double a, double b, double scale) { return std::abs(a - b) <= 1e-9 * std::max(1.0, scale); }

  static bool sameStep(const State &a, const State &b, const State &c) {
    for (int i = 0; i < NumComp; ++i)
      if (!near(b[i] - a[i], c[i] - b[i], std::abs(c[i])))
        return false;
    return true;
  }

  void body(const Instr &l) {
    for (const Instr &in : l.body)
      step(in);
    clamp();
  }

  /// b - a == d within rounding.
  static bool stepIs(const State &a, const State &b, const State &d) {
    for (int i = 0; i < NumComp; ++i)
      if (!near(b[i] - a[i], d[i], std::abs(b[i])))
        return false;
    return true;
  }

  void loop(const Instr &l) {
    const int64_t n = l.imm;
    if (n <= 0)
      return;
    clamp();
    State prev2{}, prev1 = t_;
    auto busyPrev1 = busy_;
    int have = 1; // history entries (prev1, prev2) that are valid
    int64_t done = 0, replayed = 0;
    while (done < n) {
      const auto busyBefore = busy_;
      body(l);
      ++done;
      ++replayed;
      busyPrev1 = busyBefore;
      if (have == 2 && done < n && sameStep(prev2, prev1, t_)) {
        State d;
        for (int i = 0; i < NumComp; ++i)
          d[i] = t_[i] - prev1[i];
        // Skip k iterations, then replay one: it must advance by d again.
        bool jumped = false;
        for (int64_t k = n - done - 1; k >= 1 && !jumped; k /= 2) {
          State save = t_, at;
          for (int i = 0; i < NumComp; ++i)
            at[i] = save[i] + static_cast<double>(k) * d[i];
          // Recording: the skipped iterations become one slice per unit that advanced.
          const size_t recSize = rec_ ? rec_->size() : 0;
          const auto perUnit = perUnit_;
          const auto last = last_;
          const auto busy = busy_;
          if (rec_) {
            for (int u = Lsu; u <= Dma; ++u) {
              double perIter = busy_[u] - busyPrev1[u];
              if (perIter <= 0)
                continue;
              char what[96];
              std::snprintf(what, sizeof what, "%lld loop iterations (extrapolated, %.0f%% busy)",
                            static_cast<long long>(k), 100.0 * std::min(1.0, perIter * k / (at[u] - save[u])));
              busy_[u] += perIter * static_cast<double>(k);
              record(u, save[u], at[u], what, false, static_cast<uint64_t>(k));
            }
          }
          t_ = at;
          body(l);
          if (stepIs(at, t_, d)) {
            done += k + 1;
            prev2 = at;
            prev1 = t_;
            jumped = true;
          } else {
            t_ = save;
            if (rec_) {
              rec_->resize(recSize);
              perUnit_ = perUnit;
              last_ = last;
              busy_ = busy;
            }
          }
        }
        if (jumped)
          continue;
      }
      if (replayed > kMaxReplayed && done < n) {
        // No regime that survives a jump: extrapolate the last step, flagged as approximate.
        for (int i = 0; i < NumComp; ++i)
          t_[i] += static_cast<double>(n - done) * (t_[i] - prev1[i]);
        approximate_ = true;
        return;
      }
      prev2 = prev1;
      prev1 = t_;
      have = std::min(have + 1, 2);
    }
  }
  static constexpr int64_t kMaxReplayed = 4096;
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
  Scheduler sched(hw, activeCores);
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
  Scheduler sched(hw, dmaActiveCores(k));
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
