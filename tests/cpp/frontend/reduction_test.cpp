// Reductions through frontend, backend and both engines, against references computed here.
#include "plan_runner.h"
#include "spyre/frontend/compiler.h"
#include "spyre/backend/backend.h"
#include "spyre/isa/dl16.h"
#include "spyre/isa/listing.h"
#include "spyre/jit/jit_engine.h"
#include "spyre/sim/device_memory.h"
#include "spyre/sim/executable.h"
#include "spyre/sim/host_transfer.h"
#include <cmath>
#include <gtest/gtest.h>
#include <random>

using namespace spyre;
using namespace spyre::frontend;
using V = std::vector<int64_t>;

namespace {

using test::numel;

std::vector<float> runOne(const Graph &g, sim::Engine &engine, int cores, const std::vector<float> &x, HostType) {
  isa::JobPlan plan = compileGraph(g, {cores, ""});
  test::PlanRunner r(plan, engine);
  r.setInput(0, x);
  r.run();
  return r.output(0);
}

struct Case {
  const char *op;
  V shape;
  std::vector<double> dims;
  bool keepdim;
};

// Reductions whose sweep is double-buffered on 1 core (a row count with a shorter last block,
// a reduction over the non-stick dim, a 3-d mean).
const Case kPipelinedCases[] = {{"sum", {523, 1024}, {-1}, true},
                                {"amax", {256, 1000}, {0}, true},
                                {"mean", {4, 300, 700}, {2}, false}};

} // namespace

TEST(Reductions, DoubleBufferedSweeps) {
  for (const Case &c : kPipelinedCases) {
    size_t r = c.shape.size();
    V outShape;
    for (size_t d = 0; d < r; ++d) {
      bool red = false;
      for (double x : c.dims)
        red |= (x < 0 ? x + r : x) == d;
      if (!red || c.keepdim)
        outShape.push_back(red ? 1 : c.shape[d]);
    }
    Graph g;
    int x = g.addInput("x", c.shape, HostType::F16);
    g.outputs = {g.addNode(c.op, {x}, "y", outShape, HostType::F16,
                           {{"keepdim", Attr(c.keepdim ? 1.0 : 0.0)}, {"dims", Attr(c.dims)}})};
    isa::JobPlan plan = compileGraph(g, {1, ""});
    ASSERT_EQ(plan.launches.size(), 1u);
    isa::Kernel k = backend::compileSuperDsc(plan.launches[0].sdsc);
    EXPECT_NE(k.comment.find("double-buffered"), std::string::npos) << c.op << ": " << k.comment;
  }
  // Numerics: AllOpsShapesAndDims runs these cases on both engines against a reference.
}

TEST(Reductions, AllOpsShapesAndDims) {
  std::vector<Case> cases;
  for (const char *op : {"sum", "mean", "amax", "amin"}) {
    cases.push_back({op, {67, 256}, {1}, true});
    cases.push_back({op, {67, 255}, {-1}, true});
    cases.push_back({op, {67, 129}, {1}, false});
    cases.push_back({op, {64, 71}, {0}, true});
    cases.push_back({op, {64, 71}, {0}, false});
    cases.push_back({op, {3, 5, 130}, {2}, true});
    cases.push_back({op, {3, 5, 130}, {0, 1}, true});
    cases.push_back({op, {3, 5, 130}, {1, 2}, false});
    cases.push_back({op, {2, 3, 4, 67}, {1, 3}, true});
    cases.push_back({op, {100}, {}, false});
  }
  // Rows too long for one LX block per core: the block keeps whole rows and chunks them.
  cases.push_back({"sum", {129, 8192}, {-1}, true});
  cases.push_back({"amax", {129, 8192}, {1}, false});
  // Double-buffered sweeps (on few cores): whole rows per block, several blocks per core.
  for (const Case &c : kPipelinedCases)
    cases.push_back(c);
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  std::mt19937 gen(5);
  for (HostType t : {HostType::F16, HostType::F32}) {
    for (const auto &c : cases) {
      size_t r = c.shape.size();
      std::vector<bool> red(r, c.dims.empty());
      for (double d : c.dims)
        red[d < 0 ? d + r : d] = true;
      V outShape;
      for (size_t d = 0; d < r; ++d)
        if (!red[d] || c.keepdim)
          outShape.push_back(red[d] ? 1 : c.shape[d]);
      Graph g;
      int x = g.addInput("x", c.shape, t);
      std::map<std::string, Attr> attrs{{"keepdim", Attr(c.keepdim ? 1.0 : 0.0)}};
      if (!c.dims.empty())
        attrs["dims"] = Attr(c.dims);
      g.outputs = {g.addNode(c.op, {x}, "y", outShape, t, attrs)};
      std::vector<float> xv(numel(c.shape));
      std::normal_distribution<float> nd(0, 1);
      for (auto &v : xv) {
        v = nd(gen);
        v = t == HostType::F16 ? dl16::round(dl16::halfToFloat(dl16::floatToHalf(v))) : v;
      }
      for (int cores : {1, 7, 32}) {
        auto ri = runOne(g, *interp, cores, xv, t), rj = runOne(g, jit, cores, xv, t);
        ASSERT_EQ(ri, rj) << c.op;
        // Reference in double over the reduced index set of each output element.
        V strides = contiguousStrides(c.shape);
        std::vector<double> acc(numel(outShape), std::string(c.op) == "amax" ? -INFINITY
                                                 : std::string(c.op) == "amin" ? INFINITY : 0.0);
        for (int64_t i = 0; i < numel(c.shape); ++i) {
          int64_t rem = i, o = 0, ostride = 1;
          std::vector<int64_t> coord(r);
          for (size_t d = r; d-- > 0;) {
            coord[d] = rem % c.shape[d];
            rem /= c.shape[d];
          }
          for (size_t d = r; d-- > 0;) {
            if (red[d])
              continue;
            o += coord[d] * ostride;
            ostride *= c.shape[d];
          }
          double v = xv[i];
          if (std::string(c.op) == "amax")
            acc[o] = std::max(acc[o], v);
          else if (std::string(c.op) == "amin")
            acc[o] = std::min(acc[o], v);
          else
            acc[o] += v;
        }
        int64_t count = 1;
        for (size_t d = 0; d < r; ++d)
          if (red[d])
            count *= c.shape[d];
        for (size_t o = 0; o < acc.size(); ++o) {
          double expect = std::string(c.op) == "mean" ? acc[o] / count : acc[o];
          double tol = std::string(c.op).rfind("am", 0) == 0 ? 0.0 : (t == HostType::F16 ? 0.01 : 1e-4) * (1 + std::fabs(expect)) + 1e-5 * count;
          ASSERT_NEAR(ri[o], expect, tol) << c.op << " shape " << c.shape.size() << "-d dims " << c.dims.size()
                                          << " keepdim " << c.keepdim << " cores " << cores << " out " << o;
        }
      }
    }
  }
}

TEST(Reductions, SoftmaxFromPrimitives) {
  // softmax(x, -1) = exp(x - amax) / sum(exp(x - amax)), keepdim reductions feeding
  // broadcasting pointwise ops (stick splat).
  V shape{67, 129};
  Graph g;
  int x = g.addInput("x", shape, HostType::F16);
  std::map<std::string, Attr> red{{"dims", Attr(std::vector<double>{-1})}, {"keepdim", Attr(1.0)}};
  int m = g.addNode("amax", {x}, "m", {67, 1}, HostType::F16, red);
  int d = g.addNode("sub", {x, m}, "d", shape, HostType::F16);
  int e = g.addNode("exp", {d}, "e", shape, HostType::F16);
  int s = g.addNode("sum", {e}, "s", {67, 1}, HostType::F16, red);
  g.outputs = {g.addNode("div", {e, s}, "y", shape, HostType::F16)};
  std::vector<float> xv(67 * 129);
  std::mt19937 gen(9);
  std::normal_distribution<float> nd(0, 3);
  for (auto &v : xv)
    v = dl16::round(dl16::halfToFloat(dl16::floatToHalf(nd(gen))));
  jit::JitEngine jit;
  auto y = runOne(g, jit, 32, xv, HostType::F16);
  for (int i = 0; i < 67; ++i) {
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < 129; ++j)
      mx = std::max(mx, static_cast<double>(xv[i * 129 + j]));
    for (int j = 0; j < 129; ++j)
      sum += std::exp(xv[i * 129 + j] - mx);
    for (int j = 0; j < 129; ++j)
      ASSERT_NEAR(y[i * 129 + j], std::exp(xv[i * 129 + j] - mx) / sum, 0.01) << i << "," << j;
  }
}

namespace {

/// op over the dims `red` of x (row-major `shape`), in double: the kept dims in row-major order.
std::vector<double> reduceRef(const std::string &op, const std::vector<float> &x, const V &shape,
                              const std::vector<bool> &red) {
  const size_t r = shape.size();
  int64_t outN = 1, count = 1;
  for (size_t d = 0; d < r; ++d)
    (red[d] ? count : outN) *= shape[d];
  std::vector<double> acc(outN, op == "amax" ? -INFINITY : op == "amin" ? INFINITY : 0.0);
  for (int64_t i = 0; i < numel(shape); ++i) {
    int64_t rem = i, o = 0, ostride = 1;
    for (size_t d = r; d-- > 0;) {
      int64_t c = rem % shape[d];
      rem /= shape[d];
      if (!red[d]) {
        o += c * ostride;
        ostride *= shape[d];
      }
    }
    double v = x[i];
    acc[o] = op == "amax" ? std::max(acc[o], v) : op == "amin" ? std::min(acc[o], v) : acc[o] + v;
  }
  if (op == "mean")
    for (double &v : acc)
      v /= static_cast<double>(count);
  return acc;
}

std::vector<float> randomInput(const V &shape, HostType t, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> xv(numel(shape));
  for (auto &v : xv) {
    v = nd(gen);
    v = t == HostType::F32 ? v : dl16::round(dl16::halfToFloat(dl16::floatToHalf(v)));
  }
  return xv;
}

} // namespace

// A reduction without keepdim writes the generic layout of its keepdim shape. A pointwise op
// runs in that layout (op(x) * 2: no restickify); layout propagation (layout_propagation.cpp)
// restickifies it before an op that reads only the generic layout of the squeezed shape (a
// whole-range slice). Numerics on both engines against a reference, for reductions over the
// stick dim (a transpose), over two dims of a rank-3 tensor (a permute moving the stick dim) and
// over dim 0 of a rank-3 tensor (a permute that keeps the stick dim, fp32 as well).
TEST(Reductions, NonKeepdimOutputFeedingAnOp) {
  struct RCase {
    V shape;
    std::vector<double> dims;
    HostType t;
  };
  const RCase rcases[] = {{{67, 129}, {-1}, HostType::F16},  {{8, 64}, {1}, HostType::F16},
                          {{3, 5, 130}, {2}, HostType::F16}, {{3, 5, 130}, {1, 2}, HostType::F16},
                          {{3, 5, 130}, {0}, HostType::F16}, {{3, 5, 130}, {0}, HostType::F32},
                          {{2, 3, 4, 67}, {3}, HostType::F16}};
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  unsigned seed = 11;
  for (const char *op : {"sum", "mean", "amax", "amin"})
    for (const RCase &c : rcases)
      for (const bool pointwise : {true, false}) {
      const size_t r = c.shape.size();
      std::vector<bool> red(r, false);
      for (double d : c.dims)
        red[static_cast<size_t>(d < 0 ? d + static_cast<double>(r) : d)] = true;
      V outShape;
      for (size_t d = 0; d < r; ++d)
        if (!red[d])
          outShape.push_back(c.shape[d]);
      Graph g;
      int x = g.addInput("x", c.shape, c.t);
      int s = g.addNode(op, {x}, "s", outShape, c.t, {{"dims", Attr(c.dims)}, {"keepdim", Attr(0.0)}});
      g.outputs = {pointwise ? g.addNode("mul", {s}, "y", outShape, c.t, {{"scalar", Attr(2.0)}})
                             : g.addNode("slice", {s}, "y", outShape, c.t,
                                         {{"dim", Attr(0.0)}, {"start", Attr(0.0)},
                                          {"end", Attr(static_cast<double>(outShape[0]))}})};
      const double factor = pointwise ? 2 : 1;
      const std::vector<float> xv = randomInput(c.shape, c.t, seed++);
      const std::vector<double> ref = reduceRef(op, xv, c.shape, red);
      int64_t count = numel(c.shape) / numel(outShape);
      for (int cores : {1, 7, 32}) {
        auto ri = runOne(g, *interp, cores, xv, c.t), rj = runOne(g, jit, cores, xv, c.t);
        ASSERT_EQ(ri, rj) << op;
        ASSERT_EQ(ri.size(), ref.size());
        for (size_t o = 0; o < ref.size(); ++o) {
          double expect = factor * ref[o];
          double tol = std::string(op).rfind("am", 0) == 0
                           ? 0.0
                           : (c.t == HostType::F16 ? 0.02 : 1e-4) * (1 + std::fabs(expect)) + 1e-5 * count;
          ASSERT_NEAR(ri[o], expect, tol) << op << " " << r << "-d dims " << c.dims.size() << " cores " << cores
                                          << " out " << o;
        }
      }
    }
}

// x - x.sum(-1).unsqueeze(-1) and friends: the unsqueeze (a reshape to the keepdim shape)
// reads the reduction's layout directly; the same reduction also feeds a pointwise op (in its
// layout) and is a graph output (its buffer carries the layout): no restickify at all.
TEST(Reductions, NonKeepdimThroughUnsqueezeAndAsOutput) {
  const V shape{67, 129};
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  for (const char *op : {"sum", "amax", "mean"}) {
    Graph g;
    int x = g.addInput("x", shape, HostType::F16);
    int s = g.addNode(op, {x}, "s", {67}, HostType::F16,
                      {{"dims", Attr(std::vector<double>{-1})}, {"keepdim", Attr(0.0)}});
    int u = g.addNode("reshape", {s}, "u", {67, 1}, HostType::F16);
    int d = g.addNode("sub", {x, u}, "d", shape, HostType::F16);
    int e = g.addNode("neg", {s}, "e", {67}, HostType::F16);
    g.outputs = {d, e, s};
    std::vector<PassSnapshot> log;
    CompileOptions o;
    o.passLog = &log;
    compileGraph(g, o);
    std::string after;
    for (const auto &p : log)
      if (p.pass == "layout-propagation")
        after = p.graph;
    EXPECT_NE(after.find("%u = reshape(%s)"), std::string::npos) << after;
    EXPECT_NE(after.find("%e = neg(%s) : f16[67, 1] {layout=[0, -1]}"), std::string::npos) << after;
    EXPECT_EQ(after.find("restickify=1"), std::string::npos) << after;
    const std::vector<float> xv = randomInput(shape, HostType::F16, 3);
    const std::vector<double> ref = reduceRef(op, xv, shape, {false, true});
    for (int cores : {1, 7, 32}) {
      isa::JobPlan plan = compileGraph(g, {cores, ""});
      std::vector<std::vector<float>> outs[2];
      for (int k = 0; k < 2; ++k) {
        test::PlanRunner run(plan, k == 0 ? *interp : static_cast<sim::Engine &>(jit));
        run.setInput(0, xv);
        run.run();
        for (size_t i = 0; i < 3; ++i)
          outs[k].push_back(run.output(i));
      }
      ASSERT_EQ(outs[0], outs[1]) << op;
      const auto &res = outs[0];
      for (int64_t i = 0; i < 67; ++i) {
        const double sv = ref[i];
        ASSERT_NEAR(res[2][i], sv, 0.02 * (1 + std::fabs(sv))) << op << " s " << i << " cores " << cores;
        ASSERT_NEAR(res[1][i], -sv, 0.02 * (1 + std::fabs(sv))) << op << " e " << i;
        for (int64_t j = 0; j < 129; ++j) {
          const double dv = xv[i * 129 + j] - sv;
          ASSERT_NEAR(res[0][i * 129 + j], dv, 0.02 * (1 + std::fabs(dv))) << op << " d " << i << "," << j;
        }
      }
    }
  }
}

// Restickifying an fp32 value across sticks needs the PE array (fp16/bf16 only): a clear
// Unsupported naming the op and both layouts.
TEST(Reductions, Fp32StickReductionFeedingAnOpIsUnsupported) {
  Graph g;
  int x = g.addInput("x", {8, 64}, HostType::F32);
  int s = g.addNode("sum", {x}, "s", {8}, HostType::F32, {{"dims", Attr(std::vector<double>{1})}});
  int e = g.addNode("exp", {s}, "e", {8}, HostType::F32);
  g.outputs = {g.addNode("cat", {e, e}, "y", {16}, HostType::F32, {{"dim", Attr(0.0)}})};
  try {
    compileGraph(g);
    FAIL() << "expected Unsupported";
  } catch (const Unsupported &ex) {
    const std::string m = ex.what();
    // Every layout of exp leads to one restickify of an fp32 value across sticks.
    EXPECT_NE(m.find("restickify: %e in layout [0, -1], node %y = cat needs [0] (f32)"), std::string::npos) << m;
    EXPECT_NE(m.find("fp16/bf16 only"), std::string::npos) << m;
  }
}

// Pass 3's "then at most one reduction dim" (SPYRE_SPLIT_REDUCTIONS=1; by default only where a
// core would span more than 256 MiB): a sum / mean over the stick dim whose rows cannot occupy
// the cores (2 or 3 rows) splits the stick dim too; partial sticks meet on the ring. Rows that
// an uneven split spreads over the cores (1151, a prime) split that way instead. The kernels
// run on the expected cores, both engines agree bit for bit, and the values match
// the double reference (fp16: the DL16 rounding of the result; f32: 1e-5 relative). amax does
// not split its stick dim (max partials do not add on the ring): its 67 rows split unevenly over
// 23 cores (3 rows each, 1 on the last). Layer norm's exx2 is split alike. With or without the
// switch, the 1151 rows of a mean split unevenly over all 32 cores (31 x 36 + 35).
TEST(Reductions, StickReductionOverPrimeRowsSplitsTheStickDim) {
  CompileOptions split{32, ""};
  split.splitReductions = true; // by default only past pass 1's span limit
  struct Split {
    const char *op;
    V shape;
    HostType t;
    int cores; // expected
  };
  for (const Split &c : {Split{"mean", {1151, 8192}, HostType::F16, 32}, Split{"sum", {2, 65536}, HostType::F16, 32},
                         Split{"mean", {3, 32000}, HostType::F32, 30}, Split{"amax", {67, 1000}, HostType::F16, 23}}) {
    V outShape = c.shape;
    outShape.back() = 1;
    Graph g;
    int x = g.addInput("x", c.shape, c.t);
    g.outputs = {g.addNode(c.op, {x}, "s", outShape, c.t,
                           {{"dims", Attr(std::vector<double>{-1})}, {"keepdim", Attr(1.0)}})};
    SCOPED_TRACE(std::string(c.op) + " of " + std::to_string(numel(c.shape)) + " elements");
    isa::JobPlan plan = compileGraph(g, split);
    ASSERT_EQ(plan.launches.size(), 1u);
    EXPECT_EQ(plan.launches[0].sdsc.numCoresUsed, c.cores);
    const std::vector<float> xv = randomInput(c.shape, c.t, 11);
    const test::BothEngines r = test::runOnBothEngines(plan, {xv});
    ASSERT_EQ(r.interp, r.jit);
    std::vector<bool> red(c.shape.size(), false);
    red.back() = true;
    const std::vector<double> want = reduceRef(c.op, xv, c.shape, red);
    for (size_t i = 0; i < want.size(); ++i) {
      const double tol = c.t == HostType::F32 ? 1e-5 * std::fabs(want[i]) + 1e-4 : 0.01 * std::fabs(want[i]) + 0.02;
      ASSERT_NEAR(r.jit[0][i], want[i], tol) << "row " << i;
    }
  }
  Graph g;
  int x = g.addInput("x", {1151, 8192}, HostType::F16);
  g.outputs = {g.addNode("mean", {x}, "s", {1151, 1}, HostType::F16,
                         {{"dims", Attr(std::vector<double>{-1})}, {"keepdim", Attr(1.0)}})};
  const isa::SuperDsc unsplit = compileGraph(g, {32, ""}).launches.at(0).sdsc;
  EXPECT_EQ(unsplit.numWkSlicesPerDim, (V{32, 1})) << "stick split without the switch";
  EXPECT_EQ(compileGraph(g, split).launches.at(0).sdsc.numWkSlicesPerDim, (V{32, 1})) << "stick split with it";
}
