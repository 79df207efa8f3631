#include "device_options.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>

namespace spyre::py {

DeviceOptions DeviceOptions::fromEnv(const spyre::Env &env) {
  DeviceOptions o;
  // The accepted values match torch_spyre/_config.py's definitions of the two knobs.
  o.debug = env.integer("TORCH_SPYRE_DEBUG", 0, 0, 3) != 0;
  o.downcastWarn = env.flag("TORCH_SPYRE_DOWNCAST_WARN", true);
  return o;
}

namespace {
std::atomic<int> gDowncastOverride{-1}; // -1: none, else 0/1
} // namespace

DeviceOptions currentDeviceOptions() {
  spyre::Env env(&std::getenv);
  DeviceOptions o = DeviceOptions::fromEnv(env);
  if (int v = gDowncastOverride.load(); v >= 0)
    o.downcastWarn = v == 1;
  return o;
}

int configuredDeviceCount(int maxDevices) {
  spyre::Env env(&std::getenv);
  // torchrun's processes on this host (leniently: it is torchrun's variable, not ours).
  const std::string local = env.string("LOCAL_WORLD_SIZE");
  const long l = local.empty() ? 1 : std::strtol(local.c_str(), nullptr, 10);
  const int fromTorchrun = static_cast<int>(std::clamp<long>(l, 1, maxDevices));
  return static_cast<int>(env.integer("SPYRE_DEVICE_COUNT", fromTorchrun, 1, maxDevices));
}

void setDowncastWarning(bool on) { gDowncastOverride = on ? 1 : 0; }

void clearDowncastWarning() { gDowncastOverride = -1; }

bool downcastWarning() {
  if (int v = gDowncastOverride.load(); v >= 0)
    return v == 1;
  spyre::Env env(&std::getenv);
  return DeviceOptions::fromEnv(env).downcastWarn;
}

} // namespace spyre::py
