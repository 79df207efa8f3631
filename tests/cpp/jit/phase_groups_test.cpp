// Phases equal up to `li` immediates share one compiled function (jit/lib/phase_groups.h): the
// differing immediates come from per-core tables, and the results stay bit-identical.
#include "jit_test_util.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/verifier.h"
#include "spyre/jit/jit_engine.h"
#include <gtest/gtest.h>

using namespace spyre;
using spyre::testing::readFile;
using spyre::testing::RunResult;

namespace {
size_t count(const std::string &s, const std::string &what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1))
    ++n;
  return n;
}
} // namespace

TEST(PhaseGroups, ProgramsEqualUpToLiShareOneFunction) {
  isa::Kernel k = isa::parseKernel(readFile(std::string(SPYRE_TEST_DATA_DIR) + "/kernels/spmd_li.lst"));
  isa::verifyKernel(k, {1024, 1024});
  std::string ir = jit::kernelToIR(k);
  // Phase 0: programs 0, 1, 3 (li immediates differ, also inside the loop) and program 2 (mul
  // instead of add); phase 1: all four. Three functions, five aliases.
  EXPECT_EQ(count(ir, "define void @spyre_"), 3u) << ir;
  EXPECT_EQ(count(ir, " = alias "), 5u) << ir;
  EXPECT_NE(ir.find("@spyre_spmd_li_c1_p0 = alias"), std::string::npos) << ir;
  EXPECT_NE(ir.find("@spyre_spmd_li_c3_p1 = alias"), std::string::npos) << ir;
}

TEST(PhaseGroups, SharedFunctionsBitExactOnBothTiers) {
  isa::Kernel k = isa::parseKernel(readFile(std::string(SPYRE_TEST_DATA_DIR) + "/kernels/spmd_li.lst"));
  auto a = spyre::testing::randomDl16(512, 7);
  std::vector<uint8_t> out(1024, 0);
  auto interp = sim::makeInterpreter();
  RunResult ri = spyre::testing::runPrepared(*interp->prepare(k), {a, out}, 2, 1024);
  for (jit::OptTier tier : {jit::OptTier::O0, jit::OptTier::O2}) {
    jit::JitEngine jit({tier, "", "off", false});
    RunResult rj = spyre::testing::runPrepared(*jit.prepare(k), {a, out}, 2, 1024);
    EXPECT_EQ(ri.ddr, rj.ddr);
    EXPECT_EQ(ri.lx, rj.lx);
    EXPECT_EQ(ri.regs, rj.regs); // r1..r5 of every core: the per-core li values were written back
  }
}
