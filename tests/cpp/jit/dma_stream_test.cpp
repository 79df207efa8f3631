// dma.out of a kernel whose output to one argument is at least 8 MiB takes non-temporal stores
// in the O2 tier (lower_dma.cpp, kStreamingOutBytes), rows with a 64-byte-aligned DDR start
// only, memcpy for the others. Either way DDR must equal the interpreter's byte for byte,
// including what another core reads back after the barrier.
#include "jit_test_util.h"
#include "spyre/isa/listing.h"
#include "spyre/jit/jit_engine.h"
#include <algorithm>
#include <gtest/gtest.h>

using namespace spyre;
using spyre::testing::randomDl16;
using spyre::testing::runPrepared;

namespace {

/// Two cores each copy 4 MiB of `a` to `o` in 64 KiB DMAs (8 rows of 8 KiB), starting at byte
/// `shift` of `o` (64-byte aligned or not); after the barrier each core copies the other core's
/// first 64 KiB of `o` to `back`.
isa::Kernel streamingKernel(int shift) {
  const std::string off = shift ? "+" + std::to_string(shift) : "";
  return isa::parseKernel(".kernel nt cores=2\n.args a o back\n.core 0..1\n"
                          "    tbl       r1, [0, 4194304]\n"
                          "    tbl       r2, [4194304, 0]\n"
                          "    tbl       r3, [0, 65536]\n"
                          "    loop 64 {\n"
                          "        dma.in    lx[0x0], ddr[a+r1], shape=(1,8,64) -> t0\n"
                          "        wait      t0\n"
                          "        dma.out   ddr[o+r1" + off + "], lx[0x0], shape=(1,8,64) -> t1\n"
                          "        wait      t1\n"
                          "        addi      r1, r1, 65536\n"
                          "    }\n"
                          "    bar\n"
                          "    dma.in    lx[0x10000], ddr[o+r2" + off + "], shape=(1,8,64) -> t2\n"
                          "    wait      t2\n"
                          "    dma.out   ddr[back+r3], lx[0x10000], shape=(1,8,64) -> t3\n"
                          "    wait      t3\n");
}

} // namespace

TEST(DmaStreaming, LargeOutputsEqualTheInterpreterAlignedOrNot) {
  const auto a = randomDl16(size_t{4} << 20, 11); // 8 MiB
  for (int shift : {0, 64, 32, 2}) {
    isa::Kernel k = streamingKernel(shift);
    std::vector<uint8_t> o((size_t{8} << 20) + 128, 0x5a), back(size_t{128} << 10, 0);
    auto interp = sim::makeInterpreter();
    jit::JitEngine jit({jit::OptTier::O2, ""});
    spyre::testing::RunResult ri = runPrepared(*interp->prepare(k), {a, o, back}, 2);
    spyre::testing::RunResult rj = runPrepared(*jit.prepare(k), {a, o, back}, 2);
    ASSERT_TRUE(ri.error.empty() && rj.error.empty()) << ri.error << rj.error;
    ASSERT_EQ(ri.ddr.size(), rj.ddr.size());
    EXPECT_TRUE(ri.ddr == rj.ddr) << "shift " << shift;
    // The copy is the input: not a vacuous equality of two untouched buffers.
    EXPECT_TRUE(std::equal(a.begin(), a.end(), rj.ddr.begin() + static_cast<std::ptrdiff_t>(a.size() + shift)))
        << "shift " << shift;
  }
}
