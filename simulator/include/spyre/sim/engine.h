// An Engine executes one phase of one core of a kernel. The Runtime never knows which engine
// it drives; the interpreter defines the semantics and the JIT must match it bit for bit.
#pragma once
#include "spyre/isa/program.h"
#include "spyre/sim/machine.h"
#include <atomic>
#include <memory>

namespace spyre::sim {

/// Bit i set: some instruction of the kernel names vector register v<i> (registers are only
/// ever named as operands, so the others cannot be observed by the kernel).
uint32_t usedVectorRegisters(const isa::Kernel &k);

/// A kernel prepared by an engine (e.g. JIT-compiled). Immutable, shareable across threads.
class PreparedKernel {
public:
  virtual ~PreparedKernel() = default;
  virtual const isa::Kernel &kernel() const = 0;
  /// kernel().numPhases(), which engines compute once when preparing (the launch path asks).
  virtual int numPhases() const { return kernel().numPhases(); }
  /// usedVectorRegisters(kernel()), computed once when preparing: the launch zeroes only these.
  virtual uint32_t vectorRegisters() const { return usedVectorRegisters(kernel()); }
  virtual void runPhase(int phase, int core, CoreState &cs, const LaunchArgs &args) const = 0;

  /// Runtime::launch's record of this kernel's host cost: the summed time of its cores' phase
  /// code in ns at the last sampled launch (every 64th), -1 before the first. Kernels cheaper
  /// than Runtime::kInlineNs run on the launching thread alone (no worker wake-ups).
  mutable std::atomic<int64_t> hostThreadNs{-1};
  mutable std::atomic<uint32_t> launchCount{0};
  /// The kernel's largest multicast cohort, 0 until Runtime::launch computed it: a host thread
  /// runs a cohort's cores one after another where it can, so that the later ones find the
  /// first one's decoded B in the thread's cache (jit/lib/lower_pt.cpp).
  mutable std::atomic<int> coreGroup{0};
};

class Engine {
public:
  virtual ~Engine() = default;
  virtual const char *name() const = 0;
  virtual std::shared_ptr<const PreparedKernel> prepare(const isa::Kernel &k) = 0;
};

/// Work the interpreter executed, counted the way the static timing model counts it
/// (isa::TimingReport): DMA bytes, ld/st sticks, SFP stick-ops (pt.out: one per output stick),
/// PT MACs, ring bytes (sends and receives).
struct WorkCounters {
  std::atomic<uint64_t> ddrBytes{0}, lsuSticks{0}, sfpStickOps{0}, ptMacs{0}, ringBytes{0};
};

/// The reference interpreter; if `counters` is given, every executed instruction adds its work.
std::unique_ptr<Engine> makeInterpreter(WorkCounters *counters = nullptr);

} // namespace spyre::sim
