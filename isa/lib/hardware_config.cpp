#include "spyre/isa/hardware_config.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <string>

namespace spyre::isa {

double HardwareConfig::ddrBytesPerCyclePerCore(int activeCores) const {
  return ddrBytesPerSecond / (clockGHz * 1e9) / std::max(1, activeCores);
}

HardwareConfig HardwareConfig::fromEnv(const spyre::Env &env) {
  HardwareConfig hw;
  try {
    hw.numCores = static_cast<int>(env.integer("SENCORES", hw.numCores, 1, 32));
  } catch (const Error &) {
    // torch-spyre's work_division._validate_max_cores wording, so users see the same error.
    throw Unsupported("invalid SENCORES value " + env.raw("SENCORES").value_or("") + " (expected an integer in 1..32)");
  }
  return hw;
}

} // namespace spyre::isa
