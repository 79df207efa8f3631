// Grouped-query attention's head repeat (passes.h fuseRepeatHeads, kernels/matmul.cpp kvrep):
// reshape / expand / reshape of k and v read by the attention matmuls becomes no kernel, the
// matmuls read k / v's head h / r in place. The result equals the unfused chain (three copy
// kernels per tensor) bit for bit on both engines, and a host reference within fp16 rounding.
#include "fusion_helpers.h"
#include "plan_runner.h"
#include "spyre/frontend/passes.h"
#include <cmath>
#include <gtest/gtest.h>

using namespace spyre;

namespace {

using test::shapeText;

using test::compile;
using test::sameBits;

struct Case {
  const char *name;
  int64_t B, H, Hkv, S, D;
  int cores;
  bool clone; ///< sdpa's _repeat_heads (a clone before the last reshape), else HF's repeat_kv
};

const Case kCases[] = {
    {"llama_4_over_2", 1, 4, 2, 64, 64, 32, true},
    {"repeat_kv_8_over_2_batch2_head128", 2, 8, 2, 32, 128, 32, false},
    {"odd_rows_6_over_3", 1, 6, 3, 67, 64, 8, true},
    {"one_core", 1, 4, 1, 16, 64, 1, false},
};

/// o = (q @ repeat(k)^T) @ repeat(v): both matmuls read a repeated tensor.
std::string gqaGraph(const Case &c) {
  const int64_t rep = c.H / c.Hkv;
  const std::string q = "f16" + shapeText({c.B, c.H, c.S, c.D}), kv = "f16" + shapeText({c.B, c.Hkv, c.S, c.D}),
                    u = "f16" + shapeText({c.B * c.Hkv, 1, c.S, c.D}),
                    e = "f16" + shapeText({c.B * c.Hkv, rep, c.S, c.D}), s = "f16" + shapeText({c.B, c.H, c.S, c.S});
  std::string g = "graph(%q: " + q + ", %k: " + kv + ", %v: " + kv + ") {\n";
  for (const char *t : {"k", "v"}) {
    const std::string n = t;
    g += "  %" + n + "1 = reshape(%" + n + ") : " + u + "\n";
    g += "  %" + n + "e = expand(%" + n + "1) : " + e + "\n";
    std::string last = n + "e";
    if (c.clone) {
      g += "  %" + n + "c = clone(%" + n + "e) : " + e + "\n";
      last = n + "c";
    }
    g += "  %" + n + "r = reshape(%" + last + ") : " + q + "\n";
  }
  g += "  %kt = transpose(%kr) : f16" + shapeText({c.B, c.H, c.D, c.S}) + "\n";
  g += "  %s = matmul(%q, %kt) : " + s + "\n";
  g += "  %o = matmul(%s, %vr) : " + q + "\n  return (%o)\n}\n";
  return g;
}

class RepeatHeadsCase : public ::testing::TestWithParam<Case> {};

TEST_P(RepeatHeadsCase, NoCopyKernelsAndEqualToTheUnfusedChain) {
  const Case &c = GetParam();
  const std::string text = gqaGraph(c);
  frontend::Graph gr = frontend::parseGraph(text);
  ASSERT_EQ(frontend::fuseRepeatHeads(gr), 2) << text;
  isa::JobPlan on = compile(text, true, c.cores), off = compile(text, false, c.cores);
  // The two matmuls are left (and a transpose of k where N = S is no whole number of sticks,
  // so the matmul cannot read k sticked on K); the repeat was 1-3 copy kernels per tensor.
  EXPECT_EQ(on.launches.size(), c.S % 64 == 0 ? 2u : 3u);
  EXPECT_GE(off.launches.size(), on.launches.size() + 2);
  const int64_t nq = c.B * c.H * c.S * c.D, nkv = c.B * c.Hkv * c.S * c.D;
  std::mt19937 gen(23);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<std::vector<float>> in(3);
  for (auto &[v, n] : {std::pair{&in[0], nq}, {&in[1], nkv}, {&in[2], nkv}})
    for (int64_t i = 0; i < n; ++i) // DL16-exact inputs: multiples of 1/64 in [-1, 1]
      v->push_back(std::round(d(gen) * 64) / 64);
  test::BothEngines a = test::runOnBothEngines(on, in), b = test::runOnBothEngines(off, in);
  ASSERT_EQ(a.interp.size(), 1u);
  EXPECT_TRUE(sameBits(a.interp[0], a.jit[0])) << "interpreter and JIT differ";
  EXPECT_TRUE(sameBits(a.interp[0], b.interp[0])) << "kvrep and the repeated copies differ";
  EXPECT_TRUE(sameBits(b.interp[0], b.jit[0])) << "unfused: interpreter and JIT differ";
  // Host reference in double: o[b, h] = (q[b, h] k[b, h / r]^T) v[b, h / r].
  const int64_t rep = c.H / c.Hkv;
  int bad = 0;
  for (int64_t bb = 0; bb < c.B; ++bb)
    for (int64_t h = 0; h < c.H; ++h) {
      const int64_t kvh = bb * c.Hkv + h / rep;
      const float *qp = &in[0][(bb * c.H + h) * c.S * c.D], *kp = &in[1][kvh * c.S * c.D], *vp = &in[2][kvh * c.S * c.D];
      std::vector<double> sc(c.S * c.S);
      for (int64_t i = 0; i < c.S; ++i)
        for (int64_t j = 0; j < c.S; ++j) {
          double acc = 0;
          for (int64_t t = 0; t < c.D; ++t)
            acc += double(qp[i * c.D + t]) * kp[j * c.D + t];
          sc[i * c.S + j] = acc;
        }
      for (int64_t i = 0; i < c.S; ++i)
        for (int64_t t = 0; t < c.D; ++t) {
          double acc = 0, mag = 0;
          for (int64_t j = 0; j < c.S; ++j) {
            acc += sc[i * c.S + j] * vp[j * c.D + t];
            mag += std::fabs(sc[i * c.S + j] * vp[j * c.D + t]);
          }
          const float got = a.interp[0][((bb * c.H + h) * c.S + i) * c.D + t];
          if (std::fabs(got - acc) > 0.01 * mag + 1e-3 && ++bad <= 5)
            ADD_FAILURE() << "b " << bb << " head " << h << " [" << i << ", " << t << "]: " << got << " vs " << acc;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(RepeatHeads, RepeatHeadsCase, ::testing::ValuesIn(kCases),
                         [](const auto &info) { return std::string(info.param.name); });

TEST(RepeatHeads, PassLeavesOtherPatternsAlone) {
  // The repeated value also read by an add; a repeat of rows (not heads); the repeated value as
  // the matmul's x.
  for (const char *text :
       {"graph(%p: f16[1, 4, 64, 64], %v: f16[1, 2, 64, 64]) {\n  %v1 = reshape(%v) : f16[2, 1, 64, 64]\n"
        "  %ve = expand(%v1) : f16[2, 2, 64, 64]\n  %vr = reshape(%ve) : f16[1, 4, 64, 64]\n"
        "  %o = matmul(%p, %vr) : f16[1, 4, 64, 64]\n  %a = add(%vr, %o) : f16[1, 4, 64, 64]\n  return (%a)\n}\n",
        "graph(%p: f16[1, 4, 64, 64], %v: f16[1, 2, 64, 64]) {\n  %v1 = reshape(%v) : f16[1, 128, 1, 64]\n"
        "  %ve = expand(%v1) : f16[1, 128, 2, 64]\n  %vr = reshape(%ve) : f16[1, 4, 64, 64]\n"
        "  %o = matmul(%p, %vr) : f16[1, 4, 64, 64]\n  return (%o)\n}\n",
        "graph(%w: f16[1, 4, 64, 64], %v: f16[1, 2, 64, 64]) {\n  %v1 = reshape(%v) : f16[2, 1, 64, 64]\n"
        "  %ve = expand(%v1) : f16[2, 2, 64, 64]\n  %vr = reshape(%ve) : f16[1, 4, 64, 64]\n"
        "  %o = matmul(%vr, %w) : f16[1, 4, 64, 64]\n  return (%o)\n}\n"}) {
    frontend::Graph gr = frontend::parseGraph(text);
    EXPECT_EQ(frontend::fuseRepeatHeads(gr), 0) << text;
  }
}

} // namespace
