// Runs kernels as BSP phases: the cores of a phase in any order on a host thread pool, then a
// barrier, then the next phase. Results are identical for any thread count.
#pragma once
#include "spyre/isa/env.h"
#include "spyre/sim/engine.h"
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace spyre::sim {

/// Host threads for the cores of a phase. Between the phases and kernels of a compiled graph the
/// workers spin briefly (kSpinNs) before they sleep, so back-to-back phases do not pay a futex
/// wake-up and a reschedule each; the caller takes tasks too.
class ThreadPool {
public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  /// Calls fn(i) for i in [0, n) across the pool (and the calling thread) -- on the calling
  /// thread alone when `inlineOnly` -- and rethrows the first exception after all tasks finished.
  void parallelFor(int n, const std::function<void(int)> &fn, bool inlineOnly = false);

  static constexpr int64_t kSpinNs = 50'000;

private:
  void work();
  /// Runs tasks of the current job until none is left; call with mu_ held (returns with it held).
  void runTasks(std::unique_lock<std::mutex> &lk, const std::function<void(int)> &fn);
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_, doneCv_;
  const std::function<void(int)> *fn_ = nullptr;
  int n_ = 0, next_ = 0;
  std::atomic<int> pending_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  int sleepers_ = 0;          ///< workers blocked on cv_ (under mu_)
  bool callerWaiting_ = false; ///< the caller blocked on doneCv_ (under mu_)
  std::exception_ptr error_;
};

/// The host's core count (at least 1).
int hardwareThreads();

struct RuntimeOptions {
  int threads = hardwareThreads(); ///< host threads running the cores of a phase
  int cores = 32;
  /// SPYRE_SIM_THREADS (an integer >= 1; default: the host's core count). An invalid value
  /// throws spyre::Error naming the variable.
  static RuntimeOptions fromEnv(const spyre::Env &env);
};

/// Host time of one launch, recorded when profiling is on (the bench's --profile): the wall
/// time and the sum over cores of the time spent in the engine's phase code. With T host
/// threads, wallMs - coreMs / T is what phase barriers and load imbalance cost.
struct LaunchTimes {
  std::string kernel;
  int cores = 0;
  int phases = 0;
  double wallMs = 0;
  double coreMs = 0;
};

class Runtime {
public:
  explicit Runtime(int threads = hardwareThreads(), int cores = 32);
  explicit Runtime(const RuntimeOptions &o) : Runtime(o.threads, o.cores) {}
  Cores &cores() { return cores_; }
  ThreadPool &pool() { return pool_; }
  /// Runs every phase of the kernel on all its cores: across the pool, or on the calling thread
  /// alone when its cores' code took less than kInlineNs of host thread-time at the last sample (waking
  /// workers for it costs more than it saves; the result is the same either way).
  void launch(const PreparedKernel &k, const LaunchArgs &args);
  static constexpr int64_t kInlineNs = 30'000;
  /// Profiling: while on, every launch appends its LaunchTimes to launchTimes(). Off by default
  /// (no clock reads on the launch path).
  void setProfiling(bool on) { profiling_ = on; }
  std::vector<LaunchTimes> &launchTimes() { return launchTimes_; }

private:
  Cores cores_;
  ThreadPool pool_;
  RingState ring_;
  std::vector<RingPort> ports_;
  bool profiling_ = false;
  std::vector<LaunchTimes> launchTimes_;
};

} // namespace spyre::sim
