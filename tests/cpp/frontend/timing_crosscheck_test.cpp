// The static timing model counts work from static trip counts; the interpreter counts what it
// actually executes. They must agree exactly on every kernel.
#include "spyre/frontend/compiler.h"
#include "spyre/backend/backend.h"
#include "spyre/isa/hardware_config.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/timing.h"
#include "spyre/sim/device_memory.h"
#include "spyre/sim/runtime.h"
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

using namespace spyre;

namespace {

void crossCheck(const isa::Kernel &k, const std::vector<uint64_t> &argBytes, sim::DeviceMemory &mem) {
  sim::WorkCounters dyn;
  auto interp = sim::makeInterpreter(&dyn);
  sim::Runtime rt(2, 32);
  sim::LaunchArgs la{mem.base(), mem.capacity(), {}, argBytes};
  std::vector<uint64_t> addrs;
  for (uint64_t b : argBytes)
    la.base.push_back(mem.allocate(b));
  rt.launch(*interp->prepare(k), la);
  for (uint64_t a : la.base)
    mem.free(a);
  isa::TimingReport st = isa::timeKernel(k, isa::HardwareConfig{});
  EXPECT_EQ(st.ddrBytes, dyn.ddrBytes.load()) << k.name;
  EXPECT_EQ(st.lsuSticks, dyn.lsuSticks.load()) << k.name;
  EXPECT_EQ(st.sfpStickOps, dyn.sfpStickOps.load()) << k.name;
  EXPECT_EQ(st.ptMacs, dyn.ptMacs.load()) << k.name;
  EXPECT_EQ(st.ringBytes, dyn.ringBytes.load()) << k.name;
}

std::string readFile(const std::string &p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

} // namespace

TEST(TimingCrossCheck, StaticCountsEqualInterpretedCounts) {
  const char *graphs[] = {
      "graph(%a: f16[67, 256], %b: f16[67, 256]) {\n  %s = add(%a, %b) : f16[67, 256]\n  %r = relu(%s) : f16[67, 256]\n"
      "  %m = mul(%r, %b) : f16[67, 256]\n  return (%m)\n}\n",
      "graph(%x: f16[128, 300], %b: f16[300]) {\n  %y = add(%x, %b) : f16[128, 300]\n  %g = exp(%y) : f16[128, 300]\n"
      "  return (%g)\n}\n",
      "graph(%x: f16[67, 129]) {\n  %m = amax(%x, dims=[-1], keepdim=1) : f16[67, 1]\n  %d = sub(%x, %m) : f16[67, 129]\n"
      "  %s = sum(%d, dims=[0], keepdim=1) : f16[1, 129]\n  return (%s)\n}\n",
      "graph(%x: f16[300, 1024]) {\n  %s = mean(%x, dims=[1], keepdim=1) : f16[300, 1]\n  return (%s)\n}\n",
      "graph(%a: f16[2, 64, 255], %w: f16[255, 129]) {\n  %c = matmul(%a, %w) : f16[2, 64, 129]\n  return (%c)\n}\n",
      "graph(%p: f16[1, 1024], %v: f16[1024, 128]) {\n  %o = matmul(%p, %v) : f16[1, 128]\n  return (%o)\n}\n",
      "graph(%x: f16[8, 100]) {\n  %w = to_dtype(%x) : f32[8, 100]\n  %y = to_dtype(%w) : f16[8, 100]\n  return (%y)\n}\n",
  };
  sim::DeviceMemory mem(1ull << 32);
  for (const char *text : graphs) {
    for (int cores : {1, 7, 32}) {
      isa::JobPlan plan = frontend::compileGraph(frontend::parseGraph(text), {cores, ""});
      for (const auto &l : plan.launches) {
        std::vector<uint64_t> argBytes;
        for (int b : l.argBuffers)
          argBytes.push_back(b < 0 ? 0 : plan.buffers[b].layout.deviceBytes());
        crossCheck(backend::compileSuperDsc(l.sdsc), argBytes, mem);
      }
    }
  }
  crossCheck(isa::parseKernel(readFile(std::string(SPYRE_TEST_DATA_DIR) + "/kernels/add_relu_mul.lst")),
             {512, 512, 1024}, mem);
  crossCheck(isa::parseKernel(readFile(std::string(SPYRE_TEST_DATA_DIR) + "/kernels/ring_allreduce.lst")),
             {512, 512, 512}, mem);
}
