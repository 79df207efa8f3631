// One launch of a JobPlan as the backend hands it to the simulator: the kernel, verified
// against the launch's argument buffers, and its static timing. Plain data, so the simulator
// runs kernels without knowing the compiler that produced them.
#pragma once
#include "spyre/isa/program.h"
#include <string>

namespace spyre::isa {

struct CompiledKernel {
  Kernel kernel;
  double simulatedUs = 0; ///< static timing model (TimingReport::scheduledUs)
  std::string timing;     ///< timing summary text (TimingReport::summary)
};

} // namespace spyre::isa
