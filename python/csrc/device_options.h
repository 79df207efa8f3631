// The spyre device's knobs. Read through spyre::Env in one place (device_options.cpp is the
// device code's only reader of the process environment), at each use: tests and users change
// them while the process runs. The accepted values are those of torch_spyre/_config.py.
#pragma once

#include "spyre/isa/env.h"

namespace spyre::py {

struct DeviceOptions {
  bool debug = false;       ///< TORCH_SPYRE_DEBUG (a level, 0..3) non-zero: log every transfer to stderr
  bool downcastWarn = true; ///< TORCH_SPYRE_DOWNCAST_WARN (a flag): warn when int64 is stored as int32

  /// Throws spyre::Error naming the variable, the value and the accepted values.
  static DeviceOptions fromEnv(const spyre::Env &env);
};

/// DeviceOptions::fromEnv over the process environment, as it is now, with the process-wide
/// override of the downcast warning (torch.spyre.set_downcast_warning) applied.
DeviceOptions currentDeviceOptions();

/// Simulated cards in this process: SPYRE_DEVICE_COUNT (1..16; another value throws
/// spyre::Error naming it), else torchrun's LOCAL_WORLD_SIZE clamped to 1..16, else 1. Read at
/// each call; deviceCount() keeps the first answer for the process's life.
int configuredDeviceCount(int maxDevices);

/// torch-spyre's set_downcast_warning: overrides TORCH_SPYRE_DOWNCAST_WARN for this process.
void setDowncastWarning(bool on);
/// Drops the override (tests restore the environment's say with it).
void clearDowncastWarning();
/// Whether the int64 downcast warning is on (the override, else TORCH_SPYRE_DOWNCAST_WARN).
bool downcastWarning();

} // namespace spyre::py
