// Accuracy of the SFP's own exp against libm, and its special values.
#include "spyre/isa/dl16.h"
#include "spyre/isa/semantics.h"
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>

using namespace spyre;

namespace {
int64_t ulpDistance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0)
    ia = INT32_MIN - ia;
  if (ib < 0)
    ib = INT32_MIN - ib;
  return std::llabs(static_cast<int64_t>(ia) - ib);
}
} // namespace

TEST(SfpMath, ExpWithinThreeUlpOfLibm) {
  int64_t worst = 0;
  for (float x = -87.0f; x <= 88.0f; x = std::nextafter(x + 0.0007f, INFINITY)) {
    float got = isa::sfpExp(x), ref = std::exp(x);
    worst = std::max(worst, ulpDistance(got, ref));
  }
  EXPECT_LE(worst, 3);
  // DL16 results are identical to DL16-rounded libm except at rare rounding ties.
  int differ = 0, total = 0;
  for (uint32_t c = 0; c < 65536; ++c) {
    float x = dl16::toFloat(static_cast<uint16_t>(c));
    if (!std::isfinite(x) || std::fabs(x) > 80)
      continue;
    ++total;
    differ += dl16::round(isa::sfpExp(x)) != dl16::round(std::exp(x));
  }
  EXPECT_LT(differ, total / 1000) << differ << " of " << total;
}

TEST(SfpMath, ExpSpecialValues) {
  EXPECT_EQ(isa::sfpExp(0.0f), 1.0f);
  EXPECT_EQ(isa::sfpExp(INFINITY), INFINITY);
  EXPECT_EQ(isa::sfpExp(100.0f), INFINITY);
  EXPECT_EQ(isa::sfpExp(-INFINITY), 0.0f);
  EXPECT_EQ(isa::sfpExp(-100.0f), 0.0f);
  uint32_t bits;
  float n = isa::sfpExp(NAN);
  std::memcpy(&bits, &n, 4);
  EXPECT_EQ(bits, isa::kCanonicalNaN);
}

// tanh and erf are our own (isa/lib/sfp.cpp): within 2 / 3 ulp of the double-precision
// functions over the whole fp32 range that does not round to +-1 (a dense walk, every binade).
TEST(SfpMath, TanhAndErfWithinThreeUlp) {
  int64_t worstT = 0, worstE = 0;
  for (float x = 1e-30f; x <= 12.0f; x = std::nextafter(x * 1.00013f, INFINITY))
    for (float s : {x, -x}) {
      worstT = std::max(worstT, ulpDistance(isa::sfpTanh(s), static_cast<float>(std::tanh(static_cast<double>(s)))));
      worstE = std::max(worstE, ulpDistance(isa::sfpErf(s), static_cast<float>(std::erf(static_cast<double>(s)))));
    }
  EXPECT_LE(worstT, 2);
  EXPECT_LE(worstE, 3);
  // After DL16 rounding they agree with DL16-rounded libm except at rare rounding ties.
  int differT = 0, differE = 0, total = 0;
  for (uint32_t c = 0; c < 65536; ++c) {
    float x = dl16::toFloat(static_cast<uint16_t>(c));
    if (!std::isfinite(x))
      continue;
    ++total;
    differT += dl16::round(isa::sfpTanh(x)) != dl16::round(std::tanh(x));
    differE += dl16::round(isa::sfpErf(x)) != dl16::round(std::erf(x));
  }
  EXPECT_LT(differT, total / 1000) << differT << " of " << total;
  EXPECT_LT(differE, total / 1000) << differE << " of " << total;
}

TEST(SfpMath, TanhAndErfSpecialValues) {
  for (float (*f)(float) : {isa::sfpTanh, isa::sfpErf}) {
    EXPECT_EQ(f(0.0f), 0.0f);
    EXPECT_TRUE(std::signbit(f(-0.0f)));
    EXPECT_EQ(f(INFINITY), 1.0f);
    EXPECT_EQ(f(-INFINITY), -1.0f);
    EXPECT_EQ(f(30.0f), 1.0f);
    EXPECT_EQ(f(-30.0f), -1.0f);
    uint32_t bits;
    float n = f(NAN);
    std::memcpy(&bits, &n, 4);
    EXPECT_EQ(bits, isa::kCanonicalNaN);
  }
  EXPECT_EQ(isa::sfpTanh(1e-20f), 1e-20f);
}
