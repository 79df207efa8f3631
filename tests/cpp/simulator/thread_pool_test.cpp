// sim::ThreadPool: every task runs exactly once per job across many back-to-back jobs (the
// workers spin between jobs, then sleep), inline jobs stay on the caller's thread, and a task's
// exception reaches the caller with the pool still usable.
#include "spyre/sim/runtime.h"
#include <gtest/gtest.h>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace spyre;

namespace {

void checkJobs(sim::ThreadPool &pool, int jobs, bool pauseBetween) {
  for (int j = 0; j < jobs; ++j) {
    const int n = 1 + (j * 7) % 64;
    std::vector<std::atomic<int>> hits(n);
    pool.parallelFor(n, [&](int i) { hits[i].fetch_add(1); });
    for (int i = 0; i < n; ++i)
      ASSERT_EQ(hits[i].load(), 1) << "job " << j << " task " << i;
    if (pauseBetween && j % 16 == 0) // let the workers' spin run out: they sleep, then wake
      std::this_thread::sleep_for(std::chrono::nanoseconds(2 * sim::ThreadPool::kSpinNs));
  }
}

} // namespace

TEST(ThreadPool, EveryTaskOncePerJob) {
  for (int threads : {1, 2, 4}) {
    sim::ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    checkJobs(pool, 5000, false);
    checkJobs(pool, 200, true);
  }
}

TEST(ThreadPool, InlineJobsRunOnTheCaller) {
  sim::ThreadPool pool(4);
  const auto me = std::this_thread::get_id();
  std::atomic<int> elsewhere{0}, ran{0};
  for (int j = 0; j < 100; ++j)
    pool.parallelFor(32, [&](int) {
      ++ran;
      if (std::this_thread::get_id() != me)
        ++elsewhere;
    }, /*inlineOnly=*/true);
  EXPECT_EQ(ran.load(), 3200);
  EXPECT_EQ(elsewhere.load(), 0);
}

TEST(ThreadPool, TaskExceptionReachesTheCaller) {
  sim::ThreadPool pool(2);
  for (int j = 0; j < 50; ++j) {
    std::atomic<int> ran{0};
    EXPECT_THROW(pool.parallelFor(16, [&](int i) {
      ++ran;
      if (i == 5)
        throw std::runtime_error("task 5");
    }), std::runtime_error);
    EXPECT_EQ(ran.load(), 16); // the other tasks still ran
  }
  checkJobs(pool, 100, false); // and the pool still works
}
