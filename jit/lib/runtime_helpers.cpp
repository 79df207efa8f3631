// Runtime helpers called from JIT code of the O0 tier, with the semantics of the interpreter:
// ld/st/ld.pad of one stick between LX and a vector register (dl16::toFloat / dl16::fromFloat
// per lane; f32/i32 sticks fill lanes 0..31 and clear 32..63), the DMA row copies and the PT
// tiles (the interpreter's loops). O0 exists to compile fast: one call per instruction is far
// cheaper to compile than the inline vector code of O2. The ld/st loops are branch-free over
// local arrays so the compiler vectorises them; the differential tests compare every helper bit
// for bit with the interpreter.
#include "lowering.h"
#include "spyre/isa/dl16.h"
#include "spyre/isa/semantics.h"
#include "spyre/sim/machine.h"
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <memory>
#include <mutex>

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

extern "C" void spyre_jit_ld_pad(uint32_t fmt, float *v, const uint8_t *p, int64_t n, float fill) {
  spyre_jit_ld(fmt, v, p);
  int64_t width = static_cast<isa::Format>(fmt) == isa::Format::DL16 ? isa::kLanes : isa::kLanes / 2;
  for (int64_t l = n; l < width; ++l)
    v[l] = fill; // already rounded to the format by the lowering
}

extern "C" void spyre_jit_dma(uint8_t *lx, uint8_t *ddr, int64_t n0, int64_t n1, int64_t run, int64_t lxS0,
                              int64_t lxS1, int64_t ddrS0, int64_t ddrS1, int32_t toLx) {
  for (int64_t i2 = 0; i2 < n0; ++i2)
    for (int64_t i1 = 0; i1 < n1; ++i1) {
      uint8_t *l = lx + i2 * lxS0 + i1 * lxS1, *d = ddr + i2 * ddrS0 + i1 * ddrS1;
      if (toLx)
        std::memcpy(l, d, static_cast<size_t>(run));
      else
        std::memcpy(d, l, static_cast<size_t>(run));
    }
}

extern "C" void spyre_jit_pt_mm(uint8_t *C, const uint8_t *A, const uint8_t *B, int64_t M, int64_t N, int64_t K,
                                int32_t acc) {
  isa::ptMm(C, A, B, M, N, K, acc != 0);
}

extern "C" float *spyre_jit_decoded_lx() {
  // Only the pages under decoded B tiles are ever touched.
  struct Free {
    void operator()(float *p) const { std::free(p); }
  };
  thread_local std::unique_ptr<float, Free> mirror(
      static_cast<float *>(std::aligned_alloc(4096, sim::kLxBytes / 2 * sizeof(float))));
  if (!mirror) { // JIT frames are nounwind: an exception could not pass them
    std::fputs("spyre-jit: out of memory for the decoded-LX mirror (4 MiB)\n", stderr);
    std::abort();
  }
  return mirror.get();
}

namespace {
alignas(64) float unaryTables[kUnaryTableRows][1u << kUnaryTableBits];
std::once_flag unaryFilled[kUnaryTableRows];
} // namespace

const float *unaryTableRow(unsigned row) {
  std::call_once(unaryFilled[row], [row] {
    float x[isa::kLanes], y[isa::kLanes], unused[isa::kLanes];
    for (uint32_t c0 = 0; c0 < 0x10000; c0 += isa::kLanes) {
      for (unsigned l = 0; l < isa::kLanes; ++l)
        x[l] = dl16::toFloat(static_cast<uint16_t>(c0 + l));
      isa::sfpApply(kUnaryTableOps[row], isa::Format::DL16, y, unused, x, x, x, 0.0f, 0.0f);
      for (unsigned l = 0; l < isa::kLanes; ++l)
        unaryTables[row][dl16::floatBits(x[l]) >> 14] = y[l];
    }
  });
  return unaryTables[row];
}

extern "C" void spyre_jit_pt_out(uint8_t *D, const uint8_t *C, int64_t M, int64_t N) { isa::ptOut(D, C, M, N); }

extern "C" void spyre_jit_pt_tr(uint8_t *D, const uint8_t *S, int64_t R, int64_t C) { isa::ptTr(D, S, R, C); }

} // namespace spyre::jit
