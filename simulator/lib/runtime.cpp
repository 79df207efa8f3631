#include "spyre/sim/runtime.h"
#include "spyre/isa/error.h"
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>

namespace spyre::sim {

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(1, threads); ++i)
    workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto &t : workers_)
    t.join();
}

void ThreadPool::work() {
  uint64_t seen = 0;
  for (;;) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return stop_ || (generation_ != seen && next_ < n_); });
    if (stop_)
      return;
    seen = generation_;
    while (next_ < n_) {
      int i = next_++;
      lk.unlock();
      try {
        (*fn_)(i);
      } catch (...) {
        std::lock_guard<std::mutex> g(mu_);
        if (!error_)
          error_ = std::current_exception();
      }
      lk.lock();
      if (--pending_ == 0)
        doneCv_.notify_all();
    }
  }
}

void ThreadPool::parallelFor(int n, const std::function<void(int)> &fn) {
  if (n <= 0)
    return;
  if (workers_.empty() || n == 1) {
    for (int i = 0; i < n; ++i)
      fn(i);
    return;
  }
  std::unique_lock<std::mutex> lk(mu_);
  fn_ = &fn;
  n_ = n;
  next_ = 0;
  pending_ = n;
  error_ = nullptr;
  ++generation_;
  cv_.notify_all();
  while (next_ < n_) {
    int i = next_++;
    lk.unlock();
    try {
      fn(i);
    } catch (...) {
      std::lock_guard<std::mutex> g(mu_);
      if (!error_)
        error_ = std::current_exception();
    }
    lk.lock();
    --pending_;
  }
  doneCv_.wait(lk, [&] { return pending_ == 0; });
  n_ = 0;
  fn_ = nullptr;
  if (error_) {
    auto e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

int hardwareThreads() {
  unsigned h = std::thread::hardware_concurrency();
  return h ? static_cast<int>(h) : 1;
}

RuntimeOptions RuntimeOptions::fromEnv(const spyre::Env &env) {
  RuntimeOptions o;
  o.threads = static_cast<int>(env.integer("SPYRE_SIM_THREADS", o.threads, 1, 4096));
  return o;
}

Runtime::Runtime(int threads, int cores) : cores_(cores), pool_(threads) {}

void Runtime::launch(const PreparedKernel &pk, const LaunchArgs &args) {
  const isa::Kernel &k = pk.kernel();
  cores_.resetRegisters(k.numCores, pk.vectorRegisters());
  if (!k.scalarArgs.empty())
    for (int c = 0; c < k.numCores; ++c)
      writeScalarArgs(k, args.scalars, cores_[c].lx);
  ring_.reset(k.numCores);
  ports_.assign(k.numCores, RingPort{});
  for (int c = 0; c < k.numCores; ++c) {
    ports_[c] = {&ring_, c};
    cores_[c].ring = &ports_[c];
  }
  const int phases = pk.numPhases();
  using Clock = std::chrono::steady_clock;
  const auto t0 = profiling_ ? Clock::now() : Clock::time_point{};
  std::atomic<int64_t> coreNs{0};
  auto runCore = [&](int p, int core) {
    if (!profiling_) {
      pk.runPhase(p, core, cores_[core], args);
      return;
    }
    auto s = Clock::now();
    pk.runPhase(p, core, cores_[core], args);
    coreNs += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - s).count();
  };
  for (int p = 0; p < phases; ++p) {
    ring_.beginPhase(p);
    pool_.parallelFor(k.numCores, [&](int core) { runCore(p, core); });
    if (!ring_.error.empty())
      throw Error("kernel " + k.name + ": " + ring_.error);
  }
  if (profiling_)
    launchTimes_.push_back({k.name, k.numCores, phases,
                            std::chrono::duration<double, std::milli>(Clock::now() - t0).count(),
                            static_cast<double>(coreNs.load()) / 1e6});
}

} // namespace spyre::sim
