// The modelled card: every number the timing model, the verifier and the docs use, one row of
// hardware_config.def each (the defaults and where they come from).
#pragma once
#include "spyre/isa/env.h"
#include <cstdint>

namespace spyre::isa {

struct HardwareConfig {
#define HW(type, name, value) type name = value;
#include "spyre/isa/hardware_config.def"
#undef HW
  /// DDR capacity of one card (SPYRE.md §1): no tensor of a SuperDSC can be larger.
  static constexpr uint64_t kDdrCapacityBytes = 128ull << 30;

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
