// Launch scalar arguments (program.h: the LX scalar-argument block): the listing's `.scalars`,
// the verifier's rule for reading a slot, and both engines: `ld` of a slot gives exactly what
// `bcast` of the same value as an immediate gives, in DL16 and fp32, for awkward values.
#include "jit_test_util.h"
#include "spyre/isa/error.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/verifier.h"
#include "spyre/jit/jit_engine.h"
#include <cmath>
#include <gtest/gtest.h>

using namespace spyre;
using namespace spyre::testing;

namespace {

const bool kNoUserCache = [] {
  setenv("SPYRE_CACHE_DIR", "off", 0);
  return true;
}();

// out = [a * $1 (dl16), $1's register (dl16), $0's register (f32)]; out2 = a's second stick read
// as f32, times $0 (f32), then $0 again. Slot 0 holds $1 as dl16, slot 1 holds $0 as f32.
const char *kKernel = R"(.kernel scal cores=2
.args a out out2
.scalars $1:dl16 $0:f32
.core 0..1
    tbl       r1, [0, 384]
    tbl       r2, [0, 256]
    dma.in    lx[0x0], ddr[a+r2], shape=(1,1,2) -> t0
    wait      t0
    ld.dl16   v1, lx[0x1ff800]
    ld.f32    v2, lx[0x1ff880]
    ld.dl16   v0, lx[0x0]
    mul.dl16  v3, v0, v1
    st.dl16   lx[0x200], v3
    st.dl16   lx[0x280], v1
    ld.f32    v4, lx[0x80]
    mul.f32   v5, v4, v2
    st.f32    lx[0x300], v2
    st.f32    lx[0x400], v5
    st.f32    lx[0x480], v2
    dma.out   ddr[out+r1], lx[0x200], shape=(1,1,3) -> t1
    dma.out   ddr[out2+r2], lx[0x400], shape=(1,1,2) -> t2
    wait      t1, t2
)";

/// The same kernel with `bcast` immediates instead of the slot loads.
isa::Kernel constantForm(double s0, double s1) {
  isa::Kernel k = isa::parseKernel(kKernel);
  k.scalarArgs.clear();
  for (auto &p : k.programs)
    for (auto &in : p.body)
      if (in.op == isa::Opcode::Ld && in.lx.base < 0 && in.lx.offset >= isa::kScalarArgLxBase) {
        const bool slot1 = in.lx.offset == isa::kScalarArgLxBase + 128;
        const int vd = in.v[0];
        in = isa::Instr{};
        in.op = isa::Opcode::Bcast;
        in.fmt = slot1 ? isa::Format::F32 : isa::Format::DL16;
        in.v[0] = vd;
        in.fimm = static_cast<float>(slot1 ? s0 : s1);
      }
  return k;
}

std::vector<std::vector<uint8_t>> args() {
  return {randomDl16(256, 5), std::vector<uint8_t>(768), std::vector<uint8_t>(512)};
}

} // namespace

TEST(ScalarArgs, ListingRoundTrips) {
  isa::Kernel k = isa::parseKernel(kKernel);
  ASSERT_EQ(k.scalarArgs.size(), 2u);
  EXPECT_EQ(k.scalarArgs[0], (isa::ScalarArg{1, isa::Format::DL16}));
  EXPECT_EQ(k.scalarArgs[1], (isa::ScalarArg{0, isa::Format::F32}));
  const std::string text = isa::printKernel(k);
  EXPECT_NE(text.find(".scalars $1:dl16 $0:f32\n"), std::string::npos) << text;
  EXPECT_EQ(isa::printKernel(isa::parseKernel(text)), text);
  EXPECT_THROW(isa::parseKernel(".kernel k cores=1\n.scalars $0:i32\n.core 0\n    bar\n"), Error);
  EXPECT_THROW(isa::parseKernel(".kernel k cores=1\n.scalars 0:f32\n.core 0\n    bar\n"), Error);
}

TEST(ScalarArgs, VerifierAllowsOnlyReadsOfDeclaredSlotsInTheirFormat) {
  std::vector<uint64_t> argBytes{512, 768, 512};
  EXPECT_NO_THROW(isa::verifyKernel(isa::parseKernel(kKernel), argBytes));
  auto expectError = [&](const std::string &from, const std::string &to, const std::string &what) {
    std::string text = kKernel;
    text.replace(text.find(from), from.size(), to);
    try {
      isa::verifyKernel(isa::parseKernel(text), argBytes);
      FAIL() << to << " was accepted";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expectError("ld.f32    v2, lx[0x1ff880]", "ld.dl16   v2, lx[0x1ff880]", "holds f32, read as dl16");
  expectError("ld.f32    v2, lx[0x1ff880]", "ld.f32    v2, lx[0x1ff900]", "not a scalar-argument slot");
  expectError("st.dl16   lx[0x200], v3", "st.dl16   lx[0x1ff800], v3", "outside the usable LX");
  expectError("ld.dl16   v1, lx[0x1ff800]", "ld.pad.dl16 v1, lx[0x1ff800], 4, 0.0", "outside the usable LX");
}

TEST(ScalarArgs, SlotLoadsEqualBcastImmediatesInBothEngines) {
  const double values[] = {0.1,  -2.7, 1e-9, 1e10, INFINITY, -INFINITY, NAN, -0.0, 1.0 + 1.0 / 1024, 65504.0,
                           3.0, 1.0 / 3.0, 2.0 + 3.0 / 1024};
  const isa::Kernel k = isa::parseKernel(kKernel);
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit(jit::JitOptions{jit::OptTier::O2, "", "off", true});
  auto pi = interp->prepare(k), pj = jit.prepare(k);
  for (double s1 : values) {
    const double s0 = -s1 * 0.75;
    const isa::Kernel c = constantForm(s0, s1);
    const RunResult want = runPrepared(*interp->prepare(c), args());
    EXPECT_EQ(runPrepared(*pi, args(), 1, 4096, {s0, s1}).ddr, want.ddr) << "interpreter, $1 = " << s1;
    EXPECT_EQ(runPrepared(*pj, args(), 1, 4096, {s0, s1}).ddr, want.ddr) << "JIT, $1 = " << s1;
  }
  try {
    runPrepared(*pi, args(), 1, 4096, {1.0});
    FAIL() << "a launch without $1 ran";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("reads scalar argument $1, but the launch passes 1"), std::string::npos)
        << e.what();
  }
}
