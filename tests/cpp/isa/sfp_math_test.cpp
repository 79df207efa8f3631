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
