#include "spyre/isa/hardware_config.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/timing.h"
#include "spyre/isa/verifier.h"
#include <cstdlib>
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

// Cycle counts below are derived by hand from the formulas in timing.cpp with the defaults:
// 1.5 GHz, DMA start-up 100 ns = 150 cycles, DDR 204.8 GB/s = 136.5333 B/cycle per card,
// 2 corelets (LSU and SFP 0.5 cycle per stick), launch 3 µs, barrier 0.2 µs.
constexpr double kEps = 1e-9;

// 32 cores each add 128 sticks of x and y into z: 4096 sticks = 262144 DL16 elements.
const char *kVectorAdd = R"(.kernel vadd cores=32
.args x y z
.core 0..31
    muli      r1, r0, 16384
    dma.in    lx[0x0], ddr[x+r1], shape=(1,1,128) -> t0
    dma.in    lx[0x4000], ddr[y+r1], shape=(1,1,128) -> t1
    wait      t0, t1
    li        r2, 0
    loop 128 {
        ld.dl16   v0, lx[r2]
        ld.dl16   v1, lx[r2+0x4000]
        add.dl16  v2, v0, v1
        st.dl16   lx[r2+0x8000], v2
        addi      r2, r2, 128
    }
    dma.out   ddr[z+r1], lx[0x8000], shape=(1,1,128) -> t2
    wait      t2
)";

} // namespace

TEST(Timing, VectorAdd32Cores) {
  Kernel k = parseKernel(kVectorAdd);
  ASSERT_NO_THROW(verifyKernel(k, {524288, 524288, 524288}));
  TimingReport r = timeKernel(k, HardwareConfig{});
  ASSERT_EQ(r.perCorePhase.size(), 32u);
  ASSERT_EQ(r.numPhases(), 1);
  EXPECT_EQ(r.activeCores, 32);
  EXPECT_EQ(r.barriers, 0);
  for (const auto &core : r.perCorePhase) {
    const UnitCycles &u = core[0];
    // 32 active cores: 136.5333/32 = 4.2667 B/cycle; 16384 B per DMA = 3840 cycles + 150.
    EXPECT_NEAR(u.dma, 3 * (150 + 3840), kEps);
    EXPECT_NEAR(u.lsu, 128 * 3 / 2.0, kEps);     // 384 sticks over 2 corelets
    EXPECT_NEAR(u.sfp, 128 / 2.0, kEps);         // 128 stick-adds over 2 corelets
    EXPECT_NEAR(u.scalar, 1 + 1 + 1 + 128, kEps); // muli, li, loop entry, 128 addi
    EXPECT_NEAR(u.sync, 2, kEps);                 // two waits
    EXPECT_EQ(u.pt, 0);
    EXPECT_EQ(u.ring, 0);
  }
  EXPECT_NEAR(r.phaseOverlappedCycles[0], 11970, kEps);
  EXPECT_NEAR(r.phaseSerialCycles[0], 11970 + 192 + 64 + 131 + 2, kEps);
  EXPECT_NEAR(r.overlappedUs, 3 + 11970 / 1500.0, kEps);
  EXPECT_NEAR(r.serialUs, 3 + 12359 / 1500.0, kEps);
  // Scheduled replay: muli (1); x and y DMAs back to back on the engine (1 + 2·3990 = 7981);
  // wait (7982), li (7983), loop entry (7984); the LSU is the busiest unit in the loop (1.5
  // cycles per iteration, 8176); the output DMA waits for it to drain (12166); wait (12167).
  EXPECT_NEAR(r.phaseScheduledCycles[0], 12167, kEps);
  EXPECT_NEAR(r.scheduledUs, 3 + 12167 / 1500.0, kEps);
  EXPECT_FALSE(r.scheduleApproximate);
  EXPECT_EQ(r.ddrBytes, 32u * 3 * 16384);
  EXPECT_EQ(r.lsuSticks, 32u * 384);
  EXPECT_EQ(r.sfpStickOps, 4096u);
  EXPECT_EQ(r.ptMacs, 0u);
  EXPECT_EQ(r.ringBytes, 0u);
  EXPECT_GE(r.serialUs, r.overlappedUs);
}

TEST(Timing, TwoPhasesWithBarrier) {
  Kernel k = parseKernel(readFile(std::string(SPYRE_TEST_DATA_DIR) + "/kernels/add_relu_mul.lst"));
  TimingReport r = timeKernel(k, HardwareConfig{});
  ASSERT_EQ(r.numPhases(), 2);
  EXPECT_EQ(r.barriers, 1);
  EXPECT_EQ(r.activeCores, 2);
  const UnitCycles &p0 = r.perCorePhase[1][0];
  // 3 DMAs of 256 B with 2 active cores (68.2667 B/cycle each): 3·150 + 768/68.2667.
  EXPECT_NEAR(p0.dma, 450 + 11.25, kEps);
  EXPECT_NEAR(p0.lsu, 6 / 2.0, kEps);
  EXPECT_NEAR(p0.sfp, 6 / 2.0, kEps);
  EXPECT_NEAR(p0.scalar, 5, kEps); // tbl, li, loop, 2 × addi
  EXPECT_NEAR(p0.sync, 2, kEps);
  const UnitCycles &p1 = r.perCorePhase[0][1];
  EXPECT_NEAR(p1.sfp, 4 / 2.0, kEps); // bcast, sub, neg, abs
  EXPECT_NEAR(p1.lsu, 2 / 2.0, kEps);
  EXPECT_EQ(p1.dma, 0);
  EXPECT_NEAR(r.overlappedUs, 3 + 0.2 + (461.25 + 2) / 1500, kEps);
  EXPECT_NEAR(r.serialUs, 3 + 0.2 + (474.25 + 3) / 1500, kEps);
  std::string s = r.summary();
  EXPECT_NE(s.find("kernel add_relu_mul: 2 cores (2 active on DDR), 2 phases, 1 barriers"), std::string::npos) << s;
  EXPECT_NE(s.find("overlapped 3.509 us, serial 3.518 us"), std::string::npos) << s;
}

TEST(Timing, JobTimingSumsKernelsAndPhaseMaxima) {
  const HardwareConfig hw;
  TimingReport a = timeKernel(parseKernel(kVectorAdd), hw);
  TimingReport b = timeKernel(parseKernel(readFile(std::string(SPYRE_TEST_DATA_DIR) + "/kernels/add_relu_mul.lst")), hw);
  JobTiming job;
  job.add(a, hw);
  job.add(b, hw);
  EXPECT_DOUBLE_EQ(job.scheduledUs, a.scheduledUs + b.scheduledUs);
  EXPECT_DOUBLE_EQ(job.serialUs, a.serialUs + b.serialUs);
  EXPECT_DOUBLE_EQ(job.launchUs, 6);
  EXPECT_DOUBLE_EQ(job.barrierUs, 0.2);
  EXPECT_EQ(job.ddrBytes, a.ddrBytes + b.ddrBytes);
  EXPECT_EQ(job.lsuSticks, a.lsuSticks + b.lsuSticks);
  // Per unit: Σ over kernels and phases of the busiest core; vadd's DMA is 3 · (150 + 3840)
  // cycles on every core, add_relu_mul's 450 + 11.25 in its first phase, none in its second.
  EXPECT_NEAR(job.unitUs.dma, (3 * (150 + 3840) + 461.25) / 1500, kEps);
  EXPECT_NEAR(job.unitUs.dma, (a.totals().dma + b.totals().dma) / hw.cyclesPerUs(), kEps);
  EXPECT_NEAR(job.unitUs.sfp, (a.totals().sfp + b.totals().sfp) / hw.cyclesPerUs(), kEps);
}

TEST(Timing, ActiveCoresShareDdrAndPhaseTimeIsMaxOverCores) {
  // Only cores 0..1 touch DDR, so each gets half the card's bandwidth; core 2..3 compute longer.
  const char *text = R"(.kernel mixed cores=4
.args a
.core 0..1
    dma.in    lx[0x0], ddr[a], shape=(1,1,1024) -> t0
    wait      t0
    bar
.core 2..3
    loop 1000 {
        relu.f32  v0, v0
    }
    bar
)";
  Kernel k = parseKernel(text);
  ASSERT_NO_THROW(verifyKernel(k, {131072}));
  TimingReport r = timeKernel(k, HardwareConfig{});
  EXPECT_EQ(r.activeCores, 2);
  ASSERT_EQ(r.numPhases(), 1); // a trailing bar opens no empty phase
  EXPECT_NEAR(r.perCorePhase[0][0].dma, 150 + 131072 / (204.8e9 / 1.5e9 / 2), 1e-6);
  EXPECT_NEAR(r.perCorePhase[0][0].dma, 150 + 1920, 1e-6);
  EXPECT_NEAR(r.perCorePhase[3][0].sfp, 500, kEps);
  EXPECT_NEAR(r.perCorePhase[3][0].scalar, 1, kEps);
  EXPECT_NEAR(r.phaseOverlappedCycles[0], 2070, 1e-6);
  EXPECT_NEAR(r.phaseSerialCycles[0], 2071, 1e-6); // core 0: dma 2070 + 1 wait
  EXPECT_NEAR(r.overlappedUs, 3 + 0.2 + 2070 / 1500.0, 1e-9);
}

TEST(Timing, NestedLoopCountsAreExactAndFast) {
  // 10^12 stick-ops: counted by weights, not by iterating.
  const char *text = R"(.kernel big cores=1
.args
.core 0
    li        r2, 0
    loop 1000000 {
        loop 1000000 {
            add.f32   v0, v0, v1
        }
        addi      r2, r2, 3
    }
    loop 7 {
        muli      r2, r2, -1
        neg.dl16  v1, v1
    }
)";
  Kernel k = parseKernel(text);
  TimingReport r = timeKernel(k, HardwareConfig{});
  EXPECT_EQ(r.sfpStickOps, 1000000000000ull + 7);
  EXPECT_EQ(r.activeCores, 0);
  const UnitCycles &u = r.perCorePhase[0][0];
  EXPECT_NEAR(u.sfp, (1e12 + 7) / 2, 1e-3);
  // li + outer loop + 10^6 inner loop entries + 10^6 addi + loop + 7 muli
  EXPECT_NEAR(u.scalar, 1 + 1 + 1e6 + 1e6 + 1 + 7, kEps);
  EXPECT_EQ(u.dma, 0);
  // The replay jumps through both loops: SFP-bound, as the overlapped bound says.
  EXPECT_NEAR(r.phaseScheduledCycles[0], r.phaseOverlappedCycles[0], 1e-9 * r.phaseOverlappedCycles[0]);
  EXPECT_FALSE(r.scheduleApproximate);
}

namespace {

// exp over 8 blocks of 64 sticks on one core, DMA in, compute, DMA out per block.
const char *kSingleBuffered = R"(.kernel single cores=1
.args x y
.core 0
    li        r1, 0
    loop 8 {
        dma.in    lx[0x0], ddr[x+r1], shape=(1,1,64) -> t0
        wait      t0
        li        r2, 0
        loop 64 {
            ld.dl16   v0, lx[r2]
            exp.dl16  v1, v0
            st.dl16   lx[r2+0x4000], v1
            addi      r2, r2, 128
        }
        dma.out   ddr[y+r1], lx[0x4000], shape=(1,1,64) -> t1
        wait      t1
        addi      r1, r1, 8192
    }
)";

// The same with double buffering: block i+1 is fetched while block i is computed, and block
// i's result is written back while block i+1 is computed. r3 = this block's input buffer
// (0x0 or 0x2000), its output buffer is r3 + 0x4000; r4 = the other input buffer.
const char *kDoubleBuffered = R"(.kernel double cores=1
.args x y
.core 0
    li        r1, 0
    li        r3, 0
    dma.in    lx[0x0], ddr[x+r1], shape=(1,1,64) -> t0
    wait      t0
    li        r4, 8192
    dma.in    lx[r4], ddr[x+r1+0x2000], shape=(1,1,64) -> t0
    addi      r2, r3, 0
    loop 64 {
        ld.dl16   v0, lx[r2]
        exp.dl16  v1, v0
        st.dl16   lx[r2+0x4000], v1
        addi      r2, r2, 128
    }
    dma.out   ddr[y+r1], lx[r3+0x4000], shape=(1,1,64) -> t1
    addi      r1, r1, 8192
    addi      r3, r4, 0
    loop 6 {
        wait      t0
        muli      r4, r3, -1
        addi      r4, r4, 8192
        dma.in    lx[r4], ddr[x+r1+0x2000], shape=(1,1,64) -> t0
        addi      r2, r3, 0
        loop 64 {
            ld.dl16   v0, lx[r2]
            exp.dl16  v1, v0
            st.dl16   lx[r2+0x4000], v1
            addi      r2, r2, 128
        }
        wait      t1
        dma.out   ddr[y+r1], lx[r3+0x4000], shape=(1,1,64) -> t1
        addi      r1, r1, 8192
        addi      r3, r4, 0
    }
    wait      t0
    addi      r2, r3, 0
    loop 64 {
        ld.dl16   v0, lx[r2]
        exp.dl16  v1, v0
        st.dl16   lx[r2+0x4000], v1
        addi      r2, r2, 128
    }
    wait      t1
    dma.out   ddr[y+r1], lx[r3+0x4000], shape=(1,1,64) -> t1
    wait      t1
)";

} // namespace

TEST(Timing, DoubleBufferingOverlapsDmaWithCompute) {
  // On one core DDR gives 136.5 B/cycle: a 64-stick block moves in 150 + 60 = 210 cycles; its
  // exp costs 64 · 4 / 2 = 128 SFP cycles. Work is identical, only the schedule differs.
  Kernel single = parseKernel(kSingleBuffered), dbl = parseKernel(kDoubleBuffered);
  ASSERT_NO_THROW(verifyKernel(single, {65536, 65536}));
  ASSERT_NO_THROW(verifyKernel(dbl, {65536, 65536}));
  HardwareConfig hw;
  TimingReport s = timeKernel(single, hw), d = timeKernel(dbl, hw);
  EXPECT_EQ(s.ddrBytes, d.ddrBytes);
  EXPECT_EQ(s.sfpStickOps, d.sfpStickOps);
  EXPECT_EQ(s.dmaOps, d.dmaOps);
  // Per block the single-buffered core waits for its DMA in, computes, waits for its DMA out:
  // every unit's time adds up (serial bound, up to the LSU/SFP overlap inside the loop).
  const double block = 210 + 210 + 128;
  EXPECT_GT(s.phaseScheduledCycles[0], 8 * block);
  EXPECT_LE(s.phaseScheduledCycles[0], s.phaseSerialCycles[0] + kEps);
  // Double buffered, the DMA engine (16 transfers · 210 = 3360 cycles) is busy almost all the
  // time: within one block's compute and the first transfer of the overlapped bound.
  EXPECT_GE(d.phaseScheduledCycles[0], d.phaseOverlappedCycles[0] - kEps);
  EXPECT_LT(d.phaseScheduledCycles[0], d.phaseOverlappedCycles[0] + 210 + 128 + 10);
  EXPECT_LT(d.phaseScheduledCycles[0], 0.8 * s.phaseScheduledCycles[0]); // 3366 vs 4427 cycles
  // The backend's cheap estimate is the same number.
  EXPECT_DOUBLE_EQ(scheduledKernelUs(single, hw), s.scheduledUs);
  EXPECT_DOUBLE_EQ(scheduledKernelUs(dbl, hw), d.scheduledUs);
  Kernel vadd = parseKernel(kVectorAdd), two = parseKernel(readFile(std::string(SPYRE_TEST_DATA_DIR) + "/kernels/add_relu_mul.lst"));
  EXPECT_DOUBLE_EQ(scheduledKernelUs(vadd, hw), timeKernel(vadd, hw).scheduledUs);
  EXPECT_DOUBLE_EQ(scheduledKernelUs(two, hw), timeKernel(two, hw).scheduledUs);
}

TEST(Timing, PeriodicLoopWeightsAreExact) {
  // The register state is a translation only with period 3 (triple buffering); trip counts that
  // are not multiples of the period must still count exactly.
  for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{5}, int64_t{6}, int64_t{7}, int64_t{1000003},
                    int64_t{1000000000001}}) {
    // (r2, r3, r4) -> (r3, r4, r2 + 512): after 3 iterations every register grew by 512.
    std::string text = ".kernel p cores=1\n.args\n.core 0\n    li        r3, 256\n    loop " + std::to_string(n) +
                       " {\n        st.f32    lx[r2], v0\n        relu.f32  v0, v0\n"
                       "        addi      r6, r2, 0\n        addi      r2, r3, 0\n        addi      r3, r4, 0\n"
                       "        addi      r4, r6, 512\n"
                       "        loop 3 {\n            addi      r5, r5, 1\n        }\n    }\n"
                       "    loop 4 {\n        relu.f32  v0, v0\n    }\n";
    Kernel k = parseKernel(text);
    TimingReport r = timeKernel(k, HardwareConfig{});
    EXPECT_EQ(r.sfpStickOps, static_cast<uint64_t>(n) + 4) << n;
    EXPECT_EQ(r.lsuSticks, static_cast<uint64_t>(n)) << n;
    // li, loop, per iteration (4 addi, inner loop entry, 3 addi), loop
    EXPECT_NEAR(r.perCorePhase[0][0].scalar, 1 + 1 + 8.0 * n + 1, 1e-3) << n;
  }
}

TEST(Timing, HardwareConfigScalesCosts) {
  Kernel k = parseKernel(kVectorAdd);
  HardwareConfig hw;
  hw.corelets = 1;
  hw.dmaStartupNs = 0;
  hw.kernelLaunchNs = 0;
  TimingReport r = timeKernel(k, hw);
  EXPECT_NEAR(r.perCorePhase[5][0].lsu, 384, kEps);
  EXPECT_NEAR(r.perCorePhase[5][0].sfp, 128, kEps);
  EXPECT_NEAR(r.perCorePhase[5][0].dma, 3 * 3840, 1e-6);
  EXPECT_NEAR(r.overlappedUs, 11520 / 1500.0, 1e-9);
  EXPECT_GE(r.serialUs, r.overlappedUs);
}

TEST(HardwareConfig, DefaultsMatchTorchSpyre) {
  HardwareConfig hw;
  EXPECT_EQ(hw.numCores, 32);
  EXPECT_DOUBLE_EQ(hw.ptMacsPerCycle * hw.clockGHz * 1e3, 1.536e6); // MAC/µs/core
  EXPECT_DOUBLE_EQ(hw.ddrBytesPerSecond, 204.8e9);
  EXPECT_EQ(hw.lxBytes, 2 * 1024 * 1024);
  EXPECT_EQ(hw.lxUsableBytes, 1677721);
  EXPECT_DOUBLE_EQ(hw.transcendentalCyclesPerStick, 4);
  EXPECT_NEAR(hw.ddrBytesPerCyclePerCore(32), 4.266666666666667, 1e-12);
}

TEST(HardwareConfig, SencoresFromEnvironment) {
  auto cores = [](const char *v) { return HardwareConfig::fromEnv(Env::fromMap({{"SENCORES", v}})).numCores; };
  EXPECT_EQ(HardwareConfig::fromEnv(Env()).numCores, 32);
  EXPECT_EQ(cores(""), 32); // an empty value counts as unset (spyre::Env)
  EXPECT_EQ(cores("8"), 8);
  EXPECT_EQ(cores("1"), 1);
  EXPECT_EQ(cores("32"), 32);
  for (const char *bad : {"0", "33", "-1", "abc", "8x", "+4", " 8"}) {
    try {
      cores(bad);
      ADD_FAILURE() << "SENCORES=" << bad << " accepted";
    } catch (const Unsupported &e) {
      EXPECT_EQ(std::string(e.what()), std::string("Unsupported: invalid SENCORES value ") + bad + " (expected an integer in 1..32)");
    }
  }
}

TEST(Timing, MulticastChargesEachCohortMemberItsShare) {
  // 8 cores load the same 1024 sticks: as dma.in every core streams them (8 x 128 KiB of
  // DDR), as one multicast of cohort 8 the card reads them once and each member is charged 1/8.
  auto kernel = [](const std::string &dma) {
    return parseKernel(".kernel w cores=8\n.args a\n.core 0..7\n    " + dma + " -> t0\n    wait      t0\n");
  };
  Kernel plain = kernel("dma.in    lx[0x0], ddr[a], shape=(1,1,1024)");
  Kernel mc = kernel("dma.mc    lx[0x0], ddr[a], shape=(1,1,1024), cohort=8");
  ASSERT_NO_THROW(verifyKernel(mc, {131072}));
  TimingReport p = timeKernel(plain, HardwareConfig{}), m = timeKernel(mc, HardwareConfig{});
  EXPECT_EQ(p.ddrBytes, 8u * 131072);
  EXPECT_EQ(m.ddrBytes, 131072u);
  // 8 active cores: 136.5333 / 8 B/cycle each; the multicast moves 16 KiB per member.
  EXPECT_NEAR(p.perCorePhase[0][0].dma, 150 + 131072 / (204.8e9 / 1.5e9 / 8), 1e-6);
  EXPECT_NEAR(m.perCorePhase[0][0].dma, 150 + 131072 / 8 / (204.8e9 / 1.5e9 / 8), 1e-6);
  EXPECT_NEAR(m.perCorePhase[0][0].dma, 150 + 960, 1e-6);
  EXPECT_LT(m.scheduledUs, p.scheduledUs);
}
