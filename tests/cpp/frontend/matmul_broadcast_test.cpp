// Batched matmuls whose operands broadcast batch dims of 1 (kernels/matmul.cpp matmulBatch): the
// operand lacking a dim is read by every index of it. Its layout keeps the unit dim in place, so
// a y of [1, H, K, N] (the unit dim innermost after the stick in the generic layout) is read as
// stored. Against a host reference in double, on both engines.
#include "fusion_helpers.h"
#include "plan_runner.h"
#include <cmath>
#include <gtest/gtest.h>
#include <random>

using namespace spyre;

namespace {

using test::shapeText;

struct Case {
  const char *name;
  std::vector<int64_t> x, y; ///< [b, h, M, K] and [b, h, K, N] (y stored [b, h, N, K] when transposed)
  bool transposedY;
};

const Case kCases[] = {
    {"x_over_heads_y_over_batch", {2, 1, 64, 256}, {1, 4, 256, 64}, false},
    {"y_over_batch", {2, 4, 64, 256}, {1, 4, 256, 64}, false},
    {"x_over_heads", {2, 1, 64, 256}, {2, 4, 256, 64}, false},
    {"y_over_heads", {2, 3, 40, 128}, {2, 1, 128, 64}, false},
    {"transposed_y_over_batch", {2, 1, 64, 256}, {1, 4, 256, 64}, true},
};

class MatmulBroadcastCase : public ::testing::TestWithParam<Case> {};

TEST_P(MatmulBroadcastCase, EveryIndexReadsTheBroadcastSlice) {
  const Case &c = GetParam();
  const int64_t B = std::max(c.x[0], c.y[0]), H = std::max(c.x[1], c.y[1]), M = c.x[2], K = c.x[3], N = c.y[3];
  std::vector<int64_t> stored = c.y;
  if (c.transposedY)
    std::swap(stored[2], stored[3]);
  std::string g = "graph(%x: f16" + shapeText(c.x) + ", %y: f16" + shapeText(stored) + ") {\n";
  std::string y = "%y";
  if (c.transposedY) {
    g += "  %t = transpose(%y) : f16" + shapeText(c.y) + "\n";
    y = "%t";
  }
  g += "  %o = matmul(%x, " + y + ") : f16" + shapeText({B, H, M, N}) + "\n  return (%o)\n}\n";
  isa::JobPlan p = test::compile(g, true, 32);
  std::mt19937 gen(31);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<std::vector<float>> in(2);
  for (int i = 0; i < 2; ++i) {
    const auto &s = i ? stored : c.x;
    for (int64_t j = 0; j < s[0] * s[1] * s[2] * s[3]; ++j) // DL16-exact: multiples of 1/64
      in[i].push_back(std::round(d(gen) * 64) / 64);
  }
  const test::BothEngines r = test::runOnBothEngines(p, in);
  ASSERT_TRUE(test::sameBits(r.interp[0], r.jit[0])) << "interpreter and JIT differ";
  int bad = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t xo = ((c.x[0] == 1 ? 0 : b) * c.x[1] + (c.x[1] == 1 ? 0 : h)) * M * K;
      const int64_t yo = ((c.y[0] == 1 ? 0 : b) * c.y[1] + (c.y[1] == 1 ? 0 : h)) * K * N;
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double acc = 0, mag = 0;
          for (int64_t k = 0; k < K; ++k) {
            const double yv = c.transposedY ? in[1][yo + n * K + k] : in[1][yo + k * N + n];
            acc += in[0][xo + m * K + k] * yv;
            mag += std::fabs(in[0][xo + m * K + k] * yv);
          }
          const float got = r.interp[0][((b * H + h) * M + m) * N + n];
          if (std::fabs(got - acc) > 0.01 * mag + 1e-2 && ++bad <= 5)
            ADD_FAILURE() << "[" << b << ", " << h << ", " << m << ", " << n << "]: " << got << " vs " << acc;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(MatmulBroadcast, MatmulBroadcastCase, ::testing::ValuesIn(kCases),
                         [](const auto &info) { return std::string(info.param.name); });

} // namespace
