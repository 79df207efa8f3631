#include "spyre/isa/layout.h"
#include "spyre/isa/error.h"
#include <sstream>

namespace spyre {

std::string_view elementArrangementName(ElementArrangement e) {
  switch (e) {
  case ElementArrangement::STANDARD: return "STANDARD";
  case ElementArrangement::DL16_TO_FP32: return "DL16_TO_FP32";
  case ElementArrangement::QFP8CH: return "QFP8CH";
  case ElementArrangement::EXX2: return "EXX2";
  }
  return "?";
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &size) {
  std::vector<int64_t> s(size.size(), 1);
  for (int i = static_cast<int>(size.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * std::max<int64_t>(size[i + 1], 1);
  return s;
}

static std::string vecStr(const std::vector<int64_t> &v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i)
    os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

// torch-spyre's get_generic_stick_layout: [o1 .. o(r-2), tile(o(r-1)), o0, elem(o(r-1))].
static std::vector<int64_t> genericDimMap(const std::vector<int64_t> &o) {
  size_t r = o.size();
  if (r == 1)
    return {o[0], o[0]};
  std::vector<int64_t> m;
  for (size_t i = 1; i + 1 < r; ++i)
    m.push_back(o[i]);
  m.push_back(o[r - 1]);
  m.push_back(o[0]);
  m.push_back(o[r - 1]);
  return m;
}

SpyreTensorLayout::SpyreTensorLayout(const std::vector<int64_t> &size, DataFormat dtype)
    : SpyreTensorLayout(size, contiguousStrides(size), dtype, [&] {
        std::vector<int64_t> o(size.size());
        for (size_t i = 0; i < o.size(); ++i)
          o[i] = static_cast<int64_t>(i);
        return o;
      }()) {}

SpyreTensorLayout::SpyreTensorLayout(const std::vector<int64_t> &size,
                                     const std::vector<int64_t> &stride, DataFormat dtype,
                                     const std::vector<int64_t> &dimOrderIn,
                                     ElementArrangement ea)
    : device_dtype(dtype), element_arrangement(ea) {
  int64_t eps = spyre::elemsPerStick(dtype);
  if (eps <= 0)
    throw Unsupported("SpyreTensorLayout for device dtype " +
                      std::string(dataFormatName(dtype)));
  if (size.size() != stride.size())
    throw Error("SpyreTensorLayout: size has " + std::to_string(size.size()) +
                " dims but stride has " + std::to_string(stride.size()));
  int64_t rank = static_cast<int64_t>(size.size());
  if (rank == 0) {
    device_size = {1, eps};
    stride_map = {-1, -1};
    return;
  }
  if (rank > 6)
    throw Unsupported("SpyreTensorLayout of rank " + std::to_string(rank) + " (max 6)");
  std::vector<int64_t> order = dimOrderIn;
  bool sparse = !order.empty() && order.back() == -1;
  if (sparse)
    order.pop_back();
  if (static_cast<int64_t>(order.size()) != rank)
    throw Error("SpyreTensorLayout: dim_order " + vecStr(dimOrderIn) + " does not match rank " +
                std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (int64_t d : order) {
    if (d < 0 || d >= rank || seen[d])
      throw Error("SpyreTensorLayout: dim_order " + vecStr(dimOrderIn) +
                  " is not a permutation of the host dims");
    seen[d] = true;
  }
  for (int64_t s : size)
    if (s < 0)
      throw Error("SpyreTensorLayout: negative size in " + vecStr(size));

  // A sparse layout treats the trailing -1 as a synthetic host dim of size 1 that becomes the
  // stick: the real last dim moves out to the tile position with its full size.
  std::vector<int64_t> fullOrder = order;
  if (sparse)
    fullOrder.push_back(-1);
  std::vector<int64_t> dimMap = genericDimMap(fullOrder);
  size_t nd = dimMap.size();
  int64_t stickDim = fullOrder.back();
  device_size.assign(nd, 0);
  stride_map.assign(nd, -1);
  device_size[nd - 1] = eps;
  for (size_t i = 0; i + 1 < nd; ++i) {
    int64_t d = dimMap[i];
    if (d == -1)
      device_size[i] = 1;
    else if (d == stickDim)
      device_size[i] = (size[d] + eps - 1) / eps;
    else
      device_size[i] = size[d];
  }
  std::vector<int64_t> lastStride(rank, -1);
  for (int64_t j = static_cast<int64_t>(nd) - 1; j >= 0; --j) {
    int64_t d = dimMap[j];
    int64_t sm;
    if (d == -1 || size[d] == 1)
      sm = -1;
    else if (lastStride[d] == -1)
      sm = stride[d];
    else
      sm = lastStride[d];
    stride_map[j] = sm;
    if (sm != -1 && d != -1)
      lastStride[d] = sm * device_size[j];
  }
}

SpyreTensorLayout SpyreTensorLayout::fromDevice(std::vector<int64_t> deviceSize,
                                                std::vector<int64_t> strideMap,
                                                DataFormat dtype, ElementArrangement ea) {
  if (deviceSize.size() != strideMap.size() || deviceSize.empty())
    throw Error("SpyreTensorLayout: device_size " + vecStr(deviceSize) + " and stride_map " +
                vecStr(strideMap) + " must be non-empty and of equal length");
  SpyreTensorLayout l;
  l.device_size = std::move(deviceSize);
  l.stride_map = std::move(strideMap);
  l.device_dtype = dtype;
  l.element_arrangement = ea;
  return l;
}

int64_t SpyreTensorLayout::deviceBytes() const {
  int64_t n = kStickBytes;
  for (size_t i = 0; i + 1 < device_size.size(); ++i)
    n *= device_size[i];
  return n;
}

std::string SpyreTensorLayout::str() const {
  return "SpyreTensorLayout(device_size=" + vecStr(device_size) +
         ", stride_map =" + vecStr(stride_map) +
         ", device_dtype=DataFormats." + std::string(dataFormatName(device_dtype)) + ")";
}

} // namespace spyre
