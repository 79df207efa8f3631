// pt.tr's reference (isa::ptTr, shared by the interpreter and both JIT tiers) moves whole 64 x 64
// tiles with SSE2 or AVX2 unpacks; here it is checked word for word against the instruction's
// definition (instructions.def), so the engines' agreement does not rest on it alone.
#include "spyre/isa/semantics.h"
#include <cstring>
#include <gtest/gtest.h>
#include <random>
#include <vector>

using namespace spyre;

TEST(PtSemantics, TransposeMatchesTheDefinitionWordForWord) {
  std::mt19937 gen(7);
  for (auto [R, C] : {std::pair<int64_t, int64_t>{64, 64}, {128, 64}, {64, 192}, {256, 320}, {3, 5}, {70, 64}, {1000, 256}, {130, 200}, {64, 65}}) {
    std::vector<uint8_t> S(static_cast<size_t>((C + 63) / 64 * R * 128)), D(static_cast<size_t>((R + 63) / 64 * C * 128), 0xEE);
    for (auto &b : S)
      b = static_cast<uint8_t>(gen());
    std::vector<uint8_t> expect = D;
    // D (C x R sticked on R): stick (r/64, c) at (r/64*C + c)*128, lane r%64 = S[r][c], S being
    // R x C sticked on C: stick (c/64, r) at (c/64*R + r)*128, lane c%64.
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c)
        std::memcpy(&expect[((r / 64) * C + c) * 128 + 2 * (r % 64)], &S[((c / 64) * R + r) * 128 + 2 * (c % 64)], 2);
    isa::ptTr(D.data(), S.data(), R, C);
    ASSERT_EQ(D, expect) << "R " << R << " C " << C;
  }
}
