// A JobPlan made runnable: each launch's kernel (compiled, verified and timed by the backend,
// backend::compileJobPlan) prepared by an Engine (JIT or interpreter). Running binds buffers to
// DDR addresses.
#pragma once
#include "spyre/isa/compiled_kernel.h"
#include "spyre/isa/job_plan.h"
#include "spyre/isa/program.h"
#include "spyre/sim/engine.h"
#include "spyre/sim/runtime.h"
#include <memory>
#include <string>
#include <vector>

namespace spyre::sim {

struct CompiledLaunch {
  isa::Kernel kernel;
  std::shared_ptr<const PreparedKernel> prepared;
  double simulatedUs = 0;  ///< static timing model (overlapped mode)
  std::string timing;      ///< timing summary text
};

/// What every Executable::run of this process has launched so far: kernels and the sum of
/// their simulated device times (the static timing model; benchmarks difference two reads,
/// e.g. simulated time per generated token).
struct RunTotals {
  uint64_t kernels = 0;
  double simulatedUs = 0;
  double hostMs = 0; ///< host wall time inside Runtime::launch (kernel execution on the host)
};
RunTotals runTotals();

class Executable {
public:
  /// Prepares every launch; kernels[i] is the compiled kernel of plan launch i. If dumpDir is
  /// set, writes sdsc_N.lst listings and sdsc_N.timing.txt.
  Executable(isa::JobPlan plan, std::vector<isa::CompiledKernel> kernels, Engine &engine,
             const std::string &dumpDir = "");
  const isa::JobPlan &plan() const { return plan_; }
  const std::vector<CompiledLaunch> &launches() const { return launches_; }
  /// Milliseconds spent in engine prepare.
  double prepareMs() const { return prepareMs_; }
  /// Sum of the launches' simulated device times.
  double simulatedUs() const;

  /// Runs every launch; bufferAddr[i] is the DDR address of plan buffer i, scalars[k] the value
  /// of the graph's runtime scalar $k (plan().numScalars of them).
  void run(Runtime &rt, uint8_t *ddr, uint64_t ddrSize, const std::vector<uint64_t> &bufferAddr,
           const std::vector<double> &scalars = {}) const;

private:
  isa::JobPlan plan_;
  std::vector<CompiledLaunch> launches_;
  double prepareMs_ = 0;
};

} // namespace spyre::sim
