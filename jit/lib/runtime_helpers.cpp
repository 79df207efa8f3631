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
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <memory>

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

namespace {

/// One DMA row of `run` bytes (whole 128-byte sticks) from LX to DDR with non-temporal stores;
/// the DDR start is 64-byte aligned and LX rows are 128-byte aligned (verified).
void streamRow(uint8_t *d, const uint8_t *l, int64_t run) {
#if defined(__x86_64__)
  for (int64_t o = 0; o < run; o += 16)
    _mm_stream_si128(reinterpret_cast<__m128i *>(d + o), _mm_load_si128(reinterpret_cast<const __m128i *>(l + o)));
#else
  std::memcpy(d, l, static_cast<size_t>(run));
#endif
}

template <int64_t Run>
void dmaRows(uint8_t *lx, uint8_t *ddr, int64_t n0, int64_t n1, int64_t run, int64_t lxS0, int64_t lxS1,
             int64_t ddrS0, int64_t ddrS1, int32_t mode) {
  const size_t bytes = static_cast<size_t>(Run > 0 ? Run : run); // a constant size inlines the copy
  for (int64_t i2 = 0; i2 < n0; ++i2)
    for (int64_t i1 = 0; i1 < n1; ++i1) {
      uint8_t *l = lx + i2 * lxS0 + i1 * lxS1, *d = ddr + i2 * ddrS0 + i1 * ddrS1;
      if (mode == kDmaToLx)
        std::memcpy(l, d, bytes);
      else if (mode == kDmaStreamOut && (reinterpret_cast<uintptr_t>(d) & 63) == 0)
        streamRow(d, l, static_cast<int64_t>(bytes));
      else
        std::memcpy(d, l, bytes);
    }
}

} // namespace

extern "C" void spyre_jit_dma(uint8_t *lx, uint8_t *ddr, int64_t n0, int64_t n1, int64_t run, int64_t lxS0,
                              int64_t lxS1, int64_t ddrS0, int64_t ddrS1, int32_t mode) {
  if (run == 128)
    dmaRows<128>(lx, ddr, n0, n1, run, lxS0, lxS1, ddrS0, ddrS1, mode);
  else if (run == 256)
    dmaRows<256>(lx, ddr, n0, n1, run, lxS0, lxS1, ddrS0, ddrS1, mode);
  else
    dmaRows<0>(lx, ddr, n0, n1, run, lxS0, lxS1, ddrS0, ddrS1, mode);
#if defined(__x86_64__)
  // Streaming stores are weakly ordered: fence them before any other core (host thread) can
  // read the rows after the next barrier.
  if (mode == kDmaStreamOut)
    _mm_sfence();
#endif
}

extern "C" void spyre_jit_pt_mm(uint8_t *C, const uint8_t *A, const uint8_t *B, int64_t M, int64_t N, int64_t K,
                                int32_t acc) {
  isa::ptMm(C, A, B, M, N, K, acc != 0);
}

namespace {
/// This host thread's decoded-B state (lower_pt.cpp): the fp32 mirror of LX and, for the range
/// [lo, hi) the last decode filled, a copy of the DL16 bytes it decoded (`raw`, at the same LX
/// offsets). mirror[lo, hi) == decode(raw[lo, hi)) always holds: only the pt.mm lowering writes
/// the mirror, and it records every decode (spyre_jit_b_decoded).
struct DecodedB {
  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> mirror;
  std::unique_ptr<uint8_t, Free> raw;
  int64_t lo = 0, hi = 0;
};
DecodedB &decodedB() {
  // Only the pages under decoded B tiles are ever touched.
  thread_local DecodedB d = [] {
    DecodedB n;
    n.mirror.reset(static_cast<float *>(std::aligned_alloc(4096, sim::kLxBytes / 2 * sizeof(float))));
    n.raw.reset(static_cast<uint8_t *>(std::aligned_alloc(4096, sim::kLxBytes)));
    if (!n.mirror || !n.raw) { // JIT frames are nounwind: an exception could not pass them
      std::fputs("spyre-jit: out of memory for the decoded-LX mirror (6 MiB)\n", stderr);
      std::abort();
    }
    return n;
  }();
  return d;
}
} // namespace

extern "C" float *spyre_jit_decoded_lx() { return decodedB().mirror.get(); }

extern "C" int32_t spyre_jit_b_reuse(const uint8_t *lx, int64_t off, int64_t bytes) {
  DecodedB &d = decodedB();
  return d.lo <= off && off + bytes <= d.hi &&
         std::memcmp(lx + off, d.raw.get() + off, static_cast<size_t>(bytes)) == 0;
}

extern "C" void spyre_jit_b_decoded(const uint8_t *lx, int64_t off, int64_t bytes, int32_t keep) {
  DecodedB &d = decodedB();
  if (!keep) { // the mirror no longer holds a recorded decode
    d.lo = d.hi = 0;
    return;
  }
  std::memcpy(d.raw.get() + off, lx + off, static_cast<size_t>(bytes));
  d.lo = off;
  d.hi = off + bytes;
}

extern "C" void spyre_jit_pt_out(uint8_t *D, const uint8_t *C, int64_t M, int64_t N) { isa::ptOut(D, C, M, N); }

extern "C" void spyre_jit_pt_tr(uint8_t *D, const uint8_t *S, int64_t R, int64_t C) { isa::ptTr(D, S, R, C); }

} // namespace spyre::jit
