// Tiered compilation (SPYRE_JIT_OPT=tiered): O0 code at once, O2 from a background thread; the
// O2 code of a cached kernel straight away; kernels and engines destroyed in any order while
// compiles are queued or running. (Random kernels on both tiers: Differential.TieredBothTiersBitExact.)
#include "jit_test_util.h"
#include "spyre/isa/env.h"
#include "spyre/isa/listing.h"
#include "spyre/jit/jit_engine.h"
#include <gtest/gtest.h>
#include <thread>

using namespace spyre;
using namespace spyre::testing;

namespace {

isa::Kernel kernel(int variant) {
  std::string text = readFile(std::string(SPYRE_TEST_DATA_DIR) + "/kernels/add_relu_mul.lst");
  std::string from = "bcast.f32 v4, 0.5";
  text.replace(text.find(from), from.size(), "bcast.f32 v4, " + std::to_string(variant) + ".25");
  return isa::parseKernel(text);
}

std::vector<std::vector<uint8_t>> args() { return {randomDl16(256, 3), randomDl16(256, 4), std::vector<uint8_t>(512)}; }

void expectLikeInterpreter(const sim::PreparedKernel &pk) {
  RunResult ref = runPrepared(*sim::makeInterpreter()->prepare(pk.kernel()), args());
  RunResult got = runPrepared(pk, args(), 2);
  EXPECT_EQ(ref.ddr, got.ddr);
  EXPECT_EQ(ref.lx, got.lx);
  EXPECT_EQ(ref.regs, got.regs);
}

jit::JitOptions tiered(bool memoryCache) { return {jit::OptTier::Tiered, "", "off", memoryCache}; }

} // namespace

TEST(TieredJit, RunsBeforeAndAfterTierUpAndLaterEnginesHitTheO2Cache) {
  jit::clearMemoryCache();
  isa::Kernel k = kernel(1);
  {
    jit::JitEngine e(tiered(true));
    auto pk = e.prepare(k);
    EXPECT_EQ(e.cacheStats().misses, 1u); // the O0 compile (the O2 one is the tier-up thread's)
    expectLikeInterpreter(*pk);           // on O0 code, or O2 if the tier-up was quick
    e.waitForTierUp();
    EXPECT_TRUE(jit::isTieredUp(*pk));
    expectLikeInterpreter(*pk);
  }
  // The O2 object is in the process-wide memory cache now: a new tiered engine links it at once
  // (no O0 compile, nothing queued) and the kernel is no tiered kernel.
  jit::JitEngine e2(tiered(true));
  auto pk = e2.prepare(k);
  EXPECT_EQ(e2.cacheStats().misses, 0u);
  EXPECT_EQ(e2.cacheStats().hits(), 0u);
  EXPECT_FALSE(jit::isTieredUp(*pk));
  expectLikeInterpreter(*pk);
  jit::clearMemoryCache();
}

TEST(TieredJit, KernelsAndEnginesGoInAnyOrder) {
  std::shared_ptr<const sim::PreparedKernel> survivor;
  {
    jit::JitEngine e(tiered(false));
    e.prepare(kernel(2)); // dropped at once: its O2 compile is skipped or its result discarded
    std::vector<std::shared_ptr<const sim::PreparedKernel>> many;
    for (int v = 3; v < 9; ++v)
      many.push_back(e.prepare(kernel(v)));
    survivor = many.back();
    many.clear();
    // The engine goes with compiles still queued: the destructor drops them and joins the thread.
  }
  // The kernel outlives its engine, on whichever tier it had reached.
  expectLikeInterpreter(*survivor);
}

TEST(TieredJit, OneEngineFromSeveralThreads) {
  // Lookups and links run outside the compile lock; a thread that waited for the lock finds the
  // other thread's object in the memory cache instead of compiling it again.
  for (jit::OptTier tier : {jit::OptTier::O0, jit::OptTier::Tiered}) {
    jit::clearMemoryCache();
    jit::JitEngine e({tier, "", "off", true});
    isa::Kernel k = kernel(10);
    std::vector<std::shared_ptr<const sim::PreparedKernel>> got(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < got.size(); ++t)
      threads.emplace_back([&, t] { got[t] = e.prepare(k); });
    for (auto &t : threads)
      t.join();
    EXPECT_EQ(e.cacheStats().misses, 1u) << jit::tierName(tier);
    // (Tiered: a thread that ran late may find the O2 object already and never ask the O0 level.)
    if (tier == jit::OptTier::O0)
      EXPECT_EQ(e.cacheStats().memoryHits, got.size() - 1);
    for (const auto &pk : got)
      expectLikeInterpreter(*pk);
  }
  jit::clearMemoryCache();
}

TEST(TieredJit, NonTieredEnginesAndKernels) {
  jit::JitEngine o2({jit::OptTier::O2, "", "off", false});
  auto pk = o2.prepare(kernel(9));
  o2.waitForTierUp(); // no-op
  EXPECT_FALSE(jit::isTieredUp(*pk));
  EXPECT_FALSE(jit::isTieredUp(*sim::makeInterpreter()->prepare(kernel(9))));
}

TEST(TieredJit, EnvironmentSelectsTheTier) {
  EXPECT_EQ(jit::JitOptions::fromEnv(Env::fromMap({{"SPYRE_JIT_OPT", "tiered"}})).tier, jit::OptTier::Tiered);
  try {
    jit::JitOptions::fromEnv(Env::fromMap({{"SPYRE_JIT_OPT", "O3"}}));
    FAIL() << "SPYRE_JIT_OPT=O3 was accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("SPYRE_JIT_OPT"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tiered"), std::string::npos) << e.what();
  }
  EXPECT_STREQ(jit::tierName(jit::OptTier::Tiered), "tiered");
}
