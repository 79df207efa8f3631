// SpyreTensorLayout exactly as torch-spyre defines it (SPYRE.md §3): the tiled, stick-padded
// device shape of a tensor and, for each device dim, the host-element stride it steps.
#pragma once
#include "spyre/isa/data_format.h"
#include <cstdint>
#include <string>
#include <vector>

namespace spyre {

enum class ElementArrangement : uint8_t { STANDARD, DL16_TO_FP32, QFP8CH, EXX2 };
std::string_view elementArrangementName(ElementArrangement e);

class SpyreTensorLayout {
public:
  SpyreTensorLayout() = default;
  /// Default layout of a contiguous host tensor of `size`.
  SpyreTensorLayout(const std::vector<int64_t> &size, DataFormat dtype);
  /// Generic stick layout for host `size`/`stride` with `dimOrder` (host dims, decreasing
  /// stride, stick dim last; a trailing -1 asks for a sparse layout, one element per stick).
  SpyreTensorLayout(const std::vector<int64_t> &size, const std::vector<int64_t> &stride,
                    DataFormat dtype, const std::vector<int64_t> &dimOrder,
                    ElementArrangement ea = ElementArrangement::STANDARD);
  /// Expert form: given device_size/stride_map, no validation beyond shape agreement.
  static SpyreTensorLayout fromDevice(std::vector<int64_t> deviceSize,
                                      std::vector<int64_t> strideMap, DataFormat dtype,
                                      ElementArrangement ea = ElementArrangement::STANDARD);

  std::vector<int64_t> device_size;
  std::vector<int64_t> stride_map;
  DataFormat device_dtype = DataFormat::SEN169_FP16;
  ElementArrangement element_arrangement = ElementArrangement::STANDARD;

  /// 128 * prod(device_size[:-1]).
  int64_t deviceBytes() const;
  int64_t elemsPerStick() const { return spyre::elemsPerStick(device_dtype); }
  /// torch-spyre's toString() text (note the space before '=' of stride_map).
  std::string str() const;
  bool operator==(const SpyreTensorLayout &o) const = default;
};

/// Contiguous row-major strides of `size`.
std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &size);

} // namespace spyre
