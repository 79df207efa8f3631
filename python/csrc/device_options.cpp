#include "device_options.h"

#include <cstdlib>

namespace spyre::py {

DeviceOptions DeviceOptions::fromEnv(const spyre::Env &env) {
  DeviceOptions o;
  // The accepted values match torch_spyre/_config.py's definitions of the two knobs.
  o.debug = env.integer("TORCH_SPYRE_DEBUG", 0, 0, 3) != 0;
  o.downcastWarn = env.flag("TORCH_SPYRE_DOWNCAST_WARN", true);
  return o;
}

DeviceOptions currentDeviceOptions() {
  spyre::Env env(&std::getenv);
  return DeviceOptions::fromEnv(env);
}

} // namespace spyre::py
