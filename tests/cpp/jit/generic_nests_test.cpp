// Shape-generic loop nests (jit/lib/generic_nests.h): at O2 every top-level loop nest is its own
// object, cached under its shape-erased identity ("gn-*" entries beside the kernels' entries), so
// a new shape of a known kernel compiles no nest; results stay bit-identical to the interpreter.
#include "jit_test_util.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/verifier.h"
#include "spyre/jit/jit_engine.h"
#include <cstdlib>
#include <filesystem>
#include <gtest/gtest.h>
#include <unistd.h>

using namespace spyre;
using namespace spyre::testing;
namespace fs = std::filesystem;

namespace {

class TempDir {
public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "spyre-jit-gn-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string &path() const { return path_; }
  /// {kernel entries, generic-nest entries}
  std::pair<size_t, size_t> counts() const {
    std::pair<size_t, size_t> n{0, 0};
    for (const auto &e : fs::directory_iterator(path_))
      ++(e.path().filename().string().rfind("gn-", 0) == 0 ? n.second : n.first);
    return n;
  }

private:
  std::string path_;
};

/// out = op(a) on 2 cores of `sticks` sticks each: a stick loop (trip count, LX offsets and the
/// DMA shapes change with `sticks`), then a second nest that sums the result into v3 (its
/// register state crosses the nest boundary), and `extra` after it.
isa::Kernel opKernel(int sticks, const std::string &op = "relu", const std::string &extra = "") {
  const int bytes = sticks * 128;
  std::string t = ".kernel gn cores=2\n.args a out\n.core 0..1\n";
  t += "    tbl       r1, [0, " + std::to_string(bytes) + "]\n";
  t += "    dma.in    lx[0x0], ddr[a+r1], shape=(1,1," + std::to_string(sticks) + ") -> t0\n";
  t += "    wait      t0\n    li        r2, 0\n";
  t += "    loop " + std::to_string(sticks) + " {\n";
  t += "        ld.dl16   v0, lx[r2]\n        " + op + ".dl16 v1, v0\n";
  t += "        st.dl16   lx[r2+" + std::to_string(bytes) + "], v1\n        addi      r2, r2, 128\n    }\n";
  t += "    bcast.dl16 v3, 0.0\n    li        r3, " + std::to_string(bytes) + "\n";
  t += "    loop " + std::to_string(sticks) + " {\n        ld.dl16   v2, lx[r3]\n        add.dl16  v3, v3, v2\n";
  t += "        addi      r3, r3, 128\n    }\n" + extra;
  t += "    dma.out   ddr[out+r1], lx[" + std::to_string(bytes) + "], shape=(1,1," + std::to_string(sticks) + ") -> t2\n";
  t += "    wait      t2\n";
  isa::Kernel k = isa::parseKernel(t);
  isa::verifyKernel(k, {2 * static_cast<uint64_t>(bytes), 2 * static_cast<uint64_t>(bytes)});
  return k;
}

std::vector<std::vector<uint8_t>> argsFor(int sticks) {
  return {randomDl16(2 * 64 * static_cast<size_t>(sticks), 7), std::vector<uint8_t>(2 * 128 * static_cast<size_t>(sticks))};
}

void expectLikeInterpreter(jit::JitEngine &e, const isa::Kernel &k, int sticks) {
  RunResult ref = runPrepared(*sim::makeInterpreter()->prepare(k), argsFor(sticks), 1, 8192);
  RunResult got = runPrepared(*e.prepare(k), argsFor(sticks), 1, 8192);
  EXPECT_EQ(got.ddr, ref.ddr) << sticks;
  EXPECT_EQ(got.lx, ref.lx) << sticks;
  EXPECT_EQ(got.regs, ref.regs) << sticks;
}

jit::JitOptions diskOnly(const std::string &dir) { return {jit::OptTier::O2, "", dir, false}; }

} // namespace

TEST(GenericNests, NewShapeOfAKnownKernelCompilesNoNest) {
  TempDir dir;
  {
    jit::JitEngine e(diskOnly(dir.path()));
    expectLikeInterpreter(e, opKernel(2), 2);
  }
  auto [kernels, nests] = dir.counts();
  EXPECT_EQ(kernels, 1u);
  EXPECT_EQ(nests, 2u); // the relu loop and the sum loop
  for (int sticks : {3, 8, 16}) {
    jit::JitEngine e(diskOnly(dir.path())); // a new engine: the nests come from disk
    expectLikeInterpreter(e, opKernel(sticks), sticks);
    EXPECT_EQ(e.cacheStats().misses, 1u); // the kernel (its phase function) is new...
  }
  EXPECT_EQ(dir.counts(), std::make_pair(size_t{4}, size_t{2})); // ...its nests are not
  // A change inside a nest that is not a shape (the op) is a new nest; the other one is shared.
  {
    jit::JitEngine e(diskOnly(dir.path()));
    expectLikeInterpreter(e, opKernel(4, "abs"), 4);
  }
  EXPECT_EQ(dir.counts(), std::make_pair(size_t{5}, size_t{3}));
}

TEST(GenericNests, SameResultsWithoutThem) {
  // Memory cache only: each engine sees the other's nests, so run the generic one first.
  jit::clearMemoryCache();
  for (int sticks : {1, 5}) {
    const std::string extra = "    loop 3 {\n        mul.dl16  v3, v3, v1\n    }\n";
    isa::Kernel k = opKernel(sticks, "exp", extra);
    jit::JitEngine generic(jit::JitOptions{jit::OptTier::O2, "", "off"});
    RunResult a = runPrepared(*generic.prepare(k), argsFor(sticks), 1, 8192);
    jit::JitOptions off{jit::OptTier::O2, "", "off"};
    off.genericNests = false;
    jit::JitEngine plain(off);
    RunResult b = runPrepared(*plain.prepare(k), argsFor(sticks), 1, 8192);
    RunResult ref = runPrepared(*sim::makeInterpreter()->prepare(k), argsFor(sticks), 1, 8192);
    EXPECT_EQ(a.ddr, ref.ddr);
    EXPECT_EQ(a.regs, ref.regs);
    EXPECT_EQ(b.ddr, ref.ddr);
    EXPECT_EQ(b.regs, ref.regs);
    EXPECT_EQ(a.lx, b.lx);
  }
}
