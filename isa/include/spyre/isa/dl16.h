// IBM DLFloat16 (SEN169_FP16): 1 sign, 6 exponent bits (bias 31), 9 fraction bits.
//
// Published properties (SPYRE.md §2): no subnormals; exponent field 0 holds zero (fraction 0)
// and normal numbers (fraction != 0); the all-ones code (0x7FFF, sign ignored) is the one merged
// NaN/infinity code; one rounding mode, round to nearest with ties away from zero.
//
// Our documented choices (docs/isa.md, "DL16"):
//  * underflow: a value whose rounded magnitude is below the smallest normal
//    2^-31 * (1 + 1/512) flushes to zero, keeping its sign (-0 is code 0x8000);
//  * overflow: a value whose rounded magnitude exceeds the largest finite value
//    2^32 * (1 + 510/512) ≈ 8.57e9 becomes the NaN/infinity code with its sign (no saturation);
//  * NaN encodes to 0x7FFF; decoding sign|0x7FFF gives ±infinity (NaN is not representable:
//    it reads back as +inf);
//  * decoding is exact (every DL16 value is an fp32 value).
//
// These scalar functions are *the* definition. The interpreter calls them; the JIT emits the same
// integer algorithm as vector IR; H2D/D2H DMA calls them. Tests pin them exhaustively.
#pragma once
#include <cstdint>
#include <cstring>

namespace spyre::dl16 {

constexpr uint16_t kInfCode = 0x7FFF; ///< +inf/NaN; 0xFFFF is -inf
constexpr uint32_t kBiasDelta = 96;   ///< fp32 bias 127 - DL16 bias 31

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// fp32 -> DL16, round to nearest, ties away from zero. Branch-free integer form; the JIT's
/// vector lowering is this exact sequence.
inline uint16_t fromFloat(float x) {
  // Branch-free (selects) so lane loops vectorise; the same sequence as the JIT's vector IR.
  uint32_t u = floatBits(x);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t mag = u & 0x7FFFFFFFu;
  // Adding half an ulp of the 9-bit fraction then truncating rounds ties away from zero (in
  // magnitude); a carry propagates into the exponent naturally. +inf rounds to exponent 255.
  uint32_t r = (mag + 0x2000u) >> 14;              // fp32 exponent(8) | fraction(9)
  uint32_t rel = r - (kBiasDelta << 9);
  uint32_t code = rel >= 0x7FFFu ? 0x7FFFu : rel;  // overflow (incl. inf) -> NaN/inf code
  code = r < (kBiasDelta << 9) + 1 ? 0u : code;    // below 2^-31*(1+1/512): flush to zero
  uint32_t res = sign | code;
  res = mag > 0x7F800000u ? uint32_t{kInfCode} : res; // NaN -> merged code
  return static_cast<uint16_t>(res);
}

/// DL16 -> fp32, exact.
inline float toFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t body = h & 0x7FFFu;
  uint32_t u = sign | ((body + (kBiasDelta << 9)) << 14);
  u = body == 0x7FFFu ? (sign | 0x7F800000u) : u;  // merged NaN/inf reads as infinity
  u = body == 0 ? sign : u;                        // (signed) zero
  return bitsFloat(u);
}

/// IEEE binary16 bits -> fp32 (exact; handles subnormals, inf, NaN).
float halfToFloat(uint16_t h);
/// fp32 -> IEEE binary16 bits, round to nearest even (what torch's .half() does).
uint16_t floatToHalf(float f);
inline float bf16ToFloat(uint16_t b) { return bitsFloat(static_cast<uint32_t>(b) << 16); }
/// fp32 -> bfloat16 bits, round to nearest even (what torch does), NaN stays NaN.
uint16_t floatToBf16(float f);

inline uint16_t fromHalf(uint16_t h) { return fromFloat(halfToFloat(h)); }
inline uint16_t fromBf16(uint16_t b) { return fromFloat(bf16ToFloat(b)); }
inline uint16_t toHalf(uint16_t d) { return floatToHalf(toFloat(d)); }
inline uint16_t toBf16(uint16_t d) { return floatToBf16(toFloat(d)); }
/// Round an fp32 value to the nearest DL16 value (fp32 -> DL16 -> fp32).
inline float round(float x) { return toFloat(fromFloat(x)); }

} // namespace spyre::dl16
