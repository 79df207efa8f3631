// Host <-> device transfer: restickify into every golden layout and back, with padding zeroed.
#include "spyre/isa/dl16.h"
#include "spyre/isa/error.h"
#include "spyre/sim/device_memory.h"
#include "spyre/sim/host_transfer.h"
#include <cstring>
#include <gtest/gtest.h>
#include <random>

using namespace spyre;
using V = std::vector<int64_t>;

namespace {
int64_t numel(const V &s) {
  int64_t n = 1;
  for (auto d : s)
    n *= d;
  return n;
}

struct Case {
  V size;
  V dimOrder; // empty: default
};
const Case kCases[] = {
    {{5, 100, 150}, {}}, {{}, {}},          {{120}, {}},        {{512, 240}, {}},    {{512, 8, 240}, {}},
    {{512, 256}, {1, 0}}, {{64, 8, 96}, {0, 2, 1}}, {{64, 8, 96}, {1, 0, 2}}, {{64, 8, 96}, {1, 2, 0}},
    {{64, 8, 96}, {2, 0, 1}}, {{64, 8, 96}, {2, 1, 0}}, {{33, 70}, {0, 1, -1}}, {{3, 1, 7}, {}}, {{2, 3, 4, 130}, {}},
    {{64}, {}}, {{1, 64}, {}},
};
} // namespace

TEST(HostTransfer, Fp32RoundTripExactForEveryLayout) {
  sim::DeviceMemory mem(1ull << 30);
  std::mt19937 g(3);
  std::normal_distribution<float> nd;
  for (const auto &c : kCases) {
    V strides = contiguousStrides(c.size);
    SpyreTensorLayout l = c.dimOrder.empty() ? SpyreTensorLayout(c.size, DataFormat::IEEE_FP32)
                                             : SpyreTensorLayout(c.size, strides, DataFormat::IEEE_FP32, c.dimOrder);
    std::vector<float> host(numel(c.size)), back(numel(c.size), -1.0f);
    for (auto &x : host)
      x = nd(g);
    uint64_t addr = mem.allocate(l.deviceBytes());
    uint8_t *dev = mem.at(addr, l.deviceBytes());
    std::memset(dev, 0xAB, l.deviceBytes());
    auto map = sim::mapLayout(l, c.size, strides);
    sim::copyHostToDevice({host.data(), HostType::F32, c.size, strides}, l, map, dev);
    sim::copyDeviceToHost(dev, l, map, {back.data(), HostType::F32, c.size, strides});
    EXPECT_EQ(host, back) << l.str();
    // Every device element is either a host element or zero padding: the multiset of non-zero
    // device values equals the host values.
    int64_t nonzero = 0;
    for (int64_t i = 0; i < l.deviceBytes() / 4; ++i) {
      float v;
      std::memcpy(&v, dev + 4 * i, 4);
      nonzero += v != 0.0f;
    }
    EXPECT_EQ(nonzero, numel(c.size)) << l.str();
    mem.free(addr);
  }
}

TEST(HostTransfer, Fp16GoesThroughDl16) {
  sim::DeviceMemory mem(1ull << 30);
  V size{67, 256};
  V strides = contiguousStrides(size);
  SpyreTensorLayout l(size, DataFormat::SEN169_FP16);
  std::vector<uint16_t> host(numel(size)), back(numel(size));
  for (size_t i = 0; i < host.size(); ++i)
    host[i] = static_cast<uint16_t>(i * 7919u); // all kinds of fp16 codes incl. subnormals
  uint64_t addr = mem.allocate(l.deviceBytes());
  auto map = sim::mapLayout(l, size, strides);
  sim::copyHostToDevice({host.data(), HostType::F16, size, strides}, l, map, mem.at(addr, l.deviceBytes()));
  // Device stick (tile t, row m) element e holds host (m, t*64+e) as DL16.
  const uint8_t *dev = mem.at(addr, l.deviceBytes());
  for (int64_t t = 0; t < 4; ++t)
    for (int64_t m = 0; m < 67; m += 11)
      for (int64_t e = 0; e < 64; e += 13) {
        uint16_t d;
        std::memcpy(&d, dev + ((t * 67 + m) * 64 + e) * 2, 2);
        ASSERT_EQ(d, dl16::fromHalf(host[m * 256 + t * 64 + e]));
      }
  sim::copyDeviceToHost(dev, l, map, {back.data(), HostType::F16, size, strides});
  for (size_t i = 0; i < host.size(); ++i)
    ASSERT_EQ(back[i], dl16::toHalf(dl16::fromHalf(host[i]))) << i;
}

TEST(HostTransfer, NonContiguousHostSource) {
  // A transposed host view (strides (1, 40)) into the default layout of its logical shape.
  sim::DeviceMemory mem(1ull << 28);
  V size{40, 30}, layoutStrides = contiguousStrides(size), viewStrides{1, 40};
  std::vector<float> base(1200);
  for (size_t i = 0; i < base.size(); ++i)
    base[i] = static_cast<float>(i);
  SpyreTensorLayout l(size, DataFormat::IEEE_FP32);
  uint64_t addr = mem.allocate(l.deviceBytes());
  auto map = sim::mapLayout(l, size, layoutStrides);
  sim::copyHostToDevice({base.data(), HostType::F32, size, viewStrides}, l, map, mem.at(addr, l.deviceBytes()));
  std::vector<float> out(1200);
  sim::copyDeviceToHost(mem.at(addr, l.deviceBytes()), l, map, {out.data(), HostType::F32, size, layoutStrides});
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t j = 0; j < 30; ++j)
      ASSERT_EQ(out[i * 30 + j], base[j * 40 + i]);
}

TEST(HostTransfer, Int64NarrowsAndBoolIsDl16) {
  sim::DeviceMemory mem(1ull << 28);
  V size{5};
  std::vector<int64_t> h{1, -2, 3000000000LL, 4, 5};
  SpyreTensorLayout l(size, DataFormat::IEEE_INT32);
  uint64_t addr = mem.allocate(l.deviceBytes());
  auto map = sim::mapLayout(l, size, {1});
  sim::copyHostToDevice({h.data(), HostType::I64, size, {1}}, l, map, mem.at(addr, l.deviceBytes()));
  std::vector<int64_t> back(5);
  sim::copyDeviceToHost(mem.at(addr, l.deviceBytes()), l, map, {back.data(), HostType::I64, size, {1}});
  EXPECT_EQ(back[1], -2);
  EXPECT_EQ(back[2], static_cast<int32_t>(3000000000LL));
  std::vector<uint8_t> b{1, 0, 1};
  SpyreTensorLayout lb(V{3}, DataFormat::SEN169_FP16);
  uint64_t ab = mem.allocate(lb.deviceBytes());
  auto mb = sim::mapLayout(lb, {3}, {1});
  sim::copyHostToDevice({b.data(), HostType::Bool, {3}, {1}}, lb, mb, mem.at(ab, lb.deviceBytes()));
  uint16_t d;
  std::memcpy(&d, mem.at(ab, 2), 2);
  EXPECT_EQ(d, dl16::fromFloat(1.0f));
}

TEST(HostTransfer, ErrorsAreClear) {
  sim::DeviceMemory mem(1ull << 28);
  SpyreTensorLayout l(V{4, 64}, DataFormat::SEN169_FP16);
  auto map = sim::mapLayout(l, {4, 64}, {64, 1});
  std::vector<float> h(256);
  EXPECT_THROW(sim::copyHostToDevice({h.data(), HostType::F32, {4, 64}, {64, 1}}, l, map, mem.at(0, 1)), Unsupported);
  EXPECT_THROW(sim::mapLayout(l, {4, 65}, {65, 1}), Unsupported);
  EXPECT_THROW(mem.at(mem.capacity(), 1), Error);
  EXPECT_THROW(mem.free(12345), Error);
  try {
    mem.allocate(1ull << 40);
    FAIL();
  } catch (const OutOfMemory &e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos);
  }
  auto st = mem.stats();
  uint64_t a = mem.allocate(100);
  EXPECT_EQ(mem.stats().allocated, st.allocated + 4096);
  mem.free(a);
  EXPECT_EQ(mem.stats().allocated, st.allocated);
}

// torch-spyre's "viewing" and "tiling" layouts (fp32: 32 elements a stick): one host dim split
// over device dims whose strides do not nest exactly; element i sits where the stride_map says.
TEST(HostTransfer, TilesThatDoNotNestExactly) {
  sim::DeviceMemory mem(1ull << 28);
  struct Nested {
    V size, deviceSize, strideMap;
  };
  const Nested cases[] = {
      {{60}, {2, 1, 2, 32}, {15, 32, 30, 1}},
      {{4800}, {3, 2, 27, 32}, {60, 32, 180, 1}},
      {{40, 60}, {24, 2, 2, 32}, {60, 32, 1440, 1}},
      {{60}, {1, 60, 32}, {32, 1, 1}}, // one element per stick
  };
  for (const auto &c : cases) {
    auto l = SpyreTensorLayout::fromDevice(c.deviceSize, c.strideMap, DataFormat::IEEE_FP32,
                                           ElementArrangement::STANDARD);
    V strides = contiguousStrides(c.size);
    std::vector<float> host(numel(c.size)), back(host.size(), -1.0f);
    for (size_t i = 0; i < host.size(); ++i)
      host[i] = static_cast<float>(i + 1);
    uint64_t addr = mem.allocate(l.deviceBytes());
    uint8_t *dev = mem.at(addr, l.deviceBytes());
    auto map = sim::mapLayout(l, c.size, strides);
    EXPECT_TRUE(map.nested) << l.str();
    sim::copyHostToDevice({host.data(), HostType::F32, c.size, strides}, l, map, dev);
    sim::copyDeviceToHost(dev, l, map, {back.data(), HostType::F32, c.size, strides});
    EXPECT_EQ(host, back) << l.str();
    // Each non-zero device element holds the host element its coordinates name.
    const size_t nd = c.deviceSize.size();
    int64_t seen = 0;
    for (int64_t i = 0; i < l.deviceBytes() / 4; ++i) {
      float v;
      std::memcpy(&v, dev + 4 * i, 4);
      if (v == 0.0f)
        continue;
      int64_t rest = i, offset = 0;
      for (int64_t j = static_cast<int64_t>(nd) - 1; j >= 0; --j) {
        offset += (rest % c.deviceSize[j]) * c.strideMap[j];
        rest /= c.deviceSize[j];
      }
      EXPECT_EQ(v, static_cast<float>(offset + 1)) << l.str() << " device element " << i;
      ++seen;
    }
    EXPECT_EQ(seen, numel(c.size)) << l.str();
    mem.free(addr);
  }
  // Two tiles over the same elements, or a gap, cover nothing: an error, not a wrong copy.
  auto overlap = SpyreTensorLayout::fromDevice({2, 2, 32}, {16, 16, 1}, DataFormat::IEEE_FP32,
                                               ElementArrangement::STANDARD);
  EXPECT_THROW(sim::mapLayout(overlap, {64}, {1}), Unsupported);
  auto gap = SpyreTensorLayout::fromDevice({2, 32}, {40, 1}, DataFormat::IEEE_FP32,
                                           ElementArrangement::STANDARD);
  EXPECT_THROW(sim::mapLayout(gap, {64}, {1}), Unsupported);
}
