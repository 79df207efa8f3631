// Layer norm as exx2 -> layernormscale -> layernormnorm through frontend, backend and both
// engines, against a double-precision reference of the device-rounded inputs.
#include "plan_runner.h"
#include "spyre/frontend/compiler.h"
#include "spyre/isa/dl16.h"
#include "spyre/backend/backend.h"
#include "spyre/isa/superdsc.h"
#include "spyre/jit/jit_engine.h"
#include <cmath>
#include <gtest/gtest.h>
#include <random>

using namespace spyre;
using namespace spyre::frontend;
using V = std::vector<int64_t>;

namespace {

using test::numel;

/// y = layer_norm(x) over the last dim; outputs y, the exx2 statistic and rstd.
Graph layerNormGraph(const V &shape, HostType t, bool weight, bool bias, double eps) {
  Graph g;
  int x = g.addInput("x", shape, t);
  std::vector<int> params;
  if (weight)
    params.push_back(g.addInput("w", {shape.back()}, t));
  if (bias)
    params.push_back(g.addInput("b", {shape.back()}, t));
  V s2 = shape, s1 = shape;
  s2.back() = 2;
  s1.back() = 1;
  int st = g.addNode("exx2", {x}, "stat", s2, HostType::F32);
  int r = g.addNode("layernormscale", {st}, "rstd", s1, HostType::F32, {{"eps", Attr(eps)}});
  std::vector<int> ins{x, st, r};
  ins.insert(ins.end(), params.begin(), params.end());
  std::map<std::string, Attr> attrs;
  if (!weight)
    attrs["weight"] = Attr(0.0);
  if (!bias)
    attrs["bias"] = Attr(0.0);
  int y = g.addNode("layernormnorm", ins, "y", shape, t, attrs);
  g.outputs = {y, st, r};
  return g;
}

std::vector<float> randomValues(int64_t n, HostType t, std::mt19937 &gen, float mean, float sd) {
  std::normal_distribution<float> nd(mean, sd);
  std::vector<float> v(n);
  for (auto &x : v) {
    x = nd(gen);
    if (t != HostType::F32)
      x = dl16::round(dl16::halfToFloat(dl16::floatToHalf(x))); // what the card holds
  }
  return v;
}

} // namespace

TEST(LayerNorm, ShapesCoresAndAffineVariants) {
  struct Case {
    V shape;
    bool w, b;
  };
  std::vector<Case> cases = {
      {{256}, true, true},          {{67}, true, false},          {{64, 64}, true, true},
      {{67, 256}, true, true},      {{71, 129}, false, true},     {{64, 255}, true, true},
      {{7, 5, 67}, false, false},   {{3, 67, 256}, true, true},   {{2, 3, 4, 71}, true, true},
      {{2, 2, 7, 129}, true, false}, {{129, 1024}, true, true},
      {{131, 4096}, true, true}, // prime rows of 8 KiB: exx2 blocks rows with a shorter last block
  };
  std::mt19937 gen(11);
  for (HostType t : {HostType::F16, HostType::F32}) {
    for (const auto &c : cases) {
      const int64_t C = c.shape.back(), rows = numel(c.shape) / C;
      const double eps = 1e-5;
      Graph g = layerNormGraph(c.shape, t, c.w, c.b, eps);
      // A non-zero mean checks that the variance is not lost to cancellation.
      std::vector<float> xv = randomValues(numel(c.shape), t, gen, 3.0f, 2.0f);
      std::vector<float> wv = randomValues(C, t, gen, 1.0f, 0.5f), bv = randomValues(C, t, gen, 0.0f, 1.0f);
      for (int cores : {1, 2, 7, 32}) {
        std::vector<std::vector<float>> ins{xv};
        if (c.w)
          ins.push_back(wv);
        if (c.b)
          ins.push_back(bv);
        test::BothEngines run = test::runOnBothEngines(compileGraph(g, {cores, ""}), ins);
        ASSERT_EQ(run.interp, run.jit) << "interpreter and JIT differ";
        ASSERT_EQ(run.interp.size(), 3u);
        const auto &y = run.interp[0], &st = run.interp[1], &rs = run.interp[2];
        for (int64_t row = 0; row < rows; ++row) {
          double s = 0, s2 = 0;
          for (int64_t j = 0; j < C; ++j) {
            double v = xv[row * C + j];
            s += v;
            s2 += v * v;
          }
          double mean = s / C, ex2 = s2 / C, rstd = 1 / std::sqrt(std::max(ex2 - mean * mean, 0.0) + eps);
          std::string at = "shape rank " + std::to_string(c.shape.size()) + " C=" + std::to_string(C) + " cores " +
                           std::to_string(cores) + " row " + std::to_string(row);
          ASSERT_NEAR(st[row * 2], mean, 1e-5 * (1 + std::fabs(mean))) << at;
          ASSERT_NEAR(st[row * 2 + 1], ex2, 1e-5 * (1 + ex2)) << at;
          ASSERT_NEAR(rs[row], rstd, 1e-3 * rstd) << at;
          for (int64_t j = 0; j < C; ++j) {
            double expect = (xv[row * C + j] - mean) * rstd * (c.w ? wv[j] : 1.0) + (c.b ? bv[j] : 0.0);
            double tol = t == HostType::F32 ? 1e-4 * (1 + std::fabs(expect)) : 4e-3 * (1 + std::fabs(expect));
            ASSERT_NEAR(y[row * C + j], expect, tol) << at << " col " << j;
          }
        }
      }
    }
  }
}

TEST(LayerNorm, SuperDscShape) {
  Graph g = layerNormGraph({64, 256}, HostType::F16, true, true, 1e-5);
  isa::JobPlan plan = compileGraph(g, {32, ""});
  ASSERT_EQ(plan.launches.size(), 3u);
  const auto &ex = plan.launches[0].sdsc, &sc = plan.launches[1].sdsc, &nm = plan.launches[2].sdsc;
  EXPECT_EQ(ex.opFuncName, "exx2");
  EXPECT_EQ(ex.numWkSlicesPerDim, (V{32, 1})); // rows only; the normalised dim stays whole
  EXPECT_EQ(ex.tensor(ex.outputs[0]).scale, (std::vector<int>{1, -2}));
  EXPECT_EQ(ex.tensor(ex.outputs[0]).dataFormat, DataFormat::IEEE_FP32);
  EXPECT_EQ(sc.opFuncName, "layernormscale");
  EXPECT_EQ(sc.constants.at("eps"), 1e-5);
  EXPECT_EQ(nm.opFuncName, "layernormnorm");
  EXPECT_EQ(nm.inputs.size(), 5u);
}

TEST(LayerNorm, MalformedSuperDscMessages) {
  Graph g = layerNormGraph({64, 128}, HostType::F16, false, false, 1e-5);
  isa::JobPlan plan = compileGraph(g, {2, ""});
  auto expectError = [](isa::SuperDsc s, const std::string &msg) {
    try {
      backend::compileSuperDsc(s);
      FAIL() << "expected an error containing: " << msg;
    } catch (const std::exception &e) {
      EXPECT_NE(std::string(e.what()).find(msg), std::string::npos) << e.what();
    }
  };
  {
    isa::SuperDsc s = plan.launches[0].sdsc; // exx2 writing DL16
    s.labeledDs[1].dataFormat = DataFormat::SEN169_FP16;
    s.primaryDsInfo["OUTPUT"].stickSize = {64};
    expectError(s, "the exx2 output must be IEEE_FP32");
  }
  {
    isa::SuperDsc s = plan.launches[0].sdsc; // exx2 reducing rows too
    s.labeledDs[1].scale = {-1, -2};
    s.numWkSlicesPerDim = {1, 1};
    s.numCoresUsed = 1;
    s.coreIdToWkSlice = {{0, 0}};
    for (auto &t : s.labeledDs)
      t.startAddress.resize(1);
    expectError(s, "exx2 reduces exactly the stick dim out");
  }
  {
    // exx2 with an uneven split of its 64 rows over 3 cores (22, 22, 20): core 1 starts 22 rows
    // (2816 bytes) in, not at the even split's 32.
    isa::SuperDsc s = plan.launches[0].sdsc;
    s.numWkSlicesPerDim = {3, 1};
    s.numCoresUsed = 3;
    s.coreIdToWkSlice = {{0, 0}, {1, 0}, {2, 0}};
    for (auto &t : s.labeledDs)
      t.startAddress.resize(3, t.startAddress[0]);
    expectError(s, "start address of Tensor0 on core 1 is 4096, but its work slice starts at 2816");
    // 30 slices of ceil(64 / 30) = 3 rows would leave the last one empty.
    s.numWkSlicesPerDim = {30, 1};
    s.numCoresUsed = 30;
    s.coreIdToWkSlice.clear();
    for (int64_t c = 0; c < 30; ++c)
      s.coreIdToWkSlice.push_back({c, 0});
    for (auto &t : s.labeledDs)
      t.startAddress.resize(30, t.startAddress[0]);
    expectError(s, "numWkSlicesPerDim_.mb = 30 leaves slice 29 of the device extent 64 of N_.mb = 64 empty (an "
                   "uneven split gives every slice but the last ceil(64 / 30) = 3)");
  }
  {
    isa::SuperDsc s = plan.launches[1].sdsc; // layernormscale without eps
    s.constants.clear();
    expectError(s, "constantInfo_ has no 'eps' constant");
  }
  {
    isa::SuperDsc s = plan.launches[1].sdsc; // layernormscale with a dense output
    s.labeledDs[1].scale = {1, 1};
    expectError(s, "the output of layernormscale must have scale_ -2 on out");
  }
  {
    isa::SuperDsc s = plan.launches[2].sdsc; // layernormnorm with a dense statistic
    s.labeledDs[1].scale = {1, 1};
    expectError(s, "must be IEEE_FP32 with scale_ -2 on out");
  }
}

TEST(LayerNorm, FrontendRejectsBadOperands) {
  Graph g;
  int x = g.addInput("x", {4, 64}, HostType::F16);
  g.outputs = {g.addNode("exx2", {x}, "s", {4, 1}, HostType::F32)};
  EXPECT_THROW(compileGraph(g), Error);
  Graph h;
  int y = h.addInput("x", {4, 64}, HostType::F16);
  int w = h.addInput("w", {4, 64}, HostType::F16);
  int st = h.addNode("exx2", {y}, "s", {4, 2}, HostType::F32);
  int r = h.addNode("layernormscale", {st}, "r", {4, 1}, HostType::F32, {{"eps", Attr(1e-5)}});
  h.outputs = {h.addNode("layernormnorm", {y, st, r, w}, "o", {4, 64}, HostType::F16, {{"bias", Attr(0.0)}})};
  try {
    compileGraph(h);
    FAIL();
  } catch (const Unsupported &e) {
    EXPECT_NE(std::string(e.what()).find("Unsupported: layernormnorm weight/bias %w other than a [64] f16 tensor"),
              std::string::npos)
        << e.what();
  }
}

TEST(LayerNorm, Exx2WithTheStickDimSplitOverTheRing) {
  // A torch-spyre SuperDSC may split exx2's reduced stick dim (pass 3 splits one reduction dim):
  // partial statistics travel over the ring. Our frontend keeps the row whole (the op is
  // DMA-bound, so a split does not pay in the timing model), so the split is written by hand:
  // x [67, 255] (4 stick tiles of 67 rows) over 4 cores, stick fastest.
  const V shape{67, 255};
  Graph g;
  int x = g.addInput("x", shape, HostType::F16);
  g.outputs = {g.addNode("exx2", {x}, "s", {67, 2}, HostType::F32)};
  std::mt19937 gen(3);
  std::vector<float> xv = randomValues(numel(shape), HostType::F16, gen, 3.0f, 2.0f);
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  isa::JobPlan whole = compileGraph(g, {1, ""});
  test::PlanRunner ref(whole, *interp);
  ref.setInput(0, xv);
  ref.run();
  const std::vector<float> expect = ref.output(0);
  for (int ks : {2, 4}) {
    isa::JobPlan plan = compileGraph(g, {1, ""});
    isa::SuperDsc &s = plan.launches[0].sdsc;
    s.numWkSlicesPerDim = {1, ks};
    s.numCoresUsed = ks;
    s.coreIdToWkSlice.clear();
    for (int c = 0; c < ks; ++c)
      s.coreIdToWkSlice.push_back({0, c});
    const int64_t tilesPerCore = 4 / ks, tileBytes = 67 * 128;
    for (auto &t : s.labeledDs) {
      uint64_t base = t.startAddress[0];
      t.startAddress.clear();
      for (int c = 0; c < ks; ++c)
        t.startAddress.push_back(base + (t.dataFormat == DataFormat::SEN169_FP16 ? c * tilesPerCore * tileBytes : 0));
    }
    EXPECT_NE(backend::compileSuperDsc(s).comment.find("stick split"), std::string::npos);
    for (sim::Engine *engine : {interp.get(), static_cast<sim::Engine *>(&jit)}) {
      test::PlanRunner r(plan, *engine);
      r.setInput(0, xv);
      r.run();
      auto got = r.output(0);
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], expect[i], 1e-5 * (1 + std::fabs(expect[i]))) << "ks " << ks << " at " << i;
    }
    // The chain partners must be neighbours: any other core order is rejected.
    isa::SuperDsc bad = s;
    std::swap(bad.coreIdToWkSlice[0], bad.coreIdToWkSlice[1]);
    try {
      backend::compileSuperDsc(bad);
      FAIL();
    } catch (const Unsupported &e) {
      EXPECT_NE(std::string(e.what()).find("not in stick-fast order"), std::string::npos) << e.what();
    }
  }
}
