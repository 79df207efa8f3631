// reshape: zero-copy where both generic stick layouts put every element at the same device
// bytes (an alias of the input's buffer, or one copy kernel when the result is a graph output),
// a stick-reordering restickify where leading dims merge or split under the same last dim,
// Unsupported where elements would move between lanes.
#include "plan_runner.h"
#include "spyre/frontend/compiler.h"
#include "spyre/isa/error.h"
#include <cmath>
#include <gtest/gtest.h>

using namespace spyre;
using frontend::reshapeKeepsDeviceBytes;

namespace {
/// The graph compiled for 32 cores and its kernels' ops, in launch order.
std::pair<isa::JobPlan, std::vector<std::string>> compileOps(const std::string &text) {
  isa::JobPlan p = frontend::compileGraph(frontend::parseGraph(text), {32, ""});
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

TEST(Reshape, ElementsMovingBetweenLanesAreUnsupported) {
  // [6, 4, 64] -> [4, 6, 64] has no common refinement of its leading dims, and [64, 100] ->
  // [100, 64] moves elements across lanes: both stay Unsupported (restaged through the host).
  for (const char *text : {"graph(%x: f16[6, 4, 64]) {\n  %t = reshape(%x) : f16[4, 6, 64]\n  %e = exp(%t) : f16[4, 6, 64]\n"
                           "  return (%e)\n}\n",
                           "graph(%x: f16[64, 100]) {\n  %t = reshape(%x) : f16[100, 64]\n  %e = exp(%t) : f16[100, 64]\n"
                           "  return (%e)\n}\n"}) {
    try {
      frontend::compileGraph(frontend::parseGraph(text), {32, ""});
      ADD_FAILURE() << "compiled " << text;
    } catch (const Unsupported &e) {
      EXPECT_NE(std::string(e.what()).find("that moves elements between sticks"), std::string::npos) << e.what();
    }
  }
}

TEST(Reshape, InternalClonesAlias) {
  // .contiguous() after a materialised op: the clone runs no kernel; a cloned graph output does.
  std::string text = "graph(%x: f16[64, 256]) {\n  %p = neg(%x) : f16[64, 256]\n  %c = clone(%p) : f16[64, 256]\n"
                     "  %e = exp(%c) : f16[64, 256]\n  %o = clone(%e) : f16[64, 256]\n  return (%o)\n}\n";
  auto [p, ops] = compileOps(text);
  EXPECT_EQ(ops, (std::vector<std::string>{"neg", "exp", "identity"}));
  std::vector<float> x = ramp();
  auto interp = sim::makeInterpreter();
  test::PlanRunner r(p, *interp);
  r.setInput(0, x);
  r.run();
  std::vector<float> o = r.output(0);
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_NEAR(o[i], std::exp(-x[i]), 0.01 * std::exp(-x[i])) << i;
}
