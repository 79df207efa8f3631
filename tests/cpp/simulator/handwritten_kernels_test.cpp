// The hand-written kernels of tests/kernels (issue 3 §6): each runs on the interpreter, the JIT
// at O2 and the JIT at O0, which must agree byte for byte, and is checked against a reference
// computed here — bit-exact where the kernel's rounding sequence is simple to state (vector add,
// PT matmuls, the K-split ring reduction), within DL16 tolerance against double precision
// where it is not (softmax, layer norm). Also: directed tests of ld.pad.
#include "../jit/jit_test_util.h"
#include "spyre/isa/dl16.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/timing.h"
#include "spyre/isa/verifier.h"
#include "spyre/jit/jit_engine.h"
#include <cmath>
#include <gtest/gtest.h>
#include <limits>

using namespace spyre;
using spyre::testing::RunResult;

namespace {

isa::Kernel loadKernel(const std::string &name, const std::vector<std::vector<uint8_t>> &args) {
  isa::Kernel k = isa::parseKernel(spyre::testing::readFile(std::string(SPYRE_TEST_DATA_DIR) + "/kernels/" + name),
                                   name);
  std::vector<uint64_t> sizes;
  for (const auto &a : args)
    sizes.push_back(a.size());
  isa::verifyKernel(k, sizes);
  return k;
}

/// Runs `k` on the interpreter (1 thread), the O2 JIT (2 threads) and the O0 JIT (3 threads);
/// asserts identical DDR, LX and registers; returns the argument buffers after the run.
std::vector<uint8_t> runAll(const isa::Kernel &k, const std::vector<std::vector<uint8_t>> &args) {
  auto interp = sim::makeInterpreter();
  jit::JitOptions o2, o0;
  o0.tier = jit::OptTier::O0;
  o2.cacheDir = o0.cacheDir = "off";
  jit::JitEngine j2(o2), j0(o0);
  RunResult ri = spyre::testing::runPrepared(*interp->prepare(k), args, 1);
  RunResult r2 = spyre::testing::runPrepared(*j2.prepare(k), args, 2);
  RunResult r0 = spyre::testing::runPrepared(*j0.prepare(k), args, 3);
  EXPECT_EQ(ri.ddr, r2.ddr) << k.name << ": interpreter vs JIT O2 (DDR)";
  EXPECT_EQ(ri.ddr, r0.ddr) << k.name << ": interpreter vs JIT O0 (DDR)";
  EXPECT_EQ(ri.lx, r2.lx) << k.name << ": LX";
  EXPECT_EQ(ri.regs, r2.regs) << k.name << ": registers";
  EXPECT_EQ(ri.regs, r0.regs) << k.name << ": registers (O0)";
  return ri.ddr;
}

uint16_t h16(const std::vector<uint8_t> &v, size_t byteOffset) {
  uint16_t h;
  std::memcpy(&h, &v[byteOffset], 2);
  return h;
}
float f16(const std::vector<uint8_t> &v, size_t byteOffset) { return dl16::toFloat(h16(v, byteOffset)); }
void put16(std::vector<uint8_t> &v, size_t byteOffset, float x) {
  uint16_t h = dl16::fromFloat(x);
  std::memcpy(&v[byteOffset], &h, 2);
}

} // namespace

TEST(HandWritten, VectorAdd32CoresBitExact) {
  auto a = spyre::testing::randomDl16(4096, 11), b = spyre::testing::randomDl16(4096, 12);
  std::vector<uint8_t> out(8192, 0xAB);
  std::vector<std::vector<uint8_t>> args{a, b, out};
  isa::Kernel k = loadKernel("vector_add_32.lst", args);
  EXPECT_EQ(k.numCores, 32);
  auto ddr = runAll(k, args);
  for (size_t i = 0; i < 4096; ++i)
    ASSERT_EQ(h16(ddr, 16384 + 2 * i), dl16::fromFloat(f16(a, 2 * i) + f16(b, 2 * i))) << "element " << i;
}

TEST(HandWritten, MulticastBiasReachesEveryCohortMember) {
  // Every core adds the one bias row it received by multicast (cohorts of 8) to its own row.
  auto x = spyre::testing::randomDl16(16 * 256, 21), bias = spyre::testing::randomDl16(256, 22);
  std::vector<uint8_t> out(16 * 512, 0xAB);
  std::vector<std::vector<uint8_t>> args{x, bias, out};
  isa::Kernel k = loadKernel("bias_add_multicast.lst", args);
  auto ddr = runAll(k, args);
  const size_t outAt = x.size() + bias.size();
  for (size_t i = 0; i < 16 * 256; ++i)
    ASSERT_EQ(h16(ddr, outAt + 2 * i), dl16::fromFloat(f16(x, 2 * i) + f16(bias, 2 * (i % 256)))) << "element " << i;
  // The timing model reads the bias once per cohort: 2 x 512 bytes, not 16 x 512.
  isa::TimingReport r = isa::timeKernel(k, isa::HardwareConfig{});
  EXPECT_EQ(r.ddrBytes, 16u * 512 * 2 + 2 * 512);
}

TEST(HandWritten, SoftmaxRowsIgnorePaddedLanes) {
  // 8 rows of 100 values in 2 sticks each; the 28 padding lanes hold large garbage that ld.pad
  // must mask out (a plain ld would make exp overflow and the row sum infinite).
  std::mt19937 g(5);
  std::normal_distribution<float> d(0, 2);
  std::vector<uint8_t> x(8 * 256), out(8 * 256, 0xCD);
  for (int r = 0; r < 8; ++r)
    for (int j = 0; j < 128; ++j)
      put16(x, r * 256 + 2 * j, j < 100 ? d(g) : 1000.0f + j);
  std::vector<std::vector<uint8_t>> args{x, out};
  auto ddr = runAll(loadKernel("softmax_rows.lst", args), args);
  for (int r = 0; r < 8; ++r) {
    double m = -INFINITY, s = 0;
    for (int j = 0; j < 100; ++j)
      m = std::max(m, static_cast<double>(f16(x, r * 256 + 2 * j)));
    for (int j = 0; j < 100; ++j)
      s += std::exp(f16(x, r * 256 + 2 * j) - m);
    double total = 0;
    for (int j = 0; j < 128; ++j) {
      float got = f16(ddr, x.size() + r * 256 + 2 * j);
      if (j >= 100) {
        ASSERT_EQ(got, 0.0f) << "row " << r << " padded lane " << j;
        continue;
      }
      double ref = std::exp(f16(x, r * 256 + 2 * j) - m) / s;
      ASSERT_NEAR(got, ref, 1e-4 + 0.02 * ref) << "row " << r << " col " << j;
      total += got;
    }
    EXPECT_NEAR(total, 1.0, 0.02) << "row " << r;
  }
}

TEST(HandWritten, LayerNormRowsMatchDoubleReference) {
  auto x = spyre::testing::randomDl16(4 * 128, 21), w = spyre::testing::randomDl16(128, 22),
       b = spyre::testing::randomDl16(128, 23);
  std::vector<uint8_t> out(4 * 256, 0);
  std::vector<std::vector<uint8_t>> args{x, w, b, out};
  auto ddr = runAll(loadKernel("layernorm_rows.lst", args), args);
  size_t outAt = x.size() + w.size() + b.size();
  for (int r = 0; r < 4; ++r) {
    double mean = 0, var = 0;
    for (int j = 0; j < 128; ++j)
      mean += f16(x, r * 256 + 2 * j);
    mean /= 128;
    for (int j = 0; j < 128; ++j)
      var += std::pow(f16(x, r * 256 + 2 * j) - mean, 2);
    var /= 128;
    for (int j = 0; j < 128; ++j) {
      double ref = (f16(x, r * 256 + 2 * j) - mean) / std::sqrt(var + 1e-5) * f16(w, 2 * j) + f16(b, 2 * j);
      ASSERT_NEAR(f16(ddr, outAt + r * 256 + 2 * j), ref, 0.03 + 0.01 * std::fabs(ref)) << "row " << r << " col " << j;
    }
  }
}

namespace {
/// A (M x K) sticked on K and B (K x N) sticked on N, as pt.mm reads them; values random DL16.
struct MatmulInputs {
  int M, K, N;
  std::vector<uint8_t> A, B;
  float a(int i, int k) const { return f16(A, ((k / 64) * M + i) * 128 + 2 * (k % 64)); }
  float b(int k, int n) const { return f16(B, ((n / 64) * K + k) * 128 + 2 * (n % 64)); }
  MatmulInputs(int m, int k, int n, uint32_t seed)
      : M(m), K(k), N(n), A(spyre::testing::randomDl16(size_t(m) * k, seed)),
        B(spyre::testing::randomDl16(size_t(k) * n, seed + 1)) {}
  /// pt.mm's fp32 sum over k in [k0, k1), one fma per k in order.
  float dot(int i, int n, int k0, int k1, float acc = 0) const {
    for (int k = k0; k < k1; ++k)
      acc = std::fma(a(i, k), b(k, n), acc);
    return acc;
  }
};
} // namespace

TEST(HandWritten, PtMatmulWithKAccumulationBitExact) {
  MatmulInputs in(16, 128, 64, 31);
  std::vector<uint8_t> out(16 * 128, 0);
  std::vector<std::vector<uint8_t>> args{in.A, in.B, out};
  auto ddr = runAll(loadKernel("pt_matmul_kacc.lst", args), args);
  size_t outAt = in.A.size() + in.B.size();
  for (int i = 0; i < 16; ++i)
    for (int n = 0; n < 64; ++n)
      ASSERT_EQ(h16(ddr, outAt + i * 128 + 2 * n), dl16::fromFloat(in.dot(i, n, 0, 128))) << i << "," << n;
}

TEST(HandWritten, KSplitMatmulPartialSumsOverTheRingBitExact) {
  MatmulInputs in(8, 256, 64, 41);
  std::vector<uint8_t> out(8 * 128, 0);
  std::vector<std::vector<uint8_t>> args{in.A, in.B, out};
  isa::Kernel k = loadKernel("ksplit_matmul.lst", args);
  auto ddr = runAll(k, args);
  size_t outAt = in.A.size() + in.B.size();
  for (int i = 0; i < 8; ++i)
    for (int n = 0; n < 64; ++n) {
      // Core c's fp32 partial over K slice c; psum adds what arrives to the local partial.
      float s = in.dot(i, n, 0, 64);
      for (int c = 1; c < 4; ++c)
        s = in.dot(i, n, 64 * c, 64 * c + 64) + s;
      ASSERT_EQ(h16(ddr, outAt + i * 128 + 2 * n), dl16::fromFloat(s)) << i << "," << n;
    }
  isa::TimingReport t = isa::timeKernel(k, isa::HardwareConfig{});
  EXPECT_EQ(t.numPhases(), 4);
  // Three hops of the 16-stick fp32 partial, counted at the sender and at the receiver.
  EXPECT_EQ(t.ringBytes, 2u * 3 * 16 * 128);
  EXPECT_GT(t.totals().ring, 0.0);
}

TEST(HandWritten, EveryKernelHasATimingReport) {
  for (const char *f : {"vector_add_32.lst", "softmax_rows.lst", "layernorm_rows.lst", "pt_matmul_kacc.lst",
                        "ksplit_matmul.lst", "ring_allreduce.lst", "add_relu_mul.lst"}) {
    isa::Kernel k =
        isa::parseKernel(spyre::testing::readFile(std::string(SPYRE_TEST_DATA_DIR) + "/kernels/" + f), f);
    isa::TimingReport t = isa::timeKernel(k, isa::HardwareConfig{});
    EXPECT_GT(t.overlappedUs, t.launchUs) << f;
    EXPECT_GE(t.serialUs, t.overlappedUs) << f;
    EXPECT_GT(t.totals().dma, 0.0) << f;
  }
}

// ld.pad: lanes from n on take the fill rounded to the format, on every engine, for n at the
// edges (0, the full stick) and inside, with fills that mask for max (-inf), min (+inf), sum (0)
// and an arbitrary value that DL16 must round.
TEST(LdPad, LanesFromNTakeTheFillOnEveryEngine) {
  struct Case {
    const char *fmt;
    int n;
    const char *fill;
    float fillValue;
  };
  const Case cases[] = {{"dl16", 0, "-inf", -INFINITY}, {"dl16", 17, "inf", INFINITY}, {"dl16", 64, "0", 0.0f},
                        {"dl16", 36, "1.0009765625", 1.0009765625f}, {"f32", 0, "0", 0.0f},
                        {"f32", 5, "-inf", -INFINITY}, {"f32", 32, "2.5", 2.5f}, {"f32", 31, "0.1", 0.1f}};
  for (const Case &c : cases) {
    std::string text = std::string(".kernel ldpad cores=1\n.args x out\n.core 0\n") +
                       "    dma.in lx[0x0], ddr[x], shape=(1,1,1) -> t0\n    wait t0\n" +
                       "    ld.pad." + c.fmt + " v3, lx[0x0], " + std::to_string(c.n) + ", " + c.fill + "\n" +
                       "    st." + c.fmt + " lx[0x80], v3\n" +
                       "    dma.out ddr[out], lx[0x80], shape=(1,1,1) -> t1\n    wait t1\n";
    isa::Kernel k = isa::parseKernel(text, "ldpad");
    EXPECT_EQ(isa::parseKernel(isa::printKernel(k), "reprint").programs[0].body[2].fimm,
              k.programs[0].body[2].fimm) << "listing round trip of " << c.fill;
    std::vector<uint8_t> x = spyre::testing::randomDl16(64, 7), out(128, 0x5A);
    auto ddr = runAll(k, {x, out});
    bool dl = std::string(c.fmt) == "dl16";
    for (int l = 0; l < (dl ? 64 : 32); ++l) {
      uint32_t got, want;
      if (dl) {
        got = h16(ddr, 128 + 2 * l);
        want = l < c.n ? h16(x, 2 * l) : dl16::fromFloat(c.fillValue);
      } else {
        std::memcpy(&got, &ddr[128 + 4 * l], 4);
        float f = c.fillValue;
        std::memcpy(&want, l < c.n ? static_cast<const void *>(&x[4 * l]) : static_cast<const void *>(&f), 4);
      }
      ASSERT_EQ(got, want) << "ld.pad." << c.fmt << " n=" << c.n << " fill=" << c.fill << " lane " << l;
    }
  }
}

TEST(LdPad, VerifierRejectsLaneCountOutsideTheStick) {
  for (auto [fmt, n] : {std::pair<const char *, int>{"dl16", 65}, {"f32", 33}, {"dl16", -1}}) {
    std::string text = std::string(".kernel bad cores=1\n.args x\n.core 0\n    ld.pad.") + fmt + " v0, lx[0x0], " +
                       std::to_string(n) + ", 0\n";
    isa::Kernel k = isa::parseKernel(text, "bad");
    try {
      isa::verifyKernel(k, {128});
      ADD_FAILURE() << "accepted ld.pad." << fmt << " n=" << n;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("ld.pad lane count must be in 0.."), std::string::npos) << e.what();
    }
  }
}

// ldu / stu: element-aligned partial loads and stores, on every engine. Two DL16 sticks x[0..127]
// are packed with stu at element offset `off` (n elements from each, the second stick's elements
// right after the first's), then read back with ldu from element offset `back` (m elements):
// the result's lane l is x-element (l + back - off) mapped through the packing, lanes >= m are 0,
// and the bytes around the packed run keep the marker stick they were loaded with.
TEST(UnalignedLoadStore, PackAndUnpackElementsOnEveryEngine) {
  struct Case {
    const char *fmt;
    int off, n, back, m;
  };
  const Case cases[] = {{"dl16", 0, 64, 0, 64}, {"dl16", 5, 17, 3, 40}, {"dl16", 63, 1, 62, 2},
                        {"dl16", 1, 63, 0, 64}, {"f32", 0, 32, 0, 32}, {"f32", 7, 9, 2, 20},
                        {"f32", 31, 1, 30, 2}, {"f32", 3, 30, 1, 31}};
  for (const Case &c : cases) {
    const bool dl = std::string(c.fmt) == "dl16";
    const int es = dl ? 2 : 4;
    std::string text = std::string(".kernel unal cores=1\n.args x marks out\n.core 0\n") +
                       "    dma.in lx[0x0], ddr[x], shape=(1,1,2) -> t0\n" +
                       "    dma.in lx[0x100], ddr[marks], shape=(1,1,3) -> t1\n    wait t0, t1\n" +
                       "    ld." + c.fmt + " v1, lx[0x0]\n    ld." + c.fmt + " v2, lx[0x80]\n" +
                       "    li r1, " + std::to_string(0x100 + es * c.off) + "\n" +
                       "    stu." + c.fmt + " lx[r1], v1, " + std::to_string(c.n) + "\n" +
                       "    stu." + c.fmt + " lx[r1+" + std::to_string(es * c.n) + "], v2, " + std::to_string(c.n) + "\n" +
                       "    ldu." + c.fmt + " v3, lx[" + std::to_string(0x100 + es * c.back) + "], " + std::to_string(c.m) + "\n" +
                       "    st." + c.fmt + " lx[0x280], v3\n" +
                       "    dma.out ddr[out], lx[0x100], shape=(1,1,4) -> t2\n    wait t2\n";
    isa::Kernel k = isa::parseKernel(text, "unal");
    EXPECT_EQ(isa::printKernel(isa::parseKernel(isa::printKernel(k), "again")), isa::printKernel(k));
    std::vector<uint8_t> x = dl ? spyre::testing::randomDl16(128, 11) : std::vector<uint8_t>(256),
                         marks(384, 0x3C), out(512, 0);
    if (!dl)
      for (int i = 0; i < 64; ++i) {
        float f = 0.25f * static_cast<float>(i) - 3.0f;
        std::memcpy(&x[4 * i], &f, 4);
      }
    auto ddr = runAll(k, {x, marks, out});
    const int width = 128 / es;
    // The packed region: element e of the 3-stick window holds x-element src(e) or the marker.
    auto packed = [&](int e, uint8_t *bytes) {
      int rel = e - c.off;
      if (rel >= 0 && rel < 2 * c.n) {
        int src = rel < c.n ? rel : width + rel - c.n;
        std::memcpy(bytes, &x[es * src], es);
      } else {
        std::memset(bytes, 0x3C, es);
      }
    };
    const size_t outBase = x.size() + marks.size();
    for (int e = 0; e < 2 * width + width / 2; ++e) {
      uint8_t want[4], got[4];
      packed(e, want);
      std::memcpy(got, &ddr[outBase + es * e], es);
      ASSERT_EQ(std::memcmp(got, want, es), 0) << c.fmt << " off=" << c.off << " packed element " << e;
    }
    for (int l = 0; l < width; ++l) {
      uint8_t want[4] = {0, 0, 0, 0}, got[4];
      if (l < c.m)
        packed(c.back + l, want);
      std::memcpy(got, &ddr[outBase + 0x180 + es * l], es);
      ASSERT_EQ(std::memcmp(got, want, es), 0) << c.fmt << " back=" << c.back << " m=" << c.m << " lane " << l;
    }
  }
}

TEST(UnalignedLoadStore, VerifierRejectsBadCountsAndMisalignedAddresses) {
  struct Bad {
    std::string line, message;
  };
  const Bad bad[] = {{"ldu.dl16 v0, lx[0x0], 65", "ldu element count must be in 1..64"},
                     {"stu.f32 lx[0x0], v0, 33", "stu element count must be in 1..32"},
                     {"ldu.f32 v0, lx[0x0], 0", "ldu element count must be in 1..32"},
                     {"ldu.dl16 v0, lx[0x3], 4", "is not 2-byte (element) aligned"},
                     {"stu.f32 lx[0x2], v0, 4", "is not 4-byte (element) aligned"},
                     {"stu.dl16 lx[0x199996], v0, 64", "is outside the usable LX"}};
  for (const Bad &b : bad) {
    isa::Kernel k = isa::parseKernel(".kernel bad cores=1\n.args x\n.core 0\n    " + b.line + "\n", "bad");
    try {
      isa::verifyKernel(k, {128});
      ADD_FAILURE() << "accepted " << b.line;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << b.line << ": " << e.what();
    }
  }
}
