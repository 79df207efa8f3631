// The JIT's DL16 codec (jit/lib/lowering.cpp: decode, encode, fp32-domain rounding) against the
// interpreter (dl16::toFloat / fromFloat) on every DL16 code and on fp32 patterns around every
// rounding, flush and overflow boundary, NaNs and infinities, at both tiers; and the inline
// exp/sigmoid/silu (isa::sfpExp as IR) and stick reductions on a dense sweep of the exp range;
// the DL16 exp/sigmoid/silu of DL16 values (the table lookup: every code, a decoded register and
// a rounded result) and of fp32 values (the computed path).
#include "jit_test_util.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/verifier.h"
#include "spyre/jit/jit_engine.h"
#include "spyre/isa/dl16.h"
#include <gtest/gtest.h>
#include <random>

using namespace spyre;
using namespace spyre::testing;

namespace {

const char *kCodecKernel = R"(.kernel codec cores=1
.args codes floats out
.core 0
    li        r1, 0
    dma.in    lx[0x0], ddr[codes+r1], shape=(1,1,1024) -> t0
    dma.in    lx[0x20000], ddr[floats+r1], shape=(1,1,1024) -> t1
    wait      t0, t1
    bcast.f32 v15, 1
    li        r2, 0x40000
    loop 1024 {
        ld.dl16   v0, lx[r1]
        unpack    v1, v2, v0
        st.f32    lx[r2], v1
        st.f32    lx[r2+0x80], v2
        ld.f32    v3, lx[r1+0x20000]
        st.dl16   lx[r2+0x100], v3
        mul.dl16  v4, v3, v15
        st.f32    lx[r2+0x180], v4
        add.dl16  v5, v0, v0
        st.dl16   lx[r2+0x200], v5
        addi      r1, r1, 128
        addi      r2, r2, 640
    }
    li        r1, 0
    dma.out   ddr[out+r1], lx[0x40000], shape=(1,1,5120) -> t2
    wait      t2
)";

const char *kTransKernel = R"(.kernel trans cores=1
.args codes floats out
.core 0
    li        r1, 0
    dma.in    lx[0x0], ddr[codes+r1], shape=(1,1,1024) -> t0
    dma.in    lx[0x20000], ddr[floats+r1], shape=(1,1,1024) -> t1
    wait      t0, t1
    li        r2, 0x40000
    loop 1024 {
        ld.dl16   v0, lx[r1]
        ld.f32    v3, lx[r1+0x20000]
        exp.f32   v4, v3
        st.f32    lx[r2], v4
        sigmoid.f32 v4, v3
        st.f32    lx[r2+0x80], v4
        silu.f32  v4, v3
        st.f32    lx[r2+0x100], v4
        exp.dl16  v5, v0
        st.dl16   lx[r2+0x180], v5
        sigmoid.dl16 v5, v0
        st.dl16   lx[r2+0x200], v5
        silu.dl16 v5, v0
        st.dl16   lx[r2+0x280], v5
        exp.dl16  v5, v3
        st.dl16   lx[r2+0x300], v5
        sigmoid.dl16 v5, v3
        st.dl16   lx[r2+0x380], v5
        silu.dl16 v5, v3
        st.dl16   lx[r2+0x400], v5
        add.dl16  v10, v0, v0
        exp.dl16  v11, v10
        div.dl16  v12, v11, v10
        st.dl16   lx[r2+0x480], v12
        rsum.f32  v6, v3
        rmax.f32  v7, v3
        rmin.dl16 v8, v0
        rsum.dl16 v9, v0
        addi      r1, r1, 128
        addi      r2, r2, 1280
    }
    li        r1, 0
    dma.out   ddr[out+r1], lx[0x40000], shape=(1,1,10240) -> t2
    wait      t2
)";

// tanh, gelu, gelu.erf in DL16: a table lookup for DL16 inputs (every code); fp32 inputs take
// the inline tanh / erf code (isa/lib/sfp.cpp, jit/lib/lower_sfp.cpp).
const char *kLibmKernel = R"(.kernel libm cores=1
.args codes floats out
.core 0
    li        r1, 0
    dma.in    lx[0x0], ddr[codes+r1], shape=(1,1,1024) -> t0
    dma.in    lx[0x20000], ddr[floats+r1], shape=(1,1,1024) -> t1
    wait      t0, t1
    li        r2, 0x40000
    loop 1024 {
        ld.dl16   v0, lx[r1]
        ld.f32    v3, lx[r1+0x20000]
        tanh.dl16 v5, v0
        st.dl16   lx[r2], v5
        gelu.dl16 v5, v0
        st.dl16   lx[r2+0x80], v5
        gelu.erf.dl16 v5, v0
        st.dl16   lx[r2+0x100], v5
        tanh.dl16 v5, v3
        st.dl16   lx[r2+0x180], v5
        gelu.dl16 v5, v3
        st.dl16   lx[r2+0x200], v5
        gelu.erf.dl16 v5, v3
        st.dl16   lx[r2+0x280], v5
        addi      r1, r1, 128
        addi      r2, r2, 768
    }
    li        r1, 0
    dma.out   ddr[out+r1], lx[0x40000], shape=(1,1,6144) -> t2
    wait      t2
)";

// Registers read in another block than the one that wrote them (analyseDl16): a DL16 row sum
// and an fp32 sum as divisor and exp input inside inner loops, and a DL16 register that the
// loop body itself turns into fp32 (its second iteration must divide and exp as fp32).
const char *kCrossBlockKernel = R"(.kernel crossblock cores=1
.args codes floats out
.core 0
    li        r1, 0
    dma.in    lx[0x0], ddr[codes+r1], shape=(1,1,1024) -> t0
    dma.in    lx[0x20000], ddr[floats+r1], shape=(1,1,1024) -> t1
    wait      t0, t1
    li        r2, 0x40000
    loop 1024 {
        ld.f32    v3, lx[r1+0x20000]
        add.f32   v4, v3, v3
        ld.dl16   v0, lx[r1]
        rsum.dl16 v6, v0
        bcast.dl16 v7, 3
        loop 1 {
            ld.dl16   v1, lx[r1]
            div.dl16  v2, v1, v4
            st.dl16   lx[r2], v2
            div.dl16  v2, v1, v6
            st.dl16   lx[r2+0x80], v2
            exp.dl16  v5, v4
            st.dl16   lx[r2+0x100], v5
            exp.dl16  v5, v6
            st.dl16   lx[r2+0x180], v5
        }
        addi      r3, r2, 512
        loop 2 {
            ld.dl16   v1, lx[r1]
            div.dl16  v2, v1, v7
            st.dl16   lx[r3], v2
            exp.dl16  v8, v7
            st.dl16   lx[r3+0x80], v8
            add.f32   v7, v7, v3
            addi      r3, r3, 256
        }
        addi      r1, r1, 128
        addi      r2, r2, 1024
    }
    li        r1, 0
    dma.out   ddr[out+r1], lx[0x40000], shape=(1,1,8192) -> t2
    wait      t2
)";

/// fp32 values densely covering the exp range [-100, 100] (where the clamps and the subnormal
/// flush are), plus the boundary patterns.
std::vector<uint8_t> sweepFloats(const std::vector<uint8_t> &boundary) {
  std::vector<uint8_t> b = boundary;
  for (size_t i = 0; i < 16384; ++i) {
    float x = -100.0f + 200.0f * static_cast<float>(i) / 16384.0f;
    std::memcpy(&b[4 * (16384 + i)], &x, 4);
  }
  return b;
}

std::vector<uint8_t> allCodes() {
  std::vector<uint8_t> b(65536 * 2);
  for (uint32_t c = 0; c < 65536; ++c) {
    uint16_t h = static_cast<uint16_t>(c);
    std::memcpy(&b[2 * c], &h, 2);
  }
  return b;
}

/// fp32 bit patterns: every boundary of the DL16 rounding (the half-ulp tie, just below and
/// above it) for every exponent, NaN payloads of both signs, infinities, zeros, subnormals.
std::vector<uint8_t> boundaryFloats() {
  std::vector<uint32_t> v;
  for (uint32_t e = 0; e < 256; ++e)
    for (uint32_t f : {0u, 1u, 0x1FFFu, 0x2000u, 0x2001u, 0x3FFFu, 0x4000u, 0x5FFFu, 0x6000u, 0x7FDFFFu, 0x7FE000u,
                       0x7FFFFFu, 0x400000u, 0x7FC000u, 0x7FBFFFu})
      for (uint32_t s : {0u, 0x80000000u})
        v.push_back(s | e << 23 | f);
  std::mt19937 g(11);
  while (v.size() < 32768)
    v.push_back(static_cast<uint32_t>(g()));
  v.resize(32768);
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

void expectSame(const char *listing, std::vector<std::vector<uint8_t>> args) {
  isa::Kernel k = isa::parseKernel(listing);
  isa::verifyKernel(k, {args[0].size(), args[1].size(), args[2].size()});
  auto interp = sim::makeInterpreter();
  RunResult want = runPrepared(*interp->prepare(k), args);
  for (jit::OptTier tier : {jit::OptTier::O2, jit::OptTier::O0}) {
    jit::JitEngine jit({tier, "", "off", false});
    RunResult got = runPrepared(*jit.prepare(k), args);
    ASSERT_EQ(got.ddr.size(), want.ddr.size());
    for (size_t i = 0; i < want.ddr.size(); i += 2)
      ASSERT_TRUE(std::memcmp(&got.ddr[i], &want.ddr[i], 2) == 0)
          << k.name << " " << (tier == jit::OptTier::O2 ? "O2" : "O0") << ": output byte " << i;
    EXPECT_TRUE(got.regs == want.regs) << k.name;
  }
}

} // namespace

TEST(Dl16Codec, JitMatchesInterpreterOnEveryCode) {
  expectSame(kCodecKernel, {allCodes(), boundaryFloats(), std::vector<uint8_t>(5120 * 128)});
}

TEST(Dl16Codec, TableLookupsOfLibmOpsMatchInterpreter) {
  expectSame(kLibmKernel, {allCodes(), sweepFloats(boundaryFloats()), std::vector<uint8_t>(6144 * 128)});
}

TEST(Dl16Codec, Dl16KnowledgeAcrossBlocksMatchesInterpreter) {
  expectSame(kCrossBlockKernel, {allCodes(), sweepFloats(boundaryFloats()), std::vector<uint8_t>(8192 * 128)});
}

TEST(Dl16Codec, InlineExpAndReductionsMatchInterpreter) {
  expectSame(kTransKernel, {allCodes(), sweepFloats(boundaryFloats()), std::vector<uint8_t>(10240 * 128)});
}

// The JIT divides two DL16 values as a · fl(1/b) (lower_sfp.cpp, Div). Rounded to DL16 this
// equals fl(a / b) rounded to DL16 for every pair: both are fp32 values within one ulp of the
// exact quotient, DL16 rounding (ties away at 10 significant bits, flush and overflow limits
// at midpoints of that grid) can tell them apart only if a rounding midpoint lies between them,
// and for DL16 operands every quotient, reciprocal and product is a normal fp32 number
// (2^-66 .. 2^66), so fl, the reciprocal and the rounding all scale exactly with the exponents:
// whether two roundings agree depends on the 10-bit significands alone. Checked here on all
// 512 x 512 significand pairs at several exponent offsets (the relation must not depend on
// them), zeros, infinities against every code, and random code pairs.
TEST(Dl16Codec, QuotientOfDl16ValuesIsTheProductWithTheReciprocal) {
  auto same = [](float a, float b) {
    volatile float va = a, vb = b;
    float q = va / vb, r = 1.0f / vb, p = va * r;
    return dl16::floatBits(dl16::round(q)) == dl16::floatBits(dl16::round(p));
  };
  for (int ea : {-31, -3, 0, 5, 32})
    for (int eb : {-31, 0, 7, 32})
      for (uint32_t ma = 0; ma < 512; ++ma)
        for (uint32_t mb = 0; mb < 512; ++mb) {
          float a = std::ldexp(1.0f + static_cast<float>(ma) / 512.0f, ea);
          float b = std::ldexp(1.0f + static_cast<float>(mb) / 512.0f, eb);
          ASSERT_TRUE(same(a, b) && same(-a, b)) << a << " / " << b;
        }
  for (uint32_t c = 0; c < 65536; ++c) {
    float x = dl16::toFloat(static_cast<uint16_t>(c));
    for (uint16_t s : {0x0000, 0x8000, 0x7FFF, 0xFFFF}) { // +-0, +-inf
      float y = dl16::toFloat(s);
      ASSERT_TRUE(same(x, y) && same(y, x)) << c << " " << s;
    }
  }
  std::mt19937 g(19);
  for (int i = 0; i < 4000000; ++i) {
    float a = dl16::toFloat(static_cast<uint16_t>(g())), b = dl16::toFloat(static_cast<uint16_t>(g()));
    ASSERT_TRUE(same(a, b)) << a << " / " << b;
  }
}
