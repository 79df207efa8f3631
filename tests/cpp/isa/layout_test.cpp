#include "spyre/isa/layout.h"
#include "spyre/isa/error.h"
#include <gtest/gtest.h>

using namespace spyre;
using V = std::vector<int64_t>;

namespace {
struct Golden {
  V size;
  V stride; // empty: contiguous
  V dimOrder; // empty: default constructor
  V deviceSize;
  V strideMap;
};

const Golden kGolden[] = {
    {{5, 100, 150}, {}, {}, {100, 3, 5, 64}, {150, 64, 15000, 1}},
    {{}, {}, {}, {1, 64}, {-1, -1}},
    {{120}, {}, {}, {2, 64}, {64, 1}},
    {{128}, {}, {}, {2, 64}, {64, 1}},
    {{512, 240}, {}, {}, {4, 512, 64}, {64, 240, 1}},
    {{512, 256}, {}, {}, {4, 512, 64}, {64, 256, 1}},
    {{512, 8, 240}, {}, {}, {8, 4, 512, 64}, {240, 64, 1920, 1}},
    {{512, 8, 256}, {}, {}, {8, 4, 512, 64}, {256, 64, 2048, 1}},
    {{512, 256}, {256, 1}, {1, 0}, {8, 256, 64}, {16384, 1, 256}},
    {{512, 8, 256}, {}, {0, 2, 1}, {256, 1, 512, 64}, {1, 16384, 2048, 256}},
    {{512, 8, 256}, {}, {1, 0, 2}, {512, 4, 8, 64}, {2048, 64, 256, 1}},
    {{512, 8, 256}, {}, {1, 2, 0}, {256, 8, 8, 64}, {1, 131072, 256, 2048}},
    {{512, 8, 256}, {}, {2, 0, 1}, {512, 1, 256, 64}, {2048, 16384, 1, 256}},
    {{512, 8, 256}, {}, {2, 1, 0}, {8, 8, 256, 64}, {256, 131072, 1, 2048}},
    {{512, 256}, {}, {0, 1, -1}, {256, 1, 512, 64}, {1, -1, 256, -1}},
    {{5, 100, 150}, {}, {1, 0, 2}, {5, 3, 100, 64}, {15000, 64, 150, 1}},
};
} // namespace

TEST(SpyreTensorLayout, GoldenTable) {
  for (const auto &g : kGolden) {
    SpyreTensorLayout l = g.dimOrder.empty()
                              ? SpyreTensorLayout(g.size, DataFormat::SEN169_FP16)
                              : SpyreTensorLayout(g.size, g.stride.empty() ? contiguousStrides(g.size) : g.stride,
                                                  DataFormat::SEN169_FP16, g.dimOrder);
    EXPECT_EQ(l.device_size, g.deviceSize) << l.str();
    EXPECT_EQ(l.stride_map, g.strideMap) << l.str();
    EXPECT_EQ(l.device_dtype, DataFormat::SEN169_FP16);
  }
}

TEST(SpyreTensorLayout, StrText) {
  SpyreTensorLayout l({512, 256}, DataFormat::SEN169_FP16);
  EXPECT_EQ(l.str(), "SpyreTensorLayout(device_size=[4, 512, 64], stride_map =[64, 256, 1], "
                     "device_dtype=DataFormats.SEN169_FP16)");
}

TEST(SpyreTensorLayout, Fp32UsesThirtyTwoPerStick) {
  SpyreTensorLayout l({67, 100}, DataFormat::IEEE_FP32);
  EXPECT_EQ(l.device_size, (V{4, 67, 32}));
  EXPECT_EQ(l.stride_map, (V{32, 100, 1}));
  EXPECT_EQ(l.deviceBytes(), 4 * 67 * 128);
}

TEST(SpyreTensorLayout, Equality) {
  SpyreTensorLayout a({512, 256}, DataFormat::SEN169_FP16), b({512, 256}, DataFormat::SEN169_FP16);
  EXPECT_EQ(a, b);
  SpyreTensorLayout c({512, 256}, DataFormat::IEEE_FP32);
  EXPECT_FALSE(a == c);
  SpyreTensorLayout d({512, 256}, contiguousStrides({512, 256}), DataFormat::SEN169_FP16, {1, 0});
  EXPECT_FALSE(a == d);
}

TEST(SpyreTensorLayout, Errors) {
  EXPECT_THROW(SpyreTensorLayout({1, 1, 1, 1, 1, 1, 1}, DataFormat::SEN169_FP16), Unsupported);
  EXPECT_THROW(SpyreTensorLayout({4, 4}, contiguousStrides({4, 4}), DataFormat::SEN169_FP16, {0, 0}),
               Error);
  EXPECT_THROW(SpyreTensorLayout({4, 4}, contiguousStrides({4, 4}), DataFormat::SEN169_FP16, {0}),
               Error);
  EXPECT_THROW(SpyreTensorLayout({4, 4}, DataFormat::INVALID), Unsupported);
}
