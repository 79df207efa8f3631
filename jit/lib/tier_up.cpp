#include "tier_up.h"
#include "code_cache.h"

namespace spyre::jit {

TierUp::TierUp(Compile compile) : compile_(std::move(compile)), thread_([this] { loop(); }) {}

TierUp::~TierUp() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  thread_.join();
}

void TierUp::enqueue(std::vector<isa::Kernel> ks, std::vector<std::weak_ptr<TieredKernel>> targets) {
  {
    std::lock_guard<std::mutex> g(mu_);
    queue_.push_back(Batch{std::move(ks), std::move(targets)});
  }
  cv_.notify_one();
}

std::vector<std::shared_ptr<const sim::PreparedKernel>>
TierUp::wrapAndEnqueue(const std::vector<isa::Kernel> &ks, std::vector<std::shared_ptr<const sim::PreparedKernel>> base) {
  std::vector<std::shared_ptr<const sim::PreparedKernel>> out;
  std::vector<std::weak_ptr<TieredKernel>> targets;
  for (auto &b : base) {
    auto t = std::make_shared<TieredKernel>(std::move(b));
    targets.push_back(t);
    out.push_back(std::move(t));
  }
  enqueue(ks, std::move(targets));
  return out;
}

void TierUp::drain() {
  std::unique_lock<std::mutex> l(mu_);
  idle_.wait(l, [this] { return queue_.empty() && !busy_; });
}

uint64_t TierUp::failures() const {
  std::lock_guard<std::mutex> g(mu_);
  return failures_;
}

void TierUp::loop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [this] { return stop_ || !queue_.empty(); });
    if (stop_)
      break;
    Batch b = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    l.unlock();
    // Kernels dropped before their turn are not compiled.
    std::vector<isa::Kernel> ks;
    std::vector<std::shared_ptr<TieredKernel>> live;
    for (size_t i = 0; i < b.targets.size(); ++i)
      if (auto t = b.targets[i].lock()) {
        ks.push_back(std::move(b.kernels[i]));
        live.push_back(std::move(t));
      }
    bool failed = false;
    if (!ks.empty()) {
      try {
        auto opt = compile_(ks);
        for (size_t i = 0; i < live.size(); ++i)
          live[i]->install(std::move(opt[i]));
      } catch (const std::exception &e) { // the kernels keep running their O0 code, correctly
        warnOnce("tier-up", std::string("spyre-jit: tiered: the O2 compile failed, kernel stays at O0: ") + e.what());
        failed = true;
      }
    }
    live.clear(); // the last reference may go here: destroy outside the lock
    l.lock();
    failures_ += failed ? 1 : 0;
    busy_ = false;
    if (queue_.empty())
      idle_.notify_all();
  }
  busy_ = false;
  idle_.notify_all();
}

} // namespace spyre::jit
