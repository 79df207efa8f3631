// Row fusion (passes.h fuseRows, kernels/fused.cpp, backend_row_fused.cpp): softmax, RMSNorm
// and layer norm become one kernel per row block whose results equal the unfused chain bit for
// bit on both engines (odd shapes, uneven splits, padded last sticks, f32, bf16, 3-d); the pass
// leaves groups it cannot make alone, and rows that do not fit LX keep their own kernels.
#include "fusion_helpers.h"
#include "plan_runner.h"
#include "spyre/backend/backend.h"
#include "spyre/frontend/passes.h"
#include "spyre/isa/error.h"
#include "spyre/isa/superdsc.h"
#include <cmath>
#include <gtest/gtest.h>

using namespace spyre;

namespace {

using test::compile;
using test::fusedLaunches;
using test::hostileValues;
using test::sameBits;

std::string softmax(const std::string &t, const std::string &full, const std::string &row) {
  return "graph(%x: " + t + full + ") {\n  %m = amax(%x, dims=[-1], keepdim=1) : " + t + row +
         "\n  %d = sub(%x, %m) : " + t + full + "\n  %e = exp(%d) : " + t + full +
         "\n  %s = sum(%e, dims=[-1], keepdim=1) : " + t + row + "\n  %o = div(%e, %s) : " + t + full +
         "\n  return (%o)\n}\n";
}

const char *kRmsNorm = "graph(%x: f16[37, 200], %w: f16[200]) {\n  %q = mul(%x, %x) : f16[37, 200]\n"
                       "  %ms = mean(%q, dims=[1], keepdim=1) : f16[37, 1]\n"
                       "  %a = add(%ms, scalar=1e-5) : f16[37, 1]\n  %r = rsqrt(%a) : f16[37, 1]\n"
                       "  %y = mul(%x, %r) : f16[37, 200]\n  %o = mul(%y, %w) : f16[37, 200]\n  return (%o)\n}\n";

const char *kLayerNorm = "graph(%x: f16[20, 300], %w: f16[300], %b: f16[300]) {\n"
                         "  %mu = mean(%x, dims=[1], keepdim=1) : f16[20, 1]\n  %d = sub(%x, %mu) : f16[20, 300]\n"
                         "  %d2 = mul(%d, %d) : f16[20, 300]\n  %v = mean(%d2, dims=[1], keepdim=1) : f16[20, 1]\n"
                         "  %ve = add(%v, scalar=1e-5) : f16[20, 1]\n  %r = rsqrt(%ve) : f16[20, 1]\n"
                         "  %y = mul(%d, %r) : f16[20, 300]\n  %yw = mul(%y, %w) : f16[20, 300]\n"
                         "  %o = add(%yw, %b) : f16[20, 300]\n  return (%o)\n}\n";

struct RowCase {
  const char *name;
  std::string graph;
  std::vector<size_t> inputSizes;
  int launchesOn, launchesOff, cores;
};

const RowCase kCases[] = {
    {"softmax_f16_64x130", softmax("f16", "[64, 130]", "[64, 1]"), {64 * 130}, 1, 5, 8},
    {"softmax_odd_67x129_uneven", softmax("f16", "[67, 129]", "[67, 1]"), {67 * 129}, 1, 5, 32},
    {"softmax_f32_16x40", softmax("f32", "[16, 40]", "[16, 1]"), {16 * 40}, 1, 5, 8},
    {"softmax_bf16_3d", softmax("bf16", "[2, 9, 96]", "[2, 9, 1]"), {2 * 9 * 96}, 1, 5, 8},
    {"softmax_one_row", softmax("f16", "[1, 4000]", "[1, 1]"), {4000}, 1, 5, 8},
    {"rmsnorm_weight_37x200", kRmsNorm, {37 * 200, 200}, 1, 6, 8},
    {"layernorm_affine_20x300", kLayerNorm, {20 * 300, 300, 300}, 1, 9, 8},
    // %d is returned: stored once, read back from its LX block where a later pass needs it.
    {"softmax_returns_a_stick_value",
     "graph(%x: f16[64, 130]) {\n  %m = amax(%x, dims=[1], keepdim=1) : f16[64, 1]\n"
     "  %d = sub(%x, %m) : f16[64, 130]\n  %e = exp(%d) : f16[64, 130]\n"
     "  %s = sum(%e, dims=[1], keepdim=1) : f16[64, 1]\n  %o = div(%e, %s) : f16[64, 130]\n"
     "  return (%o, %d)\n}\n",
     {64 * 130},
     1,
     5,
     8},
    // Between two matmuls (attention's scores): input and output LX-resident (memOrg_ lx).
    {"softmax_between_matmuls_lx_resident",
     "graph(%q: f16[64, 64], %k: f16[64, 130], %v: f16[130, 64]) {\n  %x = matmul(%q, %k) : f16[64, 130]\n"
     "  %m = amax(%x, dims=[1], keepdim=1) : f16[64, 1]\n  %d = sub(%x, %m) : f16[64, 130]\n"
     "  %e = exp(%d) : f16[64, 130]\n  %s = sum(%e, dims=[1], keepdim=1) : f16[64, 1]\n"
     "  %p = div(%e, %s) : f16[64, 130]\n  %o = matmul(%p, %v) : f16[64, 64]\n  return (%o)\n}\n",
     {64 * 64, 64 * 130, 130 * 64},
     3,
     7,
     8},
    {"min_and_max_of_one_row",
     "graph(%x: f16[33, 70]) {\n  %lo = amin(%x, dims=[1], keepdim=1) : f16[33, 1]\n"
     "  %hi = amax(%x, dims=[1], keepdim=1) : f16[33, 1]\n  %w = sub(%hi, %lo) : f16[33, 1]\n"
     "  %d = sub(%x, %lo) : f16[33, 70]\n  %o = div(%d, %w) : f16[33, 70]\n  return (%o)\n}\n",
     {33 * 70},
     1,
     5,
     8},
};

class RowFusionCase : public ::testing::TestWithParam<RowCase> {};

TEST_P(RowFusionCase, RowFusedEqualsUnfusedBitForBit) {
  const RowCase &c = GetParam();
  isa::JobPlan on = compile(c.graph, true, c.cores), off = compile(c.graph, false, c.cores);
  EXPECT_EQ(static_cast<int>(on.launches.size()), c.launchesOn);
  EXPECT_EQ(static_cast<int>(off.launches.size()), c.launchesOff);
  EXPECT_EQ(fusedLaunches(on), 1);
  std::mt19937 g(25);
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

INSTANTIATE_TEST_SUITE_P(Rows, RowFusionCase, ::testing::ValuesIn(kCases),
                         [](const auto &info) { return std::string(info.param.name); });

TEST(RowFusion, SoftmaxIsOneKernelNearTheHostResult) {
  // Against a float host softmax of the same (DL16-rounded) inputs: the device's roundings only.
  const int R = 19, C = 77;
  isa::JobPlan p = compile(softmax("f16", "[19, 77]", "[19, 1]"), true, 8);
  ASSERT_EQ(p.launches.size(), 1u);
  std::mt19937 g(7);
  std::uniform_real_distribution<float> d(-4, 4);
  std::vector<float> x(R * C);
  for (float &v : x)
    v = d(g);
  test::BothEngines r = test::runOnBothEngines(p, {x});
  ASSERT_EQ(r.interp.size(), 1u);
  for (int i = 0; i < R; ++i) {
    float m = -INFINITY, s = 0;
    for (int j = 0; j < C; ++j)
      m = std::max(m, x[i * C + j]);
    for (int j = 0; j < C; ++j)
      s += std::exp(x[i * C + j] - m);
    for (int j = 0; j < C; ++j)
      EXPECT_NEAR(r.interp[0][i * C + j], std::exp(x[i * C + j] - m) / s, 2e-3) << i << "," << j;
  }
}

/// Static `exp` instructions in a kernel's programs (loop bodies included).
int staticExps(const isa::Kernel &k) {
  int n = 0;
  for (const isa::CoreProgram &p : k.programs)
    isa::forEachNested(p.body, 0, [&](const isa::Instr &in, int, int, int &) {
      n += in.op == isa::Opcode::Exp ? 1 : 0;
      return true;
    });
  return n;
}

TEST(RowFusion, SoftmaxKeepsExpInTheRowScratchOrRecomputesWhenLxIsTight) {
  // exp(x - max) is needed by the sum (pass 1) and the div (pass 2): kept in the row scratch it
  // is computed once (pass 1's body, and its masked last stick's: 130 is not a stick multiple);
  // with LX too small for the scratch next to the row blocks pass 2 recomputes it. Both are
  // bit-identical to the unfused chain (RowFusionCase above runs the default, scratch, path).
  isa::JobPlan p = compile(softmax("f16", "[64, 130]", "[64, 1]"), true, 8);
  ASSERT_EQ(p.launches.size(), 1u);
  const isa::SuperDsc &s = p.launches[0].sdsc;
  const int kept = staticExps(backend::compileSuperDsc(s));
  EXPECT_EQ(kept, 2) << "pass 1's body and its masked last stick";
  // The tightest LX that still compiles: no room for the scratch row, so exp is recomputed.
  backend::BackendOptions tight;
  int64_t lo = 0, hi = tight.lxBytes; // hi compiles, lo does not
  while (hi - lo > 128) {
    const int64_t mid = (lo + hi) / 2;
    tight.lxBytes = mid;
    try {
      backend::compileSuperDsc(s, tight);
      hi = mid;
    } catch (const Unsupported &) {
      lo = mid;
    }
  }
  tight.lxBytes = hi;
  EXPECT_EQ(staticExps(backend::compileSuperDsc(s, tight)), kept + 1);
}

TEST(RowFusion, PassGroupsTheRowChainAndLeavesEscapingRowValues) {
  frontend::Graph g = frontend::parseGraph(kRmsNorm);
  EXPECT_EQ(frontend::fuseRows(g), 1);
  for (const auto &n : g.nodes)
    EXPECT_EQ(n.notes.count("fused"), 1u) << n.op;
  // The row statistic is returned: a row-fused kernel stores full-width values only.
  frontend::Graph h = frontend::parseGraph(
      "graph(%x: f16[8, 128]) {\n  %m = amax(%x, dims=[1], keepdim=1) : f16[8, 1]\n"
      "  %d = sub(%x, %m) : f16[8, 128]\n  return (%d, %m)\n}\n");
  EXPECT_EQ(frontend::fuseRows(h), 0);
  EXPECT_EQ(frontend::fusePointwise(h), 0);
}

TEST(RowFusion, RowsBeyondLxKeepTheirOwnKernels) {
  // One row of x and of the output is 2 x 600 KB: more than the pass lets a row block take.
  const std::string text = softmax("f16", "[2, 300000]", "[2, 1]");
  frontend::Graph g = frontend::parseGraph(text);
  EXPECT_EQ(frontend::fuseRows(g), 0);
  isa::JobPlan p = compile(text, true, 8);
  EXPECT_EQ(p.launches.size(), 4u) << "sub + exp still fuse pointwise";
}

} // namespace
