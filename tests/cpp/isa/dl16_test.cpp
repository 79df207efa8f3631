#include "spyre/isa/dl16.h"
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>

using namespace spyre;

namespace {
// Independent reference: nearest DL16 value of x by exact arithmetic in double, ties away from
// zero, flush below the smallest normal, inf above the largest finite.
uint16_t refEncode(double x) {
  if (std::isnan(x))
    return dl16::kInfCode;
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  double a = std::fabs(x);
  if (std::isinf(a))
    return sign | 0x7FFF;
  if (a == 0)
    return sign;
  int e;
  double m = std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
  double sig = m * 2;           // [1, 2)
  int exp = e - 1;
  double frac = (sig - 1) * 512;
  double fl = std::floor(frac);
  double q = (frac - fl >= 0.5) ? fl + 1 : fl; // ties away (magnitude)
  if (q == 512) {
    q = 0;
    exp += 1;
  }
  int field = exp + 31;
  if (field < 0 || (field == 0 && q == 0))
    return sign;
  if (field > 63 || (field == 63 && q == 511))
    return sign | 0x7FFF;
  return sign | static_cast<uint16_t>(field << 9) | static_cast<uint16_t>(q);
}
} // namespace

TEST(DL16, PublishedConstants) {
  EXPECT_EQ(dl16::fromFloat(0.00390625f), 11776);
  EXPECT_EQ(dl16::fromFloat(1e-5f), 7327);
  EXPECT_EQ(dl16::fromFloat(1.0f), 31 << 9);
  EXPECT_EQ(dl16::toFloat(11776), 0.00390625f);
}

TEST(DL16, ExhaustiveDecodeEncodeRoundTrip) {
  for (uint32_t c = 0; c < 65536; ++c) {
    float f = dl16::toFloat(static_cast<uint16_t>(c));
    ASSERT_EQ(dl16::fromFloat(f), c) << "code " << c << " value " << f;
    if ((c & 0x7FFF) == 0x7FFF)
      ASSERT_TRUE(std::isinf(f));
    else
      ASSERT_TRUE(std::isfinite(f));
  }
}

TEST(DL16, DecodeIsExactValue) {
  for (uint32_t c = 0; c < 65536; ++c) {
    uint16_t h = static_cast<uint16_t>(c);
    int s = h >> 15, e = (h >> 9) & 63, f = h & 511;
    double expect;
    if (e == 63 && f == 511)
      expect = INFINITY;
    else if (e == 0 && f == 0)
      expect = 0;
    else
      expect = std::ldexp(1.0 + f / 512.0, e - 31);
    ASSERT_EQ(static_cast<double>(dl16::toFloat(h)), s ? -expect : expect) << c;
  }
}

TEST(DL16, ExhaustiveFp16) {
  for (uint32_t c = 0; c < 65536; ++c) {
    uint16_t h = static_cast<uint16_t>(c);
    float f = dl16::halfToFloat(h);
    ASSERT_EQ(dl16::fromHalf(h), refEncode(f)) << "fp16 code " << c;
    // fp16 -> DL16 -> fp16 is within one fp16 ulp (DL16 has one fraction bit fewer).
    if (std::fabs(f) >= 65504.0f) {
      // fp16's largest finite value rounds (ties away) to 2^16 in DL16, which is inf in fp16.
      ASSERT_TRUE(std::isinf(dl16::halfToFloat(dl16::toHalf(dl16::fromHalf(h))))) << c;
    } else if (std::isfinite(f)) {
      float back = dl16::halfToFloat(dl16::toHalf(dl16::fromHalf(h)));
      float ulp = std::fabs(f) * 0x1p-10f + 0x1p-24f;
      ASSERT_LE(std::fabs(back - f), ulp) << c;
    }
  }
}

TEST(DL16, RoundingTiesAwayFromZero) {
  // 1 + 1/1024 is halfway between 1 and 1 + 1/512: rounds up in magnitude.
  EXPECT_EQ(dl16::toFloat(dl16::fromFloat(1.0f + 1.0f / 1024)), 1.0f + 1.0f / 512);
  EXPECT_EQ(dl16::toFloat(dl16::fromFloat(-1.0f - 1.0f / 1024)), -1.0f - 1.0f / 512);
  // just below the tie rounds down
  EXPECT_EQ(dl16::toFloat(dl16::fromFloat(std::nextafter(1.0f + 1.0f / 1024, 0.0f))), 1.0f);
}

TEST(DL16, RandomFp32AgainstReference) {
  uint32_t s = 12345;
  for (int i = 0; i < 2000000; ++i) {
    s = s * 1664525u + 1013904223u;
    float f = dl16::bitsFloat(s);
    ASSERT_EQ(dl16::fromFloat(f), refEncode(f)) << std::hex << s;
  }
}

TEST(DL16, SpecialValuesAndRange) {
  EXPECT_EQ(dl16::fromFloat(INFINITY), 0x7FFF);
  EXPECT_EQ(dl16::fromFloat(-INFINITY), 0xFFFF);
  EXPECT_EQ(dl16::fromFloat(NAN), 0x7FFF);
  EXPECT_EQ(dl16::fromFloat(0.0f), 0);
  EXPECT_EQ(dl16::fromFloat(-0.0f), 0x8000);
  const float maxFinite = std::ldexp(1.0f + 510.0f / 512, 32);
  const float minNormal = std::ldexp(1.0f + 1.0f / 512, -31);
  EXPECT_EQ(dl16::toFloat(0x7FFE), maxFinite);
  EXPECT_EQ(dl16::toFloat(0x0001), minNormal);
  EXPECT_EQ(dl16::fromFloat(maxFinite * 1.01f), 0x7FFF);  // overflow -> inf code
  EXPECT_EQ(dl16::fromFloat(std::ldexp(1.0f, -31)), 0);    // exponent 0, fraction 0 is zero
  EXPECT_EQ(dl16::fromFloat(std::ldexp(1.0f, -40)), 0);    // underflow flushes
  EXPECT_EQ(dl16::fromFloat(-std::ldexp(1.0f, -40)), 0x8000);
}

TEST(DL16, Bf16) {
  EXPECT_EQ(dl16::fromBf16(0x3F80), dl16::fromFloat(1.0f));
  for (uint32_t c = 0; c < 65536; ++c) {
    uint16_t b = static_cast<uint16_t>(c);
    ASSERT_EQ(dl16::fromBf16(b), refEncode(dl16::bf16ToFloat(b))) << c;
  }
}

// floatToHalf takes F16C's vcvtss2sh where the host has it: it must round as the IEEE cast
// does (nearest even, overflow to inf, subnormals) for every DL16 value and for fp32 bit
// patterns around every half rounding boundary (low 13 bits at and beside the tie).
TEST(DL16, FloatToHalfMatchesTheIeeeCast) {
  auto cast = [](float f) {
    _Float16 h = static_cast<_Float16>(f);
    uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
  };
  for (uint32_t c = 0; c < 65536; ++c) {
    const float f = dl16::toFloat(static_cast<uint16_t>(c));
    if (!std::isnan(f))
      ASSERT_EQ(dl16::floatToHalf(f), cast(f)) << c;
  }
  for (uint32_t hi = 0; hi < (1u << 19); ++hi)
    for (uint32_t lo : {0u, 1u, 0xFFFu, 0x1000u, 0x1001u, 0x1FFFu}) {
      const uint32_t u = (hi << 13) | lo;
      float f;
      std::memcpy(&f, &u, 4);
      if (!std::isnan(f))
        ASSERT_EQ(dl16::floatToHalf(f), cast(f)) << std::hex << u;
    }
}
