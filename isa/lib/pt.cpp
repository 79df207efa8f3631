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
/// transposeTile in blocks of 8 rows x 16 columns: one 256-bit load per row, the SSE2 8 x 8
/// network below runs in both 128-bit lanes at once, and lane h of result j is column
/// 16 bj + 8h + j (rows 8 bi .. 8 bi + 7, 16 bytes), stored as two 128-bit halves to the two
/// destination sticks. 24 live registers at most (no spills; the full unroll lets GCC keep the
/// arrays in registers: without it -O2 kept them on the stack and ran 3.5x slower, measured
/// 1.9 -> 0.55 us per 64 x 64 tile). A permutation of words, so the result is the SSE2 path's
/// bit for bit.
__attribute__((target("avx2"))) void transposeTileAvx2(uint8_t *dst, const uint8_t *src) {
#pragma GCC unroll 8
  for (int bi = 0; bi < 8; ++bi)
#pragma GCC unroll 4
    for (int bj = 0; bj < 4; ++bj) {
      __m256i a[8], t[8], u[8];
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k)
        a[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + (bi * 8 + k) * 128 + bj * 32));
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        t[2 * k] = _mm256_unpacklo_epi16(a[2 * k], a[2 * k + 1]);
        t[2 * k + 1] = _mm256_unpackhi_epi16(a[2 * k], a[2 * k + 1]);
      }
#pragma GCC unroll 2
      for (int k = 0; k < 2; ++k) {
        u[4 * k] = _mm256_unpacklo_epi32(t[4 * k], t[4 * k + 2]);
        u[4 * k + 1] = _mm256_unpackhi_epi32(t[4 * k], t[4 * k + 2]);
        u[4 * k + 2] = _mm256_unpacklo_epi32(t[4 * k + 1], t[4 * k + 3]);
        u[4 * k + 3] = _mm256_unpackhi_epi32(t[4 * k + 1], t[4 * k + 3]);
      }
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const __m256i lo = _mm256_unpacklo_epi64(u[k], u[k + 4]), hi = _mm256_unpackhi_epi64(u[k], u[k + 4]);
        uint8_t *d = dst + (bj * 16 + 2 * k) * 128 + bi * 16; // column 16 bj + 2k, lane 0
        _mm_storeu_si128(reinterpret_cast<__m128i *>(d), _mm256_castsi256_si128(lo));
        _mm_storeu_si128(reinterpret_cast<__m128i *>(d + 128), _mm256_castsi256_si128(hi));
        _mm_storeu_si128(reinterpret_cast<__m128i *>(d + 8 * 128), _mm256_extracti128_si256(lo, 1));
        _mm_storeu_si128(reinterpret_cast<__m128i *>(d + 9 * 128), _mm256_extracti128_si256(hi, 1));
      }
    }
}

bool hostHasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
#endif

/// One 64 x 64 tile of 16-bit words: dst stick c, lane r = src stick r, lane c (both tiles are
/// 64 consecutive 128-byte sticks). In 8 x 8 blocks with SSE2 unpacks (8 x 16 with AVX2 where
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
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k)
        a[k] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + (bi * 8 + k) * 128 + bj * 16));
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        t[2 * k] = _mm_unpacklo_epi16(a[2 * k], a[2 * k + 1]);
        t[2 * k + 1] = _mm_unpackhi_epi16(a[2 * k], a[2 * k + 1]);
      }
#pragma GCC unroll 2
      for (int k = 0; k < 2; ++k) {
        u[4 * k] = _mm_unpacklo_epi32(t[4 * k], t[4 * k + 2]);
        u[4 * k + 1] = _mm_unpackhi_epi32(t[4 * k], t[4 * k + 2]);
        u[4 * k + 2] = _mm_unpacklo_epi32(t[4 * k + 1], t[4 * k + 3]);
        u[4 * k + 3] = _mm_unpackhi_epi32(t[4 * k + 1], t[4 * k + 3]);
      }
#pragma GCC unroll 4
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
  // S is R x C sticked on C (stick (c/64, r) at (c/64*R + r)*128), D is C x R sticked on R (stick
  // (r/64, c) at (r/64*C + c)*128). A whole 64 x 64 tile (rt, ct) is 64 consecutive sticks in both
  // (S from stick ct*R + rt*64, D from stick rt*C + ct*64), whatever R and C are; only the rows
  // and columns past the last whole tile go a word at a time.
  const int64_t fullR = R / 64 * 64, fullC = C / 64 * 64;
  for (int64_t rt = 0; rt < fullR / 64; ++rt)
    for (int64_t ct = 0; ct < fullC / 64; ++ct)
      transposeTile(D + (rt * C + ct * 64) * 128, S + (ct * R + rt * 64) * 128);
  auto word = [&](int64_t r, int64_t col) {
    std::memcpy(D + ((r / 64) * C + col) * 128 + 2 * (r % 64), S + ((col / 64) * R + r) * 128 + 2 * (col % 64), 2);
  };
  for (int64_t r = 0; r < fullR; ++r) // the columns past the whole tiles
    for (int64_t col = fullC; col < C; ++col)
      word(r, col);
  for (int64_t r = fullR; r < R; ++r) // the rows past the whole tiles
    for (int64_t col = 0; col < C; ++col)
      word(r, col);
}

} // namespace spyre::isa
