#include "spyre/isa/dl16.h"
#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

namespace {
uint16_t floatToHalfSoft(float f) {
  // _Float16 conversion is IEEE round-to-nearest-even on x86 (GCC >= 12): without -mf16c a
  // libgcc call (__truncsfhf2, soft-float: ~3 % of a small model's warm forward, converting
  // its logits to the host).
  _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}
#if defined(__x86_64__)
__attribute__((target("f16c"))) uint16_t floatToHalfF16c(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
#endif
} // namespace

uint16_t floatToHalf(float f) {
#if defined(__x86_64__)
  // vcvtps2ph rounds to nearest even as the IEEE cast does; NaNs keep the soft path (payloads).
  static const bool f16c = __builtin_cpu_supports("f16c");
  if (f16c && f == f)
    return floatToHalfF16c(f);
#endif
  return floatToHalfSoft(f);
}

uint16_t floatToBf16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<uint16_t>((u >> 16) | 0x40u); // quiet NaN
  uint32_t lsb = (u >> 16) & 1u;
  return static_cast<uint16_t>((u + 0x7FFFu + lsb) >> 16);
}

} // namespace spyre::dl16
