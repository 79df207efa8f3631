// Reference semantics of the PT instructions on LX tiles (layouts in instructions.def): the
// interpreter runs these and the JIT's O0 tier calls them, so both engines share one definition.
// The JIT's O2 tier lowers pt.mm to its own micro-kernel with the same fma order per element.
#include "spyre/isa/dl16.h"
#include "spyre/isa/semantics.h"
#include <cmath>
#include <cstring>

namespace spyre::isa {

void ptMm(uint8_t *C, const uint8_t *A, const uint8_t *B, int64_t M, int64_t N, int64_t K, bool acc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t n = 0; n < N; ++n) {
      float *cp = reinterpret_cast<float *>(C + ((n / 32) * M + i) * 128) + n % 32;
      float sum = acc ? *cp : 0.0f;
      for (int64_t k = 0; k < K; ++k) {
        uint16_t a, b;
        std::memcpy(&a, A + ((k / 64) * M + i) * 128 + 2 * (k % 64), 2);
        std::memcpy(&b, B + ((n / 64) * K + k) * 128 + 2 * (n % 64), 2);
        sum = std::fma(dl16::toFloat(a), dl16::toFloat(b), sum);
      }
      *cp = sum;
    }
}

void ptOut(uint8_t *D, const uint8_t *C, int64_t M, int64_t N) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t n = 0; n < N; ++n) {
      float v;
      std::memcpy(&v, C + ((n / 32) * M + i) * 128 + 4 * (n % 32), 4);
      uint16_t h = dl16::fromFloat(v);
      std::memcpy(D + ((n / 64) * M + i) * 128 + 2 * (n % 64), &h, 2);
    }
}

void ptTr(uint8_t *D, const uint8_t *S, int64_t R, int64_t C) {
  for (int64_t r = 0; r < R; ++r)
    for (int64_t col = 0; col < C; ++col)
      std::memcpy(D + ((r / 64) * C + col) * 128 + 2 * (r % 64), S + ((col / 64) * R + r) * 128 + 2 * (col % 64), 2);
}

} // namespace spyre::isa
