// Ring transfers: a hand-written 4-core all-reduce on both engines, and clear errors.
#include "spyre/isa/listing.h"
#include "spyre/isa/verifier.h"
#include "spyre/jit/jit_engine.h"
#include "spyre/sim/device_memory.h"
#include "spyre/sim/runtime.h"
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

using namespace spyre;

namespace {
std::string readFile(const std::string &p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<float> run(sim::Engine &e, const isa::Kernel &k, const std::vector<float> &x, int threads) {
  sim::DeviceMemory mem(1ull << 26);
  sim::Runtime rt(threads, 32);
  sim::LaunchArgs la{mem.base(), mem.capacity(), {}, {}};
  uint64_t ax = mem.allocate(512), ao = mem.allocate(512), an = mem.allocate(512);
  std::memcpy(mem.at(ax, 512), x.data(), 512);
  la.base = {ax, ao, an};
  la.size = {512, 512, 512};
  rt.launch(*e.prepare(k), la);
  std::vector<float> out(256);
  std::memcpy(out.data(), mem.at(ao, 512), 512);
  std::memcpy(out.data() + 128, mem.at(an, 512), 512);
  return out;
}
} // namespace

TEST(Ring, AllReduceOnFourCores) {
  // Phases: send own value; receive core-1's, add, forward it; psum the value from core-2 and
  // pick up core-3's... The kernel mixes recv, psum and both directions.
  std::string text = readFile(std::string(SPYRE_TEST_DATA_DIR) + "/kernels/ring_allreduce.lst");
  isa::Kernel k = isa::parseKernel(text);
  EXPECT_EQ(isa::printKernel(k), text);
  isa::verifyKernel(k, {512, 512, 512});
  std::vector<float> x(128);
  for (int i = 0; i < 128; ++i)
    x[i] = static_cast<float>(i % 32) + 100.0f * static_cast<float>(i / 32);
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  auto ri = run(*interp, k, x, 1), rj = run(jit, k, x, 2), r4 = run(jit, k, x, 4);
  EXPECT_EQ(ri, rj);
  EXPECT_EQ(ri, r4);
  // Every core ends with x[c] + x[c-1] + x[c-2] + x[c-3] (added in that order) and holds its
  // counter-clockwise neighbour's value x[c+1].
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      auto X = [&](int core) { return x[((core + 4) % 4) * 32 + l]; };
      float expect = ((X(c) + X(c - 1)) + X(c - 2)) + X(c - 3);
      ASSERT_EQ(ri[c * 32 + l], expect) << "core " << c << " lane " << l;
      ASSERT_EQ(ri[128 + c * 32 + l], X(c + 1)) << "core " << c << " lane " << l;
    }
}

TEST(Ring, ReceiveWithoutSendIsAClearError) {
  std::string text = ".kernel bad cores=2\n.args x\n.core 0..1\n"
                     "    ring.recv lx[0x0], 1, 0\n";
  isa::Kernel k = isa::parseKernel(text);
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  for (sim::Engine *e : {static_cast<sim::Engine *>(interp.get()), static_cast<sim::Engine *>(&jit)}) {
    sim::DeviceMemory mem(1ull << 24);
    sim::Runtime rt(2, 32);
    sim::LaunchArgs la{mem.base(), mem.capacity(), {mem.allocate(128)}, {128}};
    try {
      rt.launch(*e->prepare(k), la);
      FAIL() << e->name();
    } catch (const Error &err) {
      EXPECT_NE(std::string(err.what()).find("receives 128 bytes from direction 0 in phase 0 but only 0 were sent"),
                std::string::npos)
          << err.what();
    }
  }
}

TEST(Ring, VerifierChecksOperands) {
  auto bad = [](const char *line) {
    std::string text = std::string(".kernel v cores=2\n.args x\n.core 0..1\n") + line;
    return isa::parseKernel(text);
  };
  EXPECT_THROW(isa::verifyKernel(bad("    ring.send lx[0x0], 1, 2\n"), {128}), Error);
  EXPECT_THROW(isa::verifyKernel(bad("    ring.send lx[0x0], 0, 0\n"), {128}), Error);
  EXPECT_THROW(isa::verifyKernel(bad("    ring.recv lx[0x199980], 2, 0\n"), {128}), Error);
  EXPECT_THROW(isa::verifyKernel(bad("    ring.psum.f32 lx[0x40], 1, 0\n"), {128}), Error);
  // Pairing: a send nobody receives, a receive nobody sent, and mismatched sizes.
  auto pairing = [&](const char *body, const char *msg) {
    try {
      isa::verifyKernel(bad(body), {128});
      ADD_FAILURE() << body;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(msg), std::string::npos) << e.what();
    }
  };
  pairing("    ring.send lx[0x0], 1, 0\n", "core 0 receives 0 bytes from direction 0 in phase 1 but core 1 sends it 128");
  pairing("    ring.recv lx[0x0], 1, 1\n", "core 0 receives 128 bytes from direction 1 in phase 0 but core 1 sends it 0");
  pairing("    ring.send lx[0x0], 2, 0\n    bar\n    ring.recv lx[0x0], 1, 0\n",
          "core 0 receives 128 bytes from direction 0 in phase 1 but core 1 sends it 256 bytes");
  isa::verifyKernel(bad("    ring.send lx[0x0], 2, 1\n    bar\n    ring.recv lx[0x0], 2, 1\n"), {128});
}
