// Bundling (bundling.cpp): graphs touching more graph input / output tensors than a bundle's
// segments hold split into consecutive bundles (6 tensors, 5 with an intermediate pool); the
// results stay those of a host reference on both engines; small graphs keep one bundle; the dump
// directory gets one bundle_N.mlir per bundle.
#include "plan_runner.h"
#include "spyre/frontend/compiler.h"
#include "spyre/isa/superdsc.h"
#include "spyre/jit/jit_engine.h"
#include <cmath>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <random>
#include <set>
#include <sstream>
#include <unistd.h>

using namespace spyre;

namespace {

constexpr int64_t kRows = 64, kCols = 256;

/// y = (((x0 + x1) * x2 - x3) + x4) * x5 - x6 + x7: every kernel reads a fresh graph input,
/// 9 graph tensors in all.
std::string chainGraph() {
  std::string shape = "f16[" + std::to_string(kRows) + ", " + std::to_string(kCols) + "]";
  std::string s = "graph(";
  for (int i = 0; i < 8; ++i)
    s += (i ? ", %x" : "%x") + std::to_string(i) + ": " + shape;
  s += ") {\n";
  const char *ops[] = {"add", "mul", "sub", "add", "mul", "sub", "add"};
  std::string prev = "%x0";
  for (int i = 0; i < 7; ++i) {
    std::string name = i == 6 ? "%y" : "%t" + std::to_string(i + 1);
    s += "  " + name + " = " + ops[i] + "(" + prev + ", %x" + std::to_string(i + 1) + ") : " + shape + "\n";
    prev = name;
  }
  return s + "  return (%y)\n}\n";
}

std::vector<float> chainReference(const std::vector<std::vector<float>> &x) {
  std::vector<float> y = x[0];
  const char ops[] = {'+', '*', '-', '+', '*', '-', '+'};
  for (int i = 0; i < 7; ++i)
    for (size_t k = 0; k < y.size(); ++k)
      y[k] = ops[i] == '+' ? y[k] + x[i + 1][k] : ops[i] == '*' ? y[k] * x[i + 1][k] : y[k] - x[i + 1][k];
  return y;
}

isa::JobPlan compile(const std::string &text, bool lx, const std::string &dump = "") {
  frontend::CompileOptions o;
  o.maxCores = 8;
  o.lxPlanning = lx;
  o.fusion = false; // one kernel per op: the chains are what is bundled
  o.dumpDir = dump;
  return frontend::compileGraph(frontend::parseGraph(text), o);
}

std::vector<int> bundlesOf(const isa::JobPlan &p) {
  std::vector<int> b;
  for (const auto &l : p.launches)
    b.push_back(l.bundle);
  return b;
}

/// Graph input / output buffers each bundle touches (intermediates are the pool).
std::vector<std::set<int>> ioPerBundle(const isa::JobPlan &p) {
  std::vector<std::set<int>> io(p.numBundles());
  for (const auto &l : p.launches)
    for (int b : l.argBuffers)
      if (b >= 0 && p.buffers[b].kind != isa::BufferSpec::Kind::Intermediate)
        io[l.bundle].insert(b);
  return io;
}

bool hasPool(const isa::JobPlan &p) {
  for (const auto &b : p.buffers)
    if (b.kind == isa::BufferSpec::Kind::Intermediate)
      return true;
  return false;
}

/// Runs p on both engines; expects the same bits from both and `ref` within fp16 tolerance.
void expectRuns(const isa::JobPlan &p, const std::vector<std::vector<float>> &inputs, const std::vector<float> &ref,
                float tol) {
  test::BothEngines run = test::runOnBothEngines(p, inputs);
  EXPECT_EQ(run.interp[0], run.jit[0]) << "interpreter and JIT differ";
  const std::vector<float> &res = run.interp[0];
  ASSERT_EQ(res.size(), ref.size());
  int bad = 0;
  for (size_t k = 0; k < ref.size(); ++k)
    if (!(std::fabs(res[k] - ref[k]) <= tol * (1 + std::fabs(ref[k]))) && bad++ < 5)
      ADD_FAILURE() << "element " << k << ": " << res[k] << " vs reference " << ref[k];
}

std::vector<float> randomValues(size_t n, std::mt19937 &g, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto &x : v)
    x = std::round(d(g) * 64) / 64; // exact in fp16 and DL16
  return v;
}

std::string readText(const std::filesystem::path &p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

} // namespace

TEST(Bundling, ChainOfFreshInputsSplitsAtTheSegmentLimit) {
  std::mt19937 g(11);
  std::vector<std::vector<float>> x;
  for (int i = 0; i < 8; ++i)
    x.push_back(randomValues(kRows * kCols, g, -1.5f, 1.5f));
  const std::vector<float> ref = chainReference(x);
  // LX planning off: the six intermediates are in DDR, so the pool takes a segment and a bundle
  // holds 5 graph tensors: x0..x4 (kernels 0-3), then x5, x6, x7, y (kernels 4-6).
  isa::JobPlan off = compile(chainGraph(), false);
  ASSERT_TRUE(hasPool(off));
  EXPECT_EQ(bundlesOf(off), (std::vector<int>{0, 0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(ioPerBundle(off), (std::vector<std::set<int>>{{0, 1, 2, 3, 4}, {5, 6, 7, 8}}));
  expectRuns(off, x, ref, 2e-2f);
  // LX planning on: the intermediates stay in LX, no pool, 6 graph tensors per bundle: x0..x5
  // (kernels 0-4), then x6, x7, y. LX persists across the bundle boundary (t5 lives in LX).
  isa::JobPlan on = compile(chainGraph(), true);
  ASSERT_FALSE(hasPool(on));
  EXPECT_EQ(bundlesOf(on), (std::vector<int>{0, 0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(ioPerBundle(on), (std::vector<std::set<int>>{{0, 1, 2, 3, 4, 5}, {6, 7, 8}}));
  EXPECT_EQ(on.launches[4].argBuffers.back(), -1) << "t5 is expected LX-resident across the boundary";
  expectRuns(on, x, ref, 2e-2f);
}

TEST(Bundling, SmallGraphsKeepOneBundle) {
  const char *graphs[] = {
      "graph(%a: f16[67, 256], %b: f16[67, 256]) {\n  %s = add(%a, %b) : f16[67, 256]\n"
      "  %r = relu(%s) : f16[67, 256]\n  %m = mul(%r, %b) : f16[67, 256]\n  return (%m)\n}\n",
      "graph(%x: f16[512, 1024]) {\n  %m = amax(%x, dims=[-1], keepdim=1) : f16[512, 1]\n"
      "  %d = sub(%x, %m) : f16[512, 1024]\n  %e = exp(%d) : f16[512, 1024]\n"
      "  %s = sum(%e, dims=[-1], keepdim=1) : f16[512, 1]\n  %y = div(%e, %s) : f16[512, 1024]\n  return (%y)\n}\n",
      "graph(%x: f16[64, 1024], %w: f16[1024, 256]) {\n  %h = matmul(%x, %w) : f16[64, 256]\n"
      "  %g = gelu(%h, approximate=1) : f16[64, 256]\n  %t = transpose(%g) : f16[256, 64]\n"
      "  %n = neg(%t) : f16[256, 64]\n  %o = transpose(%n) : f16[64, 256]\n  return (%o)\n}\n"};
  for (const char *text : graphs)
    for (bool lx : {false, true}) {
      isa::JobPlan p = compile(text, lx);
      EXPECT_EQ(p.numBundles(), 1) << text;
      EXPECT_EQ(bundlesOf(p), std::vector<int>(p.launches.size(), 0)) << text;
    }
}

TEST(Bundling, OneKernelOverTheLimitGetsABundleOfItsOwn) {
  // layernormnorm with x, both statistics, weight and bias as graph inputs writes a graph output:
  // 6 graph tensors in one kernel, over the 5 a bundle holds next to the pool (q is in DDR).
  const std::string text =
      "graph(%x: f16[64, 256], %s: f32[64, 2], %r: f32[64, 1], %w: f16[256], %b: f16[256]) {\n"
      "  %y = layernormnorm(%x, %s, %r, %w, %b) : f16[64, 256]\n  %q = neg(%y) : f16[64, 256]\n"
      "  %z = neg(%q) : f16[64, 256]\n  return (%y, %z)\n}\n";
  isa::JobPlan p = compile(text, false);
  ASSERT_TRUE(hasPool(p));
  EXPECT_EQ(bundlesOf(p), (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(ioPerBundle(p)[0].size(), 6u);

  std::mt19937 g(5);
  std::vector<float> x = randomValues(64 * 256, g, -2, 2), w = randomValues(256, g, 0.5f, 1.5f),
                     b = randomValues(256, g, -1, 1), s(64 * 2), r(64);
  for (int i = 0; i < 64; ++i) {
    s[2 * i] = std::round(std::sin(i) * 64) / 64; // any statistic: layernormnorm applies it as given
    s[2 * i + 1] = 1;
    r[i] = 0.5f + static_cast<float>(i % 8) / 8;
  }
  std::vector<float> ref(64 * 256);
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 256; ++j)
      ref[i * 256 + j] = (x[i * 256 + j] - s[2 * i]) * r[i] * w[j] + b[j];
  expectRuns(p, {x, s, r, w, b}, ref, 2e-2f);
}

TEST(Bundling, DumpDirHoldsOneSequencingFilePerBundle) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("spyre_bundling_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  // A small graph first: one bundle, written as bundle_0.mlir and torch-spyre's bundle.mlir.
  compile("graph(%a: f16[64, 256]) {\n  %b = neg(%a) : f16[64, 256]\n  return (%b)\n}\n", false, dir.string());
  EXPECT_TRUE(fs::exists(dir / "bundle.mlir"));
  EXPECT_EQ(isa::parseBundleMlir(readText(dir / "bundle_0.mlir"), "bundle_0.mlir"),
            std::vector<std::string>{"sdsc_0.json"});
  // The chain into the same directory: the stale bundle.mlir goes, one file per bundle.
  isa::JobPlan p = compile(chainGraph(), false, dir.string());
  EXPECT_FALSE(fs::exists(dir / "bundle.mlir"));
  EXPECT_FALSE(fs::exists(dir / "bundle_2.mlir"));
  EXPECT_EQ(isa::parseBundleMlir(readText(dir / "bundle_0.mlir"), "bundle_0.mlir"),
            (std::vector<std::string>{"sdsc_0.json", "sdsc_1.json", "sdsc_2.json", "sdsc_3.json"}));
  EXPECT_EQ(isa::parseBundleMlir(readText(dir / "bundle_1.mlir"), "bundle_1.mlir"),
            (std::vector<std::string>{"sdsc_4.json", "sdsc_5.json", "sdsc_6.json"}));
  const std::string passes = readText(dir / "passes.txt");
  EXPECT_NE(passes.find("# graph after bundling\n"), std::string::npos);
  EXPECT_NE(passes.find("bundle_0.mlir: sdsc_0..sdsc_3, io buffers 0 1 2 3 4 + pool\n"), std::string::npos) << passes;
  EXPECT_NE(passes.find("bundle_1.mlir: sdsc_4..sdsc_6, io buffers 5 6 7 8 + pool\n"), std::string::npos) << passes;
  EXPECT_NE(passes.find("%t5 = mul(%t4, %x5) : f16[64, 256] {buffer="), std::string::npos) << passes;
  fs::remove_all(dir);
}

TEST(Bundling, GreedyOverAHandMadePlan) {
  // Buffers 0-7 graph inputs, 8 an output, 9 an intermediate (the pool), launches by arguments.
  isa::JobPlan p;
  for (int i = 0; i < 10; ++i) {
    isa::BufferSpec b;
    b.kind = i < 8 ? isa::BufferSpec::Kind::Input : i == 8 ? isa::BufferSpec::Kind::Output
                                                           : isa::BufferSpec::Kind::Intermediate;
    p.buffers.push_back(b);
  }
  auto launch = [](std::vector<int> args) {
    isa::KernelLaunch l;
    l.argBuffers = std::move(args);
    return l;
  };
  // Without the pool buffer in use the plan still has one, so 5 graph tensors per bundle; a
  // tensor read again in the same bundle counts once, LX arguments (-1) not at all.
  p.launches = {launch({0, 1, 9}), launch({9, 0, -1}), launch({-1, 2, 3}), launch({4, 0, 9}),
                launch({5, 9}),    launch({0, 1, 2, 3, 4, 5, 8}), launch({8, 6})};
  frontend::BundlingResult r = frontend::bundleLaunches(p);
  EXPECT_TRUE(r.pool);
  EXPECT_EQ(r.maxIoTensors, 5);
  EXPECT_EQ(bundlesOf(p), (std::vector<int>{0, 0, 0, 0, 1, 2, 3}));
  ASSERT_EQ(r.bundles.size(), 4u);
  EXPECT_EQ(r.bundles[0].ioBuffers, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(r.bundles[0].usesPool);
  EXPECT_FALSE(r.bundles[2].usesPool);
  EXPECT_EQ(r.bundles[2].ioBuffers.size(), 7u); // alone over the limit
  EXPECT_NE(r.summary().find("bundle_2.mlir: sdsc_5, io buffers 0 1 2 3 4 5 8 (one kernel over the limit"),
            std::string::npos)
      << r.summary();
  // Buffer 9 a graph input instead: no pool, so 6 per bundle, but 9 now counts like the others
  // (bundle 0 = {0, 1, 2, 3, 4, 9}).
  p.buffers[9].kind = isa::BufferSpec::Kind::Input;
  r = frontend::bundleLaunches(p);
  EXPECT_EQ(r.maxIoTensors, 6);
  EXPECT_EQ(bundlesOf(p), (std::vector<int>{0, 0, 0, 0, 1, 2, 3}));
  p.launches = {launch({0, 1}), launch({2, 3}), launch({4, 5}), launch({6, 7})};
  p.buffers[9].kind = isa::BufferSpec::Kind::Intermediate; // a pool no launch touches still counts
  EXPECT_EQ(bundlesOf(p), (std::vector<int>{0, 0, 0, 0})); // not bundled yet
  frontend::bundleLaunches(p);
  EXPECT_EQ(bundlesOf(p), (std::vector<int>{0, 0, 1, 1}));
  // More arguments than the backend's 8 labeledDs per DSC is an error, not a bundle.
  p.launches = {launch({0, 1, 2, 3, 4, 5, 6, 7, 8})};
  EXPECT_THROW(frontend::bundleLaunches(p), Error);
}
