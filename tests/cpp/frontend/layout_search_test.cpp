// Layout propagation's beam search (layout_propagation.cpp): pointwise chains run in a
// transposed layout without restickifying, a reduction's keepdim layout feeds pointwise ops
// directly and a generic consumer through one restickify, and the beam finds a cheaper
// assignment than greedy (width 1). Numerics on both engines against a double reference.
#include "plan_runner.h"
#include "spyre/frontend/compiler.h"
#include "spyre/frontend/passes.h"
#include "spyre/isa/error.h"
#include <cmath>
#include <cstdlib>
#include <gtest/gtest.h>
#include <random>
#include <tuple>

using namespace spyre;
using namespace spyre::frontend;
using V = std::vector<int64_t>;

namespace {

std::vector<float> randomValues(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = dist(rng);
  return v;
}

int countOps(const isa::JobPlan &plan, const std::string &op) {
  int n = 0;
  for (const auto &l : plan.launches)
    n += l.sdsc.opFuncName == op;
  return n;
}

int restickifyKernels(const isa::JobPlan &plan) {
  return countOps(plan, "transpose") + countOps(plan, "ReStickifyOpHBM");
}

void expectNear(const std::vector<float> &got, const std::vector<double> &want, double tol, const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " element " << i;
}

/// c[.., m, n] = sum_k a[.., m, k] * b[k, n] (b 2-d).
std::vector<double> matmulRef(const std::vector<double> &a, const std::vector<float> &b, int64_t rows, int64_t K,
                              int64_t N) {
  std::vector<double> c(static_cast<size_t>(rows * N), 0.0);
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n)
        c[m * N + n] += a[m * K + k] * b[k * N + n];
  return c;
}

} // namespace

// transpose -> relu -> add -> transpose back: every op runs in the transposed layout, the
// transposes are relabels; no kernel moves a stick (the output copy is an identity).
TEST(LayoutSearch, TransposedPointwiseChainHasNoRestickify) {
  const Graph g = parseGraph("graph(%x: f16[64, 200], %z: f16[64, 200]) {\n"
                             "  %t = transpose(%x) : f16[200, 64]\n  %u = transpose(%z) : f16[200, 64]\n"
                             "  %r = relu(%t) : f16[200, 64]\n  %a = add(%r, %u) : f16[200, 64]\n"
                             "  %o = transpose(%a) : f16[64, 200]\n  return (%o, %a)\n}\n");
  const isa::JobPlan plan = compileGraph(g);
  EXPECT_EQ(restickifyKernels(plan), 0);
  const auto x = randomValues(64 * 200, 1), z = randomValues(64 * 200, 2);
  const auto out = test::runOnBothEngines(plan, {x, z});
  ASSERT_EQ(out.interp, out.jit);
  std::vector<double> o(x.size()), a(x.size());
  for (int64_t i = 0; i < 64; ++i)
    for (int64_t j = 0; j < 200; ++j) {
      o[i * 200 + j] = std::max(0.0f, x[i * 200 + j]) + z[i * 200 + j];
      a[j * 64 + i] = o[i * 200 + j];
    }
  expectNear(out.interp[0], o, 0.01, "o");
  expectNear(out.interp[1], a, 0.01, "a (returned in the transposed layout)");
}

// x.sum(-1) feeds exp (in the reduction's keepdim layout) and a matmul (generic: one restickify).
TEST(LayoutSearch, StickReductionFeedingExpAndMatmul) {
  const Graph g = parseGraph("graph(%x: f16[2, 64, 100], %w: f16[64, 32]) {\n"
                             "  %s = sum(%x, dims=[2], keepdim=0) : f16[2, 64]\n  %e = exp(%s) : f16[2, 64]\n"
                             "  %m = matmul(%s, %w) : f16[2, 32]\n  return (%e, %m)\n}\n");
  Graph after = g;
  EXPECT_EQ(propagateLayouts(after).restickifies, 1);
  const isa::JobPlan plan = compileGraph(g);
  EXPECT_EQ(restickifyKernels(plan), 1);
  auto x = randomValues(2 * 64 * 100, 3);
  for (float &v : x)
    v *= 0.1f; // row sums of order 1: exp stays well inside fp16
  const auto w = randomValues(64 * 32, 4);
  std::vector<double> s(2 * 64, 0.0), expE(s.size());
  for (size_t r = 0; r < s.size(); ++r) {
    for (size_t k = 0; k < 100; ++k)
      s[r] += x[r * 100 + k];
    expE[r] = std::exp(s[r]);
  }
  const auto out = test::runOnBothEngines(plan, {x, w});
  ASSERT_EQ(out.interp, out.jit);
  expectNear(out.interp[0], expE, 0.05, "e");
  expectNear(out.interp[1], matmulRef(s, w, 2, 64, 32), 0.05, "m");
}

// t = x^T feeds relu and exp, both feed matmuls (generic). Greedy (width 1) keeps relu and exp
// in t's transposed layout (free locally) and pays a restickify before each matmul; the beam
// restickifies t once and runs both pointwise ops generic.
TEST(LayoutSearch, BeamBeatsGreedy) {
  const char *text = "graph(%x: f16[64, 256], %w: f16[64, 128]) {\n"
                     "  %t = transpose(%x) : f16[256, 64]\n  %a = relu(%t) : f16[256, 64]\n"
                     "  %b = exp(%t) : f16[256, 64]\n  %ma = matmul(%a, %w) : f16[256, 128]\n"
                     "  %mb = matmul(%b, %w) : f16[256, 128]\n  return (%ma, %mb)\n}\n";
  Graph greedy = parseGraph(text), beam = parseGraph(text);
  const LayoutSearchResult g1 = propagateLayouts(greedy, 1), g64 = propagateLayouts(beam, kLayoutBeamWidth);
  EXPECT_EQ(g1.restickifies, 2);
  EXPECT_EQ(g64.restickifies, 1);
  // Pointwise ops 4 x 256 sticks, matmuls 2 x (256 + 128 + 512): 2816 in both; a restickify of
  // 256 sticks costs 256 + 256 + 512.
  EXPECT_EQ(g1.cost, 2816 + 2 * 1024);
  EXPECT_EQ(g64.cost, 2816 + 1024);

  const isa::JobPlan plan = compileGraph(parseGraph(text));
  EXPECT_EQ(restickifyKernels(plan), 1);
  const auto x = randomValues(64 * 256, 5), w = randomValues(64 * 128, 6);
  std::vector<double> a(256 * 64), b(256 * 64);
  for (int64_t i = 0; i < 256; ++i)
    for (int64_t j = 0; j < 64; ++j) {
      a[i * 64 + j] = std::max(0.0f, x[j * 256 + i]);
      b[i * 64 + j] = std::exp(static_cast<double>(x[j * 256 + i]));
    }
  const auto out = test::runOnBothEngines(plan, {x, w});
  ASSERT_EQ(out.interp, out.jit);
  expectNear(out.interp[0], matmulRef(a, w, 256, 64, 128), 0.05, "ma");
  expectNear(out.interp[1], matmulRef(b, w, 256, 64, 128), 0.05, "mb");
}

TEST(LayoutSearch, BeamWidthFromEnvironment) {
  EXPECT_EQ(CompileOptions::fromEnv(Env::fromMap({{"SPYRE_LAYOUT_BEAM", "1"}})).layoutBeamWidth, 1);
  try {
    CompileOptions::fromEnv(Env::fromMap({{"SPYRE_LAYOUT_BEAM", "0"}}));
    ADD_FAILURE() << "SPYRE_LAYOUT_BEAM=0 accepted";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "invalid SPYRE_LAYOUT_BEAM value '0' (expected an integer in 1..4096)");
  }
  EXPECT_EQ(CompileOptions::fromEnv(Env::fromMap({})).layoutBeamWidth, kLayoutBeamWidth);
  EXPECT_EQ(CompileOptions{}.layoutBeamWidth, kLayoutBeamWidth);
}

// x @ w.t() (a linear layer): with CompileOptions::matmulTransB the matmul reads w as stored,
// sticked on K (transb=1, the PE array transposes its tiles), and the transpose is a relabel:
// no restickify kernel. Off (the default, torch-spyre's way): one transpose kernel. Same
// results on both engines either way; N not a stick multiple keeps the restickify. With transb
// N takes the cores before M, M at least kTransBMinRows = 16 rows per core (M 48: 2 x 3 cores;
// M 67, a prime: 2 x 4, unevenly).
TEST(LayoutSearch, LinearWeightReadAsStoredWithTransB) {
  for (auto [M, N, transB] : {std::tuple<int64_t, int64_t, bool>{48, 128, true},
                              {48, 128, false},
                              {48, 100, true},
                              {67, 128, true}}) {
    const int64_t K = 96;
    Graph g;
    int x = g.addInput("x", {M, K}, HostType::F16), w = g.addInput("w", {N, K}, HostType::F16);
    int wt = g.addNode("transpose", {w}, "wt", {K, N}, HostType::F16);
    g.outputs = {g.addNode("matmul", {x, wt}, "y", {M, N}, HostType::F16)};
    CompileOptions opts;
    opts.matmulTransB = transB;
    isa::JobPlan plan = compileGraph(g, opts);
    const bool expectTransB = transB && N % 64 == 0;
    EXPECT_EQ(restickifyKernels(plan), expectTransB ? 0 : 1) << "N " << N << " transb " << transB;
    EXPECT_EQ(plan.launches.size(), expectTransB ? 1u : 2u);
    if (expectTransB)
      EXPECT_EQ(plan.launches.back().sdsc.numWkSlicesPerDim,
                (std::vector<int64_t>{M == 48 ? 3 : 4, 2, 1})) << "M " << M;
    const std::vector<float> xv = randomValues(M * K, 31), wv = randomValues(N * K, 32);
    std::vector<float> wtv(static_cast<size_t>(K * N));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k)
        wtv[k * N + n] = wv[n * K + k];
    std::vector<double> xd(xv.begin(), xv.end());
    const std::vector<double> want = matmulRef(xd, wtv, M, K, N);
    const test::BothEngines r = test::runOnBothEngines(plan, {xv, wv});
    EXPECT_EQ(r.interp, r.jit);
    expectNear(r.jit.at(0), want, 0.02, "x @ w.t()");
  }
}
