#include "spyre/isa/hardware_config.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>

namespace spyre::isa {

double HardwareConfig::ddrBytesPerCyclePerCore(int activeCores) const {
  return ddrBytesPerSecond / (clockGHz * 1e9) / std::max(1, activeCores);
}

HardwareConfig HardwareConfig::fromEnv() {
  HardwareConfig hw;
  const char *env = std::getenv("SENCORES");
  if (!env)
    return hw;
  std::string_view s(env);
  int v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  // torch-spyre's work_division._validate_max_cores wording, so users see the same error.
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || v < 1 || v > 32)
    throw Unsupported("invalid SENCORES value " + std::string(s));
  hw.numCores = v;
  return hw;
}

} // namespace spyre::isa
