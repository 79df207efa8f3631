// select, constant_pad_nd and matmul K padding through the frontend's decompositions, the backend
// and both engines: copies must move every element bit for bit; the K-padded matmul must match
// a reference and the unpadded (backend-padded) matmul.
#include "plan_runner.h"
#include "spyre/frontend/compiler.h"
#include "spyre/isa/error.h"
#include "spyre/jit/jit_engine.h"
#include <cmath>
#include <algorithm>
#include <gtest/gtest.h>

using namespace spyre;
using namespace spyre::frontend;
using V = std::vector<int64_t>;

namespace {

using test::numel;

std::vector<float> values(int64_t n, float salt = 0) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) // distinct and exact in fp16 / DL16
    v[i] = static_cast<float>(i % 509) - 254.0f + salt;
  return v;
}

using test::ravel;
using test::unravel;

/// Output 0 of g on both engines (asserting they agree bit for bit).
std::vector<float> runBoth(const Graph &g, const CompileOptions &o, const std::vector<std::vector<float>> &ins) {
  test::BothEngines r = test::runOnBothEngines(compileGraph(g, o), ins);
  EXPECT_EQ(r.interp[0], r.jit[0]) << "interpreter and JIT differ";
  return r.interp[0];
}

} // namespace

TEST(PadSelect, SelectAnyDim) {
  for (const V &shape : {V{255}, V{67, 129}, V{3, 67, 129}, V{2, 3, 5, 71}})
    for (int64_t dim = 0; dim < static_cast<int64_t>(shape.size()); ++dim)
      for (int64_t index : {int64_t{0}, shape[dim] - 1, shape[dim] / 2}) {
        V out = shape;
        out.erase(out.begin() + dim);
        Graph g;
        int x = g.addInput("x", shape, HostType::F16);
        g.outputs = {g.addNode("select", {x}, "y", out, HostType::F16,
                               {{"dim", Attr(double(dim))}, {"index", Attr(double(index))}})};
        const std::vector<float> xv = values(numel(shape));
        for (int cores : {1, 7, 32}) {
          std::vector<float> y = runBoth(g, {cores, ""}, {xv});
          ASSERT_EQ(static_cast<int64_t>(y.size()), numel(out));
          for (int64_t i = 0; i < numel(out); ++i) {
            auto c = unravel(i, out);
            c.insert(c.begin() + dim, index);
            ASSERT_EQ(y[i], xv[ravel(c, shape)]) << "select dim " << dim << " index " << index << " of rank "
                                                 << shape.size() << ", cores " << cores << ", at " << i;
          }
        }
      }
}

TEST(PadSelect, ConstantPadAnyDims) {
  struct Case {
    V shape;
    std::vector<double> pad;
    double value;
    HostType t;
  };
  const std::vector<Case> cases = {
      {{67, 129}, {3, 5}, 0.0, HostType::F16},      {{67, 129}, {64, 0}, 1.5, HostType::F16},
      {{67, 129}, {0, 0, 2, 7}, -2.0, HostType::F16}, {{5, 67, 100}, {1, 2, 3, 4, 5, 6}, 0.25, HostType::F16},
      {{129}, {0, 63}, 3.0, HostType::F16},          {{2, 3, 4, 70}, {0, 0, 0, 0, 1, 0, 0, 2}, 7.0, HostType::F16},
      {{6, 40}, {0, 0, 2, 1}, -1.0, HostType::F32},  {{6, 40}, {32, 0}, 5.0, HostType::F32},
      // fp32 at offsets inside a stick: lane-moving copies of 16-bit word pairs.
      {{6, 40}, {1, 2}, 0.5, HostType::F32},         {{3, 5, 70}, {7, 3, 1, 0}, -3.0, HostType::F32},
  };
  for (const auto &c : cases) {
    V out = c.shape;
    const size_t r = out.size();
    for (size_t k = 0; k < c.pad.size() / 2; ++k)
      out[r - 1 - k] += static_cast<int64_t>(c.pad[2 * k] + c.pad[2 * k + 1]);
    Graph g;
    int x = g.addInput("x", c.shape, c.t);
    g.outputs = {
        g.addNode("constant_pad_nd", {x}, "y", out, c.t, {{"pad", Attr(c.pad)}, {"value", Attr(c.value)}})};
    const std::vector<float> xv = values(numel(c.shape));
    for (int cores : {1, 7, 32}) {
      std::vector<float> y = runBoth(g, {cores, ""}, {xv});
      for (int64_t i = 0; i < numel(out); ++i) {
        auto co = unravel(i, out);
        bool inside = true;
        for (size_t d = 0; d < r; ++d) {
          const size_t k = r - 1 - d;
          const int64_t lo = k < c.pad.size() / 2 ? static_cast<int64_t>(c.pad[2 * k]) : 0;
          co[d] -= lo;
          inside &= co[d] >= 0 && co[d] < c.shape[d];
        }
        const float want = inside ? xv[ravel(co, c.shape)] : static_cast<float>(c.value);
        ASSERT_EQ(y[i], want) << "pad case rank " << r << ", cores " << cores << ", at " << i;
      }
    }
  }
}

TEST(PadSelect, MatmulKPaddingAsAGraphRewrite) {
  struct Case {
    V a, b;
  };
  for (const Case &c : {Case{{64, 255}, {255, 129}}, Case{{2, 16, 100}, {100, 64}}, Case{{1, 70}, {70, 3}}}) {
    const size_t ra = c.a.size();
    const int64_t M = c.a[ra - 2], K = c.a[ra - 1], N = c.b[1], B = numel(c.a) / (M * K);
    V o = c.a;
    o[ra - 1] = N;
    Graph g;
    int a = g.addInput("a", c.a, HostType::F16), b = g.addInput("b", c.b, HostType::F16);
    g.outputs = {g.addNode("matmul", {a, b}, "c", o, HostType::F16)};
    std::vector<float> av(numel(c.a)), bv(numel(c.b));
    for (size_t i = 0; i < av.size(); ++i)
      av[i] = static_cast<float>(static_cast<int>(i * 7 % 17) - 8) / 8.0f;
    for (size_t i = 0; i < bv.size(); ++i)
      bv[i] = static_cast<float>(static_cast<int>(i * 5 % 13) - 6) / 4.0f;
    for (int cores : {1, 8, 32}) {
      CompileOptions padded{cores, ""};
      padded.padMatmulK = true;
      std::vector<PassSnapshot> log;
      padded.passLog = &log;
      std::vector<float> y = runBoth(g, padded, {av, bv});
      auto kp = std::find_if(log.begin(), log.end(), [](const PassSnapshot &s) { return s.pass == "k-padding"; });
      ASSERT_TRUE(kp != log.end());
      EXPECT_NE(kp->graph.find("_kpad"), std::string::npos) << kp->graph;
      CompileOptions plain{cores, ""};
      plain.padMatmulK = false;
      std::vector<float> y0 = runBoth(g, plain, {av, bv});
      for (int64_t bi = 0; bi < B; ++bi)
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double ref = 0;
            for (int64_t k = 0; k < K; ++k)
              ref += double(av[(bi * M + m) * K + k]) * bv[k * N + n];
            const size_t i = static_cast<size_t>((bi * M + m) * N + n);
            ASSERT_NEAR(y[i], ref, 0.01 * std::abs(ref) + 0.05) << "K-padded, cores " << cores << " at " << i;
            ASSERT_NEAR(y[i], y0[i], 0.01 * std::abs(ref) + 0.05) << "K-padded vs backend padding at " << i;
          }
    }
  }
}

TEST(PadSelect, RowSlicesFeedingElementwiseOpsAreViews) {
  // slice(x, dim=d < last, start, end, step) read by elementwise ops at the slice's shape: no
  // slice kernel, the consumers read a view of x's buffer (note view=1). A slice that is a graph
  // output, or whose consumer broadcasts it, stays a copy. Bit-exact on both engines, 1/7/32
  // cores.
  struct Case {
    V shape;
    int64_t dim, start, end, step;
  };
  for (const Case &c : {Case{{67, 129}, 0, 3, 60, 1}, Case{{3, 67, 129}, 1, 1, 66, 2}, Case{{4, 8, 64}, 0, 1, 4, 2},
                        Case{{2, 3, 5, 71}, 2, 4, 5, 1}}) {
    V out = c.shape;
    out[c.dim] = (c.end - c.start + c.step - 1) / c.step;
    Graph g;
    int x = g.addInput("x", c.shape, HostType::F16), y = g.addInput("y", out, HostType::F16);
    int s = g.addNode("slice", {x}, "s", out, HostType::F16,
                      {{"dim", Attr(double(c.dim))}, {"start", Attr(double(c.start))}, {"end", Attr(double(c.end))},
                       {"step", Attr(double(c.step))}});
    int a = g.addNode("add", {s, y}, "a", out, HostType::F16, {});
    g.outputs = {g.addNode("mul", {a, s}, "m", out, HostType::F16, {})};
    std::vector<float> xv = values(numel(c.shape)), yv = values(numel(out), 0.5f);
    for (float &v : xv) // products stay inside fp16's range (the host side is fp16)
      v /= 16.0f;
    for (int cores : {1, 7, 32}) {
      isa::JobPlan plan = compileGraph(g, {cores, ""});
      for (const auto &l : plan.launches)
        EXPECT_NE(l.sdsc.opFuncName, "slice") << "a slice kernel ran";
      std::vector<float> m = runBoth(g, {cores, ""}, {xv, yv});
      for (int64_t i = 0; i < numel(out); ++i) {
        auto k = unravel(i, out);
        k[c.dim] = c.start + k[c.dim] * c.step;
        const float sv = xv[ravel(k, c.shape)];
        const float want = dl16::toFloat(dl16::fromFloat(dl16::toFloat(dl16::fromFloat(sv + yv[i])) * sv));
        ASSERT_EQ(m[i], want) << "cores " << cores << " at " << i;
      }
    }
  }
  // A slice that is also a graph output keeps its kernel.
  Graph g;
  int x = g.addInput("x", {8, 64}, HostType::F16);
  int s = g.addNode("slice", {x}, "s", {4, 64}, HostType::F16,
                    {{"dim", Attr(0.0)}, {"start", Attr(2.0)}, {"end", Attr(6.0)}});
  g.outputs = {s, g.addNode("neg", {s}, "n", {4, 64}, HostType::F16, {})};
  int slices = 0;
  for (const auto &l : compileGraph(g, {32, ""}).launches)
    slices += l.sdsc.opFuncName == "slice";
  EXPECT_EQ(slices, 1);
}

TEST(PadSelect, ElementwiseOpsOnMoreThanFourDimsRunOnReducedShapes) {
  // expand of x[:, :, None] to rank 5 (grouped-query attention's repeat_kv) and a rank-5 add
  // with a broadcast: unit dims dropped, row dims merged, the op runs at rank <= 4 between
  // reshapes (collapsed with the reshape that follows). Bit-exact on both engines against the
  // broadcast definition.
  struct Case {
    V x, y, out; // y empty: expand of x
  };
  for (const Case &c : {Case{{2, 3, 1, 5, 64}, {}, {2, 3, 4, 5, 64}}, Case{{1, 2, 1, 3, 67}, {}, {1, 2, 3, 3, 67}},
                        Case{{2, 1, 3, 4, 70}, {2, 5, 3, 4, 70}, {2, 5, 3, 4, 70}}}) {
    Graph g;
    int x = g.addInput("x", c.x, HostType::F16);
    int o;
    if (c.y.empty()) {
      int e = g.addNode("expand", {x}, "e", c.out, HostType::F16, {});
      o = g.addNode("neg", {e}, "o", c.out, HostType::F16, {});
    } else {
      int y = g.addInput("y", c.y, HostType::F16);
      o = g.addNode("add", {x, y}, "o", c.out, HostType::F16, {});
    }
    // The graph output at rank 3 (a rank-5 output has no device layout; the models' repeat_kv
    // views back to rank 4 as well).
    V flat{numel(c.out) / (c.out.back() * c.out[c.out.size() - 2]), c.out[c.out.size() - 2], c.out.back()};
    g.outputs = {g.addNode("reshape", {o}, "flat", flat, HostType::F16, {})};
    const std::vector<float> xv = values(numel(c.x)), yv = c.y.empty() ? std::vector<float>{} : values(numel(c.y), 0.5f);
    std::vector<std::vector<float>> ins{xv};
    if (!c.y.empty())
      ins.push_back(yv);
    for (int cores : {1, 32}) {
      std::vector<float> got = runBoth(g, {cores, ""}, ins);
      ASSERT_EQ(static_cast<int64_t>(got.size()), numel(c.out));
      for (int64_t i = 0; i < numel(c.out); ++i) {
        auto k = unravel(i, c.out), kx = k, ky = k;
        for (size_t d = 0; d < k.size(); ++d) {
          if (c.x[d] == 1)
            kx[d] = 0;
          if (!c.y.empty() && c.y[d] == 1)
            ky[d] = 0;
        }
        const float a = xv[ravel(kx, c.x)];
        const float want = c.y.empty() ? -a : dl16::toFloat(dl16::fromFloat(a + yv[ravel(ky, c.y)]));
        ASSERT_EQ(got[i], want) << "cores " << cores << " at " << i;
      }
    }
  }
}

TEST(PadSelect, PermuteOnMoreThanFourDimsDropsUnitDims) {
  // MultiheadAttention's packed projection: [1, B, T, 3, E] transposed (0, 3) and squeezed.
  const V xs{1, 2, 8, 3, 64}, ps{3, 2, 8, 1, 64}, out{3, 2, 8, 64};
  Graph g;
  int x = g.addInput("x", xs, HostType::F16);
  int p = g.addNode("permute", {x}, "p", ps, HostType::F16, {{"dims", Attr(std::vector<double>{3, 1, 2, 0, 4})}});
  int q = g.addNode("reshape", {p}, "q", out, HostType::F16, {});
  g.outputs = {g.addNode("neg", {q}, "n", out, HostType::F16, {})};
  const std::vector<float> xv = values(numel(xs));
  for (int cores : {1, 32}) {
    std::vector<float> got = runBoth(g, {cores, ""}, {xv});
    for (int64_t i = 0; i < numel(out); ++i) {
      auto k = unravel(i, out); // [j, b, t, e] = x[0, b, t, j, e]
      ASSERT_EQ(got[i], -xv[ravel({0, k[1], k[2], k[0], k[3]}, xs)]) << "cores " << cores << " at " << i;
    }
  }
}
