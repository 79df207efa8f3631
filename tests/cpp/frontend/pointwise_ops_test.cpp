// Every pointwise graph op, with broadcasting and scalar operands, through frontend, backend and
// both engines, against a scalar reference written here (fp32 math, DL16 rounding).
#include "plan_runner.h"
#include "spyre/frontend/compiler.h"
#include "spyre/backend/backend.h"
#include "spyre/isa/dl16.h"
#include "spyre/isa/semantics.h"
#include "spyre/jit/jit_engine.h"
#include "spyre/sim/device_memory.h"
#include "spyre/sim/executable.h"
#include "spyre/sim/host_transfer.h"
#include <cmath>
#include <functional>
#include <gtest/gtest.h>
#include <random>

using namespace spyre;
using namespace spyre::frontend;
using V = std::vector<int64_t>;

namespace {

using test::numel;

struct HostTensorF {
  V shape;
  HostType type;
  std::vector<float> values; // exact values held (DL16 values for f16/bool inputs)
};

/// Runs a graph whose inputs are given as floats; returns the outputs as floats.
std::vector<std::vector<float>> run(const Graph &g, sim::Engine &engine, int cores, const std::vector<HostTensorF> &inputs) {
  isa::JobPlan plan = compileGraph(g, {cores, ""});
  test::PlanRunner r(plan, engine);
  for (size_t i = 0; i < inputs.size(); ++i)
    r.setInput(i, inputs[i].values);
  r.run();
  std::vector<std::vector<float>> outs;
  for (size_t i = 0; i < plan.outputs.size(); ++i)
    outs.push_back(r.output(i));
  return outs;
}

float rnd(HostType t, float x) { return t == HostType::F32 ? x : dl16::round(x); }

/// Value of `t` at the broadcast position of output index i.
float at(const HostTensorF &t, const V &outShape, int64_t i) {
  int64_t idx = 0, stride = 1;
  size_t r = outShape.size(), tr = t.shape.size();
  int64_t rem = i;
  std::vector<int64_t> coord(r);
  for (size_t d = r; d-- > 0;) {
    coord[d] = rem % outShape[d];
    rem /= outShape[d];
  }
  for (size_t d = tr; d-- > 0;) {
    int64_t c = t.shape[d] == 1 ? 0 : coord[d + r - tr];
    idx += c * stride;
    stride *= t.shape[d];
  }
  return t.values[idx];
}

HostTensorF randomTensor(V shape, HostType t, uint32_t seed, float scale = 2.0f, bool positive = false) {
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(0, scale);
  HostTensorF h{shape, t, {}};
  for (int64_t i = 0; i < numel(shape); ++i) {
    float x = nd(g);
    if (positive)
      x = std::fabs(x) + 0.01f;
    if (t == HostType::Bool)
      x = x > 0 ? 1.0f : 0.0f;
    // What the device holds: fp16 input -> DL16.
    h.values.push_back(t == HostType::F32 ? x : dl16::round(dl16::halfToFloat(dl16::floatToHalf(x))));
  }
  return h;
}

struct UnaryCase {
  const char *op;
  std::function<float(float)> f;
  bool positive;
  std::map<std::string, Attr> attrs;
};

} // namespace

TEST(PointwiseOps, UnaryOpsMatchScalarReference) {
  std::vector<UnaryCase> cases = {
      {"neg", [](float x) { return -x; }, false, {}},
      {"abs", [](float x) { return std::fabs(x); }, false, {}},
      {"relu", [](float x) { return x > 0 ? x : 0.0f; }, false, {}},
      {"floor", [](float x) { return std::floor(x); }, false, {}},
      {"sqrt", [](float x) { return std::sqrt(x); }, true, {}},
      {"rsqrt", [](float x) { return 1.0f / std::sqrt(x); }, true, {}},
      {"reciprocal", [](float x) { return 1.0f / x; }, true, {}},
      {"exp", [](float x) { return isa::sfpExp(x); }, false, {}},
      {"log", [](float x) { return std::log(x); }, true, {}},
      {"tanh", [](float x) { return isa::sfpTanh(x); }, false, {}},
      {"sigmoid", [](float x) { return 1.0f / (1.0f + isa::sfpExp(-x)); }, false, {}},
      {"silu", [](float x) { return x / (1.0f + isa::sfpExp(-x)); }, false, {}},
      {"gelu", [](float x) { return 0.5f * x * (1.0f + isa::sfpErf(x * 0.7071067811865476f)); }, false, {}},
      {"gelu", [](float x) { return 0.5f * x * (1.0f + isa::sfpTanh(0.7978845608028654f * (x + 0.044715f * x * x * x))); },
       false, {{"approximate", Attr(1.0)}}},
      {"softplus", [](float x) { return x * 2.0f > 5.0f ? x : std::log1p(std::exp(x * 2.0f)) / 2.0f; }, false,
       {{"beta", Attr(2.0)}, {"threshold", Attr(5.0)}}},
      {"clamp", [](float x) { return std::min(std::max(x, -0.5f), 1.25f); }, false,
       {{"min", Attr(-0.5)}, {"max", Attr(1.25)}}},
      {"clone", [](float x) { return x; }, false, {}},
  };
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  for (HostType t : {HostType::F16, HostType::F32}) {
    for (const auto &c : cases) {
      V shape{3, 67};
      Graph g;
      int a = g.addInput("a", shape, t);
      g.outputs = {g.addNode(c.op, {a}, "y", shape, t, c.attrs)};
      auto x = randomTensor(shape, t, 11, 2.0f, c.positive);
      auto ri = run(g, *interp, 2, {x}), rj = run(g, jit, 2, {x});
      ASSERT_EQ(ri, rj) << c.op;
      for (int64_t i = 0; i < numel(shape); ++i) {
        float expect = rnd(t, c.f(x.values[i]));
        if (t == HostType::F16)
          expect = dl16::halfToFloat(dl16::floatToHalf(expect));
        ASSERT_EQ(ri[0][i], expect) << c.op << " " << dtypeShortName(t) << " at " << i << " x=" << x.values[i];
      }
    }
  }
}

TEST(PointwiseOps, BinaryWithBroadcastAndScalars) {
  struct Bin {
    const char *op;
    std::function<float(float, float)> f;
    bool compare;
  };
  std::vector<Bin> ops = {
      {"add", [](float a, float b) { return a + b; }, false},
      {"sub", [](float a, float b) { return a - b; }, false},
      {"mul", [](float a, float b) { return a * b; }, false},
      {"div", [](float a, float b) { return a / b; }, false},
      {"maximum", [](float a, float b) { return a > b ? a : b; }, false},
      {"minimum", [](float a, float b) { return a < b ? a : b; }, false},
      {"eq", [](float a, float b) { return a == b ? 1.0f : 0.0f; }, true},
      {"ne", [](float a, float b) { return a != b ? 1.0f : 0.0f; }, true},
      {"lt", [](float a, float b) { return a < b ? 1.0f : 0.0f; }, true},
      {"le", [](float a, float b) { return a <= b ? 1.0f : 0.0f; }, true},
      {"gt", [](float a, float b) { return a > b ? 1.0f : 0.0f; }, true},
      {"ge", [](float a, float b) { return a >= b ? 1.0f : 0.0f; }, true},
  };
  // (output shape, second operand shape); {} second shape = scalar operand.
  std::vector<std::pair<V, V>> shapes = {{{5, 130}, {5, 130}}, {{5, 130}, {130}}, {{5, 130}, {5, 1}},
                                         {{2, 3, 71}, {3, 1}},  {{2, 3, 71}, {2, 1, 71}}, {{4, 64}, {}},
                                         {{2, 3, 4, 67}, {3, 1, 67}}};
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  for (const auto &op : ops) {
    for (const auto &[outShape, bShape] : shapes) {
      for (HostType t : {HostType::F16}) {
        Graph g;
        int a = g.addInput("a", outShape, t);
        std::vector<int> ins{a};
        std::map<std::string, Attr> attrs;
        HostTensorF bt;
        if (bShape.empty()) {
          attrs["scalar"] = Attr(0.75);
        } else {
          ins.push_back(g.addInput("b", bShape, t));
          bt = randomTensor(bShape, t, 5, 2.0f, std::string(op.op) == "div");
        }
        HostType outT = op.compare ? HostType::Bool : t;
        g.outputs = {g.addNode(op.op, ins, "y", outShape, outT, attrs)};
        auto at0 = randomTensor(outShape, t, 4);
        // Make some elements equal so comparisons see ties.
        if (!bShape.empty())
          for (int64_t i = 0; i < numel(outShape); i += 7)
            at0.values[i] = at(bt, outShape, i);
        std::vector<HostTensorF> inputs{at0};
        if (!bShape.empty())
          inputs.push_back(bt);
        for (int cores : {1, 7, 32}) {
          auto ri = run(g, *interp, cores, inputs), rj = run(g, jit, cores, inputs);
          ASSERT_EQ(ri, rj) << op.op;
          for (int64_t i = 0; i < numel(outShape); ++i) {
            float bv = bShape.empty() ? dl16::round(0.75f) : at(bt, outShape, i);
            float expect = dl16::halfToFloat(dl16::floatToHalf(dl16::round(op.f(at0.values[i], bv))));
            ASSERT_EQ(ri[0][i], expect) << op.op << " out " << outShape.size() << "-d, element " << i;
          }
        }
      }
    }
  }
}

TEST(PointwiseOps, WhereWithTensorAndScalarBranches) {
  V shape{6, 100};
  auto interp = sim::makeInterpreter();
  for (int variant = 0; variant < 3; ++variant) {
    Graph g;
    int c = g.addInput("c", shape, HostType::Bool);
    int a = g.addInput("a", shape, HostType::F16);
    std::map<std::string, Attr> attrs;
    std::vector<int> ins{c, a};
    int b = -1;
    if (variant == 0)
      b = g.addInput("b", {100}, HostType::F16), ins.push_back(b);
    else
      attrs["b"] = Attr(-2.5);
    if (variant == 2) {
      ins = {c};
      attrs["a"] = Attr(3.0);
    }
    g.outputs = {g.addNode("where", ins, "y", shape, HostType::F16, attrs)};
    auto ct = randomTensor(shape, HostType::Bool, 1), at_ = randomTensor(shape, HostType::F16, 2),
         bt = randomTensor({100}, HostType::F16, 3);
    std::vector<HostTensorF> inputs{ct};
    if (variant != 2)
      inputs.push_back(at_);
    if (variant == 0)
      inputs.push_back(bt);
    auto r = run(g, *interp, 4, inputs);
    for (int64_t i = 0; i < numel(shape); ++i) {
      float av = variant == 2 ? 3.0f : at_.values[i];
      float bv = variant == 0 ? at(bt, shape, i) : -2.5f;
      ASSERT_EQ(r[0][i], ct.values[i] != 0 ? av : bv) << variant << " " << i;
    }
  }
}

TEST(PointwiseOps, ToDtypeBothWays) {
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  // {512, 1000} and {4, 256, 130}: several double-buffered blocks per core on few cores.
  for (V shape : {V{5, 100}, V{3, 2, 20}, V{64}, V{7, 129}, V{2, 3, 4, 33}, V{512, 1000}, V{4, 256, 130}}) {
    // f16 -> f32 -> exp (f32) -> f16
    Graph g;
    int a = g.addInput("a", shape, HostType::F16);
    int w = g.addNode("to_dtype", {a}, "w", shape, HostType::F32);
    int e = g.addNode("mul", {w, w}, "e", shape, HostType::F32);
    g.outputs = {g.addNode("to_dtype", {e}, "y", shape, HostType::F16)};
    auto x = randomTensor(shape, HostType::F16, 21);
    for (int cores : {1, 7, 32}) {
      if (shape == V{512, 1000} && cores == 1) { // 3-d: tiny rows per block, the timing model keeps one
        isa::JobPlan plan = compileGraph(g, {cores, ""});
        for (const auto &l : plan.launches)
          if (l.sdsc.opFuncName == "dl16tofp32" || l.sdsc.opFuncName == "fp32todl16")
            EXPECT_NE(backend::compileSuperDsc(l.sdsc).comment.find("double-buffered"), std::string::npos)
                << backend::compileSuperDsc(l.sdsc).comment;
      }
      auto ri = run(g, *interp, cores, {x}), rj = run(g, jit, cores, {x});
      ASSERT_EQ(ri, rj);
      for (int64_t i = 0; i < numel(shape); ++i)
        ASSERT_EQ(ri[0][i], dl16::halfToFloat(dl16::floatToHalf(dl16::round(x.values[i] * x.values[i]))))
            << shape.size() << "-d cores " << cores << " at " << i;
    }
  }
}

TEST(PointwiseOps, DoubleBufferedStagingMatchesReference) {
  // Slices larger than half of LX: every block-varying operand is double-buffered (block i+1
  // fetched while block i is computed, block i written back while block i+1 is computed);
  // broadcast operands are staged once per sweep. Both engines, bit-exact with the reference.
  struct Case {
    const char *op;
    V a, b; // b empty: unary
    HostType t;
    std::vector<int> cores;
  };
  std::vector<Case> cases = {
      {"add", {256, 2048}, {2048}, HostType::F16, {1, 3}},
      {"mul", {4, 130, 1000}, {4, 130, 1}, HostType::F32, {2, 5}},
      {"exp", {3, 64, 2000}, {}, HostType::F16, {1, 2}},
      {"sub", {520, 1030}, {520, 1030}, HostType::F16, {1}},
  };
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  for (const auto &c : cases) {
    Graph g;
    std::vector<int> ins{g.addInput("a", c.a, c.t)};
    if (!c.b.empty())
      ins.push_back(g.addInput("b", c.b, c.t));
    g.outputs = {g.addNode(c.op, ins, "y", c.a, c.t)};
    std::vector<HostTensorF> inputs{randomTensor(c.a, c.t, 21)};
    if (!c.b.empty())
      inputs.push_back(randomTensor(c.b, c.t, 22));
    for (int cores : c.cores) {
      // The kernel is pipelined (else this test would not test it).
      isa::JobPlan plan = compileGraph(g, {cores, ""});
      ASSERT_EQ(plan.launches.size(), 1u);
      isa::Kernel k = backend::compileSuperDsc(plan.launches[0].sdsc);
      EXPECT_NE(k.comment.find("double-buffered"), std::string::npos) << c.op << " cores=" << cores << ": " << k.comment;
      auto ri = run(g, *interp, cores, inputs), rj = run(g, jit, cores, inputs);
      ASSERT_EQ(ri, rj) << c.op << " cores=" << cores;
      for (int64_t i = 0; i < numel(c.a); ++i) {
        float x = inputs[0].values[i], y = c.b.empty() ? 0.0f : at(inputs[1], c.a, i);
        std::string op = c.op;
        float r = op == "add" ? x + y : op == "mul" ? x * y : op == "sub" ? x - y : isa::sfpExp(x);
        float expect = rnd(c.t, r);
        if (c.t == HostType::F16)
          expect = dl16::halfToFloat(dl16::floatToHalf(expect));
        ASSERT_EQ(rj[0][i], expect) << c.op << " cores=" << cores << " element " << i;
      }
    }
  }
}
