// Runtime helpers called from JIT code of the O0 tier: ld/st of one stick between LX and a
// vector register, exactly as the interpreter does them.
#include "lowering.h"
#include "spyre/isa/dl16.h"
#include <cstring>

namespace spyre::jit {

extern "C" void spyre_jit_ld(uint32_t fmt, float *v, const uint8_t *p) {
  if (static_cast<isa::Format>(fmt) == isa::Format::DL16) {
    for (int l = 0; l < isa::kLanes; ++l) {
      uint16_t h;
      std::memcpy(&h, p + 2 * l, 2);
      v[l] = dl16::toFloat(h);
    }
  } else {
    std::memcpy(v, p, 128);
    std::memset(v + 32, 0, 128);
  }
}

extern "C" void spyre_jit_st(uint32_t fmt, const float *v, uint8_t *p) {
  if (static_cast<isa::Format>(fmt) == isa::Format::DL16) {
    for (int l = 0; l < isa::kLanes; ++l) {
      uint16_t h = dl16::fromFloat(v[l]);
      std::memcpy(p + 2 * l, &h, 2);
    }
  } else {
    std::memcpy(p, v, 128);
  }
}

} // namespace spyre::jit
