// sim::DeviceMemory: a freed block comes back zero-filled whatever its size; a small one keeps
// its host pages resident (zeroed in place, no page fault on reuse), a large one returns them.
// sim::Cores::resetRegisters: which registers a launch starts from zero.
#include "spyre/sim/device_memory.h"
#include "spyre/sim/machine.h"
#include <gtest/gtest.h>
#include <algorithm>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

using namespace spyre;

namespace {

/// How many of the host pages of [p, p + bytes) are resident.
size_t residentPages(const uint8_t *p, uint64_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> v((bytes + page - 1) / page);
  EXPECT_EQ(mincore(const_cast<uint8_t *>(p), bytes, v.data()), 0);
  return static_cast<size_t>(std::count_if(v.begin(), v.end(), [](unsigned char c) { return c & 1; }));
}

bool allZero(const uint8_t *p, uint64_t bytes) {
  return std::all_of(p, p + bytes, [](uint8_t b) { return b == 0; });
}

} // namespace

TEST(DeviceMemory, FreedBlocksComeBackZeroed) {
  sim::DeviceMemory mem(1ull << 30);
  for (uint64_t bytes : {uint64_t{100}, uint64_t{128} << 10, sim::DeviceMemory::kZeroInPlaceBytes,
                         sim::DeviceMemory::kZeroInPlaceBytes + 4096}) {
    const uint64_t a = mem.allocate(bytes);
    ASSERT_TRUE(allZero(mem.base() + a, bytes)) << bytes;
    std::memset(mem.base() + a, 0xA5, bytes);
    mem.free(a);
    const uint64_t b = mem.allocate(bytes);
    ASSERT_EQ(b, a) << "first fit reuses the block";
    EXPECT_TRUE(allZero(mem.base() + b, bytes)) << bytes;
    // A block that spans a freed one and fresh pages: zero too.
    std::memset(mem.base() + b, 0x5A, bytes);
    mem.free(b);
    const uint64_t c = mem.allocate(2 * bytes);
    EXPECT_EQ(c, a);
    EXPECT_TRUE(allZero(mem.base() + c, 2 * bytes)) << bytes;
    mem.free(c);
  }
  EXPECT_EQ(mem.stats().allocated, 0u);
}

TEST(DeviceMemory, SmallBlocksStayResidentLargeOnesAreReturned) {
  sim::DeviceMemory mem(1ull << 30);
  const uint64_t small = 256 << 10, large = sim::DeviceMemory::kZeroInPlaceBytes + (1 << 20);
  const uint64_t a = mem.allocate(small), b = mem.allocate(large);
  std::memset(mem.base() + a, 1, small);
  std::memset(mem.base() + b, 1, large);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  ASSERT_EQ(residentPages(mem.base() + a, small), small / page);
  mem.free(a);
  mem.free(b);
  EXPECT_EQ(residentPages(mem.base() + a, small), small / page) << "the next run reuses them without faults";
  EXPECT_EQ(residentPages(mem.base() + b, large), 0u) << "a large block's pages go back to the host";
}

// sim::Cores::resetRegisters: cores [0, n) get zero scalar registers (r0 = core id) and zero
// vector registers for every bit of the mask; LX, the ring pointer, the other cores and the
// vector registers above the mask's highest one keep what they held.
TEST(Cores, ResetRegistersZeroesTheNamedRegistersOfTheLaunchedCores) {
  sim::Cores cores(8);
  for (uint32_t mask : {0u, 1u, 0x13u, 0x8000u, 0xFFFFu, ~0u}) {
    for (int c = 0; c < cores.size(); ++c) {
      sim::CoreState &s = cores[c];
      std::memset(s.r, 0x11, sizeof s.r);
      std::memset(s.v, 0x22, sizeof s.v);
      s.lx[0] = 0x33;
      s.ring = reinterpret_cast<sim::RingPort *>(0x40);
    }
    cores.resetRegisters(5, mask);
    for (int c = 0; c < cores.size(); ++c) {
      const sim::CoreState &s = cores[c];
      const bool launched = c < 5;
      EXPECT_EQ(s.r[0], launched ? c : 0x1111111111111111) << c;
      for (int i = 1; i < isa::kNumSRegs; ++i)
        EXPECT_EQ(s.r[i], launched ? 0 : 0x1111111111111111) << c << " r" << i;
      for (int v = 0; v < isa::kNumVRegs; ++v) {
        const uint8_t *b = reinterpret_cast<const uint8_t *>(s.v[v]);
        const bool named = launched && (mask >> v & 1u);
        const bool above = !launched || (mask & ~((2u << v) - 1u) & 0xFFFFu) == 0; // no named register at or above v
        if (named)
          EXPECT_TRUE(allZero(b, sizeof s.v[v])) << c << " v" << v;
        else if (above && !(launched && (mask >> v & 1u)))
          EXPECT_EQ(b[0], 0x22) << c << " v" << v << " mask " << mask;
      }
      EXPECT_EQ(s.lx[0], 0x33);
      EXPECT_EQ(s.ring, reinterpret_cast<sim::RingPort *>(0x40));
    }
  }
}
