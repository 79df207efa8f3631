// LX planning: torch-spyre's greedy solver, rule by rule (lx_planner.h), plus malformed input.
#include "spyre/frontend/lx_planner.h"
#include "spyre/isa/error.h"
#include <gtest/gtest.h>

using namespace spyre;
using namespace spyre::frontend;

namespace {
std::vector<std::optional<int64_t>> solve(const std::vector<LxBuffer> &b, int64_t cap = kLxUsableBytes) {
  return planLxGreedy(b, cap).address;
}
constexpr std::nullopt_t ddr = std::nullopt;
} // namespace

TEST(LxPlanner, DisjointLifetimesShareAddressZero) {
  EXPECT_EQ(solve({{"a", 4096, 0, 2, {}}, {"b", 8192, 2, 4, {}}, {"c", 128, 5, 6, {}}}),
            (std::vector<std::optional<int64_t>>{0, 0, 0}));
}

TEST(LxPlanner, OverlappingBuffersStackAtTheAlignedHighWaterMark) {
  // b starts while a lives: a's end (100) rounds up to 128; c above both.
  EXPECT_EQ(solve({{"a", 100, 0, 3, {}}, {"b", 300, 1, 3, {}}, {"c", 128, 2, 3, {}}}),
            (std::vector<std::optional<int64_t>>{0, 128, 512}));
}

TEST(LxPlanner, BufferFitsBelowTheLowestLiveAddress) {
  // a and b live; a ends at 2, leaving [0, 256) free below b: c (256 B) goes to 0.
  EXPECT_EQ(solve({{"a", 256, 0, 2, {}}, {"b", 512, 1, 5, {}}, {"c", 256, 2, 5, {}}}),
            (std::vector<std::optional<int64_t>>{0, 256, 0}));
}

TEST(LxPlanner, InPlaceChildTakesItsParentsSlot) {
  // sub (parent) -> exp (in place): exp's lifetime starts at sub's last use.
  auto a = solve({{"max", 128, 0, 2, {}}, {"sub", 4096, 1, 3, {}}, {"exp", 4096, 2, 5, {1}}, {"sum", 128, 3, 5, {}}});
  EXPECT_EQ(a, (std::vector<std::optional<int64_t>>{0, 128, 128, 0}));
}

TEST(LxPlanner, InPlaceOnlyWhenTheChildFits) {
  auto a = solve({{"p", 256, 0, 2, {}}, {"c", 512, 1, 3, {0}}});
  EXPECT_EQ(a, (std::vector<std::optional<int64_t>>{0, 256}));
}

TEST(LxPlanner, FirstGapWhenTheHighWaterMarkIsFull) {
  // Capacity 1024: a [0,256), b [256,512) dies at 2, c [512,1024); d (200 B) at t=2 cannot go
  // above c (1024 + 200 > 1024) nor below a, so it takes the gap b left.
  auto a = solve({{"a", 256, 0, 9, {}}, {"b", 256, 0, 2, {}}, {"c", 512, 0, 9, {}}, {"d", 200, 2, 9, {}}}, 1024);
  EXPECT_EQ(a, (std::vector<std::optional<int64_t>>{0, 256, 512, 256}));
}

TEST(LxPlanner, WhatDoesNotFitStaysInDdr) {
  auto a = solve({{"big", kLxUsableBytes + 1, 0, 2, {}}, {"a", 1000000, 0, 3, {}}, {"b", 1000000, 1, 3, {}}});
  EXPECT_EQ(a[0], ddr);
  EXPECT_EQ(a[1], 0);
  EXPECT_EQ(a[2], ddr); // 1000064 + 1000000 > 1677721 and no gap
  LxPlan p = planLxGreedy({{"a", 1000000, 0, 3, {}}, {"b", 1000000, 1, 3, {}}});
  EXPECT_EQ(p.peakBytes, 1000000);
  EXPECT_EQ(p.summary({{"a", 1000000, 0, 3, {}}, {"b", 1000000, 1, 3, {}}}),
            "a size=1000000 live=[0,3) -> lx 0x0\nb size=1000000 live=[1,3) -> ddr\n");
}

TEST(LxPlanner, MalformedBuffersAreErrors) {
  auto msg = [](std::vector<LxBuffer> b) {
    try {
      planLxGreedy(b);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_EQ(msg({{"x", 0, 0, 1, {}}}), "LX planning: buffer 0 (x): size 0 must be >= 1");
  EXPECT_EQ(msg({{"x", 128, 3, 3, {}}}), "LX planning: buffer 0 (x): lifetime [3, 3) is empty");
  EXPECT_EQ(msg({{"x", 128, 0, 1, {0}}}), "LX planning: buffer 0 (x): in-place parent 0 is not an earlier buffer");
}
