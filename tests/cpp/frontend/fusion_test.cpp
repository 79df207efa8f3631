// Pointwise fusion (passes.h fusePointwise, kernels/fused.cpp, backend_fused.cpp): fused
// kernels give the unfused chain's results bit for bit on both engines, with fewer kernels; the
// fused SuperDSC extension round-trips through JSON and rejects malformed operand references.
#include "fusion_helpers.h"
#include "plan_runner.h"
#include "spyre/frontend/compiler.h"
#include "spyre/frontend/passes.h"
#include "spyre/isa/error.h"
#include "spyre/isa/superdsc.h"
#include <cstring>
#include <gtest/gtest.h>
#include <random>

using namespace spyre;

namespace {

using test::compile;
using test::fusedLaunches;
using test::hostileValues;
using test::sameBits;

struct Case {
  const char *name;
  std::string graph;
  std::vector<size_t> inputSizes;
  int launchesOn, launchesOff;
};

const Case kCases[] = {
    {"chain_f16_broadcast_constant",
     "graph(%x: f16[67, 256], %y: f16[67, 256], %b: f16[256]) {\n  %a = add(%x, %y) : f16[67, 256]\n"
     "  %r = relu(%a) : f16[67, 256]\n  %m = mul(%r, %b) : f16[67, 256]\n  %e = exp(%m) : f16[67, 256]\n"
     "  %s = sub(%e, scalar=0.5) : f16[67, 256]\n  return (%s)\n}\n",
     {67 * 256, 67 * 256, 256},
     1,
     5},
    {"two_outputs_and_a_reduction_between",
     "graph(%x: f16[64, 130]) {\n  %m = amax(%x, dims=[1], keepdim=1) : f16[64, 1]\n"
     "  %d = sub(%x, %m) : f16[64, 130]\n  %e = exp(%d) : f16[64, 130]\n"
     "  %s = sum(%e, dims=[1], keepdim=1) : f16[64, 1]\n  %o = div(%e, %s) : f16[64, 130]\n"
     "  return (%o, %d)\n}\n",
     {64 * 130},
     1, // one row-fused kernel (row_fusion_test.cpp)
     5},
    {"swiglu_f16",
     "graph(%g: f16[4, 32, 256], %u: f16[4, 32, 256]) {\n  %s = silu(%g) : f16[4, 32, 256]\n"
     "  %h = mul(%s, %u) : f16[4, 32, 256]\n  return (%h)\n}\n",
     {4 * 32 * 256, 4 * 32 * 256},
     1,
     2},
    {"f32_compare_where_gelu_clamp",
     "graph(%x: f32[8, 96], %y: f32[1, 96]) {\n  %a = add(%x, %y) : f32[8, 96]\n"
     "  %c = gt(%a, scalar=0) : f32[8, 96]\n  %w = where(%c, %a, b=-2.5) : f32[8, 96]\n"
     "  %g = gelu(%w) : f32[8, 96]\n  %k = clamp(%g, min=-1, max=3) : f32[8, 96]\n  %z = mul(%k, %k) : f32[8, 96]\n"
     "  return (%z, %a)\n}\n",
     {8 * 96, 96},
     1,
     6},
    {"f32_int32_conversions_in_the_walk",
     "graph(%x: f32[8, 96]) {\n  %m = mul(%x, scalar=1000) : f32[8, 96]\n  %q = to_dtype(%m) : i32[8, 96]\n"
     "  %c = lt(%q, scalar=0) : i32[8, 96]\n  %w = where(%c, %q, b=1) : i32[8, 96]\n"
     "  %s = add(%w, scalar=7) : i32[8, 96]\n  %f = to_dtype(%s) : f32[8, 96]\n  %o = mul(%f, scalar=0.5) : f32[8, 96]\n"
     "  return (%o)\n}\n",
     {8 * 96},
     1,
     7},
};

class FusionCase : public ::testing::TestWithParam<Case> {};

TEST_P(FusionCase, FusedEqualsUnfusedBitForBit) {
  const Case &c = GetParam();
  isa::JobPlan on = compile(c.graph, true), off = compile(c.graph, false);
  EXPECT_EQ(static_cast<int>(on.launches.size()), c.launchesOn);
  EXPECT_EQ(static_cast<int>(off.launches.size()), c.launchesOff);
  EXPECT_GE(fusedLaunches(on), 1);
  EXPECT_EQ(fusedLaunches(off), 0);
  std::mt19937 g(19);
  std::vector<std::vector<float>> inputs;
  for (size_t n : c.inputSizes)
    inputs.push_back(hostileValues(n, g));
  test::BothEngines a = test::runOnBothEngines(on, inputs), b = test::runOnBothEngines(off, inputs);
  ASSERT_EQ(a.interp.size(), b.interp.size());
  for (size_t o = 0; o < a.interp.size(); ++o) {
    EXPECT_TRUE(sameBits(a.interp[o], a.jit[o])) << "output " << o << ": interpreter and JIT differ";
    EXPECT_TRUE(sameBits(a.interp[o], b.interp[o])) << "output " << o << ": fused and unfused differ";
  }
}

INSTANTIATE_TEST_SUITE_P(Chains, FusionCase, ::testing::ValuesIn(kCases),
                         [](const auto &info) { return std::string(info.param.name); });

TEST(Fusion, PassNotesGroupsAndRespectsOrder) {
  frontend::Graph g = frontend::parseGraph(
      "graph(%x: f16[64, 128]) {\n  %d = neg(%x) : f16[64, 128]\n  %e = exp(%d) : f16[64, 128]\n"
      "  %s = sum(%e, dims=[1], keepdim=1) : f16[64, 1]\n  %o = add(%e, %s) : f16[64, 128]\n  return (%o)\n}\n");
  EXPECT_EQ(frontend::fusePointwise(g), 1);
  EXPECT_EQ(g.nodes[0].notes.count("fused"), 1u);
  EXPECT_EQ(g.nodes[1].notes.count("fused"), 1u);
  EXPECT_EQ(g.nodes[3].notes.count("fused"), 0u) << "the sum reads %e before %o: %o cannot join";
}

TEST(Fusion, SuperDscRoundTripsAndRejectsForwardResults) {
  isa::JobPlan p = compile("graph(%a: f16[67, 256], %b: f16[67, 256]) {\n  %s = add(%a, %b) : f16[67, 256]\n"
                           "  %r = relu(%s) : f16[67, 256]\n  %m = mul(%r, scalar=2) : f16[67, 256]\n  return (%m, %s)\n}\n",
                           true, 4);
  ASSERT_EQ(p.launches.size(), 1u);
  const isa::SuperDsc &s = p.launches[0].sdsc;
  ASSERT_EQ(s.fusedOps.size(), 3u);
  EXPECT_EQ(s.inputs, (std::vector<int>{0, 1}));
  EXPECT_EQ(s.outputs, (std::vector<int>{2, 3}));
  EXPECT_EQ(s.fusedOps[1].inputs, (std::vector<int>{isa::fusedResultRef(0)}));
  EXPECT_EQ(s.constants.count("op2_scalar"), 1u);
  const std::string text = isa::writeSuperDsc(s).dump(2);
  const isa::SuperDsc back = isa::parseSuperDscText(text, "f.json");
  EXPECT_EQ(isa::writeSuperDsc(back).dump(2), text);
  EXPECT_EQ(back.inputs, s.inputs);
  EXPECT_EQ(back.outputs, s.outputs);
  ASSERT_EQ(back.fusedOps.size(), 3u);
  EXPECT_EQ(back.fusedOps[2].inputConsts, s.fusedOps[2].inputConsts);
  std::string bad = text;
  const auto at = bad.find("\"Result-op0\"");
  ASSERT_NE(at, std::string::npos);
  bad.replace(at, 12, "\"Result-op1\"");
  try {
    isa::parseSuperDscText(bad, "f.json");
    FAIL() << "a forward result reference parsed";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("does not name an earlier compute op"), std::string::npos) << e.what();
  }
}

} // namespace
