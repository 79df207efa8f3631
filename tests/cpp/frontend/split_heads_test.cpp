// Attention's head split of a projection (passes.h fuseSplitHeads, kernels/matmul.cpp batch
// broadcasting): permute(reshape(x @ w.t()), [0, 2, 1, 3]) becomes one matmul that writes the
// heads [B, H, S, D] directly, without the permute's restickify kernel. The result equals the
// unfused matmul + permute bit for bit on both engines, and a host reference within fp16
// rounding.
#include "fusion_helpers.h"
#include "plan_runner.h"
#include "spyre/frontend/passes.h"
#include <cmath>
#include <gtest/gtest.h>
#include <random>

using namespace spyre;

namespace {

using test::shapeText;

using test::compile;
using test::sameBits;

struct Case {
  const char *name;
  int64_t B, S, K, H, D;
  int cores;
};

const Case kCases[] = {
    {"llama_q_1x64x256_4x64", 1, 64, 256, 4, 64, 32},
    {"batch2", 2, 64, 256, 4, 64, 32},
    {"odd_rows_head128", 1, 67, 192, 3, 128, 32},
    {"batch3_few_cores", 3, 16, 128, 2, 64, 4},
};

/// o = permute(reshape(x @ w.t()), [0, 2, 1, 3]) * 2 (a reader after the heads, as RoPE's).
std::string projGraph(const Case &c) {
  std::string g = "graph(%x: f16" + shapeText({c.B, c.S, c.K}) + ", %w: f16" + shapeText({c.H * c.D, c.K}) + ") {\n";
  g += "  %t = transpose(%w) : f16" + shapeText({c.K, c.H * c.D}) + "\n";
  g += "  %mm = matmul(%x, %t) : f16" + shapeText({c.B, c.S, c.H * c.D}) + "\n";
  g += "  %v = reshape(%mm) : f16" + shapeText({c.B, c.S, c.H, c.D}) + "\n";
  g += "  %p = permute(%v, dims=[0, 2, 1, 3]) : f16" + shapeText({c.B, c.H, c.S, c.D}) + "\n";
  g += "  %o = mul(%p, scalar=2) : f16" + shapeText({c.B, c.H, c.S, c.D}) + "\n  return (%o)\n}\n";
  return g;
}

class SplitHeadsCase : public ::testing::TestWithParam<Case> {};

TEST_P(SplitHeadsCase, NoPermuteKernelAndEqualToTheUnfusedChain) {
  const Case &c = GetParam();
  const std::string text = projGraph(c);
  frontend::Graph gr = frontend::parseGraph(text);
  ASSERT_EQ(frontend::fuseSplitHeads(gr), 1) << text;
  isa::JobPlan on = compile(text, true, c.cores), off = compile(text, false, c.cores);
  // The permute's restickify is gone (the mul may join the matmul as its epilogue either way).
  EXPECT_EQ(off.launches.size(), on.launches.size() + 1);
  for (const auto &l : on.launches)
    EXPECT_NE(l.sdsc.opFuncName, "ReStickifyOpHBM");
  std::mt19937 gen(29);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<std::vector<float>> in(2);
  for (auto &[v, n] : {std::pair{&in[0], c.B * c.S * c.K}, {&in[1], c.H * c.D * c.K}})
    for (int64_t i = 0; i < n; ++i) // DL16-exact inputs: multiples of 1/64 in [-1, 1]
      v->push_back(std::round(d(gen) * 64) / 64);
  test::BothEngines a = test::runOnBothEngines(on, in), b = test::runOnBothEngines(off, in);
  ASSERT_EQ(a.interp.size(), 1u);
  EXPECT_TRUE(sameBits(a.interp[0], a.jit[0])) << "interpreter and JIT differ";
  EXPECT_TRUE(sameBits(a.interp[0], b.interp[0])) << "split heads and matmul + permute differ";
  EXPECT_TRUE(sameBits(b.interp[0], b.jit[0])) << "unfused: interpreter and JIT differ";
  int bad = 0;
  for (int64_t bb = 0; bb < c.B; ++bb)
    for (int64_t h = 0; h < c.H; ++h)
      for (int64_t s = 0; s < c.S; ++s)
        for (int64_t e = 0; e < c.D; ++e) {
          double acc = 0, mag = 0;
          for (int64_t k = 0; k < c.K; ++k) {
            const double p = double(in[0][(bb * c.S + s) * c.K + k]) * in[1][(h * c.D + e) * c.K + k];
            acc += p;
            mag += std::fabs(p);
          }
          const float got = a.interp[0][((bb * c.H + h) * c.S + s) * c.D + e];
          if (std::fabs(got - 2 * acc) > 0.01 * mag + 1e-2 && ++bad <= 5)
            ADD_FAILURE() << "b " << bb << " head " << h << " [" << s << ", " << e << "]: " << got << " vs " << 2 * acc;
        }
}

INSTANTIATE_TEST_SUITE_P(SplitHeads, SplitHeadsCase, ::testing::ValuesIn(kCases),
                         [](const auto &info) { return std::string(info.param.name); });

TEST(SplitHeads, PassLeavesOtherPatternsAlone) {
  // Not a head split: the matmul read twice, D not a whole number of sticks, another permute.
  const std::string twice = "graph(%x: f16[1, 64, 256], %w: f16[256, 256]) {\n  %t = transpose(%w) : f16[256, 256]\n"
                            "  %mm = matmul(%x, %t) : f16[1, 64, 256]\n  %v = reshape(%mm) : f16[1, 64, 4, 64]\n"
                            "  %p = permute(%v, dims=[0, 2, 1, 3]) : f16[1, 4, 64, 64]\n  return (%p, %mm)\n}\n";
  const std::string narrow = "graph(%x: f16[1, 64, 256], %w: f16[256, 256]) {\n  %t = transpose(%w) : f16[256, 256]\n"
                             "  %mm = matmul(%x, %t) : f16[1, 64, 256]\n  %v = reshape(%mm) : f16[1, 64, 8, 32]\n"
                             "  %p = permute(%v, dims=[0, 2, 1, 3]) : f16[1, 8, 64, 32]\n  return (%p)\n}\n";
  const std::string other = "graph(%x: f16[1, 64, 256], %w: f16[256, 256]) {\n  %t = transpose(%w) : f16[256, 256]\n"
                            "  %mm = matmul(%x, %t) : f16[1, 64, 256]\n  %v = reshape(%mm) : f16[1, 64, 4, 64]\n"
                            "  %p = permute(%v, dims=[2, 0, 1, 3]) : f16[4, 1, 64, 64]\n  return (%p)\n}\n";
  for (const std::string *t : {&twice, &narrow, &other}) {
    frontend::Graph g = frontend::parseGraph(*t);
    EXPECT_EQ(frontend::fuseSplitHeads(g), 0) << *t;
  }
}

} // namespace
