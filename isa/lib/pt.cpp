// Reference semantics of the PT instructions on LX tiles (layouts in instructions.def): the
// interpreter runs these and the JIT's O0 tier calls them, so both engines share one definition.
// The JIT's O2 tier lowers pt.mm to its own micro-kernel with the same fma order per element
// and calls ptTr (a data move: nothing to specialise per shape).
#include "spyre/isa/dl16.h"
#include "spyre/isa/semantics.h"
#include <cmath>
#include <cstring>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SPYRE_PT_X86 1
#endif

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

namespace {

#if defined(SPYRE_PT_X86)
/// transposeTile in 16 x 16 blocks of AVX2 registers: the SSE2 8 x 8 network below on both
/// 128-bit halves at once (rows 8g..8g+7 of the block, g = 0, 1), then one vperm2i128 per
/// output row joins the two halves: 64 shuffles per 256 words instead of 96 (≈ 1.25× on this
/// host). A permutation of words, so the result is the SSE2 path's bit for bit.
__attribute__((target("avx2"))) void transposeTileAvx2(uint8_t *dst, const uint8_t *src) {
  for (int bi = 0; bi < 4; ++bi)
    for (int bj = 0; bj < 4; ++bj) {
      __m256i x[2][8];
      for (int g = 0; g < 2; ++g) {
        __m256i a[8], t[8], u[8];
        for (int k = 0; k < 8; ++k)
          a[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + (bi * 16 + g * 8 + k) * 128 + bj * 32));
        for (int k = 0; k < 4; ++k) {
          t[2 * k] = _mm256_unpacklo_epi16(a[2 * k], a[2 * k + 1]);
          t[2 * k + 1] = _mm256_unpackhi_epi16(a[2 * k], a[2 * k + 1]);
        }
        for (int k = 0; k < 2; ++k) {
          u[4 * k] = _mm256_unpacklo_epi32(t[4 * k], t[4 * k + 2]);
          u[4 * k + 1] = _mm256_unpackhi_epi32(t[4 * k], t[4 * k + 2]);
          u[4 * k + 2] = _mm256_unpacklo_epi32(t[4 * k + 1], t[4 * k + 3]);
          u[4 * k + 3] = _mm256_unpackhi_epi32(t[4 * k + 1], t[4 * k + 3]);
        }
        // x[g][j]: 128-bit half h = column 8h + j of the block, rows 8g..8g+7.
        for (int k = 0; k < 4; ++k) {
          x[g][2 * k] = _mm256_unpacklo_epi64(u[k], u[k + 4]);
          x[g][2 * k + 1] = _mm256_unpackhi_epi64(u[k], u[k + 4]);
        }
      }
      for (int j = 0; j < 8; ++j) {
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst + (bj * 16 + j) * 128 + bi * 32),
                            _mm256_permute2x128_si256(x[0][j], x[1][j], 0x20));
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst + (bj * 16 + 8 + j) * 128 + bi * 32),
                            _mm256_permute2x128_si256(x[0][j], x[1][j], 0x31));
      }
    }
}

bool hostHasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
#endif

/// One 64 x 64 tile of 16-bit words: dst stick c, lane r = src stick r, lane c (both tiles are
/// 64 consecutive 128-byte sticks). In 8 x 8 blocks with SSE2 unpacks (16 x 16 with AVX2 where
/// the host has it), a word at a time elsewhere.
void transposeTile(uint8_t *dst, const uint8_t *src) {
#if defined(SPYRE_PT_X86)
  if (hostHasAvx2()) {
    transposeTileAvx2(dst, src);
    return;
  }
  for (int bi = 0; bi < 8; ++bi)
    for (int bj = 0; bj < 8; ++bj) {
      __m128i a[8], t[8], u[8];
      for (int k = 0; k < 8; ++k)
        a[k] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + (bi * 8 + k) * 128 + bj * 16));
      for (int k = 0; k < 4; ++k) {
        t[2 * k] = _mm_unpacklo_epi16(a[2 * k], a[2 * k + 1]);
        t[2 * k + 1] = _mm_unpackhi_epi16(a[2 * k], a[2 * k + 1]);
      }
      for (int k = 0; k < 2; ++k) {
        u[4 * k] = _mm_unpacklo_epi32(t[4 * k], t[4 * k + 2]);
        u[4 * k + 1] = _mm_unpackhi_epi32(t[4 * k], t[4 * k + 2]);
        u[4 * k + 2] = _mm_unpacklo_epi32(t[4 * k + 1], t[4 * k + 3]);
        u[4 * k + 3] = _mm_unpackhi_epi32(t[4 * k + 1], t[4 * k + 3]);
      }
      for (int k = 0; k < 4; ++k) {
        _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + (bj * 8 + 2 * k) * 128 + bi * 16),
                         _mm_unpacklo_epi64(u[k], u[k + 4]));
        _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + (bj * 8 + 2 * k + 1) * 128 + bi * 16),
                         _mm_unpackhi_epi64(u[k], u[k + 4]));
      }
    }
#else
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c)
      std::memcpy(dst + c * 128 + 2 * r, src + r * 128 + 2 * c, 2);
#endif
}

} // namespace

void ptTr(uint8_t *D, const uint8_t *S, int64_t R, int64_t C) {
  if (R % 64 == 0 && C % 64 == 0) {
    // Tile (rt, ct) of S (sticks ct*R + rt*64 ..) is tile (ct, rt) of D (sticks rt*C + ct*64 ..).
    for (int64_t rt = 0; rt < R / 64; ++rt)
      for (int64_t ct = 0; ct < C / 64; ++ct)
        transposeTile(D + (rt * C + ct * 64) * 128, S + (ct * R + rt * 64) * 128);
    return;
  }
  for (int64_t r = 0; r < R; ++r)
    for (int64_t col = 0; col < C; ++col)
      std::memcpy(D + ((r / 64) * C + col) * 128 + 2 * (r % 64), S + ((col / 64) * R + r) * 128 + 2 * (col % 64), 2);
}

} // namespace spyre::isa
