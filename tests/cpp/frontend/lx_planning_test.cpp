// LX planning end to end: which intermediates stay in LX, that the kernels read and write them
// in place (same numerics as through DDR, on both engines), and what it saves in DDR traffic —
// torch-spyre's softmax worked example (notes §4.7: HBM traffic 8MN+4N -> 3MN elements with the
// reductions in LX and exp/sub in place).
#include "plan_runner.h"
#include "spyre/frontend/compiler.h"
#include "spyre/isa/backend.h"
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
    isa::TimingReport r = isa::timeKernel(isa::compileSuperDsc(l.sdsc), isa::HardwareConfig{});
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
  setenv("LX_PLANNING", "0", 1);
  EXPECT_FALSE(frontend::CompileOptions{}.lxPlanning);
  setenv("LX_PLANNING", "1", 1);
  EXPECT_TRUE(frontend::CompileOptions{}.lxPlanning);
  unsetenv("LX_PLANNING");
  EXPECT_TRUE(frontend::CompileOptions{}.lxPlanning);
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
  // (a kernel's inputs and output never share). None qualifies for LX (neg/abs/relu).
  std::string text = "graph(%x: f16[64, 256]) {\n  %a = neg(%x) : f16[64, 256]\n  %b = abs(%a) : f16[64, 256]\n"
                     "  %c = relu(%b) : f16[64, 256]\n  %d = neg(%c) : f16[64, 256]\n  %y = abs(%d) : f16[64, 256]\n"
                     "  return (%y)\n}\n";
  isa::JobPlan p = compile(text, 32, true);
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
