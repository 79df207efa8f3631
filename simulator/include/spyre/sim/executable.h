// A JobPlan made runnable: each launch's SuperDSC compiled by the backend to a Kernel, verified,
// prepared by an Engine (JIT or interpreter). Running binds buffers to DDR addresses.
#pragma once
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

class Executable {
public:
  /// Backend-compiles and prepares every launch. If dumpDir is set, writes sdsc_N.lst listings.
  Executable(isa::JobPlan plan, Engine &engine, const std::string &dumpDir = "");
  const isa::JobPlan &plan() const { return plan_; }
  const std::vector<CompiledLaunch> &launches() const { return launches_; }
  /// Milliseconds spent in backend compile + engine prepare.
  double compileMs() const { return compileMs_; }
  double prepareMs() const { return prepareMs_; }
  /// Sum of the launches' simulated device times.
  double simulatedUs() const;

  /// Runs every launch; bufferAddr[i] is the DDR address of plan buffer i.
  void run(Runtime &rt, uint8_t *ddr, uint64_t ddrSize, const std::vector<uint64_t> &bufferAddr) const;

private:
  isa::JobPlan plan_;
  std::vector<CompiledLaunch> launches_;
  double compileMs_ = 0, prepareMs_ = 0;
};

} // namespace spyre::sim
