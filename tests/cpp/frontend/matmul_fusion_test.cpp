// Matmul epilogue fusion (passes.h fuseMatmulEpilogues, kernels/matmul.cpp matmulEpilogueKernel,
// backend_matmul_epilogue.cpp): which chains join their matmul's kernel and which do not; the
// fused kernel gives the unfused chain's results bit for bit on both engines; the SuperDSC
// extension (docs/superdsc.md §6.11) round-trips through JSON.
#include "fusion_helpers.h"
#include "plan_runner.h"
#include "spyre/frontend/compiler.h"
#include "spyre/frontend/passes.h"
#include "spyre/isa/error.h"
#include "spyre/isa/superdsc.h"
#include <cmath>
#include <gtest/gtest.h>
#include <random>

using namespace spyre;

namespace {

using test::compile;
using test::sameBits;

struct Case {
  const char *name;
  std::string graph;
  std::vector<size_t> inputSizes;
  int launchesOn, launchesOff;
  int cores = 8; ///< 67 rows on 8 cores split K (no fused kernel): fewer cores there
};

const Case kCases[] = {
    {"linear_bias_gelu_67x200x130",
     "graph(%x: f16[67, 200], %w: f16[200, 130], %b: f16[130]) {\n  %m = matmul(%x, %w) : f16[67, 130]\n"
     "  %a = add(%m, %b) : f16[67, 130]\n  %g = gelu(%a) : f16[67, 130]\n  return (%g)\n}\n",
     {67 * 200, 200 * 130, 130},
     1,
     3,
     4},
    {"linear_bias_relu_scalar_256x200x130",
     "graph(%x: f16[256, 200], %w: f16[200, 130], %b: f16[1, 130]) {\n  %m = matmul(%x, %w) : f16[256, 130]\n"
     "  %a = add(%m, %b) : f16[256, 130]\n  %r = relu(%a) : f16[256, 130]\n"
     "  %s = mul(%r, scalar=0.5) : f16[256, 130]\n  return (%s)\n}\n",
     {256 * 200, 200 * 130, 130},
     1,
     4},
    {"residual_add_67x128x256",
     "graph(%x: f16[67, 128], %w: f16[128, 256], %h: f16[67, 256]) {\n  %m = matmul(%x, %w) : f16[67, 256]\n"
     "  %o = add(%h, %m) : f16[67, 256]\n  return (%o)\n}\n",
     {67 * 128, 128 * 256, 67 * 256},
     1,
     2,
     6},
    {"swiglu_64x256x192",
     "graph(%x: f16[64, 256], %w1: f16[256, 192], %w3: f16[256, 192]) {\n  %a = matmul(%x, %w1) : f16[64, 192]\n"
     "  %b = matmul(%x, %w3) : f16[64, 192]\n  %s = silu(%a) : f16[64, 192]\n  %h = mul(%s, %b) : f16[64, 192]\n"
     "  return (%h)\n}\n",
     {64 * 256, 256 * 192, 256 * 192},
     2,
     4},
    {"batched_bias_tanh_4x32x64x128",
     "graph(%x: f16[4, 32, 64], %w: f16[64, 128], %b: f16[128]) {\n  %m = matmul(%x, %w) : f16[4, 32, 128]\n"
     "  %a = add(%m, %b) : f16[4, 32, 128]\n  %t = tanh(%a) : f16[4, 32, 128]\n  return (%t)\n}\n",
     {4 * 32 * 64, 64 * 128, 128},
     1,
     3},
};

/// Matmul operands in [-1, 1] (sums stay finite), every 7th element one of a few specials.
std::vector<float> values(size_t n, std::mt19937 &g) {
  std::uniform_real_distribution<float> d(-1, 1);
  const float special[] = {0.0f, -0.0f, 0.5f, -1.0f, 1e-3f};
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = i % 7 == 3 ? special[(i / 7) % 5] : d(g);
  return v;
}

class MatmulFusionCase : public ::testing::TestWithParam<Case> {};

TEST_P(MatmulFusionCase, FusedEqualsUnfusedBitForBit) {
  const Case &c = GetParam();
  isa::JobPlan on = compile(c.graph, true, c.cores), off = compile(c.graph, false, c.cores);
  EXPECT_EQ(static_cast<int>(on.launches.size()), c.launchesOn);
  EXPECT_EQ(static_cast<int>(off.launches.size()), c.launchesOff);
  int fusedMatmuls = 0;
  for (const auto &l : on.launches)
    fusedMatmuls += l.sdsc.isFused() && l.sdsc.fusedOps[0].opFuncName == "batchmatmul" ? 1 : 0;
  EXPECT_EQ(fusedMatmuls, 1);
  std::mt19937 g(23);
  std::vector<std::vector<float>> inputs;
  for (size_t n : c.inputSizes)
    inputs.push_back(values(n, g));
  test::BothEngines a = test::runOnBothEngines(on, inputs), b = test::runOnBothEngines(off, inputs);
  ASSERT_EQ(a.interp.size(), b.interp.size());
  for (size_t o = 0; o < a.interp.size(); ++o) {
    EXPECT_TRUE(sameBits(a.interp[o], a.jit[o])) << "output " << o << ": interpreter and JIT differ";
    EXPECT_TRUE(sameBits(a.interp[o], b.interp[o])) << "output " << o << ": fused and unfused differ";
    EXPECT_TRUE(sameBits(b.interp[o], b.jit[o])) << "output " << o << ": unfused: interpreter and JIT differ";
    bool finite = true;
    for (float f : a.interp[o])
      finite = finite && std::isfinite(f);
    EXPECT_TRUE(finite) << "output " << o;
  }
}

INSTANTIATE_TEST_SUITE_P(Chains, MatmulFusionCase, ::testing::ValuesIn(kCases),
                         [](const auto &info) { return std::string(info.param.name); });

bool fused(const frontend::Graph &g, size_t node) { return g.nodes[node].notes.count("fused") > 0; }

TEST(MatmulFusion, PassGroupsTheChainThatConsumesOnlyTheMatmul) {
  frontend::Graph g = frontend::parseGraph(
      "graph(%x: f16[64, 128], %w: f16[128, 64], %b: f16[64], %c: f16[64, 1]) {\n"
      "  %m = matmul(%x, %w) : f16[64, 64]\n  %a = add(%m, %b) : f16[64, 64]\n  %g = gelu(%a) : f16[64, 64]\n"
      "  %y = add(%g, %c) : f16[64, 64]\n  return (%y)\n}\n");
  EXPECT_EQ(frontend::fuseMatmulEpilogues(g), 1);
  EXPECT_TRUE(fused(g, 0) && fused(g, 1) && fused(g, 2));
  EXPECT_FALSE(fused(g, 3)) << "a column operand [64, 1] is broadcast over N: not an epilogue operand";
}

TEST(MatmulFusion, PassLeavesSharedAndReturnedMatmulsAlone) {
  // The matmul's value read twice (the chain and another node), or returned: no group.
  frontend::Graph twice = frontend::parseGraph(
      "graph(%x: f16[64, 128], %w: f16[128, 64]) {\n  %m = matmul(%x, %w) : f16[64, 64]\n"
      "  %r = relu(%m) : f16[64, 64]\n  %n = neg(%m) : f16[64, 64]\n  %o = add(%r, %n) : f16[64, 64]\n"
      "  return (%o)\n}\n");
  EXPECT_EQ(frontend::fuseMatmulEpilogues(twice), 0);
  frontend::Graph returned = frontend::parseGraph(
      "graph(%x: f16[64, 128], %w: f16[128, 64]) {\n  %m = matmul(%x, %w) : f16[64, 64]\n"
      "  %r = relu(%m) : f16[64, 64]\n  return (%r, %m)\n}\n");
  EXPECT_EQ(frontend::fuseMatmulEpilogues(returned), 0);
  // An intermediate of the chain read outside it: the chain stops before its reader.
  frontend::Graph mid = frontend::parseGraph(
      "graph(%x: f16[64, 128], %w: f16[128, 64]) {\n  %m = matmul(%x, %w) : f16[64, 64]\n"
      "  %r = relu(%m) : f16[64, 64]\n  %e = exp(%r) : f16[64, 64]\n  return (%e, %r)\n}\n");
  EXPECT_EQ(frontend::fuseMatmulEpilogues(mid), 1);
  EXPECT_TRUE(fused(mid, 0) && fused(mid, 1));
  EXPECT_FALSE(fused(mid, 2));
  // f32 results or a shape change end the chain.
  frontend::Graph f32 = frontend::parseGraph(
      "graph(%x: f16[64, 128], %w: f16[128, 64], %b: f32[64, 64]) {\n  %m = matmul(%x, %w) : f16[64, 64]\n"
      "  %a = add(%m, %b) : f32[64, 64]\n  return (%a)\n}\n");
  EXPECT_EQ(frontend::fuseMatmulEpilogues(f32), 0);
}

TEST(MatmulFusion, KSplitMatmulKeepsItsKernelAndItsChainFusesPointwise) {
  // One row and a long K: the work division splits K (partials on the ring), no output block.
  const std::string text = "graph(%x: f16[1, 8192], %w: f16[8192, 64], %b: f16[64]) {\n"
                           "  %m = matmul(%x, %w) : f16[1, 64]\n  %a = add(%m, %b) : f16[1, 64]\n"
                           "  %g = gelu(%a) : f16[1, 64]\n  return (%g)\n}\n";
  isa::JobPlan on = compile(text, true, 32), off = compile(text, false, 32);
  ASSERT_EQ(on.launches.size(), 2u);
  EXPECT_EQ(on.launches[0].sdsc.opFuncName, "batchmatmul");
  EXPECT_GT(on.launches[0].sdsc.numWkSlicesPerDim.back(), 1) << "K split";
  EXPECT_TRUE(on.launches[1].sdsc.isFused());
  std::mt19937 gen(5);
  std::vector<std::vector<float>> inputs = {values(8192, gen), values(8192 * 64, gen), values(64, gen)};
  test::BothEngines a = test::runOnBothEngines(on, inputs), b = test::runOnBothEngines(off, inputs);
  EXPECT_TRUE(sameBits(a.interp[0], b.interp[0]));
  EXPECT_TRUE(sameBits(a.interp[0], a.jit[0]));
}

TEST(MatmulFusion, ResidualOfTheMatmulsOwnInputKeepsSeparateKernels) {
  // x + x @ w: the epilogue operand would be x's buffer (one segment for two operands).
  const std::string text = "graph(%x: f16[64, 128], %w: f16[128, 128]) {\n  %m = matmul(%x, %w) : f16[64, 128]\n"
                           "  %o = add(%x, %m) : f16[64, 128]\n  %r = relu(%o) : f16[64, 128]\n  return (%r)\n}\n";
  isa::JobPlan on = compile(text, true), off = compile(text, false);
  ASSERT_EQ(on.launches.size(), 2u);
  EXPECT_EQ(on.launches[0].sdsc.opFuncName, "batchmatmul");
  EXPECT_TRUE(on.launches[1].sdsc.isFused()) << "add + relu fused pointwise";
  std::mt19937 gen(9);
  std::vector<std::vector<float>> inputs = {values(64 * 128, gen), values(128 * 128, gen)};
  test::BothEngines a = test::runOnBothEngines(on, inputs), b = test::runOnBothEngines(off, inputs);
  EXPECT_TRUE(sameBits(a.interp[0], b.interp[0]));
  EXPECT_TRUE(sameBits(a.interp[0], a.jit[0]));
}

TEST(MatmulFusion, SuperDscRoundTrips) {
  isa::JobPlan p = compile(kCases[0].graph, true, 4);
  ASSERT_EQ(p.launches.size(), 1u);
  const isa::SuperDsc &s = p.launches[0].sdsc;
  ASSERT_EQ(s.fusedOps.size(), 3u);
  EXPECT_EQ(s.opFuncName, isa::kFusedOpFunc);
  EXPECT_EQ(s.exUnit, "pt");
  EXPECT_EQ(s.fusedOps[0].opFuncName, "batchmatmul");
  EXPECT_EQ(s.fusedOps[0].inputs, (std::vector<int>{0, 1}));
  EXPECT_TRUE(s.fusedOps[0].outputs.empty());
  EXPECT_EQ(s.fusedOps[1].inputs, (std::vector<int>{isa::fusedResultRef(0), 3}));
  EXPECT_EQ(s.fusedOps[2].outputs, (std::vector<int>{2}));
  EXPECT_EQ(s.inputs, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(s.outputs, (std::vector<int>{2}));
  const std::string text = isa::writeSuperDsc(s).dump(2);
  EXPECT_NE(text.find("\"exUnit\": \"pt\""), std::string::npos);
  const isa::SuperDsc back = isa::parseSuperDscText(text, "f.json");
  EXPECT_EQ(isa::writeSuperDsc(back).dump(2), text);
  EXPECT_EQ(back.exUnit, "pt");
  EXPECT_EQ(back.inputs, s.inputs);
  EXPECT_EQ(back.outputs, s.outputs);
  // The batchmatmul anywhere but first is malformed.
  std::string bad = text;
  const auto at = bad.find("\"exUnit\": \"pt\"");
  bad.replace(at, 14, "\"exUnit\": \"sfp\"");
  EXPECT_THROW(isa::parseSuperDscText(bad, "f.json"), Error);
}

} // namespace
