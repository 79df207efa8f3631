#include "spyre/isa/listing.h"
#include "spyre/isa/timing.h"
#include "spyre/isa/verifier.h"
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

using namespace spyre;
using namespace spyre::isa;

namespace {

std::string readFile(const std::string &p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Two cores, two 4 KiB arguments: the frame of most malformed cases below.
const std::string kHdr = ".kernel k cores=2\n.args a b\n.core 0..1\n";

std::string verifyError(const Kernel &k, const std::vector<uint64_t> &argBytes = {4096, 4096}) {
  try {
    verifyKernel(k, argBytes);
  } catch (const Error &e) {
    return e.what();
  }
  return "<no error>";
}

std::string verifyError(const std::string &text, const std::vector<uint64_t> &argBytes = {4096, 4096}) {
  return verifyError(parseKernel(text), argBytes);
}

} // namespace

TEST(Verifier, HandWrittenKernelPasses) {
  Kernel k = parseKernel(readFile(std::string(SPYRE_TEST_DATA_DIR) + "/kernels/add_relu_mul.lst"));
  EXPECT_NO_THROW(verifyKernel(k, {512, 512, 512}));
  // The second core's slice ends at byte 512: one byte less and the DMA leaves argument out.
  EXPECT_NE(verifyError(k, {512, 512, 511}).find("outside argument out of 511 bytes"), std::string::npos);
}

TEST(Verifier, ValidCornerCasesPass) {
  // Exactly fills the argument; uses the last whole stick of usable LX ([1677568, 1677696)
  // inside [0, 1677721)); reads a vector register never written (registers persist across phases);
  // loop 0 never executes its out-of-range body; a token waited twice; empty programs.
  std::string text = kHdr +
                     "    dma.in    lx[0x0], ddr[a], shape=(1,1,32) -> t0\n"
                     "    wait      t0\n"
                     "    wait      t0\n"
                     "    ld.dl16   v0, lx[0x199900]\n"
                     "    add.f32   v1, v9, v10\n"
                     "    loop 0 {\n"
                     "        ld.dl16   v0, lx[0x7fffff00]\n"
                     "    }\n"
                     "    bar\n"
                     "    st.f32    lx[0x80], v1\n";
  EXPECT_EQ(verifyError(text), "<no error>");
  EXPECT_EQ(verifyError(".kernel e cores=1\n.args\n.core 0\n", {}), "<no error>");
}

TEST(Verifier, LoopBoundsAreExact) {
  // 3 × 4369 = 13107 sticks end at 1677696 <= 1677721; 3 × 4370 does not fit. A loop violation
  // is reported for the last iteration (the one the analytic check looks at).
  auto prog = [](int inner) {
    return kHdr + "    li        r2, 0\n    loop 3 {\n        loop " + std::to_string(inner) +
           " {\n            st.dl16   lx[r2], v0\n            addi      r2, r2, 128\n        }\n    }\n";
  };
  EXPECT_EQ(verifyError(prog(4369)), "<no error>");
  EXPECT_EQ(verifyError(prog(4370)),
            "kernel k, core 0, line 7, st.dl16 lx[r2]: LX access [1677952, 1678080) is outside the usable LX [0, 1677721)");
}

TEST(Verifier, HugeLoopsVerifyQuickly) {
  // 10^12 dynamic loads: only possible because translated loop states are checked analytically.
  std::string text = kHdr +
                     "    tbl       r3, [0, 128]\n"
                     "    loop 1000000 {\n"
                     "        li        r2, 0\n"
                     "        loop 1000000 {\n"
                     "            ld.dl16   v0, lx[r3]\n"
                     "            addi      r2, r2, 1\n"
                     "        }\n"
                     "        dma.in    lx[r3+0x100], ddr[a+r3], shape=(2,1,1), ddr.stride=(256,128), lx.stride=(256,128) -> t0\n"
                     "        wait      t0\n"
                     "    }\n";
  EXPECT_EQ(verifyError(text), "<no error>");
  // The same nest whose address creeps out of LX only in the last outer iteration.
  std::string bad = kHdr +
                    "    li        r2, 0\n"
                    "    loop 1000000 {\n"
                    "        loop 1000000 {\n"
                    "            ld.dl16   v0, lx[r2]\n"
                    "        }\n"
                    "        addi      r2, r2, 256\n"
                    "    }\n"
                    "    ld.dl16   v0, lx[r2]\n";
  EXPECT_NE(verifyError(bad).find("line 7, ld.dl16 lx[r2]: LX access [255999744, 255999872)"), std::string::npos)
      << verifyError(bad);
}

// Double buffering: (r4, r5) swap each iteration while r5 grows, so r4 alternates between the
// two halves 0 + 256·m and 0x10000 + 256·m. Only odd iterations can leave LX: the period-2
// analysis must still find exactly the last one.
TEST(Verifier, PeriodicLoopStatesAreExact) {
  auto prog = [](int64_t n) {
    return kHdr + "    li        r4, 0\n    li        r5, 0x10000\n    loop " + std::to_string(n) +
           " {\n        ld.dl16   v0, lx[r4]\n        addi      r6, r4, 256\n"
           "        addi      r4, r5, 0\n        addi      r5, r6, 0\n    }\n";
  };
  // n = 2M: last odd address 0x10000 + 256·(M-1) + 128 <= 1677721 iff M <= 6298.
  EXPECT_EQ(verifyError(prog(12596)), "<no error>");
  EXPECT_EQ(verifyError(prog(12597)), "<no error>"); // the extra iteration is even: 256·6298
  EXPECT_EQ(verifyError(prog(12598)),
            "kernel k, core 0, line 7, ld.dl16 lx[r4]: LX access [1677824, 1677952) is outside the usable LX [0, 1677721)");
  // Ping-pong between two fixed buffers for 10^12 iterations, with DMA into the other buffer.
  std::string pingPong = kHdr +
                         "    li        r4, 0\n"
                         "    loop 1000000000000 {\n"
                         "        dma.in    lx[r4], ddr[a], shape=(1,1,32) -> t0\n"
                         "        wait      t0\n"
                         "        muli      r4, r4, -1\n"
                         "        addi      r4, r4, 0x1000\n"
                         "    }\n";
  EXPECT_EQ(verifyError(pingPong), "<no error>");
  // A misaligned second buffer is found although the first is fine.
  std::string misaligned = pingPong;
  misaligned.replace(misaligned.find("0x1000\n"), 7, "0x1040\n");
  EXPECT_NE(verifyError(misaligned).find("LX address 4160 is not 128-byte aligned"), std::string::npos)
      << verifyError(misaligned);
}

// Malformed listings (LX and DDR bounds, alignment, registers, tokens, barriers, core ranges,
// overflow) are text tests: tests/lit/listing/verify-*.test, one exact message per case.

// Rules the parser already enforces can still be broken by generated kernels.
TEST(Verifier, MalformedGeneratedKernels) {
  auto base = [] {
    return parseKernel(kHdr + "    loop 2 {\n        add.f32   v0, v1, v2\n    }\n"
                              "    dma.in    lx[0x0], ddr[a], shape=(1,1,1) -> t0\n    wait      t0\n");
  };
  {
    Kernel k = base();
    k.programs[0].body[0].imm = -1;
    EXPECT_NE(verifyError(k).find("line 4, loop -1: loop count must be >= 0"), std::string::npos) << verifyError(k);
  }
  {
    Kernel k = base();
    k.programs[0].body[0].body[0].v[0] = 16;
    EXPECT_NE(verifyError(k).find("line 5, add.f32 v16: vector register out of range v0..v15"), std::string::npos);
  }
  {
    Kernel k = base();
    k.programs[0].body[0].body[0].fmt = Format::None;
    EXPECT_NE(verifyError(k).find("line 5, add: needs a format suffix, one of .dl16 .f32"), std::string::npos)
        << verifyError(k);
  }
  {
    Kernel k = base();
    k.programs[0].body[1].outToken = 16;
    EXPECT_NE(verifyError(k).find("dma.in t16: token out of range t0..t15"), std::string::npos);
  }
  {
    Kernel k = base();
    k.programs[0].body[1].ddr.arg = 2;
    EXPECT_NE(verifyError(k).find("dma.in ddr[arg2]: argument index 2 is not one of the kernel's 2 arguments"),
              std::string::npos);
  }
  {
    Kernel k = base();
    k.programs[0].body[1].lx.base = 40;
    EXPECT_NE(verifyError(k).find("dma.in r40: scalar register out of range r0..r31"), std::string::npos);
  }
  {
    Kernel k = base();
    k.programs[0].lastCore = 5;
    EXPECT_NE(verifyError(k).find("kernel k: .core 0..5 is not a core range inside 0..1"), std::string::npos);
  }
  {
    Kernel k = base();
    k.numCores = 33;
    EXPECT_NE(verifyError(k).find("kernel k: cores=33 is outside 1..32"), std::string::npos);
  }
  EXPECT_NE(verifyError(base(), {4096}).find("kernel k: declares 2 arguments but 1 argument sizes were bound"),
            std::string::npos);
}

// Differential check of the loop analysis: random scalar/address programs verified as written
// and fully unrolled (which the walker then runs instruction by instruction) must agree.
namespace {

struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return s;
  }
  int64_t pick(std::initializer_list<int64_t> v) { return v.begin()[next() % v.size()]; }
};

std::vector<Instr> randomBody(Rng &g, int depth, int &line) {
  std::vector<Instr> b;
  int n = 1 + static_cast<int>(g.next() % 5);
  for (int i = 0; i < n; ++i) {
    Instr in;
    in.line = ++line;
    int kind = static_cast<int>(g.next() % 9);
    int rd = 1 + static_cast<int>(g.next() % 4), rs = static_cast<int>(g.next() % 5);
    if (kind == 0) {
      in.op = Opcode::Li, in.r = {rd, -1}, in.imm = g.pick({0, 128, 256, 64});
    } else if (kind == 1 || kind == 2) {
      in.op = Opcode::Addi, in.r = {rd, rs}, in.imm = g.pick({0, 128, -128, 64, 256, 384});
    } else if (kind == 3) {
      in.op = Opcode::Muli, in.r = {rd, rs}, in.imm = g.pick({1, -1, 0, 2});
    } else if (kind == 4 && depth < 2) {
      in.op = Opcode::Loop, in.imm = g.pick({0, 1, 2, 3, 5, 8, 9});
      in.body = randomBody(g, depth + 1, line);
    } else if (kind == 5) {
      in.op = Opcode::DmaIn, in.outToken = static_cast<int>(g.next() % 2);
      in.lx.base = 1 + static_cast<int>(g.next() % 4);
      in.dma.n = {1, 1, g.pick({1, 2})};
      in.dma.ddrStride = in.dma.lxStride = DmaShape::dense(in.dma.n);
    } else if (kind == 6) {
      in.op = Opcode::Wait, in.tokens = {static_cast<int>(g.next() % 2)};
    } else {
      in.op = g.next() % 2 ? Opcode::Ld : Opcode::St, in.fmt = Format::F32, in.v = {0, -1, -1};
      in.lx.base = 1 + static_cast<int>(g.next() % 4), in.lx.offset = g.pick({0, 128, 1024});
    }
    b.push_back(std::move(in));
  }
  return b;
}

void unroll(const std::vector<Instr> &b, std::vector<Instr> &out) {
  for (const auto &in : b) {
    if (in.op != Opcode::Loop) {
      out.push_back(in);
      continue;
    }
    for (int64_t i = 0; i < in.imm; ++i)
      unroll(in.body, out);
  }
}

} // namespace

TEST(Verifier, LoopAnalysisAgreesWithUnrolling) {
  Rng g{0x9E3779B97F4A7C15ull};
  int failures = 0, passes = 0;
  for (int t = 0; t < 10000; ++t) {
    Kernel k;
    k.name = "r";
    k.numCores = 1;
    k.args = {"a"};
    CoreProgram p;
    int line = 0;
    p.body = randomBody(g, 0, line);
    k.programs.push_back(p);
    Kernel flat = k;
    flat.programs[0].body.clear();
    unroll(k.programs[0].body, flat.programs[0].body);
    auto run = [](const Kernel &kk) -> std::string {
      try {
        verifyKernel(kk, {1 << 20}, 2048);
      } catch (const Error &e) {
        return e.what();
      }
      return "<no error>";
    };
    std::string a = run(k), b = run(flat);
    EXPECT_EQ(a == "<no error>", b == "<no error>") << "program " << t << "\n" << printKernel(k)
                                                    << "looped:   " << a << "\nunrolled: " << b;
    (a == "<no error>" ? passes : failures)++;
    if (a == "<no error>") {
      TimingReport ta = timeKernel(k, HardwareConfig{}), tb = timeKernel(flat, HardwareConfig{});
      EXPECT_EQ(ta.lsuSticks, tb.lsuSticks) << printKernel(k);
      EXPECT_EQ(ta.ddrBytes, tb.ddrBytes) << printKernel(k);
      EXPECT_EQ(ta.perCorePhase[0][0].sync, tb.perCorePhase[0][0].sync) << printKernel(k);
    }
  }
  // The generator must exercise both outcomes.
  EXPECT_GT(passes, 1000);
  EXPECT_GT(failures, 1000);
}

// dma.mc: the cohort of core c is cores c - c % k .. + k - 1, and every member makes the same
// multicast transfers (the one DDR read that reaches every member's LX).
namespace {
std::string multicastKernel(const std::string &core0, const std::string &core1 = "") {
  std::string text = ".kernel mc cores=4\n.args a b\n";
  if (core1.empty())
    return text + ".core 0..3\n" + core0;
  return text + ".core 0..1\n" + core0 + ".core 2..3\n" + core1;
}
} // namespace

TEST(Verifier, MulticastCohortsThatAgreePass) {
  // Same absolute and register-relative addresses on every member, in a loop, two cohorts of 2
  // loading different blocks (r1 = 1024 * (core / 2)), and a cohort of 4.
  std::string body = "    li        r2, 2\n"
                     "    tbl       r1, [0, 0, 1024, 1024]\n"
                     "    loop 3 {\n"
                     "        dma.mc    lx[0x0], ddr[a+r1], shape=(1,1,8), cohort=2 -> t0\n"
                     "        wait      t0\n"
                     "    }\n"
                     "    dma.mc    lx[0x400], ddr[b+0x80], shape=(1,2,4), cohort=4 -> t1\n"
                     "    wait      t1\n";
  Kernel k = parseKernel(multicastKernel(body));
  EXPECT_EQ(verifyError(k), "<no error>");
  EXPECT_EQ(printKernel(parseKernel(printKernel(k))), printKernel(k)); // listing round trip
  EXPECT_NE(printKernel(k).find("cohort=2 -> t0"), std::string::npos);
}

TEST(Verifier, MulticastCohortMismatchesNameTheCoresAndTransfers) {
  // Members of one cohort load different DDR bytes.
  std::string diff = "    tbl       r1, [0, 128, 0, 128]\n"
                     "    dma.mc    lx[0x0], ddr[a+r1], shape=(1,1,8), cohort=2 -> t0\n"
                     "    wait      t0\n";
  EXPECT_NE(verifyError(multicastKernel(diff)).find("kernel mc, core 1: multicast cohort mismatch: this core issues "
                                                    "line 5 dma.mc of cohort 2 in phase 0: ddr[a+0x80]"),
            std::string::npos)
      << verifyError(multicastKernel(diff));
  // A member that never issues its cohort's multicast (cores 2..3 run another program).
  std::string mc = "    dma.mc    lx[0x0], ddr[a], shape=(1,1,8), cohort=4 -> t0\n    wait      t0\n";
  std::string plain = "    dma.in    lx[0x0], ddr[a], shape=(1,1,8) -> t0\n    wait      t0\n";
  EXPECT_NE(verifyError(multicastKernel(mc, plain)).find("core 2: multicast cohort mismatch: core 0 issues line 4 "
                                                         "dma.mc of cohort 4 in phase 0: ddr[a+0x0], lx[0x0], "
                                                         "shape=(1,1,8) but this core does not"),
            std::string::npos)
      << verifyError(multicastKernel(mc, plain));
  // Different LX destinations, different cohort sizes, a cohort beyond the kernel's cores.
  std::string lx = "    tbl       r3, [0, 0, 0, 128]\n"
                   "    dma.mc    lx[r3], ddr[a], shape=(1,1,8), cohort=2 -> t0\n    wait      t0\n";
  EXPECT_NE(verifyError(multicastKernel(lx)).find("core 3: multicast cohort mismatch"), std::string::npos);
  std::string sizes = "    dma.mc    lx[0x0], ddr[a], shape=(1,1,8), cohort=2 -> t0\n    wait      t0\n";
  EXPECT_NE(verifyError(multicastKernel(mc, sizes)).find("multicast cohort mismatch"), std::string::npos);
  std::string beyond = ".kernel mc cores=3\n.args a b\n.core 0..2\n" + mc;
  EXPECT_NE(verifyError(beyond).find("core 0: multicast cohort mismatch: line 4 dma.mc of cohort 4 in phase 0: "
                                     "ddr[a+0x0], lx[0x0], shape=(1,1,8) names cores 0..3 but the kernel has 3 cores"),
            std::string::npos)
      << verifyError(beyond);
  // A member issuing it in another phase.
  std::string late = "    bar\n" + mc;
  EXPECT_NE(verifyError(multicastKernel(mc + "    bar\n", late)).find("multicast cohort mismatch"), std::string::npos);
}

TEST(Verifier, MulticastCohortSizeIsTwoToEight) {
  for (int k : {0, 1, 9, 16}) {
    std::string text = multicastKernel("    dma.mc    lx[0x0], ddr[a], shape=(1,1,8), cohort=" + std::to_string(k) +
                                       " -> t0\n    wait      t0\n");
    EXPECT_NE(verifyError(text).find("multicast cohort size must be in 2..8"), std::string::npos) << verifyError(text);
  }
  // The LX race rule treats dma.mc as the dma.in it is.
  std::string race = "    dma.mc    lx[0x0], ddr[a], shape=(1,1,8), cohort=2 -> t0\n"
                     "    ld.dl16   v0, lx[0x80]\n"
                     "    wait      t0\n";
  EXPECT_NE(verifyError(multicastKernel(race)).find("reads LX [128, 256) while dma.mc at line 4 (token t0) is still filling"),
            std::string::npos)
      << verifyError(multicastKernel(race));
}
