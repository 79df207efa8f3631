#include "spyre/sim/runtime.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>

namespace spyre::sim {

namespace {
using Clock = std::chrono::steady_clock;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// Spins until done() or kSpinNs passed; true if done() became true.
template <typename F> bool spinUntil(F done) {
  const auto until = Clock::now() + std::chrono::nanoseconds(ThreadPool::kSpinNs);
  for (int i = 0;; ++i) {
    if (done())
      return true;
    cpuRelax();
    if ((i & 63) == 63 && Clock::now() > until)
      return false;
  }
}
/// The largest multicast cohort of kernel k (`dma.mc cohort=k`): the cohort's cores stage the
/// same bytes at the same LX offsets, so a host thread that runs them in a row decodes a shared
/// matmul B once (jit/lib/lower_pt.cpp).
int cohortOf(const isa::Kernel &k) {
  int g = 1;
  for (const isa::CoreProgram &p : k.programs)
    isa::forEachNested(p.body, 0, [&](const isa::Instr &in, int, int, int &) {
      if (in.op == isa::Opcode::DmaMc)
        g = std::max(g, static_cast<int>(in.imm));
      return in.op == isa::Opcode::Loop;
    });
  return g;
}

/// Which core a host thread runs next in a phase of a kernel with multicast cohorts of `group`
/// cores: the next core of the cohort it ran last if nobody took it, else the first core of a
/// cohort nobody has started, else any core left (so a late or descheduled thread still leaves
/// the others work at core granularity). `claimed` marks the taken cores; -1 if none is left.
int claimCore(std::vector<std::atomic<uint8_t>> &claimed, int group, int last) {
  const int n = static_cast<int>(claimed.size());
  auto take = [&](int c) {
    uint8_t free = 0;
    return claimed[c].load(std::memory_order_relaxed) == 0 && claimed[c].compare_exchange_strong(free, 1);
  };
  if (last >= 0 && last + 1 < n && (last + 1) % group != 0 && take(last + 1))
    return last + 1;
  for (int first = 0; first < n; first += group) {
    bool fresh = true;
    for (int c = first; c < std::min(n, first + group) && fresh; ++c)
      fresh = claimed[c].load(std::memory_order_relaxed) == 0;
    if (fresh && take(first))
      return first;
  }
  for (int c = 0; c < n; ++c)
    if (take(c))
      return c;
  return -1;
}

/// Numbers the phases of every launch (process-wide), so that a host thread's record of the
/// core it ran last is recognised as stale in the next phase.
std::atomic<uint64_t> phaseSeq{0};
} // namespace

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

void ThreadPool::runTasks(std::unique_lock<std::mutex> &lk, const std::function<void(int)> &fn) {
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
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1 && callerWaiting_)
      doneCv_.notify_all();
  }
}

void ThreadPool::work() {
  uint64_t seen = 0;
  for (;;) {
    // A new job usually follows within microseconds (the next phase or kernel): spin on the
    // generation before sleeping.
    spinUntil([&] { return generation_.load(std::memory_order_acquire) != seen || stop_.load(); });
    std::unique_lock<std::mutex> lk(mu_);
    ++sleepers_;
    cv_.wait(lk, [&] { return stop_.load() || (generation_.load() != seen && next_ < n_); });
    --sleepers_;
    if (stop_)
      return;
    seen = generation_.load();
    runTasks(lk, *fn_);
  }
}

void ThreadPool::parallelFor(int n, const std::function<void(int)> &fn, bool inlineOnly) {
  if (n <= 0)
    return;
  if (workers_.empty() || n == 1 || inlineOnly) {
    for (int i = 0; i < n; ++i)
      fn(i);
    return;
  }
  std::unique_lock<std::mutex> lk(mu_);
  fn_ = &fn;
  n_ = n;
  next_ = 0;
  pending_.store(n);
  error_ = nullptr;
  generation_.fetch_add(1, std::memory_order_release);
  if (sleepers_ > 0)
    cv_.notify_all();
  runTasks(lk, fn);
  if (pending_.load() != 0) {
    lk.unlock(); // the workers finish their last tasks: spin, then sleep
    spinUntil([&] { return pending_.load(std::memory_order_acquire) == 0; });
    lk.lock();
    callerWaiting_ = true;
    doneCv_.wait(lk, [&] { return pending_.load() == 0; });
    callerWaiting_ = false;
  }
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
  // Every 64th launch of a kernel (the first too) times its cores' phase code: that
  // thread-time, without wake-ups and barriers, decides whether the pool is worth waking.
  const bool sample = (pk.launchCount.fetch_add(1, std::memory_order_relaxed) & 63) == 0;
  const int64_t lastNs = pk.hostThreadNs.load(std::memory_order_relaxed);
  const bool inlineOnly = lastNs >= 0 && lastNs < kInlineNs;
  const bool timeCores = profiling_ || sample;
  const auto t0 = timeCores ? Clock::now() : Clock::time_point{};
  std::atomic<int64_t> coreNs{0};
  auto runCore = [&](int p, int core) {
    if (!timeCores) {
      pk.runPhase(p, core, cores_[core], args);
      return;
    }
    auto s = Clock::now();
    pk.runPhase(p, core, cores_[core], args);
    coreNs += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - s).count();
  };
  int group = pk.coreGroup.load(std::memory_order_relaxed);
  if (group == 0) {
    group = cohortOf(k);
    pk.coreGroup.store(group, std::memory_order_relaxed);
  }
  for (int p = 0; p < phases; ++p) {
    ring_.beginPhase(p);
    if (group == 1) {
      pool_.parallelFor(k.numCores, [&](int core) { runCore(p, core); }, inlineOnly);
    } else {
      // The cores in cohort order per thread (claimCore): each task runs one core.
      std::vector<std::atomic<uint8_t>> claimed(k.numCores);
      const uint64_t seq = phaseSeq.fetch_add(1, std::memory_order_relaxed) + 1;
      pool_.parallelFor(k.numCores, [&](int) {
        thread_local uint64_t lastSeq = 0;
        thread_local int last = -1;
        const int core = claimCore(claimed, group, lastSeq == seq ? last : -1);
        if (core < 0) // cannot happen: one claim per task, as many tasks as cores
          throw Error("kernel " + k.name + ": no core left to claim");
        lastSeq = seq;
        last = core;
        runCore(p, core);
      }, inlineOnly);
    }
    if (!ring_.error.empty())
      throw Error("kernel " + k.name + ": " + ring_.error);
  }
  if (sample)
    pk.hostThreadNs.store(coreNs.load(), std::memory_order_relaxed);
  if (profiling_)
    launchTimes_.push_back({k.name, k.numCores, phases,
                            std::chrono::duration<double, std::milli>(Clock::now() - t0).count(),
                            static_cast<double>(coreNs.load()) / 1e6});
}

} // namespace spyre::sim
