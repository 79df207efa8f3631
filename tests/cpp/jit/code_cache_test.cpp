// The JIT code cache: memory and disk hits, misses, corrupted and truncated entries, concurrent
// writers sharing a directory, tiers that must not share entries, and the environment knobs.
#include "jit_test_util.h"
#include "spyre/isa/env.h"
#include "spyre/isa/listing.h"
#include "spyre/jit/jit_engine.h"
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <gtest/gtest.h>
#include <thread>
#include <sys/stat.h>
#include <unistd.h>

using namespace spyre;
using namespace spyre::testing;
namespace fs = std::filesystem;

namespace {

// The JIT tests compile thousands of throwaway kernels: unless the caller chose a cache
// directory, keep them out of ~/.cache/spyre-jit (the tests below pass explicit directories).
const bool kNoUserCache = [] {
  setenv("SPYRE_CACHE_DIR", "off", 0);
  return true;
}();

class TempDir {
public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "spyre-jit-cache-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string &path() const { return path_; }
  /// The kernels' entries (and stray files); the generic nests' entries ("gn-*", their own
  /// tests in generic_nests_test.cpp) are left out.
  std::vector<fs::path> entries() const {
    std::vector<fs::path> out;
    for (const auto &e : fs::directory_iterator(path_))
      if (e.path().filename().string().rfind("gn-", 0) != 0)
        out.push_back(e.path());
    return out;
  }

private:
  std::string path_;
};

/// The hand-written test kernel with a different constant per `variant` (a different program).
isa::Kernel testKernel(int variant = 0, const std::string &name = "add_relu_mul") {
  std::string text = readFile(std::string(SPYRE_TEST_DATA_DIR) + "/kernels/add_relu_mul.lst");
  std::string from = "bcast.f32 v4, 0.5";
  text.replace(text.find(from), from.size(), "bcast.f32 v4, " + std::to_string(variant) + ".5");
  isa::Kernel k = isa::parseKernel(text);
  k.name = name;
  return k;
}

std::vector<std::vector<uint8_t>> testArgs() { return {randomDl16(256, 1), randomDl16(256, 2), std::vector<uint8_t>(512)}; }

RunResult reference(const isa::Kernel &k) { return runPrepared(*sim::makeInterpreter()->prepare(k), testArgs()); }

void expectSameRun(const RunResult &a, const RunResult &b) {
  EXPECT_EQ(a.ddr, b.ddr);
  EXPECT_EQ(a.lx, b.lx);
  EXPECT_EQ(a.regs, b.regs);
}

jit::JitOptions diskOnly(const std::string &dir, jit::OptTier t = jit::OptTier::O2) { return {t, "", dir, false}; }

} // namespace

TEST(CodeCache, DiskMissThenHitAcrossEngines) {
  TempDir dir;
  isa::Kernel k = testKernel();
  RunResult ref = reference(k);
  {
    jit::JitEngine a(diskOnly(dir.path()));
    EXPECT_EQ(a.cacheDir(), dir.path());
    expectSameRun(runPrepared(*a.prepare(k), testArgs()), ref);
    auto s = a.cacheStats();
    EXPECT_EQ(s.misses, 1u);
    EXPECT_EQ(s.hits(), 0u);
    EXPECT_EQ(s.diskWrites, 1u);
    EXPECT_FALSE(a.lastCompileTimes().hit);
  }
  ASSERT_EQ(dir.entries().size(), 1u);
  jit::JitEngine b(diskOnly(dir.path()));
  expectSameRun(runPrepared(*b.prepare(k), testArgs()), ref);
  auto s = b.cacheStats();
  EXPECT_EQ(s.diskHits, 1u);
  EXPECT_EQ(s.misses, 0u);
  EXPECT_TRUE(b.lastCompileTimes().hit);
  EXPECT_EQ(b.lastCompileTimes().codegenMs, 0.0);
  // The same object may be loaded any number of times, also while an earlier copy is alive.
  auto p1 = b.prepare(k), p2 = b.prepare(k);
  expectSameRun(runPrepared(*p1, testArgs()), ref);
  expectSameRun(runPrepared(*p2, testArgs()), ref);
  EXPECT_EQ(b.cacheStats().diskHits, 3u);
}

TEST(CodeCache, MemoryLevelIsSharedByEngines) {
  jit::clearMemoryCache();
  isa::Kernel k = testKernel(7);
  jit::JitEngine a({jit::OptTier::O2, "", "off", true});
  EXPECT_EQ(a.cacheDir(), "");
  a.prepare(k);
  a.prepare(k);
  EXPECT_EQ(a.cacheStats().misses, 1u);
  EXPECT_EQ(a.cacheStats().memoryHits, 1u);
  jit::JitEngine b({jit::OptTier::O2, "", "off", true});
  expectSameRun(runPrepared(*b.prepare(k), testArgs()), reference(k));
  EXPECT_EQ(b.cacheStats().memoryHits, 1u);
  EXPECT_EQ(b.cacheStats().misses, 0u);
  jit::JitEngine c({jit::OptTier::O2, "", "off", false}); // opted out
  c.prepare(k);
  EXPECT_EQ(c.cacheStats().misses, 1u);
}

TEST(CodeCache, KeyIgnoresNamesButNotCode) {
  TempDir dir;
  jit::JitEngine e(diskOnly(dir.path()));
  isa::Kernel k1 = testKernel(0, "first"), k2 = testKernel(0, "second"), k3 = testKernel(1, "first");
  k2.comment = "op=whatever";
  k2.args = {"x", "y", "z"};
  e.prepare(k1);
  e.prepare(k2);
  EXPECT_EQ(e.cacheStats().misses, 1u);
  EXPECT_EQ(e.cacheStats().diskHits, 1u);
  expectSameRun(runPrepared(*e.prepare(k3), testArgs()), reference(k3));
  EXPECT_EQ(e.cacheStats().misses, 2u);
  EXPECT_EQ(dir.entries().size(), 2u);
}

TEST(CodeCache, KeyCoversEveryInstructionField) {
  // The key is a binary image of the kernel (appendKernelKey), not its listing: a change in any
  // field that shapes the code must miss, the source line must not.
  TempDir dir;
  jit::JitEngine e(diskOnly(dir.path()));
  isa::Kernel base = testKernel();
  std::vector<std::function<void(isa::Kernel &)>> changes = {
      [](isa::Kernel &k) { k.programs[0].body[0].table[1] = 384; },           // tbl entry
      [](isa::Kernel &k) { k.programs[0].body[1].lx.offset = 0x80; },         // dma.in LX offset
      [](isa::Kernel &k) { k.programs[0].body[1].dma.n[2] = 1; },             // dma.in shape
      [](isa::Kernel &k) { k.programs[0].body[1].ddr.offset = 128; },         // dma.in DDR offset
      [](isa::Kernel &k) { k.programs[0].body[4].imm = 128; },                // li immediate
      [](isa::Kernel &k) { k.programs[0].body[5].imm = 1; },                  // loop count
      [](isa::Kernel &k) { k.programs[0].body[5].body[2].v[0] = 5; },         // register in a loop body
      [](isa::Kernel &k) { k.programs[0].body[5].body[2].fmt = isa::Format::F32; }, // format
      [](isa::Kernel &k) { k.programs[0].lastCore = 0; },                      // core range
  };
  e.prepare(base);
  for (size_t i = 0; i < changes.size(); ++i) {
    isa::Kernel k = base;
    changes[i](k);
    e.prepare(k);
    EXPECT_EQ(e.cacheStats().misses, i + 2) << "change " << i << " hit the cache";
  }
  isa::Kernel moved = base;
  moved.programs[0].body[5].body[0].line += 100;
  e.prepare(moved);
  EXPECT_EQ(e.cacheStats().misses, changes.size() + 1);
  EXPECT_EQ(e.cacheStats().diskHits, 1u);
}

TEST(CodeCache, TiersDoNotShareEntries) {
  TempDir dir;
  isa::Kernel k = testKernel(2);
  jit::JitEngine o0(diskOnly(dir.path(), jit::OptTier::O0)), o2(diskOnly(dir.path(), jit::OptTier::O2));
  expectSameRun(runPrepared(*o0.prepare(k), testArgs()), reference(k));
  expectSameRun(runPrepared(*o2.prepare(k), testArgs()), reference(k));
  EXPECT_EQ(o0.cacheStats().misses, 1u);
  EXPECT_EQ(o2.cacheStats().misses, 1u);
  EXPECT_EQ(o2.cacheStats().hits(), 0u);
  EXPECT_EQ(dir.entries().size(), 2u);
  // Each tier now hits its own entry.
  jit::JitEngine o0b(diskOnly(dir.path(), jit::OptTier::O0)), o2b(diskOnly(dir.path(), jit::OptTier::O2));
  o0b.prepare(k);
  o2b.prepare(k);
  EXPECT_EQ(o0b.cacheStats().diskHits, 1u);
  EXPECT_EQ(o2b.cacheStats().diskHits, 1u);
}

namespace {

/// Damages the single entry in `dir` with `damage(bytes)`, then checks that a fresh engine
/// reports it as corrupt, recompiles correct code and rewrites a valid entry.
template <typename Damage> void checkDamagedEntryIsRecompiled(Damage damage) {
  TempDir dir;
  isa::Kernel k = testKernel(3);
  jit::JitEngine(diskOnly(dir.path())).prepare(k);
  auto files = dir.entries();
  ASSERT_EQ(files.size(), 1u);
  std::string bytes = readFile(files[0].string());
  damage(bytes);
  std::ofstream(files[0], std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));

  jit::JitEngine e(diskOnly(dir.path()));
  expectSameRun(runPrepared(*e.prepare(k), testArgs()), reference(k));
  auto s = e.cacheStats();
  EXPECT_EQ(s.corruptEntries, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.diskHits, 0u);
  EXPECT_EQ(s.diskWrites, 1u);
  jit::JitEngine again(diskOnly(dir.path()));
  again.prepare(k);
  EXPECT_EQ(again.cacheStats().diskHits, 1u);
  EXPECT_EQ(again.cacheStats().corruptEntries, 0u);
}

} // namespace

TEST(CodeCache, CorruptedPayloadIsDetectedAndRecompiled) {
  checkDamagedEntryIsRecompiled([](std::string &b) { b[b.size() - 100] ^= 0x40; });
}

TEST(CodeCache, CorruptedHeaderIsDetectedAndRecompiled) {
  checkDamagedEntryIsRecompiled([](std::string &b) { b[20] ^= 0x01; }); // inside the key
}

TEST(CodeCache, TruncatedPayloadIsDetectedAndRecompiled) {
  checkDamagedEntryIsRecompiled([](std::string &b) { b.resize(b.size() / 2); });
}

TEST(CodeCache, TruncatedHeaderAndEmptyFileAreDetected) {
  checkDamagedEntryIsRecompiled([](std::string &b) { b.resize(10); });
  checkDamagedEntryIsRecompiled([](std::string &b) { b.clear(); });
}

/// The entry path of `k` in `dir` replaced by what `make(path)` creates (a FIFO, a directory):
/// a fresh engine must not block on it (a FIFO without writer), counts it as corrupt and
/// compiles correct code.
template <typename Make> void checkNonRegularEntry(Make make, bool rewritten) {
  TempDir dir;
  isa::Kernel k = testKernel(4);
  jit::JitEngine(diskOnly(dir.path())).prepare(k);
  auto files = dir.entries();
  ASSERT_EQ(files.size(), 1u);
  fs::remove(files[0]);
  make(files[0].string());
  auto start = std::chrono::steady_clock::now();
  jit::JitEngine e(diskOnly(dir.path()));
  expectSameRun(runPrepared(*e.prepare(k), testArgs()), reference(k));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(e.cacheStats().corruptEntries, 1u);
  EXPECT_EQ(e.cacheStats().misses, 1u);
  EXPECT_EQ(e.cacheStats().diskWrites, rewritten ? 1u : 0u);
}

TEST(CodeCache, FifoEntryDoesNotBlockAndIsReplaced) {
  checkNonRegularEntry([](const std::string &p) { ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0); }, true);
}

TEST(CodeCache, DirectoryEntryIsCorruptNotFatal) {
  checkNonRegularEntry([](const std::string &p) { fs::create_directory(p); }, false); // rename over a directory fails
}

TEST(CodeCache, ConcurrentEnginesWritingTheSameKeys) {
  TempDir dir;
  constexpr int kThreads = 2, kKernels = 12;
  std::vector<isa::Kernel> kernels;
  for (int i = 0; i < kKernels; ++i)
    kernels.push_back(testKernel(10 + i));
  std::barrier sync(kThreads);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      jit::JitEngine e(diskOnly(dir.path()));
      for (const auto &k : kernels) {
        sync.arrive_and_wait(); // both engines miss and write the same key at about the same time
        auto pk = e.prepare(k);
        if (runPrepared(*pk, testArgs()).ddr != reference(k).ddr)
          ++wrong;
      }
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(wrong, 0);
  auto files = dir.entries();
  EXPECT_EQ(files.size(), static_cast<size_t>(kKernels)); // no temporaries left behind
  for (const auto &f : files)
    EXPECT_EQ(f.extension(), ".sjo") << f;
  jit::JitEngine check(diskOnly(dir.path()));
  for (const auto &k : kernels)
    expectSameRun(runPrepared(*check.prepare(k), testArgs()), reference(k));
  EXPECT_EQ(check.cacheStats().diskHits, static_cast<uint64_t>(kKernels));
  EXPECT_EQ(check.cacheStats().corruptEntries, 0u);
}

TEST(CodeCache, EnvironmentSelectsOrDisablesTheDirectory) {
  TempDir dir;
  auto fromEnv = [](std::map<std::string, std::string> vars) {
    jit::JitOptions o = jit::JitOptions::fromEnv(Env::fromMap(std::move(vars)));
    o.tier = jit::OptTier::O0;
    o.memoryCache = false;
    return o;
  };
  {
    jit::JitEngine e(fromEnv({{"SPYRE_CACHE_DIR", dir.path()}, {"HOME", "/nonexistent"}}));
    EXPECT_EQ(e.cacheDir(), dir.path());
    e.prepare(testKernel(4));
    EXPECT_EQ(e.cacheStats().diskWrites, 1u);
  }
  {
    jit::JitEngine e(fromEnv({{"SPYRE_CACHE_DIR", "off"}, {"HOME", dir.path()}}));
    EXPECT_EQ(e.cacheDir(), "");
    e.prepare(testKernel(4));
    EXPECT_EQ(e.cacheStats().misses, 1u);
    EXPECT_EQ(e.cacheStats().diskWrites, 0u);
  }
  EXPECT_EQ(jit::JitOptions::fromEnv(Env::fromMap({{"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}})).cacheDir,
            "/x/spyre-jit");
  EXPECT_EQ(jit::JitOptions::fromEnv(Env::fromMap({{"HOME", "/h"}})).cacheDir, "/h/.cache/spyre-jit");
  EXPECT_EQ(jit::JitOptions::fromEnv(Env::fromMap({})).cacheDir, "off");
}

TEST(CodeCache, JitOptionsFromEnv) {
  jit::JitOptions d = jit::JitOptions::fromEnv(Env::fromMap({}));
  EXPECT_EQ(d.tier, jit::OptTier::O2);
  EXPECT_TRUE(d.memoryCache);
  EXPECT_TRUE(d.passes.empty());
  EXPECT_FALSE(d.printTimes);
  EXPECT_FALSE(d.debug);
  EXPECT_EQ(jit::JitOptions::fromEnv(Env::fromMap({{"SPYRE_JIT_OPT", "O0"}})).tier, jit::OptTier::O0);
  EXPECT_EQ(jit::JitOptions::fromEnv(Env::fromMap({{"SPYRE_JIT_OPT", "0"}})).tier, jit::OptTier::O0);
  EXPECT_EQ(jit::JitOptions::fromEnv(Env::fromMap({{"SPYRE_JIT_OPT", "2"}})).tier, jit::OptTier::O2);
  EXPECT_TRUE(jit::JitOptions::fromEnv(Env::fromMap({{"SPYRE_JIT_TIMES", "1"}})).printTimes);
  EXPECT_EQ(jit::JitOptions::fromEnv(Env::fromMap({{"SPYRE_JIT_PASSES", "function(sroa)"}})).passes, "function(sroa)");
  try {
    jit::JitOptions::fromEnv(Env::fromMap({{"SPYRE_JIT_OPT", "7"}}));
    FAIL() << "SPYRE_JIT_OPT=7 was accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("SPYRE_JIT_OPT"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("O0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(jit::JitOptions::fromEnv(Env::fromMap({{"SPYRE_JIT_DEBUG", "maybe"}})), Error);
}

TEST(CodeCache, UnwritableDirectoryStillCompiles) {
  TempDir dir;
  std::string file = dir.path() + "/not_a_directory";
  std::ofstream(file) << "x";
  jit::JitEngine e(diskOnly(file + "/cache"));
  isa::Kernel k = testKernel(5);
  expectSameRun(runPrepared(*e.prepare(k), testArgs()), reference(k));
  EXPECT_EQ(e.cacheStats().misses, 1u);
  EXPECT_EQ(e.cacheStats().diskWrites, 0u);
}

TEST(CodeCache, DumpDirWritesIrAndObject) {
  TempDir dir;
  jit::JitEngine e({jit::OptTier::O2, dir.path(), "off", true});
  isa::Kernel k = testKernel(6, "dumped");
  e.prepare(k);
  e.prepare(k); // dumping bypasses lookups: the IR is written again
  EXPECT_EQ(e.cacheStats().misses, 2u);
  std::set<std::string> names;
  for (const auto &f : dir.entries())
    names.insert(f.filename().string());
  for (const char *n : {"spyre_dumped_0.ll", "spyre_dumped_0.opt.ll", "spyre_dumped_0.o", "spyre_dumped_1.o"})
    EXPECT_TRUE(names.count(n)) << n;
  std::string obj = readFile(dir.path() + "/spyre_dumped_0.o");
  ASSERT_GT(obj.size(), 4u);
  EXPECT_EQ(obj.substr(0, 4), "\x7f" "ELF");
}

TEST(CodeCache, DiskCacheIsBoundedLeastRecentlyUsedFirst) {
  TempDir dir;
  auto engine = [&](uint64_t maxBytes) {
    jit::JitOptions o = diskOnly(dir.path());
    o.cacheMaxBytes = maxBytes;
    return std::make_unique<jit::JitEngine>(o);
  };
  auto missesOf = [&](uint64_t maxBytes, const isa::Kernel &k) {
    auto e = engine(maxBytes);
    e->prepare(k);
    return e->cacheStats().misses;
  };
  const isa::Kernel k0 = testKernel(0), k1 = testKernel(1), k2 = testKernel(2);
  ASSERT_EQ(missesOf(uint64_t{1} << 30, k0), 1u);
  ASSERT_EQ(dir.entries().size(), 1u);
  const uint64_t entry = fs::file_size(dir.entries()[0]); // the variants differ in one immediate
  // The kernel's loop nest is a generic nest ("gn-*"), the same for every variant (the bcast is
  // outside it): its one entry is read, so marked used, by every prepare and stays.
  uint64_t nests = 0;
  for (const auto &e : fs::directory_iterator(dir.path()))
    if (e.path().filename().string().rfind("gn-", 0) == 0)
      nests += fs::file_size(e.path());
  ASSERT_GT(nests, 0u);
  const uint64_t bound = 2 * entry + entry / 2 + nests; // two kernel entries fit, three do not
  EXPECT_EQ(missesOf(bound, k1), 1u);
  EXPECT_EQ(dir.entries().size(), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(missesOf(bound, k0), 0u); // a disk hit marks k0 used: k1 is now the oldest
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(missesOf(bound, k2), 1u); // three entries: over the bound, k1 goes
  EXPECT_EQ(dir.entries().size(), 2u);
  EXPECT_EQ(missesOf(bound, k0), 0u);
  EXPECT_EQ(missesOf(bound, k2), 0u);
  EXPECT_EQ(missesOf(bound, k1), 1u); // evicted: compiled again (and k0, now oldest, goes)
  EXPECT_EQ(dir.entries().size(), 2u);
  // The entry just written is never the one deleted, even when it alone exceeds the bound.
  EXPECT_EQ(missesOf(1, testKernel(3)), 1u);
  EXPECT_EQ(dir.entries().size(), 1u);
  EXPECT_EQ(missesOf(1, testKernel(3)), 0u);
}

TEST(CodeCache, CacheMaxMbFromEnv) {
  EXPECT_EQ(jit::JitOptions::fromEnv(Env::fromMap({})).cacheMaxBytes, uint64_t{1024} << 20);
  EXPECT_EQ(jit::JitOptions::fromEnv(Env::fromMap({{"SPYRE_CACHE_MAX_MB", "3"}})).cacheMaxBytes, uint64_t{3} << 20);
  for (const char *bad : {"0", "-1", "lots", "2000000"}) {
    try {
      jit::JitOptions::fromEnv(Env::fromMap({{"SPYRE_CACHE_MAX_MB", bad}}));
      FAIL() << "SPYRE_CACHE_MAX_MB=" << bad << " was accepted";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("invalid SPYRE_CACHE_MAX_MB value"), std::string::npos) << e.what();
    }
  }
}
