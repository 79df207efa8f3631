// Data ops (slice, expand) through frontend, backend and both engines: results must equal the
// input elements they copy, bit for bit.
#include "plan_runner.h"
#include "spyre/frontend/compiler.h"
#include "spyre/backend/backend.h"
#include "spyre/isa/dl16.h"
#include "spyre/jit/jit_engine.h"
#include <gtest/gtest.h>
#include <random>

using namespace spyre;
using namespace spyre::frontend;
using V = std::vector<int64_t>;

namespace {

using test::numel;

std::vector<float> iotaValues(int64_t n, HostType t) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) // distinct and exact in fp16 / DL16 for n < 512
    v[i] = t == HostType::F32 ? static_cast<float>(i) * 0.5f : static_cast<float>(i % 509) - 254.0f;
  return v;
}

/// Runs a one-node graph on both engines for every core count; returns the interpreter result
/// after checking the JIT gives the same bits.
std::vector<float> runBoth(const Graph &g, int cores, const std::vector<float> &x) {
  test::BothEngines r = test::runOnBothEngines(compileGraph(g, {cores, ""}), {x});
  EXPECT_EQ(r.interp[0], r.jit[0]) << "interpreter and JIT differ";
  return r.interp[0];
}

using test::ravel;
using test::unravel;

} // namespace

TEST(DataOps, SliceAnyDimAlignedAndUnaligned) {
  struct Case {
    V shape;
    int dim;
    int64_t start, end;
  };
  std::vector<Case> cases = {
      {{256}, 0, 64, 192},        {{255}, 0, 3, 200},         {{67}, 0, 1, 2},
      {{67, 256}, 0, 3, 67},      {{67, 256}, 1, 64, 256},    {{71, 255}, 1, 7, 71},
      {{129, 129}, 1, 1, 129},    {{64, 256}, 1, 100, 229},   {{3, 67, 129}, 1, 2, 66},
      {{3, 67, 129}, 2, 65, 129}, {{2, 3, 71, 256}, 0, 1, 2}, {{2, 3, 71, 256}, 3, 63, 255},
      {{2, 7, 4, 67}, 2, 1, 3},   {{130, 1000}, 1, 5, 995},   {{3, 9000}, 1, 5, 8999}, // several column groups
  };
  for (HostType t : {HostType::F16, HostType::F32}) {
    for (const auto &c : cases) {
      V outShape = c.shape;
      outShape[c.dim] = c.end - c.start;
      Graph g;
      int x = g.addInput("x", c.shape, t);
      g.outputs = {g.addNode("slice", {x}, "y", outShape, t,
                             {{"dim", Attr(c.dim)}, {"start", Attr(double(c.start))}, {"end", Attr(double(c.end))}})};
      std::vector<float> xv = iotaValues(numel(c.shape), t);
      for (int cores : {1, 2, 7, 32}) {
        auto y = runBoth(g, cores, xv);
        for (int64_t i = 0; i < numel(outShape); ++i) {
          auto co = unravel(i, outShape);
          co[c.dim] += c.start;
          ASSERT_EQ(y[i], xv[ravel(co, c.shape)]) << "rank " << c.shape.size() << " dim " << c.dim << " ["
                                                   << c.start << ", " << c.end << ") cores " << cores << " at " << i;
        }
      }
    }
  }
}

TEST(DataOps, ExpandMaterialises) {
  struct Case {
    V in, out;
  };
  std::vector<Case> cases = {
      {{1}, {129}}, {{67, 1}, {67, 255}}, {{1, 71}, {64, 71}}, {{3, 1, 129}, {3, 67, 129}},
      {{256}, {2, 7, 256}}, {{2, 1, 4, 1}, {2, 3, 4, 67}},
  };
  for (const auto &c : cases) {
    Graph g;
    int x = g.addInput("x", c.in, HostType::F16);
    g.outputs = {g.addNode("expand", {x}, "y", c.out, HostType::F16)};
    std::vector<float> xv = iotaValues(numel(c.in), HostType::F16);
    for (int cores : {1, 2, 7, 32}) {
      auto y = runBoth(g, cores, xv);
      for (int64_t i = 0; i < numel(c.out); ++i) {
        auto co = unravel(i, c.out);
        std::vector<int64_t> ci(c.in.size());
        for (size_t d = 0; d < c.in.size(); ++d) {
          int64_t od = co[d + c.out.size() - c.in.size()];
          ci[d] = c.in[d] == 1 ? 0 : od;
        }
        ASSERT_EQ(y[i], xv[ravel(ci, c.in)]) << "cores " << cores << " at " << i;
      }
    }
  }
}

TEST(DataOps, MalformedSliceSuperDsc) {
  Graph g;
  int x = g.addInput("x", {64, 256}, HostType::F16);
  g.outputs = {g.addNode("slice", {x}, "y", {64, 100}, HostType::F16,
                         {{"dim", Attr(1.0)}, {"start", Attr(3.0)}, {"end", Attr(103.0)}})};
  isa::JobPlan plan = compileGraph(g, {2, ""});
  const std::string &json = plan.launches[0].sdscJson;
  EXPECT_NE(json.find("\"offsets_\""), std::string::npos);
  auto expectError = [&](const std::string &field, isa::ojson value, const std::string &msg) {
    isa::ojson j = isa::ojson::parse(json);
    for (auto &node : j["0_slice"]["dscs_"][0]["slice"]["scheduleTree_"])
      if (node["nodeType_"] == "allocate" && node["ldsIdx_"] == 0)
        node[field] = value;
    try {
      backend::compileSuperDsc(isa::parseSuperDsc(j, "sdsc_0.json"));
      FAIL() << "expected: " << msg;
    } catch (const std::exception &e) {
      EXPECT_NE(std::string(e.what()).find(msg), std::string::npos) << e.what();
    }
  };
  // layoutDimOrder_ is [mb, out]: the view [200, 300) of out does not fit 256 elements.
  expectError("offsets_", {0, 200}, "sdsc_0.json: /0_slice/dscs_/0/slice/scheduleTree_/0/offsets_: the view from 200 "
                                    "(100 elements, step 1) of dim out does not fit its allocation of 256");
  expectError("maxDimSizes_", {-1}, "entries (one per layoutDimOrder_ dim) in maxDimSizes_ and offsets_");
}

TEST(DataOps, LaneShiftIntoAnOpIsUnsupported) {
  // A view starting inside a stick feeding arithmetic (not a copy): rejected by the backend.
  Graph g;
  int x = g.addInput("x", {4, 128}, HostType::F16);
  g.outputs = {g.addNode("slice", {x}, "y", {4, 64}, HostType::F16,
                         {{"dim", Attr(1.0)}, {"start", Attr(1.0)}, {"end", Attr(65.0)}})};
  isa::JobPlan plan = compileGraph(g, {1, ""});
  isa::SuperDsc s = plan.launches[0].sdsc;
  s.opFuncName = "neg";
  try {
    backend::compileSuperDsc(s);
    FAIL();
  } catch (const Unsupported &e) {
    EXPECT_NE(std::string(e.what()).find("a view whose stick dim starts inside a stick as an operand of neg"),
              std::string::npos)
        << e.what();
  }
}

TEST(DataOps, PermuteAnyDims) {
  struct Case {
    V shape;
    std::vector<double> perm;
  };
  std::vector<Case> cases = {
      {{67, 129}, {1, 0}},          {{64, 64}, {1, 0}},           {{3, 67, 129}, {1, 0, 2}},
      {{3, 67, 129}, {2, 1, 0}},    {{3, 67, 129}, {0, 2, 1}},    {{5, 71, 66}, {2, 0, 1}},
      {{2, 3, 71, 256}, {3, 1, 0, 2}}, {{2, 3, 67, 64}, {0, 2, 1, 3}}, {{2, 7, 4, 255}, {1, 3, 2, 0}},
      {{4, 3, 2, 67}, {3, 2, 1, 0}},
  };
  for (HostType t : {HostType::F16, HostType::F32}) {
    for (const auto &c : cases) {
      V outShape;
      for (double p : c.perm)
        outShape.push_back(c.shape[static_cast<size_t>(p)]);
      Graph g;
      int x = g.addInput("x", c.shape, t);
      g.outputs = {g.addNode("permute", {x}, "y", outShape, t, {{"dims", Attr(c.perm)}})};
      bool restick = c.perm.back() != static_cast<double>(c.shape.size() - 1);
      if (restick && t == HostType::F32) {
        EXPECT_THROW(compileGraph(g), Unsupported);
        continue;
      }
      std::vector<float> xv = iotaValues(numel(c.shape), t);
      for (int cores : {1, 2, 7, 32}) {
        auto y = runBoth(g, cores, xv);
        EXPECT_EQ(compileGraph(g, {cores, ""}).launches[0].sdsc.opFuncName, "ReStickifyOpHBM");
        for (int64_t i = 0; i < numel(outShape); ++i) {
          auto co = unravel(i, outShape);
          std::vector<int64_t> ci(c.shape.size());
          for (size_t k = 0; k < co.size(); ++k)
            ci[static_cast<size_t>(c.perm[k])] = co[k];
          ASSERT_EQ(y[i], xv[ravel(ci, c.shape)]) << "rank " << c.shape.size() << " cores " << cores << " at " << i;
        }
      }
    }
  }
}

TEST(DataOps, MalformedRestickify) {
  Graph g;
  int x = g.addInput("x", {64, 128}, HostType::F16);
  g.outputs = {g.addNode("permute", {x}, "y", {128, 64}, HostType::F16, {{"dims", Attr(std::vector<double>{1, 0})}})};
  isa::JobPlan plan = compileGraph(g, {2, ""});
  isa::SuperDsc s = plan.launches[0].sdsc;
  s.labeledDs[1].scale = {1, -1};
  try {
    backend::compileSuperDsc(s);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("every tensor of a restickify must have scale_ 1 on every dim"),
              std::string::npos)
        << e.what();
  }
  Graph h;
  int y = h.addInput("x", {4, 8}, HostType::F16);
  h.outputs = {h.addNode("permute", {y}, "z", {8, 4}, HostType::F16, {{"dims", Attr(std::vector<double>{0, 0})}})};
  EXPECT_THROW(compileGraph(h), Error);
}

TEST(DataOps, CatWritesEachOperandIntoItsPart) {
  struct Case {
    std::vector<V> ins;
    int dim;
  };
  std::vector<Case> cases = {
      {{{64}, {67}}, 0},
      {{{67, 129}, {4, 129}, {1, 129}}, 0},
      {{{67, 64}, {67, 128}, {67, 71}}, 1},
      {{{3, 5, 255}, {3, 2, 255}}, 1},
      {{{2, 3, 7, 67}, {2, 1, 7, 67}}, 1},
      {{{2, 3, 7, 64}, {2, 3, 7, 129}}, 3},
      // Along the stick at offsets inside a stick: lane-moving copies merging boundary sticks.
      {{{4, 67}, {4, 64}}, 1},
      {{{67, 5}, {67, 71}, {67, 1}, {67, 129}}, 1},
      {{{2, 3, 130, 100}, {2, 3, 130, 30}, {2, 3, 130, 3}}, 3},
      // Rows longer than one LX column group after an offset inside a stick.
      {{{2, 67}, {2, 9000}, {2, 1}}, 1},
      {{{3, 40}, {3, 9000}}, 1},
  };
  for (const auto &c : cases) {
    V outShape = c.ins[0];
    outShape[c.dim] = 0;
    for (const auto &s : c.ins)
      outShape[c.dim] += s[c.dim];
    Graph g;
    std::vector<int> xs;
    for (size_t i = 0; i < c.ins.size(); ++i)
      xs.push_back(g.addInput("x" + std::to_string(i), c.ins[i], HostType::F16));
    g.outputs = {g.addNode("cat", xs, "y", outShape, HostType::F16, {{"dim", Attr(c.dim)}})};
    std::vector<std::vector<float>> xv;
    for (size_t i = 0; i < c.ins.size(); ++i) {
      xv.push_back(iotaValues(numel(c.ins[i]), HostType::F16));
      for (auto &v : xv.back())
        v += static_cast<float>(i) * 0.25f; // tell operands apart (exact in fp16 for |v| < 256)
    }
    for (int cores : {1, 2, 7, 32}) {
      isa::JobPlan plan = compileGraph(g, {cores, ""});
      ASSERT_EQ(plan.launches.size(), c.ins.size());
      test::BothEngines run = test::runOnBothEngines(plan, xv);
      ASSERT_EQ(run.interp[0], run.jit[0]);
      for (int64_t i = 0; i < numel(outShape); ++i) {
        auto co = unravel(i, outShape);
        size_t k = 0;
        while (co[c.dim] >= c.ins[k][c.dim])
          co[c.dim] -= c.ins[k++][c.dim];
        ASSERT_EQ(run.interp[0][i], xv[k][ravel(co, c.ins[k])]) << "cat case dim " << c.dim << " cores " << cores << " at " << i;
      }
    }
  }
}

TEST(DataOps, CatAndSliceAlongTheStickOfF32AtUnalignedOffsets) {
  // fp32 sticks hold 32 elements; offsets that are not multiples of 32 move lanes through the
  // PE array as pairs of 16-bit words. Values with all 32 bits significant (no fp16 rounding).
  struct Case {
    std::vector<V> ins;
  };
  std::vector<Case> cases = {{{{4, 67}, {4, 64}}}, {{{67, 5}, {67, 71}, {67, 1}}}, {{{2, 30}, {2, 3000}}}};
  for (const auto &c : cases) {
    V outShape = c.ins[0];
    outShape[1] = 0;
    for (const auto &s : c.ins)
      outShape[1] += s[1];
    Graph g;
    std::vector<int> xs;
    for (size_t i = 0; i < c.ins.size(); ++i)
      xs.push_back(g.addInput("x" + std::to_string(i), c.ins[i], HostType::F32));
    int cat = g.addNode("cat", xs, "y", outShape, HostType::F32, {{"dim", Attr(1.0)}});
    // And a slice of the result starting inside a stick.
    V sl = outShape;
    sl[1] = outShape[1] - 10;
    g.outputs = {cat, g.addNode("slice", {cat}, "z", sl, HostType::F32,
                                {{"dim", Attr(1.0)}, {"start", Attr(7.0)}, {"end", Attr(double(outShape[1] - 3))}})};
    std::vector<std::vector<float>> xv;
    for (size_t i = 0; i < c.ins.size(); ++i) {
      xv.push_back({});
      for (int64_t e = 0; e < numel(c.ins[i]); ++e)
        xv.back().push_back(1.0f + static_cast<float>(e) * 1.0000001e-3f + static_cast<float>(i) * 0.1234567f);
    }
    for (int cores : {1, 2, 7}) {
      test::BothEngines run = test::runOnBothEngines(compileGraph(g, {cores, ""}), xv);
      ASSERT_EQ(run.interp[0], run.jit[0]);
      ASSERT_EQ(run.interp[1], run.jit[1]);
      for (int64_t i = 0; i < numel(outShape); ++i) {
        auto co = unravel(i, outShape);
        size_t k = 0;
        while (co[1] >= c.ins[k][1])
          co[1] -= c.ins[k++][1];
        ASSERT_EQ(run.interp[0][i], xv[k][ravel(co, c.ins[k])]) << "cat cores " << cores << " at " << i;
      }
      for (int64_t i = 0; i < numel(sl); ++i) {
        auto co = unravel(i, sl);
        co[1] += 7;
        ASSERT_EQ(run.interp[1][i], run.interp[0][ravel(co, outShape)]) << "slice cores " << cores << " at " << i;
      }
    }
  }
}

TEST(DataOps, SwapIsTheTwoDimTranspose) {
  Graph g;
  int x = g.addInput("x", {67, 129}, HostType::F16);
  g.outputs = {g.addNode("transpose", {x}, "y", {129, 67}, HostType::F16)};
  std::vector<float> xv = iotaValues(67 * 129, HostType::F16);
  auto expect = runBoth(g, 2, xv);
  isa::JobPlan plan = compileGraph(g, {2, ""});
  plan.launches[0].sdsc.opFuncName = "swap";
  jit::JitEngine jit;
  test::PlanRunner r(plan, jit);
  r.setInput(0, xv);
  r.run();
  EXPECT_EQ(r.output(0), expect);
  isa::SuperDsc s = plan.launches[0].sdsc;
  std::swap(s.labeledDs[0].dsType, s.labeledDs[1].dsType);
  try {
    backend::compileSuperDsc(s);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("swap input must be sticked on out and the output on mb"), std::string::npos)
        << e.what();
  }
}

TEST(DataOps, TransposeOfMoreRowsThanFitInLxGoesInRowChunks) {
  // 8200 and 7000 rows of a 64-column tile do not fit twice in LX: rows are staged in chunks.
  struct Case {
    V shape;
    std::vector<double> perm;
  };
  for (const auto &c : std::vector<Case>{{{8200, 67}, {1, 0}}, {{2, 7000, 65}, {0, 2, 1}}}) {
    V outShape;
    for (double p : c.perm)
      outShape.push_back(c.shape[static_cast<size_t>(p)]);
    Graph g;
    int x = g.addInput("x", c.shape, HostType::F16);
    g.outputs = {g.addNode("permute", {x}, "y", outShape, HostType::F16, {{"dims", Attr(c.perm)}})};
    std::vector<float> xv = iotaValues(numel(c.shape), HostType::F16);
    for (int cores : {1, 32}) {
      EXPECT_NE(backend::compileSuperDsc(compileGraph(g, {cores, ""}).launches[0].sdsc).comment.find("rows in chunks"),
                std::string::npos);
      auto y = runBoth(g, cores, xv);
      for (int64_t i = 0; i < numel(outShape); ++i) {
        auto co = unravel(i, outShape);
        std::vector<int64_t> ci(c.shape.size());
        for (size_t k = 0; k < co.size(); ++k)
          ci[static_cast<size_t>(c.perm[k])] = co[k];
        ASSERT_EQ(y[i], xv[ravel(ci, c.shape)]) << "cores " << cores << " at " << i;
      }
    }
  }
}

TEST(DataOps, SlicesWithAStep) {
  // A step on a row dim is a strided view of the input (steps_); on the stick dim the
  // decomposition transposes it to a row dim first (fp16 only: the transpose is a PE op).
  struct Case {
    V shape;
    int dim;
    int64_t start, end, step;
  };
  const std::vector<Case> cases = {
      {{67, 129}, 0, 1, 67, 2},     {{67, 129}, 0, 0, 67, 66},  {{5, 67, 130}, 1, 3, 60, 7},
      {{2, 3, 71, 64}, 2, 0, 71, 3}, {{67, 129}, 1, 1, 129, 2}, {{3, 5, 200}, 2, 5, 190, 4},
      {{300}, 0, 2, 299, 3},        {{2, 3, 4, 67}, 3, 0, 67, 64},
  };
  for (HostType t : {HostType::F16, HostType::F32}) {
    for (const auto &c : cases) {
      V outShape = c.shape;
      outShape[c.dim] = (c.end - c.start + c.step - 1) / c.step;
      Graph g;
      int x = g.addInput("x", c.shape, t);
      g.outputs = {g.addNode("slice", {x}, "y", outShape, t,
                             {{"dim", Attr(c.dim)}, {"start", Attr(double(c.start))}, {"end", Attr(double(c.end))},
                              {"step", Attr(double(c.step))}})};
      const bool stickDim = c.dim + 1 == static_cast<int>(c.shape.size());
      if (stickDim && t == HostType::F32) { // the transposes are fp16/bf16 only
        EXPECT_THROW(compileGraph(g), Unsupported);
        continue;
      }
      std::vector<float> xv = iotaValues(numel(c.shape), t);
      for (int cores : {1, 2, 7, 32}) {
        auto y = runBoth(g, cores, xv);
        for (int64_t i = 0; i < numel(outShape); ++i) {
          auto co = unravel(i, outShape);
          co[c.dim] = c.start + co[c.dim] * c.step;
          ASSERT_EQ(y[i], xv[ravel(co, c.shape)]) << "rank " << c.shape.size() << " dim " << c.dim << " step "
                                                   << c.step << " cores " << cores << " at " << i;
        }
      }
    }
  }
}
