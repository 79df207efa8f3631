// PT tile matmul: interpreter and JIT identical byte for byte, and equal to a scalar fma
// reference in the documented order.
#include "spyre/isa/dl16.h"
#include "spyre/isa/listing.h"
#include "spyre/jit/jit_engine.h"
#include "spyre/sim/engine.h"
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <random>

using namespace spyre;

TEST(PtTile, MatmulAndOutputBothEnginesAndReference) {
  const int64_t M = 5, N = 128, K = 192;
  const int64_t A = 0, B = 0x10000, C = 0x40000, D = 0x60000;
  std::string text = ".kernel pt cores=1\n.args\n.core 0\n"
                     "    pt.mm     lx[0x40000], lx[0x0], lx[0x10000], 5, 128, 192, 0\n"
                     "    pt.mm     lx[0x40000], lx[0x0], lx[0x10000], 5, 128, 192, 1\n"
                     "    pt.out    lx[0x60000], lx[0x40000], 5, 128\n";
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
      for (int pass = 0; pass < 2; ++pass)
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
