// The modelled card: every number the timing model, the verifier and the docs use. Defaults
// are torch-spyre's calibration constants (SPYRE.md §1, torch-spyre-notes §4.6); the few that
// torch-spyre does not publish (DMA start-up, barrier, kernel launch) are our choices, argued
// next to each field.
#pragma once
#include "spyre/isa/env.h"
#include <cstdint>

namespace spyre::isa {

struct HardwareConfig {
  /// Cores per card (SENCORES, 1..32).
  int numCores = 32;
  /// Core clock. 1024 MAC/cycle × 1.5 GHz = 1.536e6 MAC/µs per core, torch-spyre's
  /// _PEAK_MACS_US_CORE; ×32 cores ×2 FLOP/MAC = 98.304 TFLOP/s DL16.
  double clockGHz = 1.5;
  /// PT arrays: DL16 multiply-accumulates per cycle per core (both corelets together).
  double ptMacsPerCycle = 1024;
  /// Corelets per core; each has one SFP, one PT array and one LSU port.
  int corelets = 2;
  /// SFP throughput: stick-ops per cycle per corelet (one 128-B stick per cycle).
  double sfpSticksPerCycle = 1;
  /// Transcendental SFP ops (TimingClass SfpTrans) cost this many cycles per stick.
  double transcendentalCyclesPerStick = 4;
  /// LSU throughput: sticks per cycle per corelet between LX and vector registers.
  double lsuSticksPerCycle = 1;
  /// DDR bandwidth of the card, shared evenly by the kernel's *active* cores (cores that issue
  /// any DMA), as torch-spyre's and ktir-cpu's contended-bus models do.
  double ddrBytesPerSecond = 204.8e9;
  /// DDR capacity of one card (SPYRE.md §1): no tensor of a SuperDSC can be larger.
  static constexpr uint64_t kDdrCapacityBytes = 128ull << 30;
  /// Fixed cost of every DMA instruction (descriptor fetch + DDR round trip). Not published;
  /// 100 ns is a typical LPDDR5 access latency plus a descriptor fetch. It keeps many tiny
  /// DMAs from looking free against a few large ones.
  double dmaStartupNs = 100;
  /// Ring: bytes per cycle per direction per hop (torch-spyre: 128 B/cycle per direction).
  double ringBytesPerCyclePerHop = 128;
  /// One kernel-wide barrier (`bar`). Not published; 200 ns = 300 cycles, the order of a
  /// 32-node ring round trip plus the synchronisation handshake.
  double barrierNs = 200;
  /// Launching one kernel (job-plan step, control blocks, core start). Not published; chosen
  /// so that a pointwise kernel on a few KiB costs a few µs, in line with torch-spyre's
  /// measurement that splitting a small softmax over 4 cores is slower than 1 ("overheads
  /// dominate") and its 50 µs under-utilisation penalty being an order of magnitude above it.
  double kernelLaunchNs = 3000;
  /// Scalar unit: cycles per li/addi/muli/tbl and per loop entry (hardware loops, no per-
  /// iteration cost).
  double scalarCycles = 1;
  /// Sync unit: cycles per `wait` instruction issued (its blocking is what overlapped mode's
  /// max over units stands for).
  double waitCycles = 1;
  /// LX scratchpad per core and the part the compiler may use (20 % reserved).
  int64_t lxBytes = 2 * 1024 * 1024;
  int64_t lxUsableBytes = 1677721;
  int64_t stickBytes = 128;

  double cyclesPerUs() const { return clockGHz * 1e3; }
  double nsToCycles(double ns) const { return ns * clockGHz; }
  /// DDR bytes per cycle available to one core when `activeCores` cores stream concurrently.
  double ddrBytesPerCyclePerCore(int activeCores) const;

  /// Defaults, with numCores from SENCORES when set (an empty value counts as unset). Throws
  /// spyre::Unsupported("invalid SENCORES value N (expected an integer in 1..32)") unless it is an integer in 1..32
  /// (torch-spyre's wording).
  static HardwareConfig fromEnv(const spyre::Env &env);
};

} // namespace spyre::isa
