#include "spyre/isa/dl16.h"

namespace spyre::dl16 {

float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t frac = h & 0x3FFu;
  if (exp == 0x1F)
    return bitsFloat(sign | 0x7F800000u | (frac << 13));
  if (exp == 0) {
    if (frac == 0)
      return bitsFloat(sign);
    // Subnormal: value = frac * 2^-24, exactly representable in fp32.
    float v = static_cast<float>(frac) * 0x1p-24f;
    return sign ? -v : v;
  }
  return bitsFloat(sign | ((exp + 112) << 23) | (frac << 13));
}

uint16_t floatToHalf(float f) {
  // _Float16 conversion is IEEE round-to-nearest-even on x86 (GCC >= 12, libgcc or F16C).
  _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

uint16_t floatToBf16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<uint16_t>((u >> 16) | 0x40u); // quiet NaN
  uint32_t lsb = (u >> 16) & 1u;
  return static_cast<uint16_t>((u + 0x7FFFu + lsb) >> 16);
}

} // namespace spyre::dl16
