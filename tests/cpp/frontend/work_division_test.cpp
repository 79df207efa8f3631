// Work division passes 1-3 (torch-spyre notes §4.5) and their worked examples.
#include "spyre/frontend/compiler.h"
#include "spyre/frontend/work_division.h"
#include "spyre/isa/error.h"
#include <cstdio>
#include <gtest/gtest.h>

using namespace spyre;
using namespace spyre::frontend;

TEST(WorkDivision, DocsExampleLargeMatmulSplitsKForTheSpanThenM) {
  // A[8192, 32768] is 512 MiB: pass 1 splits its outermost device dim (K sticks) by 2; pass 2
  // declines because pass 1 committed; pass 3 gives M 16, N 1: {M:16, N:1, K:2} on 32 cores.
  MatmulProblem p{{}, true, 8192, 4096, 32768};
  EXPECT_EQ(matmulWorkDivision(p, 32), (std::vector<int64_t>{16, 1, 2}));
}

TEST(WorkDivision, Pass3MatchesTheAbsExample) {
  // abs on (256, 128, 512) fp16 with 32 cores: c0 (256) takes all 32.
  std::vector<int64_t> sizes{256, 128, 512 / 64};
  EXPECT_EQ(distributeWork(sizes, {false, false, false}, {1, 1, 1}, 32), (std::vector<int64_t>{32, 1, 1}));
  EXPECT_EQ(divideWork(sizes, {true, true, true}, 32), (std::vector<int64_t>{32, 1, 1}));
  // SENCORES=7: 7 divides none of 256, 128, 8, so the largest divisors are 4 then 1.
  EXPECT_EQ(distributeWork(sizes, {false, false, false}, {1, 1, 1}, 7), (std::vector<int64_t>{4, 1, 1}));
  // Commits are lower bounds: a committed 2 on dim 1 leaves 16 cores for dim 0.
  EXPECT_EQ(distributeWork(sizes, {false, false, false}, {1, 2, 1}, 32), (std::vector<int64_t>{16, 2, 1}));
  // Remaining cores go to the one reduction dim with the largest divisor.
  EXPECT_EQ(distributeWork({4, 64, 12}, {false, true, true}, {1, 1, 1}, 32), (std::vector<int64_t>{4, 8, 1}));
}

TEST(WorkDivision, Pass1SpanReduction) {
  // 2 x 1M sticks = 256 MiB exactly: within the limit, nothing to split.
  SpanTensor t{"t", {{0, 2}, {-1, 1 << 20}}};
  EXPECT_EQ(perCoreSpan(t, {1}), kMaxSpanBytes);
  EXPECT_EQ(spanReduction({2}, {false}, {t}, 32), (std::vector<int64_t>{1}));
  // 8 x 1M sticks = 1 GiB: the fewest cores that fit is 4.
  SpanTensor big{"big", {{0, 8}, {-1, 1 << 20}}};
  EXPECT_EQ(spanReduction({8}, {false}, {big}, 32), (std::vector<int64_t>{4}));
  // With 2 cores the best is 2 (still 512 MiB; torch-spyre only warns).
  EXPECT_EQ(spanReduction({8}, {false}, {big}, 2), (std::vector<int64_t>{2}));
  // Outer dim exhausted: continue inward to the next dim.
  SpanTensor deep{"deep", {{0, 2}, {1, 16}, {-1, 3 << 15}}}; // 2*16*98304*128 = 384 MiB
  EXPECT_EQ(spanReduction({2, 16}, {false, false}, {deep}, 32), (std::vector<int64_t>{2, 1}));
  SpanTensor deeper{"deeper", {{0, 2}, {1, 16}, {-1, 3 << 17}}}; // 1.5 GiB: 2, then 4 -> 192 MiB
  EXPECT_EQ(spanReduction({2, 16}, {false, false}, {deeper}, 32), (std::vector<int64_t>{2, 4}));
  // Two reduction dims would have to be split.
  SpanTensor red{"red", {{0, 2}, {1, 2}, {-1, 3 << 19}}}; // 768 MiB
  try {
    spanReduction({2, 2}, {true, true}, {red}, 32);
    ADD_FAILURE() << "no error";
  } catch (const Unsupported &e) {
    EXPECT_NE(std::string(e.what()).find("would split 2 reduction dims (at most one may be split)"), std::string::npos)
        << e.what();
  }
}

TEST(WorkDivision, Pass2CostModel) {
  // Decode P.V: (1 x 8192) . (8192 x 128). Cost of {m 1, n 2, k 16} by hand: compute
  // 32768 MAC / (1.536e6 * sqrt(1/8)) = 0.06034; hbm (8192 + 1048576 + 128) * 2 / 204800 =
  // 10.3213; psum 15 * 128 * 1.4e-4 = 0.2688; tie log2(8) * 50 = 150.
  MatmulProblem pv{{}, true, 1, 128, 8192};
  MatmulSplit s{{}, 1, 2, 16, 0};
  EXPECT_NEAR(matmulCostUs(pv, s), 0.06034 + 10.3213 + 0.2688 + 150, 1e-3);
  // The model's optimum for decode is 16 cores ({m 1, n 2, k 8}: each further K split costs
  // more ring hops than it saves compute); that is fewer than pass 3's 32, so pass 2 declines.
  auto best = costModelMatmulDivision(pv, 32, false, 1);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->cores(), 16);
  EXPECT_EQ(best->m, 1);
  EXPECT_EQ(best->n, 2);
  EXPECT_EQ(best->k, 8);
  EXPECT_FALSE(costModelMatmulDivision(pv, 32, false, 32));
  // Declines: a pass-1 commit; a 2-d weight shared over batch dims.
  EXPECT_FALSE(costModelMatmulDivision(pv, 32, true, 1));
  MatmulProblem shared{{4}, false, 256, 256, 256};
  EXPECT_FALSE(costModelMatmulDivision(shared, 32, false, 32));
  // A square-ish matmul: pass 3 would give M 32 (2 PT passes per core, 4x DDR fan-out);
  // the cost model prefers more rows per core.
  MatmulProblem sq{{}, true, 512, 1024, 1024};
  auto b2 = costModelMatmulDivision(sq, 32, false, 32);
  ASSERT_TRUE(b2);
  EXPECT_EQ(b2->cores(), 32);
  EXPECT_LE(b2->m, 8);
  MatmulSplit pass3{{}, 32, 1, 1, 0};
  EXPECT_LT(b2->costUs, matmulCostUs(sq, pass3));
}

TEST(WorkDivision, MatmulSplitsAreValidForManyShapes) {
  // Every split divides its (stick-adjusted) size, the product fits the cores, and at most the
  // one reduction dim K is split; printed for the benchmark shapes.
  const std::vector<MatmulProblem> shapes = {
      {{}, true, 64, 8192, 2048},  {{}, true, 4096, 1024, 2048}, {{}, true, 1, 128, 8192},
      {{}, true, 4, 1024, 256},    {{}, true, 4, 256, 1024},     {{8}, true, 256, 64, 128},
      {{2, 3}, true, 67, 129, 255}, {{4}, false, 128, 256, 512}, {{}, true, 8192, 4096, 32768}};
  for (int cores : {1, 2, 7, 32})
    for (const MatmulProblem &p : shapes) {
      std::vector<int64_t> s = matmulWorkDivision(p, cores);
      std::vector<int64_t> sizes = p.batch;
      sizes.insert(sizes.end(), {p.M, (p.N + 63) / 64, (p.K + 63) / 64});
      ASSERT_EQ(s.size(), sizes.size());
      int64_t prod = 1;
      for (size_t i = 0; i < s.size(); ++i) {
        EXPECT_EQ(sizes[i] % s[i], 0) << "dim " << i;
        prod *= s[i];
      }
      EXPECT_LE(prod, cores);
      if (cores == 32 && p.batch.empty())
        std::printf("[work division] %lldx%lld . %lldx%lld on 32 cores: M %lld, N %lld, K %lld\n",
                    static_cast<long long>(p.M), static_cast<long long>(p.K), static_cast<long long>(p.K),
                    static_cast<long long>(p.N), static_cast<long long>(s[0]), static_cast<long long>(s[1]),
                    static_cast<long long>(s[2]));
    }
}

// A transposed B (transb): the dims that give each core its own B tiles (N, batch dims in both
// inputs) take the cores first, M the rest, K never; without transb the same problems split M
// first (pass 3), so every core of an N slice would transpose the same tiles.
TEST(WorkDivision, TransposedBSplitsNBeforeM) {
  // Llama's gate projection, seq 64: x f16[64, 256] @ w.t(), w f16[512, 256]. Without transb,
  // pass 3 would give each core 2 rows (kPtFullRows): the cost model's plan splits N instead.
  MatmulProblem gate{{}, true, 64, 512, 256};
  EXPECT_EQ(matmulWorkDivision(gate, 32), (std::vector<int64_t>{1, 8, 1}));
  // The same with a batch dim of 1 (x [1, 64, 256]: a model's linear, lm_head's 1000 outputs).
  EXPECT_EQ(matmulWorkDivision({{1}, false, 64, 512, 256}, 32), (std::vector<int64_t>{1, 1, 8, 1}));
  EXPECT_EQ(matmulWorkDivision({{1}, false, 64, 1000, 256}, 32), (std::vector<int64_t>{1, 1, 8, 1}));
  gate.transB = true;
  EXPECT_EQ(matmulWorkDivision(gate, 32), (std::vector<int64_t>{4, 8, 1}));
  EXPECT_EQ(matmulWorkDivision(gate, 7), (std::vector<int64_t>{1, 4, 1}));
  // k / v projections (N 2 sticks): M takes no more than 64 / kTransBMinRows = 4 of the remaining 16.
  EXPECT_EQ(matmulWorkDivision({{}, true, 64, 128, 256, true}, 32), (std::vector<int64_t>{4, 2, 1}));
  // The same with x [1, 64, 256] (a model's linear: a batch dim of 1 before M).
  EXPECT_EQ(matmulWorkDivision({{1}, false, 64, 128, 256, true}, 32), (std::vector<int64_t>{1, 4, 2, 1}));
  // Attention's q @ k^T, heads in both inputs: heads first, then N, then M (16 rows a core).
  EXPECT_EQ(matmulWorkDivision({{1, 4}, true, 64, 64, 64, true}, 32), (std::vector<int64_t>{1, 4, 4, 1, 1}));
  // A 2-d weight shared over x's batch dim: the batch dim shares B as M does, so N goes first,
  // then the larger of M and the batch.
  EXPECT_EQ(matmulWorkDivision({{4}, false, 64, 256, 256, true}, 32), (std::vector<int64_t>{1, 8, 4, 1}));
  // M with no good divisor (1151, a prime) splits unevenly over the cores N leaves.
  EXPECT_EQ(matmulWorkDivision({{}, true, 1151, 256, 1024, true}, 32), (std::vector<int64_t>{8, 4, 1}));
  // A decode step (M 1) with a large K: the cost model would split K; transb never does.
  MatmulProblem pv{{}, true, 1, 128, 8192};
  EXPECT_GT(matmulWorkDivision(pv, 32).back(), 1);
  pv.transB = true;
  EXPECT_EQ(matmulWorkDivision(pv, 32), (std::vector<int64_t>{1, 2, 1}));
}

namespace {
std::vector<int64_t> firstKernelSplits(const std::string &text, int cores) {
  CompileOptions o;
  o.maxCores = cores;
  o.lxPlanning = false;
  isa::JobPlan plan = compileGraph(parseGraph(text), o);
  return plan.launches.at(0).sdsc.numWkSlicesPerDim;
}
} // namespace

TEST(WorkDivision, Pass1SplitsPointwiseOpsOverTheSpanLimit) {
  // x[2, 64, 4M] fp16 is 1 GiB; generic layout outer -> inner: [64 rows of dim 1, 65536 sticks,
  // 2 rows of dim 0]. Pass 3 alone gives the stick dim all 32 cores, and every core would
  // still span all 64 outer rows (1 GiB). Pass 1 splits dim 1 by 4 (256 MiB each), pass 3 then
  // gives the stick dim the remaining 8.
  const std::string add = "graph(%a: f16[2, 64, 4194304], %b: f16[2, 64, 4194304]) {\n"
                          "  %c = add(%a, %b) : f16[2, 64, 4194304]\n  return (%c)\n}\n";
  const std::vector<int64_t> splits = firstKernelSplits(add, 32);
  EXPECT_EQ(splits, (std::vector<int64_t>{1, 4, 8}));
  SpanTensor t = genericSpanTensor("a", {0, 1, 2}, {2, 64, 65536});
  EXPECT_LE(perCoreSpan(t, splits), kMaxSpanBytes);
  EXPECT_GT(perCoreSpan(t, {1, 1, 32}), kMaxSpanBytes);
  // A broadcast operand spans less: only the full-size tensors force the split.
  const std::string bias = "graph(%a: f16[2, 64, 4194304], %b: f16[4194304]) {\n"
                           "  %c = mul(%a, %b) : f16[2, 64, 4194304]\n  return (%c)\n}\n";
  EXPECT_EQ(firstKernelSplits(bias, 32), (std::vector<int64_t>{1, 4, 8}));
  // The docs' abs example is small: pass 1 commits nothing and pass 3 splits c0 by 32.
  EXPECT_EQ(firstKernelSplits("graph(%x: f16[256, 128, 512]) {\n  %y = abs(%x) : f16[256, 128, 512]\n"
                              "  return (%y)\n}\n",
                              32),
            (std::vector<int64_t>{32, 1, 1}));
}

TEST(WorkDivision, Pass1SplitsReductionsOnKeptDims) {
  // sum over dim 0 of [64, 4M] (512 MiB): device dims [65536 sticks, 64 rows]; pass 1 splits
  // the sticks (a kept dim) so no core spans more than 256 MiB.
  const std::vector<int64_t> splits =
      firstKernelSplits("graph(%x: f16[64, 4194304]) {\n  %s = sum(%x, dims=[0], keepdim=1) : f16[1, 4194304]\n"
                        "  return (%s)\n}\n",
                        32);
  EXPECT_EQ(splits[0], 1);
  EXPECT_LE(perCoreSpan(genericSpanTensor("x", {0, 1}, {64, 65536}), splits), kMaxSpanBytes);
}

TEST(WorkDivision, Pass1KeepsDimsTheKernelCannotSplit) {
  // A row sum of [2, 128M] (512 MiB): only the reduced stick dim can bring a core's span under
  // 256 MiB. Pass 1 does not commit a reduced dim; pass 3 splits the rows, then (the rows leave
  // 30 cores idle) the reduced stick dim 16 ways, partial sums meeting on the ring.
  const std::vector<int64_t> rowSum =
      firstKernelSplits("graph(%x: f16[2, 134217728]) {\n  %s = sum(%x, dims=[1], keepdim=1) : f16[2, 1]\n"
                        "  return (%s)\n}\n",
                        32);
  EXPECT_EQ(rowSum, (std::vector<int64_t>{2, 16}));
  EXPECT_LE(perCoreSpan(genericSpanTensor("x", {0, 1}, {2, 134217728 / 64}), rowSum), kMaxSpanBytes);
  // max partials do not add on the ring: an amax keeps its stick dim on one core.
  EXPECT_EQ(firstKernelSplits("graph(%x: f16[2, 134217728]) {\n  %s = amax(%x, dims=[1], keepdim=1) : f16[2, 1]\n"
                              "  return (%s)\n}\n",
                              32),
            (std::vector<int64_t>{2, 1}));
  // The same for the rows of a PE-array transpose of 512 MiB: its input side still splits.
  const std::vector<int64_t> t = firstKernelSplits(
      "graph(%x: f16[8192, 32768]) {\n  %y = transpose(%x) : f16[32768, 8192]\n  return (%y)\n}\n", 32);
  EXPECT_EQ(t, (std::vector<int64_t>{1, 32}));
}

TEST(WorkDivision, Pass1SplitsCopyOps) {
  // to_dtype f16 -> f32 of [2, 64, 4M]: the f32 output is 2 GiB; the stick dim stays on one core,
  // so pass 1 splits the 64 outer rows by 8 (256 MiB), and pass 3 adds the remaining cores.
  const std::vector<int64_t> c = firstKernelSplits(
      "graph(%x: f16[2, 64, 4194304]) {\n  %y = to_dtype(%x) : f32[2, 64, 4194304]\n  return (%y)\n}\n", 32);
  EXPECT_EQ(c[2], 1);
  EXPECT_EQ(c[1] % 8, 0);
  EXPECT_LE(perCoreSpan(genericSpanTensor("y", identityDims(3), {2, 64, 4194304}, 32), c), kMaxSpanBytes);
  // A slice of the same 1 GiB tensor: its input view and output both stay within the limit.
  const std::vector<int64_t> s = firstKernelSplits(
      "graph(%x: f16[2, 64, 4194304]) {\n  %y = slice(%x, dim=0, start=1, end=2) : f16[1, 64, 4194304]\n"
      "  return (%y)\n}\n",
      32);
  EXPECT_LE(perCoreSpan(genericSpanTensor("x", identityDims(3), {2, 64, 4194304}, 64), s), kMaxSpanBytes);
  // Without pass 1 the stick dim would take all 32 cores (divideWork), spanning 512 MiB.
  EXPECT_EQ(divideWork({1, 64, 65536}, {true, true, true}, 32), (std::vector<int64_t>{1, 1, 32}));
}

TEST(WorkDivision, UnevenSplitCounts) {
  // Slices of ceil(n / min(n, limit)) and a shorter last one: as many as that takes.
  EXPECT_EQ(unevenSplit(1151, 32), 32); // 31 x 36 + 35
  EXPECT_EQ(unevenSplit(33, 32), 17);   // 16 x 2 + 1: 32 cores would leave slices empty
  EXPECT_EQ(unevenSplit(40, 32), 20);   // 20 x 2
  EXPECT_EQ(unevenSplit(7, 32), 7);
  EXPECT_EQ(unevenSplit(1000, 7), 7);   // 6 x 143 + 142
  EXPECT_EQ(unevenSplit(5, 1), 1);
  EXPECT_EQ(largestShare({1151, 128}, {32, 1}), 36 * 128);
  EXPECT_EQ(largestShare({33, 1}, {17, 1}), 2);
}

TEST(WorkDivision, UnevenSplitsOnlyWhereTheyShrinkTheLargestShare) {
  const std::vector<bool> none{false, false};
  // Layer norm's row statistics: 1151 rows (prime) by 128 sticks, the stick dim kept whole. Even
  // splits leave it on one core; the uneven split uses all 32.
  EXPECT_EQ(distributeWork({1151, 128}, {false, true}, {1, 1}, 32, false), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(distributeWork({1151, 128}, {false, true}, {1, 1}, 32, false, true), (std::vector<int64_t>{32, 1}));
  // The same rows elementwise: the 128 sticks split evenly 32 ways (1151 x 4 sticks a core), as
  // good as any uneven split (36 x 128 > 1151 x 4): the even plan stays.
  EXPECT_EQ(distributeWork({1151, 128}, none, {1, 1}, 32, false, true), (std::vector<int64_t>{1, 32}));
  // 33 rows of one stick: 11 cores of 3 rows even, 17 cores of at most 2 uneven.
  EXPECT_EQ(distributeWork({33, 1}, none, {1, 1}, 32, false), (std::vector<int64_t>{11, 1}));
  EXPECT_EQ(distributeWork({33, 1}, none, {1, 1}, 32, false, true), (std::vector<int64_t>{17, 1}));
  // Dims that divide evenly never go uneven (4096 x 16 sticks: 32 x 1).
  EXPECT_EQ(distributeWork({4096, 16}, none, {1, 1}, 32, false, true), (std::vector<int64_t>{32, 1}));
  // 7 rows x 1000 columns (16 sticks): 16 sticks take 16 cores evenly, the 7 rows the other 2
  // unevenly (4 + 3 rows): a largest share of 4 stick-rows against 7.
  EXPECT_EQ(distributeWork({7, 16}, none, {1, 1}, 32, false), (std::vector<int64_t>{1, 16}));
  EXPECT_EQ(distributeWork({7, 16}, none, {1, 1}, 32, false, true), (std::vector<int64_t>{2, 16}));
  // A pass-1 commit stays even: dim 1 committed 2 keeps a divisor, dim 0 goes uneven.
  EXPECT_EQ(distributeWork({1151, 6}, none, {1, 2}, 32, false, true), (std::vector<int64_t>{16, 2}));
}

TEST(WorkDivision, LayerNormOverPrimeRowsUsesEveryCore) {
  // layer_norm over f16[1151, 8192], unfused: exx2 and layernormscale split the rows unevenly
  // over all 32 cores (31 x 36 rows + 35); layernormnorm keeps its even split of the 128 stick
  // columns. Fused (the default), the one row-fused kernel splits the rows the same way.
  const std::string ln = "graph(%x: f16[1151, 8192]) {\n"
                         "  %s = exx2(%x) : f32[1151, 2]\n"
                         "  %r = layernormscale(%s, eps=0.00001) : f32[1151, 1]\n"
                         "  %y = layernormnorm(%x, %s, %r, weight=0, bias=0) : f16[1151, 8192]\n"
                         "  return (%y)\n}\n";
  CompileOptions o;
  o.maxCores = 32;
  {
    isa::JobPlan fused = compileGraph(parseGraph(ln), o);
    ASSERT_EQ(fused.launches.size(), 1u);
    EXPECT_EQ(fused.launches[0].sdsc.fusedOps.size(), 3u);
    EXPECT_EQ(fused.launches[0].sdsc.numWkSlicesPerDim, (std::vector<int64_t>{32, 1}));
    const isa::SdscTensor &x = fused.launches[0].sdsc.labeledDs[0];
    EXPECT_EQ(x.startAddress[31] - x.startAddress[0], uint64_t{31 * 36 * 128});
  }
  o.fusion = false;
  isa::JobPlan plan = compileGraph(parseGraph(ln), o);
  ASSERT_EQ(plan.launches.size(), 3u);
  EXPECT_EQ(plan.launches[0].sdsc.numWkSlicesPerDim, (std::vector<int64_t>{32, 1}));
  EXPECT_EQ(plan.launches[1].sdsc.numWkSlicesPerDim, (std::vector<int64_t>{32, 1}));
  EXPECT_EQ(plan.launches[2].sdsc.numWkSlicesPerDim, (std::vector<int64_t>{1, 32}));
  // Core c's rows start at 36 c: the exx2 input's start addresses step 36 rows of one stick.
  const isa::SdscTensor &x = plan.launches[0].sdsc.labeledDs[0];
  EXPECT_EQ(x.startAddress[31] - x.startAddress[0], uint64_t{31 * 36 * 128});
  // An add over 33 rows: 17 cores, the last with one row.
  EXPECT_EQ(firstKernelSplits("graph(%a: f16[33, 64], %b: f16[33, 64]) {\n  %c = add(%a, %b) : f16[33, 64]\n"
                              "  return (%c)\n}\n",
                              32),
            (std::vector<int64_t>{17, 1}));
}

// SENCORES is read once, at the boundary (CompileOptions::fromEnv): 1..32, anything else is the
// setup error "invalid SENCORES value N (expected an integer in 1..32)" (the wording python's tests and docs/isa.md name).
TEST(CompileOptions, SencoresFromEnv) {
  EXPECT_EQ(CompileOptions::fromEnv(spyre::Env::fromMap({})).maxCores, 32);
  EXPECT_EQ(CompileOptions::fromEnv(spyre::Env::fromMap({{"SENCORES", "7"}})).maxCores, 7);
  for (const char *bad : {"0", "33", "40", "-1", "x", "4x"}) {
    try {
      CompileOptions::fromEnv(spyre::Env::fromMap({{"SENCORES", bad}}));
      ADD_FAILURE() << "SENCORES=" << bad << " accepted";
    } catch (const spyre::Unsupported &e) {
      EXPECT_EQ(std::string(e.what()), std::string("Unsupported: invalid SENCORES value ") + bad + " (expected an integer in 1..32)");
    }
  }
  const CompileOptions d, e = CompileOptions::fromEnv(spyre::Env::fromMap({}));
  EXPECT_EQ(e.lxPlanning, d.lxPlanning);
  EXPECT_EQ(e.padMatmulK, d.padMatmulK);
  EXPECT_EQ(e.matmulTransB, d.matmulTransB);
  EXPECT_EQ(e.splitReductions, d.splitReductions);
  const CompileOptions on = CompileOptions::fromEnv(spyre::Env::fromMap(
      {{"SPYRE_PAD_MATMUL_K", "1"}, {"SPYRE_MATMUL_TRANSB", "true"}, {"SPYRE_SPLIT_REDUCTIONS", "on"}}));
  EXPECT_TRUE(on.padMatmulK && on.matmulTransB && on.splitReductions);
  EXPECT_THROW(CompileOptions::fromEnv(spyre::Env::fromMap({{"SPYRE_PAD_MATMUL_K", "2"}})), spyre::Error);
}
