// The static timing model: exact per-unit work from the dry run (static trip counts), turned
// into cycles with HardwareConfig. Formulas: timing.cpp and docs/isa.md, "Timing model".
#pragma once
#include "spyre/isa/hardware_config.h"
#include "spyre/isa/program.h"
#include <cstdint>
#include <string>
#include <vector>

namespace spyre::isa {

/// Busy cycles of each unit of one core in one phase.
struct UnitCycles {
  double dma = 0, lsu = 0, sfp = 0, pt = 0, ring = 0, scalar = 0, sync = 0;

  /// Decoupled units: the phase lasts as long as the busiest unit.
  double overlapped() const;
  /// One unit at a time: compute + memory + communication + control.
  double serial() const;
};

struct TimingReport {
  std::string kernel;
  /// perCorePhase[core][phase]; every core has numPhases entries.
  std::vector<std::vector<UnitCycles>> perCorePhase;
  /// Per phase: max over cores of UnitCycles::overlapped() / serial() (the bounds), and of the
  /// scheduled replay (in-order issue, async DMA engine, waits; timing.cpp).
  std::vector<double> phaseOverlappedCycles, phaseSerialCycles, phaseScheduledCycles;
  int barriers = 0;      ///< top-level `bar`s (each costs hw.barrierNs)
  int activeCores = 0;   ///< cores that issue any DMA; they share the DDR bandwidth
  double launchUs = 0, barrierUs = 0;
  /// Kernel time: launch + Σ phases (max over cores) + barriers, in µs. scheduledUs is the
  /// kernel's simulated time; overlappedUs <= scheduledUs (perfect overlap) and serialUs (no
  /// overlap) bound it.
  double overlappedUs = 0, serialUs = 0, scheduledUs = 0;
  /// A loop never reached a steady state within the replay budget; its tail was extrapolated.
  bool scheduleApproximate = false;
  // Work counters over all cores.
  uint64_t ddrBytes = 0, lsuSticks = 0, sfpStickOps = 0, ptMacs = 0, ringBytes = 0;
  uint64_t dmaOps = 0, sfpTransStickOps = 0, scalarOps = 0, waits = 0; ///< of which / also counted

  int numPhases() const { return static_cast<int>(phaseOverlappedCycles.size()); }
  /// Per phase the max over cores of each unit.
  UnitCycles phaseMax(int phase) const;
  /// Σ over phases of phaseMax: the "total" row of summary().
  UnitCycles totals() const;
  /// Human-readable table: per phase the max over cores of each unit, totals, µs in both modes.
  std::string summary() const;
};

/// The timing of a job: Σ over its kernels' reports (spyre-jit-bench's simulated device time).
struct JobTiming {
  double scheduledUs = 0, overlappedUs = 0, serialUs = 0, launchUs = 0, barrierUs = 0;
  /// Per unit: Σ kernels Σ phases of the busiest core (TimingReport::phaseMax), in µs.
  UnitCycles unitUs;
  uint64_t ddrBytes = 0, lsuSticks = 0, sfpStickOps = 0, ptMacs = 0;

  /// Adds the report of one more kernel, timed on `hw`.
  void add(const TimingReport &r, const HardwareConfig &hw);
};

/// Times `k` (which should have passed verifyKernel) on `hw`. Throws spyre::Error where the dry
/// run cannot proceed (a core without a program, a per-core table without the core's entry).
TimingReport timeKernel(const Kernel &k, const HardwareConfig &hw);

enum class TimelineUnit : uint8_t { Sequencer, Lsu, Sfp, Pt, Ring, Dma };

/// One busy interval of a unit on the scheduled timeline of one core program, in cycles from
/// the start of its phase. `count` instructions (or loop iterations) are merged into it.
struct TimelineSlice {
  int phase = 0;
  TimelineUnit unit = TimelineUnit::Sequencer;
  double start = 0, end = 0;
  std::string what;
  uint64_t count = 1;
};

/// The scheduled replay of program `p` of `k` as slices: DMA transfers one by one, compute
/// units as merged busy runs, sequencer stalls on `wait`, loop iterations skipped by
/// extrapolation as one slice each. At most maxSlicesPerUnit per unit and phase (later work
/// extends the last slice). For SPYRE_TRACE.
std::vector<TimelineSlice> scheduleTimeline(const Kernel &k, const CoreProgram &p, const HardwareConfig &hw,
                                            size_t maxSlicesPerUnit = 64);

/// timeKernel(k, hw).scheduledUs without the per-core work counters (no dry run per core):
/// cheap enough for the backend to compare candidate schedules of one SuperDSC.
double scheduledKernelUs(const Kernel &k, const HardwareConfig &hw);

} // namespace spyre::isa
