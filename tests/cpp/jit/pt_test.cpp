// PT tile matmul: interpreter and JIT identical byte for byte, and equal to a scalar fma
// reference in the documented order.
#include "jit_test_util.h"
#include "spyre/isa/dl16.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/verifier.h"
#include "spyre/jit/jit_engine.h"
#include "spyre/sim/engine.h"
#include <cmath>
#include <algorithm>
#include <cstring>
#include <gtest/gtest.h>
#include <random>

using namespace spyre;

// M = 1 .. 16: a lone remainder block of 1, 2 or 5 rows, full register blocks with a remainder,
// full blocks only (the O2 micro-kernel takes rows 4 at a time on AVX-512 hosts, 6 at a time on
// AVX2 ones, where blocks of 1 and 2 rows are 64 and 32 columns wide, the others 16).
class PtTileRows : public ::testing::TestWithParam<int64_t> {};

// Two passes: the second pt.mm accumulates on the first's product, both read B from the
// decoded mirror. One pass: a lone pt.mm, whose B a tiny M (at most one register block of
// rows) decodes in registers (lower_pt.cpp, tinyMRows).
TEST_P(PtTileRows, MatmulAndOutputBothEnginesAndReference) {
  for (int passes : {2, 1}) {
    SCOPED_TRACE(std::to_string(passes) + " pass(es)");
    const int64_t M = GetParam(), N = 128, K = 192;
    const int64_t A = 0, B = 0x10000, C = 0x40000, D = 0x60000;
    const std::string m = std::to_string(M);
    std::string text = ".kernel pt cores=1\n.args\n.core 0\n"
                       "    pt.mm     lx[0x40000], lx[0x0], lx[0x10000], " + m + ", 128, 192, 0\n" +
                       (passes == 2 ? "    pt.mm     lx[0x40000], lx[0x0], lx[0x10000], " + m + ", 128, 192, 1\n" : "") +
                       "    pt.out    lx[0x60000], lx[0x40000], " + m + ", 128\n";
    isa::Kernel k = isa::parseKernel(text);
    EXPECT_EQ(isa::printKernel(k), text);
    std::vector<uint8_t> lxInit(sim::kLxBytes, 0);
    std::mt19937 g(1);
    std::normal_distribution<float> nd(0, 1);
    std::vector<float> a(M * K), b(K * N);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t kk = 0; kk < K; ++kk) {
        uint16_t h = dl16::fromFloat(nd(g));
        a[i * K + kk] = dl16::toFloat(h);
        std::memcpy(&lxInit[A + ((kk / 64) * M + i) * 128 + 2 * (kk % 64)], &h, 2);
      }
    for (int64_t kk = 0; kk < K; ++kk)
      for (int64_t n = 0; n < N; ++n) {
        uint16_t h = dl16::fromFloat(nd(g));
        b[kk * N + n] = dl16::toFloat(h);
        std::memcpy(&lxInit[B + ((n / 64) * K + kk) * 128 + 2 * (n % 64)], &h, 2);
      }
    auto run = [&](sim::Engine &e) {
      std::vector<uint8_t> lx = lxInit;
      sim::CoreState cs{};
      cs.lx = lx.data();
      sim::LaunchArgs args;
      e.prepare(k)->runPhase(0, 0, cs, args);
      return lx;
    };
    auto interp = sim::makeInterpreter();
    jit::JitEngine jit;
    auto li = run(*interp), lj = run(jit);
    ASSERT_TRUE(li == lj);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t n = 0; n < N; ++n) {
        float acc = 0;
        for (int pass = 0; pass < passes; ++pass)
          for (int64_t kk = 0; kk < K; ++kk)
            acc = std::fma(a[i * K + kk], b[kk * N + n], acc);
        float c;
        std::memcpy(&c, &li[C + ((n / 32) * M + i) * 128 + 4 * (n % 32)], 4);
        ASSERT_EQ(c, acc) << i << "," << n;
        uint16_t d;
        std::memcpy(&d, &li[D + ((n / 64) * M + i) * 128 + 2 * (n % 64)], 2);
        ASSERT_EQ(d, dl16::fromFloat(acc));
      }
  }
}

INSTANTIATE_TEST_SUITE_P(M, PtTileRows, ::testing::Values(1, 2, 5, 8, 13, 16));

// The O2 tier decodes a pt.mm's B tiles once per phase and reuses them while B stays in LX.
// Every kind of LX write between two pt.mm on the same B must invalidate that cache (the second
// product then differs from the first), and a write next to B must not. Both engines must agree
// byte for byte on all of LX.
namespace {

struct BReuse {
  const char *name;
  std::string between; ///< instructions between the two pt.mm (after the phase's bar if ring)
  bool changesB;       ///< whether the second product must differ from the first
};

TEST(PtTile, DecodedBIsInvalidatedByEveryLxWrite) {
  // A (4 x 128) at 0x0, B (128 x 128: 32 KiB) at 0x10000, other DL16 data at 0x60000; the
  // products go to 0x40000 and 0x48000.
  const std::string load = "    dma.in    lx[0x0], ddr[x], shape=(1,1,8) -> t0\n"
                           "    dma.in    lx[0x10000], ddr[x+0x400], shape=(1,1,256) -> t1\n"
                           "    dma.in    lx[0x60000], ddr[x+0x8400], shape=(1,1,256) -> t2\n"
                           "    wait      t0, t1, t2\n";
  const std::string mm0 = "    pt.mm     lx[0x40000], lx[0x0], lx[0x10000], 4, 128, 128, 0\n";
  const std::string mm1 = "    pt.mm     lx[0x48000], lx[0x0], lx[0x10000], 4, 128, 128, 0\n";
  const std::vector<BReuse> cases = {
      {"st on the last stick", "    ld.dl16   v1, lx[0x60000]\n    st.dl16   lx[0x17f80], v1\n", true},
      {"st just past B", "    ld.dl16   v1, lx[0x60000]\n    st.dl16   lx[0x18000], v1\n", false},
      {"dma.in", "    dma.in    lx[0x14000], ddr[x+0x8400], shape=(1,2,2), lx.stride=(0,0x2000) -> t0\n"
                 "    wait      t0\n", true},
      {"dma.mc", "    dma.mc    lx[0x17000], ddr[x+0x8400], shape=(1,1,2), cohort=2 -> t0\n    wait      t0\n", true},
      {"stu inside B", "    ld.dl16   v1, lx[0x60000]\n    stu.dl16  lx[0x1200a], v1, 7\n", true},
      {"stu ending at B", "    ld.dl16   v1, lx[0x60000]\n    stu.dl16  lx[0xfff0], v1, 8\n", false},
      {"pt.out", "    pt.out    lx[0x10080], lx[0x40000], 2, 64\n", true},
      {"pt.tr", "    pt.tr     lx[0x12000], lx[0x60000], 64, 64\n", true},
      {"ring.recv", "    ring.recv lx[0x14000], 4, 0\n", true},
      {"ring.psum", "    ring.psum.dl16 lx[0x10000], 4, 0\n", true},
      {"a loop of st over B",
       "    li        r1, 0\n    ld.dl16   v2, lx[0x60080]\n    loop 3 {\n        st.dl16   lx[r1+0x16000], v2\n"
       "        addi      r1, r1, 0x800\n    }\n",
       true},
  };
  std::vector<uint8_t> x = spyre::testing::randomDl16((0x8400 + 0x8000) / 2, 7);
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit; // O2: the tier with the cache
  for (const BReuse &c : cases) {
    SCOPED_TRACE(c.name);
    bool ring = std::string(c.name).rfind("ring", 0) == 0;
    std::string text = ".kernel breuse cores=2\n.args x\n.core 0..1\n" + load +
                       (ring ? "    ring.send lx[0x60000], 4, 0\n    bar\n" : "") + mm0 + c.between + mm1;
    isa::Kernel k = isa::parseKernel(text);
    isa::verifyKernel(k, {x.size()});
    auto ri = spyre::testing::runPrepared(*interp->prepare(k), {x}, 1, 0x70000);
    auto rj = spyre::testing::runPrepared(*jit.prepare(k), {x}, 1, 0x70000);
    EXPECT_TRUE(ri.lx == rj.lx);
    EXPECT_TRUE(ri.regs == rj.regs);
    bool same = std::equal(ri.lx.begin() + 0x40000, ri.lx.begin() + 0x40800, ri.lx.begin() + 0x48000);
    EXPECT_EQ(same, !c.changesB);
  }
}

TEST(PtTile, DecodedBServesSubTilesAndFollowsTheBRegister) {
  // pt.mm on all of B, then on its second column tile (inside the cached range), then in a
  // loop on B tiles at 0x10000 and 0x60000 in turn, chosen by a register (a miss every time).
  std::string text = ".kernel bsub cores=1\n.args x\n.core 0\n"
                     "    dma.in    lx[0x0], ddr[x], shape=(1,1,8) -> t0\n"
                     "    dma.in    lx[0x10000], ddr[x+0x400], shape=(1,1,256) -> t1\n"
                     "    dma.in    lx[0x60000], ddr[x+0x8400], shape=(1,1,128) -> t2\n"
                     "    wait      t0, t1, t2\n"
                     "    pt.mm     lx[0x40000], lx[0x0], lx[0x10000], 4, 128, 128, 0\n"
                     "    pt.mm     lx[0x48000], lx[0x0], lx[0x14000], 4, 64, 128, 0\n"
                     "    li        r1, 0\n"
                     "    loop 4 {\n"
                     "        pt.mm     lx[0x50000], lx[0x0], lx[r1+0x10000], 4, 64, 128, 1\n"
                     "        addi      r1, r1, -0x50000\n"
                     "        muli      r1, r1, -1\n"
                     "    }\n";
  isa::Kernel k = isa::parseKernel(text);
  std::vector<uint8_t> x = spyre::testing::randomDl16((0x8400 + 0x4000) / 2, 8);
  isa::verifyKernel(k, {x.size()});
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  auto ri = spyre::testing::runPrepared(*interp->prepare(k), {x}, 1, 0x64000);
  auto rj = spyre::testing::runPrepared(*jit.prepare(k), {x}, 1, 0x64000);
  ASSERT_TRUE(ri.lx == rj.lx);
  ASSERT_TRUE(ri.regs == rj.regs);
  // The sub-tile product is the second column tile of the full product.
  EXPECT_TRUE(std::equal(ri.lx.begin() + 0x40000 + 2 * 4 * 128, ri.lx.begin() + 0x40000 + 4 * 4 * 128,
                         ri.lx.begin() + 0x48000));
}

// The decoded B also serves later cores, phases and kernels on the same host thread when
// their B bytes at the same LX offsets equal the ones decoded (spyre_jit_b_reuse compares
// them). Two cohorts of two cores on one thread, in order, multicast B0 and B1; B1 differs from
// B0 only in its last DL16 value. Then the kernel again with B0 = B1 but for its first value
// (the thread's last decode, B1, sits at the same offsets). Both engines must agree byte for
// byte on all of LX each time.
TEST(PtTile, DecodedBIsSharedOnlyWhenTheBytesAgree) {
  // 8 rows: a lone pt.mm of at most one register block of rows decodes B in registers instead
  // (lower_pt.cpp, tinyMRows), with no mirror to share.
  const std::string text = ".kernel bshare cores=4\n.args x\n.core 0..3\n"
                           "    tbl       r2, [0x800, 0x800, 0x8800, 0x8800]\n"
                           "    dma.in    lx[0x0], ddr[x], shape=(1,1,16) -> t0\n"
                           "    dma.mc    lx[0x10000], ddr[x+r2], shape=(1,1,256), cohort=2 -> t1\n"
                           "    wait      t0, t1\n"
                           "    pt.mm     lx[0x40000], lx[0x0], lx[0x10000], 8, 128, 128, 0\n";
  isa::Kernel k = isa::parseKernel(text);
  // x: A (16 sticks), then B0 and B1 (256 sticks each).
  std::vector<uint8_t> x = spyre::testing::randomDl16((0x800 + 2 * 0x8000) / 2, 9);
  std::copy(x.begin() + 0x800, x.begin() + 0x8800, x.begin() + 0x8800);
  auto setWord = [](std::vector<uint8_t> &v, size_t at, float f) {
    const uint16_t h = dl16::fromFloat(f);
    std::memcpy(&v[at], &h, 2);
  };
  setWord(x, 0x8800 + 0x8000 - 2, 1000.0f); // B1: B0 but for its last value
  std::vector<uint8_t> x2 = x;               // the second run: B0 = B1 but for its first value
  std::copy(x.begin() + 0x8800, x.begin() + 0x10800, x2.begin() + 0x800);
  setWord(x2, 0x800, -1000.0f);
  isa::verifyKernel(k, {x.size()});
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit; // O2: the tier with the cache
  auto pkI = interp->prepare(k), pkJ = jit.prepare(k);
  const size_t lx = 0x48000, product = 0x40000, bytes = 8 * 128 * 4; // C: 8 rows x 128 fp32
  for (const std::vector<uint8_t> *in : {&x, &x2}) {
    auto ri = spyre::testing::runPrepared(*pkI, {*in}, 1, lx);
    auto rj = spyre::testing::runPrepared(*pkJ, {*in}, 1, lx);
    EXPECT_TRUE(ri.lx == rj.lx);
    EXPECT_TRUE(ri.regs == rj.regs);
    auto productOf = [&](int core) { return ri.lx.begin() + core * lx + product; };
    EXPECT_TRUE(std::equal(productOf(0), productOf(0) + bytes, productOf(1)));
    EXPECT_TRUE(std::equal(productOf(2), productOf(2) + bytes, productOf(3)));
    EXPECT_FALSE(std::equal(productOf(0), productOf(0) + bytes, productOf(2)));
  }
}


// Every DL16 code as a B value, through the in-register decode of a lone tiny-M pt.mm (1, 2, 4
// and 5 rows: lower_pt.cpp, tinyMRows, 16-bit lane halves in the vpunpck lane order) and
// through the decoded mirror (8 rows, and 1 row whose B a second pt.mm reads too). Every row of
// A is 1.0 at k = 0 and +0 elsewhere, B's row 0 holds 4,096 codes and its other rows -0, C starts
// as -0 (acc = 1): so C[i][n] = (-0 + 1 * b) + 0 * -0 + ... = b exactly, signed zeros and
// infinities included. Both engines must agree on all of LX and equal dl16::toFloat bit for bit.
TEST(PtTile, EveryBCodeDecodesExactlyInRegistersAndInTheMirror) {
  const int64_t N = 4096, K = 64, A = 0, B = 0x10000, C = 0x100000, C2 = 0x180000;
  struct Case {
    int64_t M;
    bool second; // a second pt.mm on the same B: the mirror
  };
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  for (Case cs : {Case{1, false}, Case{2, false}, Case{4, false}, Case{5, false}, Case{8, false}, Case{1, true}}) {
    const int64_t M = cs.M;
    SCOPED_TRACE("M=" + std::to_string(M) + (cs.second ? " (two pt.mm)" : ""));
    std::string mm = "    pt.mm     lx[0x100000], lx[0x0], lx[0x10000], " + std::to_string(M) + ", 4096, 64, 1\n";
    std::string text = ".kernel codes cores=1\n.args\n.core 0\n" + mm;
    if (cs.second)
      text += "    pt.mm     lx[0x180000], lx[0x0], lx[0x10000], " + std::to_string(M) + ", 4096, 64, 1\n";
    isa::Kernel k = isa::parseKernel(text);
    auto pkI = interp->prepare(k), pkJ = jit.prepare(k);
    for (uint32_t first = 0; first < 0x10000; first += N) {
      std::vector<uint8_t> lxInit(sim::kLxBytes, 0);
      const uint16_t one = dl16::fromFloat(1.0f), negZero = 0x8000;
      for (int64_t i = 0; i < M; ++i)
        std::memcpy(&lxInit[A + i * 128], &one, 2); // A[i][0] = 1, the rest +0
      for (int64_t n = 0; n < N; ++n)
        for (int64_t kk = 0; kk < K; ++kk) {
          // Codes in a scrambled order, so neighbouring lanes hold unrelated codes.
          const uint16_t h = kk == 0 ? static_cast<uint16_t>(first + ((n * 2654435761u) % N)) : negZero;
          std::memcpy(&lxInit[B + ((n / 64) * K + kk) * 128 + 2 * (n % 64)], &h, 2);
        }
      const uint32_t negZeroF = 0x80000000u;
      for (int64_t at : {C, C2})
        for (int64_t w = 0; w < M * N; ++w)
          std::memcpy(&lxInit[at + 4 * w], &negZeroF, 4);
      auto run = [&](const sim::PreparedKernel &pk) {
        std::vector<uint8_t> lx = lxInit;
        sim::CoreState state{};
        state.lx = lx.data();
        sim::LaunchArgs args;
        pk.runPhase(0, 0, state, args);
        return lx;
      };
      auto li = run(*pkI), lj = run(*pkJ);
      ASSERT_TRUE(li == lj) << "codes from " << first;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t n = 0; n < N; ++n) {
          const uint16_t h = static_cast<uint16_t>(first + ((n * 2654435761u) % N));
          const float want = dl16::toFloat(h);
          uint32_t got, wantBits;
          std::memcpy(&got, &lj[C + ((n / 32) * M + i) * 128 + 4 * (n % 32)], 4);
          std::memcpy(&wantBits, &want, 4);
          ASSERT_EQ(got, wantBits) << "code " << h << " row " << i;
        }
    }
  }
}

} // namespace
