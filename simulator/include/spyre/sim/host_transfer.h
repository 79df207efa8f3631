// Host <-> device tensor transfer: restickify between a strided host tensor and the tiled,
// stick-padded SpyreTensorLayout in DDR, converting formats on the way (fp16/bf16/bool <-> DL16,
// int64 -> int32). This is the simulator's PCIe DMA (torch-spyre's DataConversionInfo).
#pragma once
#include "spyre/isa/data_format.h"
#include "spyre/isa/layout.h"
#include <cstdint>
#include <vector>

namespace spyre::sim {

struct HostTensor {
  void *data = nullptr;           ///< element (0,...,0)
  HostType type = HostType::F16;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;   ///< in elements
};

/// How each device dim of a layout steps through the host tensor's coordinates.
struct LayoutMapping {
  struct Dim {
    int hostDim = -1;       ///< -1: synthetic (only coordinate 0 is valid) or broadcast
    int64_t mult = 0;       ///< host coordinate += device coordinate * mult
    bool broadcast = false; ///< stride 0: every coordinate maps to the same host element
  };
  std::vector<Dim> dims;
  std::vector<int64_t> hostSizes;
  /// Set for layouts that tile one host dim over device dims whose strides do not nest exactly
  /// (torch-spyre's "viewing"/"tiling" layouts, e.g. [2, 1, 2, 64] / [15, 64, 30, 1] for 60
  /// elements): groups[d] lists the device dims of host dim d by increasing mult, and a device
  /// coordinate is valid when every partial sum of that order stays below the next dim's mult
  /// (the last below the host size).
  bool nested = false;
  std::vector<std::vector<int>> groups;
};

/// Matches the layout's stride_map against `refStrides` (the host strides the layout was made
/// for). Throws spyre::Unsupported when the layout does not describe a tensor of that shape.
LayoutMapping mapLayout(const SpyreTensorLayout &layout, const std::vector<int64_t> &hostSizes,
                        const std::vector<int64_t> &refStrides);

/// Writes every stick of `layout` at `dev` (pad elements become zero).
void copyHostToDevice(const HostTensor &src, const SpyreTensorLayout &layout,
                      const LayoutMapping &map, uint8_t *dev);
/// Reads the valid elements of `layout` at `dev` into `dst`.
void copyDeviceToHost(const uint8_t *dev, const SpyreTensorLayout &layout,
                      const LayoutMapping &map, const HostTensor &dst);

} // namespace spyre::sim
