// The same kernels on the reference interpreter and the JIT: DDR, LX and registers must be
// identical byte for byte, and equal to a scalar reference computed here.
#include "spyre/isa/dl16.h"
#include "spyre/isa/listing.h"
#include "spyre/jit/jit_engine.h"
#include "spyre/sim/device_memory.h"
#include "spyre/sim/runtime.h"
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <random>
#include <sstream>

using namespace spyre;

namespace {

std::string readFile(const std::string &p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct RunResult {
  std::vector<uint8_t> ddr;
  std::vector<uint8_t> lx;      // first 4 KiB of each core's LX
  std::vector<uint8_t> regs;    // CoreState registers of every core
};

RunResult run(sim::Engine &engine, const isa::Kernel &k, const std::vector<std::vector<uint8_t>> &args,
              int threads) {
  sim::DeviceMemory mem(1ull << 30);
  sim::Runtime rt(threads, 32);
  sim::LaunchArgs la;
  la.ddr = mem.base();
  la.ddrSize = mem.capacity();
  for (const auto &a : args) {
    uint64_t addr = mem.allocate(a.size());
    std::memcpy(mem.at(addr, a.size()), a.data(), a.size());
    la.base.push_back(addr);
    la.size.push_back(a.size());
  }
  auto pk = engine.prepare(k);
  rt.launch(*pk, la);
  RunResult r;
  for (size_t i = 0; i < args.size(); ++i) {
    uint8_t *p = mem.at(la.base[i], la.size[i]);
    r.ddr.insert(r.ddr.end(), p, p + la.size[i]);
  }
  for (int c = 0; c < k.numCores; ++c) {
    const auto &cs = rt.cores()[c];
    r.lx.insert(r.lx.end(), cs.lx, cs.lx + 4096);
    auto *b = reinterpret_cast<const uint8_t *>(&cs);
    r.regs.insert(r.regs.end(), b, b + offsetof(sim::CoreState, lx));
  }
  return r;
}

std::vector<uint8_t> randomDl16(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0, 2);
  std::vector<uint8_t> out(n * 2);
  for (size_t i = 0; i < n; ++i) {
    uint16_t h = dl16::fromFloat(d(g));
    std::memcpy(&out[2 * i], &h, 2);
  }
  return out;
}

uint16_t at16(const std::vector<uint8_t> &v, size_t i) {
  uint16_t h;
  std::memcpy(&h, &v[2 * i], 2);
  return h;
}

} // namespace

TEST(Engines, HandWrittenKernelMatchesReferenceOnBothEngines) {
  isa::Kernel k = isa::parseKernel(readFile(std::string(SPYRE_TEST_DATA_DIR) + "/kernels/add_relu_mul.lst"));
  auto a = randomDl16(256, 1), b = randomDl16(256, 2);
  std::vector<uint8_t> out(512, 0);
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  RunResult ri = run(*interp, k, {a, b, out}, 2);
  RunResult rj = run(jit, k, {a, b, out}, 2);
  EXPECT_EQ(ri.ddr, rj.ddr);
  EXPECT_EQ(ri.lx, rj.lx);
  EXPECT_EQ(ri.regs, rj.regs);
  // Scalar reference for the first phase.
  for (size_t i = 0; i < 256; ++i) {
    float x = dl16::toFloat(at16(a, i)), y = dl16::toFloat(at16(b, i));
    float s = dl16::round(x + y);
    float r = s > 0 ? s : 0;
    uint16_t expect = dl16::fromFloat(r * y);
    ASSERT_EQ(at16(std::vector<uint8_t>(ri.ddr.begin() + 1024, ri.ddr.end()), i), expect) << i;
  }
}

TEST(Engines, ResultsIndependentOfThreadCount) {
  isa::Kernel k = isa::parseKernel(readFile(std::string(SPYRE_TEST_DATA_DIR) + "/kernels/add_relu_mul.lst"));
  auto a = randomDl16(256, 3), b = randomDl16(256, 4);
  std::vector<uint8_t> out(512, 0);
  jit::JitEngine jit;
  RunResult r1 = run(jit, k, {a, b, out}, 1);
  RunResult r2 = run(jit, k, {a, b, out}, 2);
  RunResult r8 = run(jit, k, {a, b, out}, 8);
  EXPECT_EQ(r1.ddr, r2.ddr);
  EXPECT_EQ(r1.ddr, r8.ddr);
  EXPECT_EQ(r1.regs, r8.regs);
}

TEST(Engines, Dl16ArithmeticEdgeCasesBitExact) {
  // Lanes chosen to hit overflow, underflow, ties and infinities through add/mul/sub.
  std::vector<float> vals = {0.0f, -0.0f, 1.0f, -1.0f, 8.5e9f, -8.5e9f, 4.7e-10f, -4.7e-10f,
                             1.0f + 1.0f / 1024, 3.0f, 65504.0f, INFINITY, -INFINITY, 0.3333f, 1e-5f, 7.0f};
  std::vector<uint8_t> a(128), b(128);
  for (int i = 0; i < 64; ++i) {
    uint16_t x = dl16::fromFloat(vals[i % vals.size()]), y = dl16::fromFloat(vals[(i * 7 + 3) % vals.size()]);
    std::memcpy(&a[2 * i], &x, 2);
    std::memcpy(&b[2 * i], &y, 2);
  }
  const char *ops[] = {"add", "sub", "mul"};
  for (const char *op : ops) {
    std::string text = std::string(".kernel e cores=1\n.args a b o\n.core 0\n") +
                       "    dma.in    lx[0x0], ddr[a], shape=(1,1,1) -> t0\n"
                       "    dma.in    lx[0x80], ddr[b], shape=(1,1,1) -> t1\n"
                       "    wait      t0, t1\n"
                       "    ld.dl16   v0, lx[0x0]\n    ld.dl16   v1, lx[0x80]\n"
                       "    " + op + ".dl16  v2, v0, v1\n    relu.dl16 v3, v2\n    abs.dl16  v4, v2\n"
                       "    st.dl16   lx[0x100], v2\n"
                       "    dma.out   ddr[o], lx[0x100], shape=(1,1,1) -> t2\n    wait      t2\n";
    isa::Kernel k = isa::parseKernel(text);
    auto interp = sim::makeInterpreter();
    jit::JitEngine jit;
    std::vector<uint8_t> o(128);
    RunResult ri = run(*interp, k, {a, b, o}, 1), rj = run(jit, k, {a, b, o}, 1);
    EXPECT_EQ(ri.ddr, rj.ddr) << op;
    EXPECT_EQ(ri.regs, rj.regs) << op;
  }
}

TEST(Engines, O0AndO2Agree) {
  isa::Kernel k = isa::parseKernel(readFile(std::string(SPYRE_TEST_DATA_DIR) + "/kernels/add_relu_mul.lst"));
  auto a = randomDl16(256, 5), b = randomDl16(256, 6);
  std::vector<uint8_t> out(512, 0);
  jit::JitEngine o0({jit::OptTier::O0, ""}), o2({jit::OptTier::O2, ""});
  EXPECT_EQ(run(o0, k, {a, b, out}, 2).ddr, run(o2, k, {a, b, out}, 2).ddr);
}
