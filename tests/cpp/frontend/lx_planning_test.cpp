// LX planning end to end: which intermediates stay in LX, that the kernels read and write them
// in place (same numerics as through DDR, on both engines), and what it saves in DDR traffic —
// torch-spyre's softmax worked example (notes §4.7: HBM traffic 8MN+4N -> 3MN elements with the
// reductions in LX and exp/sub in place).
#include "plan_runner.h"
#include "spyre/frontend/compiler.h"
#include "spyre/backend/backend.h"
#include "spyre/isa/dl16.h"
#include "spyre/isa/hardware_config.h"
#include "spyre/isa/timing.h"
#include "spyre/jit/jit_engine.h"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <random>
#include <sstream>
#include <tuple>

using namespace spyre;

namespace {

std::string softmaxGraph(int64_t M, int64_t N) {
  std::string m = std::to_string(M), n = std::to_string(N);
  return "graph(%x: f16[" + m + ", " + n + "]) {\n  %m = amax(%x, dims=[-1], keepdim=1) : f16[" + m + ", 1]\n"
         "  %d = sub(%x, %m) : f16[" + m + ", " + n + "]\n  %e = exp(%d) : f16[" + m + ", " + n + "]\n"
         "  %s = sum(%e, dims=[-1], keepdim=1) : f16[" + m + ", 1]\n  %y = div(%e, %s) : f16[" + m + ", " + n +
         "]\n  return (%y)\n}\n";
}

isa::JobPlan compile(const std::string &text, int cores, bool lx, const std::string &dump = "") {
  frontend::CompileOptions o;
  o.maxCores = cores;
  o.lxPlanning = lx;
  o.fusion = false; // one kernel per op: the intermediates between them are what LX planning places
  o.dumpDir = dump;
  return frontend::compileGraph(frontend::parseGraph(text), o);
}

struct Totals {
  uint64_t ddrBytes = 0;
  double us = 0;
  int lxArgs = 0;
};
Totals totals(const isa::JobPlan &p) {
  Totals t;
  for (const auto &l : p.launches) {
    isa::TimingReport r = isa::timeKernel(backend::compileSuperDsc(l.sdsc), isa::HardwareConfig{});
    t.ddrBytes += r.ddrBytes;
    t.us += r.scheduledUs;
    for (int b : l.argBuffers)
      t.lxArgs += b < 0;
  }
  return t;
}

std::vector<float> run(const isa::JobPlan &p, sim::Engine &e, const std::vector<float> &x) {
  test::PlanRunner r(p, e);
  r.setInput(0, x);
  r.run();
  return r.output(0);
}

} // namespace

TEST(LxPlanning, SoftmaxKeepsIntermediatesInLxWithIdenticalResults) {
  const int64_t M = 512, N = 1024;
  std::mt19937 g(3);
  std::normal_distribution<float> d(0, 2);
  std::vector<float> x(M * N);
  for (auto &v : x)
    v = d(g);
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  for (int cores : {1, 32}) {
    isa::JobPlan on = compile(softmaxGraph(M, N), cores, true), off = compile(softmaxGraph(M, N), cores, false);
    // max, sub, exp (in place of sub) and sum stay in LX: every intermediate DDR buffer is gone.
    for (const auto &b : on.buffers)
      EXPECT_NE(b.kind, isa::BufferSpec::Kind::Intermediate) << b.name << " still has a DDR buffer, cores " << cores;
    Totals tOn = totals(on), tOff = totals(off);
    // Kernel operands in LX: m (amax writes, sub reads), d (sub, exp), e (exp, sum, div), s (sum, div).
    EXPECT_EQ(tOn.lxArgs, 9) << "cores " << cores;
    // DDR traffic: on = 3MN elements of 2 bytes (x read by amax and sub, y written by div), as
    // torch-spyre's table; off = 8MN plus the row statistics (one stick per row) written twice
    // and read twice — on one core the blocked sub and div read them once more per block.
    EXPECT_EQ(tOn.ddrBytes, 3u * M * N * 2) << "cores " << cores;
    if (cores == 32)
      EXPECT_EQ(tOff.ddrBytes, 8u * M * N * 2 + 4u * M * 128);
    EXPECT_GE(tOff.ddrBytes, 8u * M * N * 2 + 4u * M * 128) << "cores " << cores;
    EXPECT_LT(tOn.us, tOff.us) << "cores " << cores;
    std::printf("[lx planning] softmax %lldx%lld, %d cores: simulated %.1f us with LX planning, %.1f us without\n",
                static_cast<long long>(M), static_cast<long long>(N), cores, tOn.us, tOff.us);
    // The same arithmetic in the same order: bit-identical outputs, on both engines.
    std::vector<float> yOn = run(on, *interp, x), yOff = run(off, *interp, x), yJit = run(on, jit, x);
    ASSERT_EQ(yOn, yOff) << "cores " << cores;
    ASSERT_EQ(yOn, yJit) << "cores " << cores;
    for (int64_t r = 0; r < M; r += 37) {
      double mx = -INFINITY, s = 0;
      for (int64_t c = 0; c < N; ++c)
        mx = std::max(mx, static_cast<double>(x[r * N + c]));
      for (int64_t c = 0; c < N; ++c)
        s += std::exp(x[r * N + c] - mx);
      for (int64_t c = 0; c < N; ++c) {
        double ref = std::exp(x[r * N + c] - mx) / s;
        ASSERT_NEAR(yOn[r * N + c], ref, 0.1 * std::fabs(ref) + 1e-3) << r << "," << c;
      }
    }
  }
}

TEST(LxPlanning, LxPlanningEnvAndDumpDir) {
  std::string dir = (std::filesystem::temp_directory_path() / "spyre_lx_plan_test").string();
  std::filesystem::remove_all(dir);
  compile(softmaxGraph(64, 1024), 4, true, dir);
  std::ifstream f(dir + "/lx_plan.txt");
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), "m size=2048 live=[0,2) -> lx 0x0\n"
                      "d size=32768 live=[1,3) -> lx 0x800\n"
                      "e size=32768 live=[2,5) -> lx 0x800\n"
                      "s size=2048 live=[3,5) -> lx 0x0\n");
  using frontend::CompileOptions;
  EXPECT_FALSE(CompileOptions::fromEnv(spyre::Env::fromMap({{"LX_PLANNING", "0"}})).lxPlanning);
  EXPECT_FALSE(CompileOptions::fromEnv(spyre::Env::fromMap({{"LX_PLANNING", "off"}})).lxPlanning);
  EXPECT_TRUE(CompileOptions::fromEnv(spyre::Env::fromMap({{"LX_PLANNING", "1"}})).lxPlanning);
  EXPECT_TRUE(CompileOptions::fromEnv(spyre::Env::fromMap({})).lxPlanning);
  EXPECT_TRUE(CompileOptions{}.lxPlanning);
  try {
    CompileOptions::fromEnv(spyre::Env::fromMap({{"LX_PLANNING", "maybe"}}));
    ADD_FAILURE() << "LX_PLANNING=maybe accepted";
  } catch (const spyre::Error &e) {
    EXPECT_STREQ(e.what(), "invalid LX_PLANNING value 'maybe' (expected one of 1, 0, true, false, on, off)");
  }
}

TEST(LxPlanning, CoreDivisionMismatchStaysInDdr) {
  // %t is produced by a 2-d add split over rows and read by a reduction over rows, which cannot
  // split the dim it reduces: the per-core views differ, so %t keeps its DDR buffer.
  std::string text = "graph(%x: f16[64, 128], %y: f16[64, 128]) {\n  %t = add(%x, %y) : f16[64, 128]\n"
                     "  %s = sum(%t, dims=[0], keepdim=1) : f16[1, 128]\n  %u = mul(%t, %t) : f16[64, 128]\n"
                     "  return (%s, %u)\n}\n";
  isa::JobPlan p = compile(text, 32, true);
  bool tInDdr = false;
  for (const auto &b : p.buffers)
    tInDdr |= b.name == "t";
  EXPECT_TRUE(tInDdr);
  EXPECT_EQ(totals(p).lxArgs, 0);
}

TEST(MemoryPlanning, IntermediatesWithDisjointLifetimesShareDdrBuffers) {
  // a [k0,k1], b [k1,k2], c [k2,k3], d [k3,k4]: a and c share one buffer, b and d another
  // (a kernel's inputs and output never share). Without LX planning (every pointwise output
  // would qualify for LX), all four are DDR intermediates.
  std::string text = "graph(%x: f16[64, 256]) {\n  %a = neg(%x) : f16[64, 256]\n  %b = abs(%a) : f16[64, 256]\n"
                     "  %c = relu(%b) : f16[64, 256]\n  %d = neg(%c) : f16[64, 256]\n  %y = abs(%d) : f16[64, 256]\n"
                     "  return (%y)\n}\n";
  isa::JobPlan p = compile(text, 32, false);
  std::vector<std::string> pooled;
  for (const auto &b : p.buffers)
    if (b.kind == isa::BufferSpec::Kind::Intermediate)
      pooled.push_back(b.name);
  EXPECT_EQ(pooled, (std::vector<std::string>{"a|c", "b|d"}));
  std::vector<float> x(64 * 256);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(static_cast<int>(i % 199) - 99) / 8.0f;
  auto interp = sim::makeInterpreter();
  std::vector<float> y = run(p, *interp, x);
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(y[i], std::fabs(x[i])) << i;
}

namespace {

/// Whether value `name` has a DDR buffer (alone, or sharing a pooled one "a|b"); false: it went to
/// LX (or is not in the plan).
bool inDdr(const isa::JobPlan &p, const std::string &name) {
  for (const auto &b : p.buffers)
    for (size_t s = 0, e; s <= b.name.size(); s = e + 1) {
      e = b.name.find('|', s);
      if (e == std::string::npos)
        e = b.name.size();
      if (b.name.substr(s, e - s) == name)
        return true;
    }
  return false;
}

std::vector<float> randomHalf(int64_t n, unsigned seed, float sd = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0, sd);
  std::vector<float> v(n);
  for (auto &x : v)
    x = dl16::halfToFloat(dl16::floatToHalf(d(g)));
  return v;
}

/// Compiles `text` with and without LX planning, checks that exactly `lx` of `candidates` lost
/// their DDR buffers, that both plans give bit-identical outputs on the interpreter and the JIT,
/// that DDR traffic and simulated time went down, and returns the LX plan's first output.
std::vector<float> checkLxAgainstDdr(const std::string &what, const std::string &text, int cores,
                                     const std::vector<std::vector<float>> &inputs, const std::vector<std::string> &lx,
                                     const std::vector<std::string> &ddr) {
  const char *dump = std::getenv("SPYRE_LX_TEST_DUMP"); // passes.txt etc. of the LX plan
  isa::JobPlan on = compile(text, cores, true, dump ? std::string(dump) + "/" + what : ""),
               off = compile(text, cores, false);
  for (const auto &v : lx)
    EXPECT_FALSE(inDdr(on, v)) << what << ": %" << v << " should be LX-resident";
  for (const auto &v : ddr)
    EXPECT_TRUE(inDdr(on, v)) << what << ": %" << v << " should keep its DDR buffer";
  for (const auto &v : lx)
    EXPECT_TRUE(inDdr(off, v)) << what << ": %" << v << " with LX_PLANNING=0";
  Totals tOn = totals(on), tOff = totals(off);
  if (lx.empty()) {
    EXPECT_EQ(tOn.ddrBytes, tOff.ddrBytes) << what;
  } else {
    EXPECT_LT(tOn.ddrBytes, tOff.ddrBytes) << what;
    EXPECT_LT(tOn.us, tOff.us) << what;
  }
  std::printf("[lx planning] %s, %d cores: %.2f us / %.3f MB DDR with LX planning, %.2f us / %.3f MB without\n",
              what.c_str(), cores, tOn.us, tOn.ddrBytes / 1e6, tOff.us, tOff.ddrBytes / 1e6);
  test::BothEngines a = test::runOnBothEngines(on, inputs), b = test::runOnBothEngines(off, inputs);
  EXPECT_EQ(a.interp, b.interp) << what;
  EXPECT_EQ(a.jit, b.jit) << what;
  EXPECT_EQ(a.interp, a.jit) << what;
  return a.interp.at(0);
}

double geluTanh(double v) { return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }

} // namespace

TEST(LxPlanning, LayerNormStatisticsAndInputStayInLx) {
  // h = x + r feeds exx2 and layernormnorm; the exx2 statistic feeds layernormscale and
  // layernormnorm; rstd feeds layernormnorm: all three intermediates live in LX.
  // 61 rows (prime) on 8 cores: every kernel splits the rows unevenly (7 cores of 8 rows, one
  // of 5), so every value is read under its producer's per-core view and stays in LX too.
  const std::vector<std::string> all{"h", "st", "rs"}, none{};
  for (auto [M, C, cores, lx] : {std::tuple{64, 256, 32, all}, {61, 200, 8, all}, {128, 512, 1, all}}) {
    std::string m = std::to_string(M), c = std::to_string(C);
    std::string text = "graph(%x: f16[" + m + ", " + c + "], %r: f16[" + m + ", " + c + "], %w: f16[" + c +
                       "], %b: f16[" + c + "]) {\n  %h = add(%x, %r) : f16[" + m + ", " + c +
                       "]\n  %st = exx2(%h) : f32[" + m + ", 2]\n  %rs = layernormscale(%st, eps=1e-05) : f32[" + m +
                       ", 1]\n  %y = layernormnorm(%h, %st, %rs, %w, %b) : f16[" + m + ", " + c +
                       "]\n  return (%y)\n}\n";
    auto x = randomHalf(M * C, 1, 2), r = randomHalf(M * C, 2), w = randomHalf(C, 3), b = randomHalf(C, 4);
    std::vector<float> y = checkLxAgainstDdr("layer_norm " + m + "x" + c, text, cores, {x, r, w, b}, lx,
                                             lx.empty() ? all : none);
    for (int64_t i = 0; i < M; i += 7) {
      double s = 0, s2 = 0;
      std::vector<double> h(C);
      for (int64_t j = 0; j < C; ++j) {
        h[j] = dl16::halfToFloat(dl16::floatToHalf(x[i * C + j] + r[i * C + j]));
        s += h[j];
        s2 += h[j] * h[j];
      }
      const double mean = s / C, rstd = 1 / std::sqrt(std::max(s2 / C - mean * mean, 0.0) + 1e-5);
      for (int64_t j = 0; j < C; ++j) {
        double ref = (h[j] - mean) * rstd * w[j] + b[j];
        ASSERT_NEAR(y[i * C + j], ref, 0.02 * std::fabs(ref) + 0.02) << M << "x" << C << " " << i << "," << j;
      }
    }
  }
}

TEST(LxPlanning, LinearBiasGeluKeepsTheMatmulOutputInLx) {
  // The matmul writes its output tiles into LX with pt.out, the bias add reads them in place
  // (and writes its sum in place), gelu reads that: two fewer DDR round trips.
  // 256x256x512 on 32 cores: the matmul divides M by 4 and N by 8, the add M by 32, so %mm's
  // per-core views differ and only %a stays in LX.
  using S = std::vector<std::string>;
  for (auto [M, K, N, cores, lx, ddr] : {std::tuple{256, 256, 512, 32, S{"a"}, S{"mm"}},
                                         {64, 200, 128, 4, S{"mm", "a"}, S{}},
                                         {128, 128, 192, 1, S{"mm", "a"}, S{}}}) {
    std::string m = std::to_string(M), k = std::to_string(K), n = std::to_string(N);
    std::string text = "graph(%x: f16[" + m + ", " + k + "], %w: f16[" + k + ", " + n + "], %b: f16[" + n +
                       "]) {\n  %mm = matmul(%x, %w) : f16[" + m + ", " + n + "]\n  %a = add(%mm, %b) : f16[" + m +
                       ", " + n + "]\n  %g = gelu(%a, approximate=1) : f16[" + m + ", " + n + "]\n  return (%g)\n}\n";
    auto x = randomHalf(M * K, 5), w = randomHalf(K * N, 6, 0.1f), b = randomHalf(N, 7);
    std::vector<float> g = checkLxAgainstDdr("linear+bias+gelu " + m + "x" + k + "x" + n, text, cores, {x, w, b}, lx,
                                             ddr);
    for (int64_t i = 0; i < M; i += 13)
      for (int64_t j = 0; j < N; j += 5) {
        double acc = 0;
        for (int64_t q = 0; q < K; ++q)
          acc += static_cast<double>(x[i * K + q]) * w[q * N + j];
        double ref = geluTanh(acc + b[j]);
        ASSERT_NEAR(g[i * N + j], ref, 0.02 * std::fabs(ref) + 0.02) << i << "," << j;
      }
  }
}

TEST(LxPlanning, MatmulReadsItsInputFromLx) {
  // x*s feeds the matmul: read in place when the core's rows are one block of whole K sticks,
  // copied block by block out of LX otherwise (K = 200: the last K stick is lane-masked).
  for (auto [M, K, N, cores] : {std::tuple{128, 256, 128, 8}, {64, 200, 64, 2}, {512, 512, 64, 1}}) {
    std::string m = std::to_string(M), k = std::to_string(K), n = std::to_string(N);
    std::string text = "graph(%x: f16[" + m + ", " + k + "], %s: f16[" + m + ", " + k + "], %w: f16[" + k + ", " + n +
                       "]) {\n  %h = mul(%x, %s) : f16[" + m + ", " + k + "]\n  %mm = matmul(%h, %w) : f16[" + m +
                       ", " + n + "]\n  return (%mm)\n}\n";
    auto x = randomHalf(M * K, 8), sc = randomHalf(M * K, 9), w = randomHalf(K * N, 10, 0.1f);
    std::vector<float> o = checkLxAgainstDdr("mul->matmul " + m + "x" + k + "x" + n, text, cores, {x, sc, w}, {"h"}, {});
    for (int64_t i = 0; i < M; i += 11)
      for (int64_t j = 0; j < N; j += 3) {
        double acc = 0;
        for (int64_t q = 0; q < K; ++q)
          acc += static_cast<double>(dl16::halfToFloat(dl16::floatToHalf(x[i * K + q] * sc[i * K + q]))) * w[q * N + j];
        ASSERT_NEAR(o[i * N + j], acc, 0.01 * std::fabs(acc) + 0.02) << i << "," << j;
      }
  }
}

TEST(LxPlanning, DtypeOpsReadAndWriteLx) {
  // f16 -> mul -> f32 -> add -> f16: the widened and the f32 sum stay in LX.
  const int64_t M = 64, C = 192;
  std::string text = "graph(%x: f16[64, 192], %y: f32[64, 192]) {\n  %h = mul(%x, %x) : f16[64, 192]\n"
                     "  %w = to_dtype(%h) : f32[64, 192]\n  %s = add(%w, %y) : f32[64, 192]\n"
                     "  %n = to_dtype(%s) : f16[64, 192]\n  %o = exp(%n) : f16[64, 192]\n  return (%o)\n}\n";
  auto x = randomHalf(M * C, 11), y = randomHalf(M * C, 12);
  std::vector<float> o = checkLxAgainstDdr("to_dtype chain 64x192", text, 8, {x, y}, {"h", "w", "s", "n"}, {});
  for (int64_t i = 0; i < M * C; i += 17) {
    double h = dl16::halfToFloat(dl16::floatToHalf(x[i] * x[i]));
    double ref = std::exp(dl16::halfToFloat(dl16::floatToHalf(static_cast<float>(h + y[i]))));
    ASSERT_NEAR(o[i], ref, 0.02 * std::fabs(ref) + 1e-3) << i;
  }
}

TEST(LxPlanning, AnyPointwiseOutputStaysInLx) {
  // Not only torch-spyre's list (exp, sub, mul, ..): a cos, a neg and an abs write their outputs
  // in LX for the next kernel too.
  const int64_t M = 64, C = 256;
  std::string text = "graph(%x: f32[64, 256]) {\n  %c = cos(%x) : f32[64, 256]\n  %n = neg(%c) : f32[64, 256]\n"
                     "  %a = abs(%n) : f32[64, 256]\n  %o = sqrt(%a) : f32[64, 256]\n  return (%o)\n}\n";
  std::vector<float> x(M * C);
  for (int64_t i = 0; i < M * C; ++i)
    x[i] = static_cast<float>(i % 401 - 200) / 32.0f;
  std::vector<float> o = checkLxAgainstDdr("cos chain 64x256", text, 8, {x}, {"c", "n", "a"}, {});
  for (int64_t i = 0; i < M * C; ++i)
    ASSERT_NEAR(o[i], std::sqrt(std::fabs(std::cos(x[i]))), 1e-5) << i;
}

TEST(LxPlanning, KSplitMatmulOutputStaysInDdr) {
  // M = 1: the work division splits K over the ring; each core of a K chain holds a partial
  // sum, so no core writes the slice a consumer core reads: the output keeps its DDR buffer.
  std::string text = "graph(%p: f16[1, 1024], %v: f16[1024, 128], %b: f16[1, 128]) {\n"
                     "  %o = matmul(%p, %v) : f16[1, 128]\n  %a = add(%o, %b) : f16[1, 128]\n"
                     "  %e = exp(%a) : f16[1, 128]\n  return (%e)\n}\n";
  isa::JobPlan p = compile(text, 32, true);
  bool kSplit = false;
  for (const auto &l : p.launches)
    if (l.sdsc.opFuncName == "batchmatmul")
      kSplit = l.sdsc.numWkSlicesPerDim[l.sdsc.dimIndex("in")] > 1;
  ASSERT_TRUE(kSplit);
  EXPECT_TRUE(inDdr(p, "o"));
  auto pv = randomHalf(1024, 13), v = randomHalf(1024 * 128, 14, 0.05f), b = randomHalf(128, 15);
  test::BothEngines r = test::runOnBothEngines(p, {pv, v, b});
  EXPECT_EQ(r.interp, r.jit);
}
