// Runtime helpers called from JIT code of the O0 tier: ld/st of one stick between LX and a
// vector register, with the semantics of the interpreter (dl16::toFloat / dl16::fromFloat per
// lane; f32/i32 sticks fill lanes 0..31 and clear 32..63). Written branch-free over local
// arrays so the compiler vectorises them; the differential tests compare them bit for bit
// with the interpreter.
#include "lowering.h"
#include "spyre/isa/dl16.h"
#include <cstring>

namespace spyre::jit {

namespace {
constexpr uint32_t kBias = dl16::kBiasDelta << 9; // the exponent bias difference in code units
}

extern "C" void spyre_jit_ld(uint32_t fmt, float *v, const uint8_t *p) {
  if (static_cast<isa::Format>(fmt) != isa::Format::DL16) {
    std::memcpy(v, p, 128);
    std::memset(v + 32, 0, 128);
    return;
  }
  uint16_t h[isa::kLanes];
  uint32_t u[isa::kLanes];
  std::memcpy(h, p, sizeof h);
  for (int l = 0; l < isa::kLanes; ++l) {
    uint32_t sign = static_cast<uint32_t>(h[l] & 0x8000u) << 16;
    uint32_t body = h[l] & 0x7FFFu;
    uint32_t normal = sign | ((body + kBias) << 14);
    uint32_t x = body == 0x7FFFu ? (sign | 0x7F800000u) : normal;
    u[l] = body == 0 ? sign : x;
  }
  std::memcpy(v, u, sizeof u);
}

extern "C" void spyre_jit_st(uint32_t fmt, const float *v, uint8_t *p) {
  if (static_cast<isa::Format>(fmt) != isa::Format::DL16) {
    std::memcpy(p, v, 128);
    return;
  }
  uint32_t u[isa::kLanes];
  uint16_t h[isa::kLanes];
  std::memcpy(u, v, sizeof u);
  for (int l = 0; l < isa::kLanes; ++l) {
    uint32_t sign = (u[l] >> 16) & 0x8000u;
    uint32_t mag = u[l] & 0x7FFFFFFFu;
    uint32_t r = (mag + 0x2000u) >> 14;
    uint32_t rel = r - kBias;
    uint32_t code = rel >= 0x7FFFu ? 0x7FFFu : rel;
    code = r < kBias + 1 ? 0 : code;
    uint32_t res = sign | code;
    h[l] = static_cast<uint16_t>(mag > 0x7F800000u ? 0x7FFFu : res);
  }
  std::memcpy(p, h, sizeof h);
}

} // namespace spyre::jit
