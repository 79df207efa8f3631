// Tiered compilation (SPYRE_JIT_OPT=tiered): a kernel runs on its O0 code (compiled in about a
// millisecond, runs at interpreter speed) while a background thread compiles it at O2 (tens to
// hundreds of milliseconds); the O2 code replaces the O0 code for every later phase call once it
// is linked. Both tiers are bit-identical to the interpreter and keep the whole machine state in
// CoreState/LX/DDR between phase calls, so the switch can happen between any two phase calls,
// even within one launch; the simulated time does not depend on the tier.
#pragma once
#include "spyre/isa/program.h"
#include "spyre/sim/engine.h"
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace spyre::jit {

/// A kernel whose code can be replaced once, from the base tier to the optimised one. The
/// replaced code stays loaded until the kernel is destroyed (a phase call that loaded the old
/// function pointer may still be running it).
class TieredKernel final : public sim::PreparedKernel {
public:
  explicit TieredKernel(std::shared_ptr<const sim::PreparedKernel> base)
      : base_(std::move(base)), current_(base_.get()) {}
  const isa::Kernel &kernel() const override { return base_->kernel(); }
  int numPhases() const override { return base_->numPhases(); }
  uint32_t vectorRegisters() const override { return base_->vectorRegisters(); }
  void runPhase(int phase, int core, sim::CoreState &cs, const sim::LaunchArgs &args) const override {
    current_.load(std::memory_order_acquire)->runPhase(phase, core, cs, args);
  }
  /// True once the optimised code is in use.
  bool tieredUp() const { return current_.load(std::memory_order_acquire) != base_.get(); }
  /// Called once, by the tier-up thread.
  void install(std::shared_ptr<const sim::PreparedKernel> optimised) {
    optimised_ = std::move(optimised);
    current_.store(optimised_.get(), std::memory_order_release);
  }

private:
  std::shared_ptr<const sim::PreparedKernel> base_, optimised_;
  std::atomic<const sim::PreparedKernel *> current_;
};

/// The background compiler: one thread, a FIFO of batches. Each batch is compiled by `compile`
/// (the O2 engine's prepareAll) and installed into the batch's kernels that are still alive.
/// The destructor drops queued batches and joins the thread (after the batch in progress).
class TierUp {
public:
  using Compile = std::function<std::vector<std::shared_ptr<const sim::PreparedKernel>>(const std::vector<isa::Kernel> &)>;
  explicit TierUp(Compile compile);
  ~TierUp();
  TierUp(const TierUp &) = delete;
  TierUp &operator=(const TierUp &) = delete;

  /// Wraps each base-tier kernel of `base` (prepared from `ks`) in a TieredKernel and queues
  /// `ks` for the optimised compile.
  std::vector<std::shared_ptr<const sim::PreparedKernel>>
  wrapAndEnqueue(const std::vector<isa::Kernel> &ks, std::vector<std::shared_ptr<const sim::PreparedKernel>> base);
  void enqueue(std::vector<isa::Kernel> ks, std::vector<std::weak_ptr<TieredKernel>> targets);
  /// Blocks until every batch enqueued so far is installed (or failed).
  void drain();
  /// Batches that failed to compile (their kernels stay on the base tier; reported once).
  uint64_t failures() const;

private:
  struct Batch {
    std::vector<isa::Kernel> kernels;
    std::vector<std::weak_ptr<TieredKernel>> targets;
  };
  void loop();

  Compile compile_;
  mutable std::mutex mu_;
  std::condition_variable cv_, idle_;
  std::deque<Batch> queue_;
  bool busy_ = false, stop_ = false;
  uint64_t failures_ = 0;
  std::thread thread_; // last: started after the members above exist
};

} // namespace spyre::jit
