// reshape: zero-copy where both generic stick layouts put every element at the same device
// bytes (an alias of the input's buffer, or one copy kernel when the result is a graph output),
// a stick-reordering restickify where leading dims merge or split under the same last dim,
// Unsupported where elements would move between lanes.
#include "spyre/backend/backend.h"
#include "plan_runner.h"
#include "spyre/frontend/compiler.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <cmath>
#include <set>
#include <gtest/gtest.h>

using namespace spyre;
using frontend::reshapeKeepsDeviceBytes;

namespace {
/// The graph compiled for 32 cores and its kernels' ops, in launch order.
std::pair<isa::JobPlan, std::vector<std::string>> compileOps(const std::string &text, int cores = 32) {
  isa::JobPlan p = frontend::compileGraph(frontend::parseGraph(text), {cores, ""});
  std::vector<std::string> ops;
  for (const auto &l : p.launches)
    ops.push_back(l.sdsc.opFuncName);
  return {std::move(p), ops};
}

/// A 64 x 256 ramp of exactly representable values in [-1.875, 1.875].
std::vector<float> ramp() {
  std::vector<float> x(64 * 256);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(static_cast<int>(i % 61) - 30) / 16.0f;
  return x;
}
} // namespace

TEST(Reshape, WhichReshapesKeepTheDeviceBytes) {
  EXPECT_TRUE(reshapeKeepsDeviceBytes({64, 256}, {64, 4, 64}, 64));  // split the stick dim in whole sticks
  EXPECT_TRUE(reshapeKeepsDeviceBytes({64, 4, 64}, {64, 256}, 64));  // and merge it back
  EXPECT_TRUE(reshapeKeepsDeviceBytes({1, 256}, {256}, 64));         // squeeze / unsqueeze of size 1
  EXPECT_TRUE(reshapeKeepsDeviceBytes({8, 64}, {8, 1, 64}, 64));
  EXPECT_TRUE(reshapeKeepsDeviceBytes({67, 100}, {67, 100}, 64));    // identity, padded sticks
  EXPECT_FALSE(reshapeKeepsDeviceBytes({4, 64, 64}, {256, 64}, 64)); // merging rows reorders sticks
  EXPECT_FALSE(reshapeKeepsDeviceBytes({2, 3, 128}, {6, 128}, 64));
  EXPECT_FALSE(reshapeKeepsDeviceBytes({64, 100}, {100, 64}, 64));   // elements cross sticks
  EXPECT_FALSE(reshapeKeepsDeviceBytes({64, 256}, {64, 8, 32}, 64)); // 32-element rows share sticks
  EXPECT_TRUE(reshapeKeepsDeviceBytes({64, 256}, {64, 8, 32}, 32));  // ... unless sticks hold 32 (fp32)
}

namespace {
/// Reference: every element at the same (stick, lane) of the generic layouts, and as many
/// sticks (so padding lanes coincide too). Device dims [d1..d(k-2), tiles, d0].
bool sameBytesByElements(const std::vector<int64_t> &a, const std::vector<int64_t> &b, int64_t eps) {
  auto place = [eps](const std::vector<int64_t> &s, int64_t linear) {
    std::vector<int64_t> idx(s.size());
    for (size_t d = s.size(); d-- > 0;)
      idx[d] = linear % s[d], linear /= s[d];
    const size_t k = s.size();
    if (k == 1)
      return std::pair<int64_t, int64_t>{idx[0] / eps, idx[0] % eps};
    int64_t st = 0;
    for (size_t d = 1; d + 1 < k; ++d)
      st = st * s[d] + idx[d];
    st = (st * ((s[k - 1] + eps - 1) / eps) + idx[k - 1] / eps) * s[0] + idx[0];
    return std::pair<int64_t, int64_t>{st, idx[k - 1] % eps};
  };
  auto sticks = [eps](const std::vector<int64_t> &s) {
    int64_t n = (s.back() + eps - 1) / eps;
    for (size_t d = 0; d + 1 < s.size(); ++d)
      n *= s[d];
    return n;
  };
  int64_t n = 1;
  for (int64_t x : a)
    n *= x;
  if (sticks(a) != sticks(b))
    return false;
  for (int64_t i = 0; i < n; ++i)
    if (place(a, i) != place(b, i))
      return false;
  return true;
}
} // namespace

TEST(Reshape, KeepsDeviceBytesAgreesWithAnElementwiseReference) {
  // The closed form for an unchanged last dim and the stick scan otherwise, against every
  // element's (stick, lane), on all factorisations of small row counts into 1-3 leading dims.
  std::vector<std::vector<int64_t>> leads;
  for (int64_t rows : {1, 2, 4, 6, 8, 12})
    for (int64_t x = 1; x <= rows; ++x)
      if (rows % x == 0) {
        leads.push_back({rows});
        leads.push_back({x, rows / x});
        for (int64_t y = 1; y <= rows / x; ++y)
          if ((rows / x) % y == 0)
            leads.push_back({x, y, rows / x / y});
      }
  int checked = 0;
  for (int64_t eps : {32, 64})
    for (int64_t last : {1, 32, 64, 100, 128, 192})
      for (const auto &la : leads)
        for (const auto &lb : leads) {
          std::vector<int64_t> a = la, b = lb;
          int64_t ra = 1, rb = 1;
          for (int64_t x : a) ra *= x;
          for (int64_t x : b) rb *= x;
          if (ra != rb)
            continue;
          a.push_back(last);
          b.push_back(last);
          ASSERT_EQ(reshapeKeepsDeviceBytes(a, b, eps), sameBytesByElements(a, b, eps))
              << "[" << ::testing::PrintToString(a) << "] -> [" << ::testing::PrintToString(b) << "] eps " << eps;
          ++checked;
          // and with the last dim split or merged in whole sticks where it can be
          if (last % eps == 0 && last / eps > 1) {
            std::vector<int64_t> c = la;
            c.push_back(last / eps);
            c.push_back(eps);
            ASSERT_EQ(reshapeKeepsDeviceBytes(a, c, eps), sameBytesByElements(a, c, eps))
                << ::testing::PrintToString(a) << " -> " << ::testing::PrintToString(c);
          }
        }
  EXPECT_GT(checked, 1000);
}

TEST(Reshape, KeepsDeviceBytesOnHugeShapesInBoundedTime) {
  // fuzz_graph finding (stop 24): the stick-by-stick scan took > 30 s under ASan on
  // [1, 64, 4914304] (4.9 M sticks); an unchanged last dim is now decided in O(rank).
  EXPECT_FALSE(reshapeKeepsDeviceBytes({1, 64, 4914304}, {64, 4914304}, 64)); // dim 0 moves inside the tiles
  EXPECT_TRUE(reshapeKeepsDeviceBytes({64, 1, 4914304}, {64, 4914304}, 64));
  EXPECT_FALSE(reshapeKeepsDeviceBytes({2, 32, 4914304}, {64, 4914304}, 64));
  EXPECT_TRUE(reshapeKeepsDeviceBytes({1, 1, 1LL << 33}, {1LL << 33}, 64));
}

TEST(Reshape, InternalReshapesAliasAndOutputsCopy) {
  // x [64, 256] -> t [64, 4, 64] (alias) -> e = exp(t) -> y = reshape(e) [64, 256] (graph output:
  // one copy kernel) ; z = neg(t) [64, 4, 64].
  std::string text = "graph(%x: f16[64, 256]) {\n  %t = reshape(%x) : f16[64, 4, 64]\n  %e = exp(%t) : f16[64, 4, 64]\n"
                     "  %y = reshape(%e) : f16[64, 256]\n  %z = neg(%t) : f16[64, 4, 64]\n  return (%y, %z)\n}\n";
  auto [p, ops] = compileOps(text);
  EXPECT_EQ(ops, (std::vector<std::string>{"exp", "identity", "neg"}));
  std::vector<float> x = ramp();
  auto interp = sim::makeInterpreter();
  test::PlanRunner r(p, *interp);
  r.setInput(0, x);
  r.run();
  std::vector<float> y = r.output(0), z = r.output(1);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_NEAR(y[i], std::exp(x[i]), 0.01 * std::exp(x[i])) << i;
    ASSERT_EQ(z[i], -x[i]) << i;
  }
}

TEST(Reshape, LeadingDimMergesAndSplitsReorderSticksOnTheCard) {
  // Same last dim, leading dims merged or split ([B, S, H] <-> [B*S, H] around a linear layer):
  // whole sticks move, one stick-keeping restickify kernel; bit-exact on both engines, f16
  // (padded sticks too) and f32.
  struct Case {
    std::vector<int64_t> from, to;
    const char *dtype;
  };
  const Case cases[] = {{{4, 64, 64}, {256, 64}, "f16"},   {{2, 64, 256}, {128, 256}, "f16"},
                        {{128, 256}, {2, 64, 256}, "f16"}, {{2, 3, 50}, {6, 50}, "f16"},
                        {{2, 3, 4, 70}, {6, 4, 70}, "f16"}, {{6, 4, 70}, {2, 3, 4, 70}, "f16"},
                        {{6, 40}, {2, 3, 40}, "f32"},      {{3, 1, 2, 96}, {6, 96}, "f32"}};
  auto text = [](const std::vector<int64_t> &s) {
    std::string t;
    for (size_t i = 0; i < s.size(); ++i)
      t += (i ? ", " : "") + std::to_string(s[i]);
    return t;
  };
  for (const Case &c : cases) {
    const std::string t = std::string(c.dtype);
    std::string g = "graph(%x: " + t + "[" + text(c.from) + "]) {\n  %n = neg(%x) : " + t + "[" + text(c.from) +
                    "]\n  %r = reshape(%n) : " + t + "[" + text(c.to) + "]\n  %e = neg(%r) : " + t + "[" + text(c.to) +
                    "]\n  return (%e)\n}\n";
    auto [plan, ops] = compileOps(g);
    EXPECT_EQ(ops, (std::vector<std::string>{"neg", "ReStickifyOpHBM", "neg"})) << g;
    std::vector<float> x(static_cast<size_t>(test::numel(c.from)));
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<float>(static_cast<int>(i % 509) - 254) / 8.0f; // exact in DL16 and fp32
    const test::BothEngines r = test::runOnBothEngines(plan, {x});
    ASSERT_EQ(r.interp, r.jit) << g;
    ASSERT_EQ(r.jit.at(0), x) << g; // row-major order is the reshape's: the same values
  }
}

TEST(Reshape, ElementsMovingBetweenLanesRunOnTheCard) {
  // A reshape that changes the row length moves elements between lanes: SuperDSC `reshape`
  // kernels (ldu/stu) through [R, L] and [R', L'] (and [1, R*L] when neither row count divides
  // the other), stick-reordering restickifies around them for other ranks. Bit-exact on both
  // engines (row-major order is the reshape's: the output holds the input's values in order),
  // f16 with padded sticks and f32, 32 and 7 cores.
  struct Case {
    std::vector<int64_t> from, to;
    const char *dtype;
    std::vector<std::string> ops; // between the two negs
  };
  const Case cases[] = {
      {{64, 32}, {32, 64}, "f16", {"reshape"}},
      {{32, 64}, {64, 32}, "f16", {"reshape"}},
      {{64, 100}, {100, 64}, "f16", {"reshape"}}, // [1, 6400] -> [100, 64] keeps the bytes
      {{6, 4, 64}, {4, 6, 64}, "f16", {"ReStickifyOpHBM", "ReStickifyOpHBM"}},
      {{8, 7, 7}, {8, 49}, "f16", {"ReStickifyOpHBM", "reshape"}},
      {{2, 16, 96}, {2, 16, 3, 32}, "f16", {"ReStickifyOpHBM", "reshape", "ReStickifyOpHBM"}},
      {{3, 130}, {390}, "f16", {"reshape"}},
      {{67, 71}, {71, 67}, "f32", {"reshape", "reshape"}},
      {{40, 33}, {33, 40}, "f32", {"reshape", "reshape"}},
      {{2, 16, 3, 20}, {2, 16, 60}, "f32", {"ReStickifyOpHBM", "reshape", "ReStickifyOpHBM"}},
      // One group of rows larger than LX: 4096 input rows into one output row, 4096 output
      // rows out of one input row; in chunks of whole sticks.
      {{4096, 100}, {6400, 64}, "f16", {"reshape"}},
      {{6400, 64}, {4096, 100}, "f16", {"reshape"}},
      {{2048, 100}, {3200, 64}, "f32", {"reshape", "reshape"}},
  };
  auto text = [](const std::vector<int64_t> &s) {
    std::string t;
    for (size_t i = 0; i < s.size(); ++i)
      t += (i ? ", " : "") + std::to_string(s[i]);
    return t;
  };
  for (int cores : {32, 7})
    for (const Case &c : cases) {
      const std::string t = std::string(c.dtype);
      std::string g = "graph(%x: " + t + "[" + text(c.from) + "]) {\n  %n = neg(%x) : " + t + "[" + text(c.from) +
                      "]\n  %r = reshape(%n) : " + t + "[" + text(c.to) + "]\n  %e = neg(%r) : " + t + "[" +
                      text(c.to) + "]\n  return (%e)\n}\n";
      SCOPED_TRACE(g + " on " + std::to_string(cores) + " cores");
      auto [plan, ops] = compileOps(g, cores);
      std::vector<std::string> want{"neg"};
      want.insert(want.end(), c.ops.begin(), c.ops.end());
      want.push_back("neg");
      EXPECT_EQ(ops, want);
      std::vector<float> x(static_cast<size_t>(test::numel(c.from)));
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = static_cast<float>(static_cast<int>(i % 509) - 254) / 8.0f; // exact in DL16 and fp32
      const test::BothEngines r = test::runOnBothEngines(plan, {x});
      ASSERT_EQ(r.interp, r.jit);
      ASSERT_EQ(r.jit.at(0), x);
    }
}

TEST(Reshape, LaneMovingReshapeWhoseRowGroupExceedsLxIsUnsupported) {
  // [2, 786464] -> [4, 393232]: one input row (1.5 MiB) with its two output rows and the packed
  // stream needs more than a core's LX; the message names the reshape and the bytes it needs.
  const std::string g = "graph(%x: f16[2, 786464]) {\n  %r = reshape(%x) : f16[4, 393232]\n  %e = neg(%r) : "
                        "f16[4, 393232]\n  return (%e)\n}\n";
  try {
    for (const auto &l : frontend::compileGraph(frontend::parseGraph(g), {32, ""}).launches)
      backend::compileSuperDsc(l.sdsc);
    ADD_FAILURE() << "compiled " << g;
  } catch (const Unsupported &e) {
    EXPECT_NE(std::string(e.what()).find("bytes of LX"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("reshape [2, 786464] -> [4, 393232]"), std::string::npos) << e.what();
  }
}

TEST(Reshape, InternalClonesAlias) {
  // .contiguous() after a materialised op: the clone runs no kernel (decompose drops it, so neg
  // and exp fuse into one kernel); a cloned graph output neither: the graph returns %e itself.
  std::string text = "graph(%x: f16[64, 256]) {\n  %p = neg(%x) : f16[64, 256]\n  %c = clone(%p) : f16[64, 256]\n"
                     "  %e = exp(%c) : f16[64, 256]\n  %o = clone(%e) : f16[64, 256]\n  return (%o)\n}\n";
  auto [p, ops] = compileOps(text);
  EXPECT_EQ(ops, (std::vector<std::string>{"fused"}));
  std::vector<float> x = ramp();
  auto interp = sim::makeInterpreter();
  test::PlanRunner r(p, *interp);
  r.setInput(0, x);
  r.run();
  std::vector<float> o = r.output(0);
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_NEAR(o[i], std::exp(-x[i]), 0.01 * std::exp(-x[i])) << i;
}

TEST(Reshape, SameShapeExpandsAlias) {
  // aten.matmul expands both operands to the batch shape they already have: such an expand is a
  // clone (no kernel); a real broadcast still runs one, and so does an expanded graph output.
  std::string text = "graph(%x: f16[2, 64, 64], %y: f16[1, 64, 64]) {\n  %p = neg(%x) : f16[2, 64, 64]\n"
                     "  %e = expand(%p) : f16[2, 64, 64]\n  %b = expand(%y) : f16[2, 64, 64]\n"
                     "  %s = add(%e, %b) : f16[2, 64, 64]\n  %o = expand(%s) : f16[2, 64, 64]\n  return (%o)\n}\n";
  auto [p, ops] = compileOps(text);
  // The same kernels as the graph without %e; the output expand goes too (the graph returns %s).
  std::string without = text;
  without.replace(without.find("  %e = expand(%p) : f16[2, 64, 64]\n"), 35, "");
  without.replace(without.find("add(%e"), 6, "add(%p");
  EXPECT_EQ(ops, compileOps(without).second);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "identity"), 0);
  std::vector<float> x(2 * 64 * 64), y(64 * 64);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(static_cast<int>(i % 37) - 18) / 8.0f;
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = static_cast<float>(static_cast<int>(i % 23) - 11) / 4.0f;
  const test::BothEngines r = test::runOnBothEngines(p, {x, y});
  ASSERT_EQ(r.interp, r.jit);
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(r.jit.at(0)[i], -x[i] + y[i % y.size()]) << i;
}

TEST(Reshape, ReturnedCopiesKeepTheirKernelOnlyWhereTheyMust) {
  // A returned clone is a copy only where returning its input would share a buffer: a graph
  // input (%x), a value already returned (%p), a value a second clone already returns (%q), an
  // alias (the reshape %r), a value a returned view shares (%w under %wr). %s's clone goes: the
  // graph returns %s.
  std::string text = "graph(%x: f16[64, 256]) {\n  %p = neg(%x) : f16[64, 256]\n  %q = exp(%x) : f16[64, 256]\n"
                     "  %r = reshape(%q) : f16[128, 128]\n  %s = abs(%x) : f16[64, 256]\n"
                     "  %cx = clone(%x) : f16[64, 256]\n  %cp = clone(%p) : f16[64, 256]\n"
                     "  %cq1 = clone(%q) : f16[64, 256]\n  %cq2 = clone(%q) : f16[64, 256]\n"
                     "  %cr = clone(%r) : f16[128, 128]\n  %cs = clone(%s) : f16[64, 256]\n"
                     "  %w = relu(%x) : f16[64, 256]\n  %wr = reshape(%w) : f16[128, 128]\n  %cw = clone(%w) : f16[64, 256]\n"
                     "  return (%cx, %p, %cp, %cq1, %cq2, %cr, %cs, %wr, %cw)\n}\n";
  auto [p, ops] = compileOps(text);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "identity"), 5) << ::testing::PrintToString(ops);
  std::vector<float> x = ramp();
  const test::BothEngines r = test::runOnBothEngines(p, {x});
  ASSERT_EQ(r.interp, r.jit);
  const auto &o = r.jit;
  ASSERT_EQ(o.size(), 9u);
  for (size_t i = 0; i < x.size(); ++i) {
    const float e = o.at(3)[i];
    ASSERT_EQ(o.at(0)[i], x[i]) << i;
    ASSERT_EQ(o.at(1)[i], -x[i]) << i;
    ASSERT_EQ(o.at(2)[i], -x[i]) << i;
    ASSERT_NEAR(e, std::exp(x[i]), 0.01 * std::exp(x[i])) << i;
    ASSERT_EQ(o.at(4)[i], e) << i;
    ASSERT_EQ(o.at(5)[i], e) << i;
    ASSERT_EQ(o.at(6)[i], std::fabs(x[i])) << i;
    ASSERT_EQ(o.at(7)[i], std::max(x[i], 0.0f)) << i;
    ASSERT_EQ(o.at(8)[i], std::max(x[i], 0.0f)) << i;
  }
  // Distinct output buffers: each output is its own tensor.
  std::set<int> buffers(p.outputs.begin(), p.outputs.end());
  EXPECT_EQ(buffers.size(), 9u);
}

TEST(Reshape, IdentityArithmeticGoes) {
  // x * 1, x / 1 and x - 0 give x bit for bit: no kernel (models' multipliers of 1). x + 0 is not
  // x for x = -0, and x * 2 is not x: both stay.
  std::string text = "graph(%x: f16[64, 256], %y: f32[64, 64]) {\n  %m = mul(%x, scalar=1) : f16[64, 256]\n"
                     "  %d = div(%m, scalar=1) : f16[64, 256]\n  %e = exp(%d) : f16[64, 256]\n"
                     "  %s = sub(%y, scalar=0) : f32[64, 64]\n  %t = mul(%s, scalar=3) : f32[64, 64]\n"
                     "  %a = add(%x, scalar=0) : f16[64, 256]\n  return (%e, %t, %a)\n}\n";
  auto [p, ops] = compileOps(text);
  const std::string without = "graph(%x: f16[64, 256], %y: f32[64, 64]) {\n  %e = exp(%x) : f16[64, 256]\n"
                              "  %t = mul(%y, scalar=3) : f32[64, 64]\n  %a = add(%x, scalar=0) : f16[64, 256]\n"
                              "  return (%e, %t, %a)\n}\n";
  EXPECT_EQ(ops, compileOps(without).second);
  EXPECT_EQ(ops.size(), 3u);
  std::vector<float> x(64 * 256), y(64 * 64);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = i == 5 ? -0.0f : static_cast<float>(static_cast<int>(i % 37) - 18) / 8.0f;
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = static_cast<float>(static_cast<int>(i % 23) - 11) / 4.0f;
  const test::BothEngines r = test::runOnBothEngines(p, {x, y});
  ASSERT_EQ(r.interp, r.jit);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_NEAR(r.jit.at(0)[i], std::exp(x[i]), 0.01 * std::exp(x[i])) << i;
    ASSERT_EQ(r.jit.at(2)[i], x[i] + 0.0f) << i;
  }
  EXPECT_FALSE(std::signbit(r.jit.at(2)[5])); // -0 + 0 = +0
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_EQ(r.jit.at(1)[i], y[i] * 3) << i;
}

/// Runs plan p (inputs x f16[1, 64, 256], w [256, 128], b [128]) on both engines: equal results,
/// and f(-x @ w + b) within fp16 tolerance of a double reference.
void checkLinear(const isa::JobPlan &p, double (*f)(double)) {
  std::vector<float> x(64 * 256), w(256 * 128), b(128);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(static_cast<int>(i % 29) - 14) / 32.0f;
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>(static_cast<int>(i % 31) - 15) / 64.0f;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<float>(static_cast<int>(i % 7) - 3) / 8.0f;
  const test::BothEngines r = test::runOnBothEngines(p, {x, w, b});
  ASSERT_EQ(r.interp, r.jit);
  for (int s = 0; s < 64; ++s)
    for (int n = 0; n < 128; ++n) {
      double acc = b[n];
      for (int k = 0; k < 256; ++k)
        acc += -static_cast<double>(x[s * 256 + k]) * w[k * 128 + n];
      const double want = f(acc);
      ASSERT_NEAR(r.jit.at(0)[s * 128 + n], want, 0.02 * std::fabs(want) + 0.02) << s << "," << n;
    }
}

TEST(Reshape, LinearViewsSinkAndAlias) {
  // aten.linear on [1, S, K] with a bias: view to [S, K], matmul + bias, view back (here to the
  // heads' [1, S, H, D]). The views only drop / restore a leading 1: the decompose pass sinks
  // them below the matmul and the add, where they meet and alias; no copy kernel runs.
  std::string text = "graph(%x: f16[1, 64, 256], %w: f16[256, 128], %b: f16[128]) {\n"
                     "  %p = neg(%x) : f16[1, 64, 256]\n  %v = reshape(%p) : f16[64, 256]\n"
                     "  %m = matmul(%v, %w) : f16[64, 128]\n  %a = add(%m, %b) : f16[64, 128]\n"
                     "  %h = reshape(%a) : f16[1, 64, 2, 64]\n  %e = exp(%h) : f16[1, 64, 2, 64]\n  return (%e)\n}\n";
  auto [p, ops] = compileOps(text);
  EXPECT_EQ(ops, (std::vector<std::string>{"neg", "fused", "exp"})); // no ReStickifyOpHBM, no reshape
  checkLinear(p, [](double v) { return std::exp(v); });
}

TEST(Reshape, LinearViewsBackToTheSameShapeVanish) {
  // view -> matmul + bias -> view back to [1, S, N] -> gelu (BERT's and ViT's MLP): the views
  // collapse into a reshape to the matmul's own shape, which goes, so the gelu joins the
  // matmul's epilogue: one kernel after neg.
  std::string text = "graph(%x: f16[1, 64, 256], %w: f16[256, 128], %b: f16[128]) {\n"
                     "  %p = neg(%x) : f16[1, 64, 256]\n  %v = reshape(%p) : f16[64, 256]\n"
                     "  %m = matmul(%v, %w) : f16[64, 128]\n  %a = add(%m, %b) : f16[64, 128]\n"
                     "  %h = reshape(%a) : f16[1, 64, 128]\n  %e = gelu(%h) : f16[1, 64, 128]\n  return (%e)\n}\n";
  auto [p, ops] = compileOps(text);
  EXPECT_EQ(ops, (std::vector<std::string>{"neg", "fused"}));
  checkLinear(p, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); });
}

TEST(Reshape, LaneMovingReshapeStagesAboveLxKeptAcrossIt) {
  // %a stays in LX (LX planning) while the lane-moving reshape of another input runs: the
  // reshape stages its rows above the reserved LX, and every result equals the run without LX
  // planning, bit for bit on both engines.
  const std::string g = "graph(%x: f16[64, 256], %y: f16[64, 32]) {\n  %a = exp(%x) : f16[64, 256]\n"
                        "  %r = reshape(%y) : f16[32, 64]\n  %n = neg(%r) : f16[32, 64]\n"
                        "  %m = mul(%a, %a) : f16[64, 256]\n  return (%n, %m)\n}\n";
  std::vector<float> x(64 * 256), y(64 * 32);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(static_cast<int>(i % 61) - 30) / 16.0f;
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = static_cast<float>(static_cast<int>(i % 509) - 254) / 8.0f;
  std::vector<std::vector<float>> results;
  for (bool lx : {true, false}) {
    frontend::CompileOptions o;
    o.lxPlanning = lx;
    o.fusion = false; // the pointwise ops around the reshape keep their LX-resident values
    isa::JobPlan plan = frontend::compileGraph(frontend::parseGraph(g), o);
    int64_t reservedAtReshape = -1;
    for (const auto &l : plan.launches)
      if (l.sdsc.opFuncName == "reshape")
        reservedAtReshape = l.sdsc.lxReservedBytes;
    EXPECT_EQ(reservedAtReshape > 0, lx) << "LX reserved across the reshape: " << reservedAtReshape;
    const test::BothEngines r = test::runOnBothEngines(plan, {x, y});
    ASSERT_EQ(r.interp, r.jit);
    std::vector<float> negY(y.size());
    for (size_t i = 0; i < y.size(); ++i)
      negY[i] = -y[i];
    ASSERT_EQ(r.jit.at(0), negY);
    results.push_back(r.jit.at(1));
  }
  EXPECT_EQ(results[0], results[1]);
}

TEST(Reshape, LaneMovingReshapeOfFewRowGroupsDividesKOverCores) {
  // [4096, 100] -> [1, 409600]: one row group; its 4096 rows go to the cores in slices of
  // multiples of 16 (whole sticks of the output row), and the start addresses the frontend
  // writes are the ones the backend derives (compileSuperDsc checks them).
  auto [plan, ops] = compileOps("graph(%x: f16[4096, 100]) {\n  %r = reshape(%x) : f16[6400, 64]\n"
                                "  %e = neg(%r) : f16[6400, 64]\n  return (%e)\n}\n");
  ASSERT_EQ(ops, (std::vector<std::string>{"reshape", "neg"}));
  const isa::SuperDsc &s = plan.launches[0].sdsc;
  EXPECT_EQ(s.numCoresUsed, 32);
  EXPECT_EQ(s.numWkSlicesPerDim[1], 32);
  EXPECT_NO_THROW(backend::compileSuperDsc(s));
}
