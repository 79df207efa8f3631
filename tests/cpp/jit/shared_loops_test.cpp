// Loop nests that occur more than once in a kernel compile once at O2 (a shared function
// called with the registers in CoreState): the machine state must stay that of the interpreter,
// with registers flowing into, through and out of the calls and changed between them.
#include "jit_test_util.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/verifier.h"
#include "spyre/jit/jit_engine.h"
#include <gtest/gtest.h>
#include <string>

using namespace spyre;

TEST(SharedLoops, RepeatedNestsKeepRegistersAndMemoryExact) {
  // The same nest three times: twice in phase 0 with other code between (which changes r1, r2
  // and v3, all read by the nest), once in phase 1 of a second program. The nest accumulates
  // into v3 and advances r1/r2, so each call starts from the state the previous code left.
  const std::string nest = "    loop 2 {\n"
                           "        loop 3 {\n"
                           "            ld.dl16   v0, lx[r1]\n"
                           "            add.dl16  v3, v3, v0\n"
                           "            exp.dl16  v4, v0\n"
                           "            st.dl16   lx[r2], v4\n"
                           "            addi      r1, r1, 128\n"
                           "            addi      r2, r2, 128\n"
                           "        }\n"
                           "        addi      r9, r9, 1\n"
                           "    }\n";
  std::string text = ".kernel shared cores=2\n.args x y\n.core 0\n"
                     "    dma.in    lx[0x0], ddr[x], shape=(1,1,16) -> t0\n"
                     "    wait      t0\n"
                     "    li        r1, 0\n"
                     "    li        r2, 0x1000\n"
                     "    bcast.dl16 v3, 0.5\n" +
                     nest +
                     "    st.dl16   lx[0x2000], v3\n"
                     "    addi      r1, r1, 256\n"
                     "    mul.dl16  v3, v3, v3\n" +
                     nest +
                     "    st.dl16   lx[0x2080], v3\n"
                     "    dma.out   ddr[y], lx[0x1000], shape=(1,1,16) -> t1\n"
                     "    wait      t1\n"
                     "    bar\n"
                     "    bar\n"
                     ".core 1\n"
                     "    dma.in    lx[0x0], ddr[x], shape=(1,1,16) -> t0\n"
                     "    wait      t0\n"
                     "    bar\n"
                     "    li        r1, 128\n"
                     "    li        r2, 0x1000\n" +
                     nest + "    bar\n";
  isa::Kernel k = isa::parseKernel(text);
  std::vector<uint8_t> x = spyre::testing::randomDl16(16 * 64, 3), y(16 * 128, 0);
  isa::verifyKernel(k, {x.size(), y.size()});
  auto interp = sim::makeInterpreter();
  jit::JitOptions o;
  o.tier = jit::OptTier::O2; // the tier that shares nests
  jit::JitEngine jit(o);
  auto ri = spyre::testing::runPrepared(*interp->prepare(k), {x, y}, 1, 0x2100);
  auto rj = spyre::testing::runPrepared(*jit.prepare(k), {x, y}, 1, 0x2100);
  EXPECT_TRUE(ri.ddr == rj.ddr);
  EXPECT_TRUE(ri.lx == rj.lx);
  EXPECT_TRUE(ri.regs == rj.regs);
  // The nest really is shared: one function, called three times from two phase functions.
  std::string ir = jit::kernelToIR(k);
  auto count = [&](const std::string &what) {
    size_t n = 0;
    for (size_t at = ir.find(what); at != std::string::npos; at = ir.find(what, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("define internal void @spyre_shared_c0_p0.loop"), 1u) << ir;
  EXPECT_EQ(count("call void @spyre_shared_c0_p0.loop"), 3u) << ir;
}
