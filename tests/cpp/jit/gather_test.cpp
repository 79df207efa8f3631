// dma.gather and dma.scatter (indirect access): rows of a DDR table by int32 indices in LX, read
// or written, on both engines and both JIT tiers, against a reference; an out-of-range index is
// a device error naming the kernel, core, entry and value, never a host access outside the table.
#include "spyre/isa/listing.h"
#include "spyre/isa/verifier.h"
#include "spyre/jit/jit_engine.h"
#include "spyre/sim/device_memory.h"
#include "spyre/sim/runtime.h"
#include <cstring>
#include <gtest/gtest.h>
#include <memory>

using namespace spyre;

namespace {

// Table: V = 10 rows of 2 sticks in the generic layout of [10, 128] fp16 (stick (t, j) at
// (t*10 + j)*128). Each core reads its own index stick (32 int32), gathers 5 entries starting at
// element 2 into LX (entry i: 2 sticks at 0x100 + i*256), and writes the 10 sticks out densely.
constexpr const char *kGather = R"(.kernel g cores=2
.args table idx out
.core 0..1
    tbl       r1, [0, 128]
    dma.in    lx[0x0], ddr[idx+r1], shape=(1,1,1) -> t0
    wait      t0
    dma.gather lx[0x100], ddr[table], shape=(1,2,1), ddr.stride=(2560,1280), lx.stride=(256,128), lx[0x8], 5, 10, 128, 256 -> t1
    wait      t1
    tbl       r2, [0, 1280]
    dma.out   ddr[out+r2], lx[0x100], shape=(1,1,10) -> t2
    wait      t2
)";

constexpr int64_t kTableBytes = 2560, kIdxBytes = 256, kOutBytes = 2560;

struct Result {
  std::vector<uint8_t> out;
  std::string error;
};

Result run(sim::Engine &e, const isa::Kernel &k, const std::vector<uint8_t> &table, const std::vector<int32_t> &idx) {
  sim::DeviceMemory mem(1ull << 24);
  sim::Runtime rt(2, 32);
  const uint64_t at = mem.allocate(kTableBytes), ai = mem.allocate(kIdxBytes), ao = mem.allocate(kOutBytes);
  std::memcpy(mem.at(at, kTableBytes), table.data(), kTableBytes);
  std::memcpy(mem.at(ai, kIdxBytes), idx.data(), kIdxBytes);
  std::memset(mem.at(ao, kOutBytes), 0xAB, kOutBytes);
  sim::LaunchArgs la{mem.base(), mem.capacity(), {at, ai, ao}, {kTableBytes, kIdxBytes, kOutBytes}};
  Result r;
  try {
    rt.launch(*e.prepare(k), la);
  } catch (const Error &err) {
    r.error = err.what();
  }
  r.out.assign(mem.at(ao, kOutBytes), mem.at(ao, kOutBytes) + kOutBytes);
  return r;
}

std::vector<uint8_t> tableBytes() {
  std::vector<uint8_t> t(kTableBytes);
  for (size_t i = 0; i < t.size(); ++i)
    t[i] = static_cast<uint8_t>(i * 7 + i / 128);
  return t;
}

std::vector<std::unique_ptr<sim::Engine>> engines() {
  std::vector<std::unique_ptr<sim::Engine>> e;
  e.push_back(sim::makeInterpreter());
  jit::JitOptions o0;
  o0.tier = jit::OptTier::O0;
  e.push_back(std::make_unique<jit::JitEngine>(o0));
  e.push_back(std::make_unique<jit::JitEngine>(jit::JitOptions{}));
  return e;
}

} // namespace

TEST(Gather, RowsByIndexOnEveryEngine) {
  isa::Kernel k = isa::parseKernel(kGather);
  EXPECT_EQ(isa::printKernel(isa::parseKernel(isa::printKernel(k))), isa::printKernel(k));
  isa::verifyKernel(k, {kTableBytes, kIdxBytes, kOutBytes});
  std::vector<int32_t> idx(64, -7); // entries outside [2, 7) of each stick are never read
  const int32_t rows[2][5] = {{3, 0, 9, 3, 5}, {9, 8, 1, 1, 0}};
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 5; ++i)
      idx[c * 32 + 2 + i] = rows[c][i];
  const std::vector<uint8_t> table = tableBytes();
  std::vector<uint8_t> expect(kOutBytes);
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 5; ++i)
      for (int t = 0; t < 2; ++t)
        std::memcpy(&expect[(c * 10 + i * 2 + t) * 128], &table[(t * 10 + rows[c][i]) * 128], 128);
  for (auto &e : engines()) {
    Result r = run(*e, k, table, idx);
    EXPECT_EQ(r.error, "") << e->name();
    EXPECT_EQ(r.out, expect) << e->name();
  }
}

TEST(Gather, OutOfRangeIndexIsADeviceError) {
  isa::Kernel k = isa::parseKernel(kGather);
  const std::vector<uint8_t> table = tableBytes();
  for (int32_t bad : {10, -1, 1 << 30}) {
    std::vector<int32_t> idx(64, 0);
    idx[32 + 2 + 3] = bad; // core 1, entry 3
    for (auto &e : engines()) {
      Result r = run(*e, k, table, idx);
      EXPECT_EQ(r.error, "kernel g: dma.gather on core 1: index " + std::to_string(bad) +
                             " (entry 3 of the index list) is outside the table's rows [0, 10)")
          << e->name();
      // The faulting entry's box is zero-filled, the others are copied.
      EXPECT_EQ(std::vector<uint8_t>(r.out.begin() + (10 + 6) * 128, r.out.begin() + (10 + 8) * 128),
                std::vector<uint8_t>(256, 0))
          << e->name();
      EXPECT_EQ(0, std::memcmp(&r.out[10 * 128], &table[0], 128)) << e->name();
    }
  }
}

TEST(Gather, VerifierChecksTheTableTheBoxesAndTheIndexList) {
  auto verify = [](const std::string &gather, std::vector<uint64_t> bytes = {kTableBytes, kIdxBytes, kOutBytes}) {
    std::string text = ".kernel v cores=1\n.args table idx out\n.core 0..0\n    " + gather + "\n    wait t1\n";
    try {
      isa::verifyKernel(isa::parseKernel(text), bytes);
      return std::string();
    } catch (const Error &e) {
      return std::string(e.what());
    }
  };
  const std::string box = "shape=(1,2,1), ddr.stride=(2560,1280), lx.stride=(256,128)";
  EXPECT_EQ(verify("dma.gather lx[0x100], ddr[table], " + box + ", lx[0x0], 5, 10, 128, 256 -> t1"), "");
  // 11 rows: row 10's second stick ends at 2688 > 2560.
  EXPECT_NE(verify("dma.gather lx[0x100], ddr[table], " + box + ", lx[0x0], 5, 11, 128, 256 -> t1")
                .find("DMA row (0,1) covers DDR [2560, 2688), outside argument table of 2560 bytes"),
            std::string::npos);
  EXPECT_NE(verify("dma.gather lx[0x100], ddr[table], " + box + ", lx[0x0], 0, 10, 128, 256 -> t1")
                .find("gather entry count n must be >= 1"),
            std::string::npos);
  EXPECT_NE(verify("dma.gather lx[0x100], ddr[table], " + box + ", lx[0x0], 5, 10, 128, 200 -> t1")
                .find("gather lxstep must be a non-negative multiple of 128"),
            std::string::npos);
  EXPECT_NE(verify("dma.gather lx[0x100], ddr[table], " + box + ", lx[0x102], 5, 10, 128, 256 -> t1")
                .find("index list address 258 is not 4-byte aligned"),
            std::string::npos);
  EXPECT_NE(verify("dma.gather lx[0x100], ddr[table], " + box + ", lx[0x180], 5, 10, 128, 256 -> t1")
                .find("index list [384, 404) overlaps the LX [256, 1536) the gather fills"),
            std::string::npos);
  EXPECT_NE(verify("dma.gather lx[0x100], ddr[table], " + box + ", lx[0x199990], 5, 10, 128, 256 -> t1")
                .find("index list [1677712, 1677732) is outside the usable LX"),
            std::string::npos);
}

// dma.scatter, the gather's mirror: each core reads its index stick and 10 source sticks (5
// entries of 2 sticks), then writes entry i's box to row idx[2 + i] of the [10, 128] fp16 table.
constexpr const char *kScatter = R"(.kernel s cores=2
.args src idx out
.core 0..1
    tbl       r1, [0, 128]
    dma.in    lx[0x0], ddr[idx+r1], shape=(1,1,1) -> t0
    tbl       r2, [0, 1280]
    dma.in    lx[0x100], ddr[src+r2], shape=(1,1,10) -> t1
    wait      t0, t1
    dma.scatter ddr[out], lx[0x100], shape=(1,2,1), ddr.stride=(2560,1280), lx.stride=(256,128), lx[0x8], 5, 10, 128, 256 -> t2
    wait      t2
)";

namespace {

/// The table after the scatter of `rows` (per core, 5 entries) from `src` into 0xAB bytes.
std::vector<uint8_t> scattered(const std::vector<uint8_t> &src, const int32_t (&rows)[2][5]) {
  std::vector<uint8_t> expect(kOutBytes, 0xAB);
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 5; ++i)
      for (int t = 0; t < 2; ++t)
        if (rows[c][i] >= 0 && rows[c][i] < 10)
          std::memcpy(&expect[(t * 10 + rows[c][i]) * 128], &src[(c * 10 + i * 2 + t) * 128], 128);
  return expect;
}

std::vector<int32_t> indexSticks(const int32_t (&rows)[2][5]) {
  std::vector<int32_t> idx(64, -7); // entries outside [2, 7) of each stick are never read
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 5; ++i)
      idx[c * 32 + 2 + i] = rows[c][i];
  return idx;
}

} // namespace

TEST(Scatter, RowsByIndexOnEveryEngineLastEntryWins) {
  isa::Kernel k = isa::parseKernel(kScatter);
  EXPECT_EQ(isa::printKernel(isa::parseKernel(isa::printKernel(k))), isa::printKernel(k));
  isa::verifyKernel(k, {kTableBytes, kIdxBytes, kOutBytes});
  const int32_t rows[2][5] = {{3, 0, 9, 3, 5}, {8, 1, 2, 6, 7}}; // row 3 twice: entry 3 wins; row 4 untouched
  const std::vector<uint8_t> src = tableBytes();
  const std::vector<uint8_t> expect = scattered(src, rows);
  EXPECT_NE(0, std::memcmp(&expect[3 * 128], &src[0], 128)); // entry 0's row 3 was overwritten
  for (auto &e : engines()) {
    Result r = run(*e, k, src, indexSticks(rows));
    EXPECT_EQ(r.error, "") << e->name();
    EXPECT_EQ(r.out, expect) << e->name();
  }
}

TEST(Scatter, OutOfRangeIndexIsADeviceErrorAndWritesNothing) {
  isa::Kernel k = isa::parseKernel(kScatter);
  const std::vector<uint8_t> src = tableBytes();
  for (int32_t bad : {10, -1, 1 << 30}) {
    int32_t rows[2][5] = {{3, 0, 9, 4, 5}, {8, 1, 2, 6, 7}};
    rows[1][3] = bad; // core 1, entry 3
    for (auto &e : engines()) {
      Result r = run(*e, k, src, indexSticks(rows));
      EXPECT_EQ(r.error, "kernel s: dma.scatter on core 1: index " + std::to_string(bad) +
                             " (entry 3 of the index list) is outside the table's rows [0, 10)")
          << e->name();
      EXPECT_EQ(r.out, scattered(src, rows)) << e->name(); // the others written, row 6 untouched
    }
  }
}

TEST(Scatter, VerifierChecksTheTableTheBoxesAndTheIndexList) {
  auto verify = [](const std::string &body, std::vector<uint64_t> bytes = {kTableBytes, kIdxBytes, kOutBytes}) {
    std::string text = ".kernel v cores=1\n.args src idx out\n.core 0..0\n    " + body + "\n    wait t1\n";
    try {
      isa::verifyKernel(isa::parseKernel(text), bytes);
      return std::string();
    } catch (const Error &e) {
      return std::string(e.what());
    }
  };
  const std::string box = "shape=(1,2,1), ddr.stride=(2560,1280), lx.stride=(256,128)";
  const std::string ok = "dma.scatter ddr[out], lx[0x100], " + box + ", lx[0x0], 5, 10, 128, 256 -> t1";
  EXPECT_EQ(verify(ok), "");
  EXPECT_NE(verify("dma.scatter ddr[out], lx[0x100], " + box + ", lx[0x0], 5, 11, 128, 256 -> t1")
                .find("DMA row (0,1) covers DDR [2560, 2688), outside argument out of 2560 bytes"),
            std::string::npos);
  EXPECT_NE(verify("dma.scatter ddr[out], lx[0x100], " + box + ", lx[0x0], 5, 0, 128, 256 -> t1")
                .find("scatter table rows must be >= 1"),
            std::string::npos);
  EXPECT_NE(verify("dma.scatter ddr[out], lx[0x100], " + box + ", lx[0x2], 5, 10, 128, 256 -> t1")
                .find("index list address 2 is not 4-byte aligned"),
            std::string::npos);
  EXPECT_NE(verify("dma.scatter ddr[out], lx[0x199980], " + box + ", lx[0x0], 5, 10, 128, 256 -> t1")
                .find("outside the usable LX"),
            std::string::npos);
  // Until its token is waited the scatter still reads its index list: no store may change it.
  EXPECT_NE(verify(ok + "\n    st.i32 lx[0x0], v0").find("writes LX [0, 128) while dma.scatter"), std::string::npos);
  // An index list the scatter reads may overlap its boxes (nothing is filled).
  EXPECT_EQ(verify("dma.scatter ddr[out], lx[0x100], " + box + ", lx[0x180], 5, 10, 128, 256 -> t1"), "");
}
