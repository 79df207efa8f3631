#include "spyre/sim/host_transfer.h"
#include "spyre/isa/dl16.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <cstring>
#include <string>

namespace spyre::sim {

namespace {

LayoutMapping mapExact(const SpyreTensorLayout &layout, const std::vector<int64_t> &hostSizes,
                       const std::vector<int64_t> &refStrides);

/// The general matcher (LayoutMapping::nested): each device dim of stride sm belongs to the host
/// dim with the largest reference stride that divides sm and keeps sm/stride inside the dim.
LayoutMapping mapNested(const SpyreTensorLayout &layout, const std::vector<int64_t> &hostSizes,
                        const std::vector<int64_t> &refStrides) {
  const size_t nd = layout.device_size.size(), rank = hostSizes.size();
  LayoutMapping m;
  m.hostSizes = hostSizes;
  m.dims.resize(nd);
  m.nested = true;
  m.groups.resize(rank);
  for (size_t j = 0; j < nd; ++j) {
    const int64_t sm = layout.stride_map[j], ds = layout.device_size[j];
    auto &dim = m.dims[j];
    if (sm == 0) {
      dim.broadcast = true;
      continue;
    }
    if (sm < 0 || ds == 1)
      continue;
    int best = -1;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t r = refStrides[d];
      if (hostSizes[d] > 1 && r > 0 && sm % r == 0 && sm / r < hostSizes[d] &&
          (best == -1 || r > refStrides[best]))
        best = static_cast<int>(d);
    }
    if (best == -1)
      throw Unsupported("layout " + layout.str() + " does not match a host tensor of that " +
                        "shape and strides (device dim " + std::to_string(j) + ")");
    dim.hostDim = best;
    dim.mult = sm / refStrides[best];
    m.groups[best].push_back(static_cast<int>(j));
  }
  for (size_t d = 0; d < rank; ++d) {
    auto &g = m.groups[d];
    // By mult; on a tie the later device dim (the stick) first: it then holds one element.
    std::sort(g.begin(), g.end(), [&](int a, int b) {
      return m.dims[a].mult != m.dims[b].mult ? m.dims[a].mult < m.dims[b].mult : a > b;
    });
    if (hostSizes[d] <= 1)
      continue;
    int64_t reach = 1; // coordinates [0, reach) are covered by the dims so far
    for (size_t k = 0; k < g.size(); ++k) {
      const int64_t mult = m.dims[g[k]].mult;
      if (mult > reach || (k > 0 && mult == m.dims[g[k - 1]].mult && g[k - 1] != static_cast<int>(nd) - 1))
        break; // a gap, or two tiles over the same elements
      reach = mult * layout.device_size[g[k]];
    }
    if (g.empty() || reach < hostSizes[d])
      throw Unsupported("layout " + layout.str() + " does not cover host dim " +
                        std::to_string(d) + " of size " + std::to_string(hostSizes[d]));
  }
  return m;
}

/// Whether device coordinate `coord` (the stick dim's entry included) is a host element of a
/// nested mapping, and its host coordinates.
bool nestedCoord(const SpyreTensorLayout &layout, const LayoutMapping &m,
                 const std::vector<int64_t> &coord, std::vector<int64_t> &hc) {
  for (size_t j = 0; j < coord.size(); ++j)
    if (m.dims[j].hostDim < 0 && !m.dims[j].broadcast && coord[j] != 0)
      return false;
  for (size_t d = 0; d < m.groups.size(); ++d) {
    const auto &g = m.groups[d];
    int64_t partial = 0;
    for (size_t k = 0; k < g.size(); ++k) {
      partial += coord[g[k]] * m.dims[g[k]].mult;
      const int64_t bound = k + 1 < g.size() ? m.dims[g[k + 1]].mult : m.hostSizes[d];
      if (partial >= bound)
        return false;
    }
    hc[d] = partial;
  }
  (void)layout;
  return true;
}

} // namespace

LayoutMapping mapLayout(const SpyreTensorLayout &layout, const std::vector<int64_t> &hostSizes,
                        const std::vector<int64_t> &refStrides) {
  try {
    return mapExact(layout, hostSizes, refStrides);
  } catch (const Unsupported &) {
    for (int64_t s : hostSizes)
      if (s == 0)
        throw;
    return mapNested(layout, hostSizes, refStrides); // throws the general matcher's reason
  }
}

namespace {

/// The matcher for layouts whose device dims tile their host dims exactly (every layout the
/// constructors and the compiler make).
LayoutMapping mapExact(const SpyreTensorLayout &layout, const std::vector<int64_t> &hostSizes,
                       const std::vector<int64_t> &refStrides) {
  size_t nd = layout.device_size.size();
  size_t rank = hostSizes.size();
  LayoutMapping m;
  m.hostSizes = hostSizes;
  m.dims.resize(nd);
  for (int64_t s : hostSizes)
    if (s == 0)
      return m; // an empty tensor has no sticks to visit
  std::vector<int64_t> expected(refStrides), extent(rank, 1);
  std::vector<bool> done(rank, false);
  for (size_t d = 0; d < rank; ++d)
    done[d] = hostSizes[d] <= 1;
  for (int64_t j = static_cast<int64_t>(nd) - 1; j >= 0; --j) {
    int64_t sm = layout.stride_map[j], ds = layout.device_size[j];
    auto &dim = m.dims[j];
    if (sm == 0) {
      dim.broadcast = true;
      continue;
    }
    if (sm == -1 || ds == 1)
      continue;
    int best = -1;
    for (size_t d = 0; d < rank; ++d) {
      if (done[d] || expected[d] != sm)
        continue;
      // Prefer continuing a dim already partly covered (the tile of a stick dim).
      if (best == -1 || (extent[d] > 1 && extent[best] == 1))
        best = static_cast<int>(d);
    }
    if (best == -1)
      throw Unsupported("layout " + layout.str() + " does not match a host tensor of that " +
                        "shape and strides (device dim " + std::to_string(j) + ")");
    dim.hostDim = best;
    dim.mult = extent[best];
    extent[best] *= ds;
    expected[best] = sm * ds;
    if (extent[best] >= hostSizes[best])
      done[best] = true;
  }
  for (size_t d = 0; d < rank; ++d)
    if (!done[d])
      throw Unsupported("layout " + layout.str() + " does not cover host dim " +
                        std::to_string(d) + " of size " + std::to_string(hostSizes[d]));
  return m;
}

// Visits every stick of the layout: fn(stickIndex, hostBase, validCount, hostStep) where the
// stick's element e (< validCount) lives at host element offset hostBase + e*hostStep, or
// fn receives validCount = 0 when the whole stick is padding.
template <typename Fn>
void forEachStick(const SpyreTensorLayout &layout, const LayoutMapping &map,
                  const std::vector<int64_t> &hostStrides, Fn fn) {
  size_t nd = layout.device_size.size();
  size_t rank = map.hostSizes.size();
  const auto &elem = map.dims[nd - 1];
  int64_t eps = layout.device_size[nd - 1];
  int64_t nsticks = 1;
  for (size_t j = 0; j + 1 < nd; ++j)
    nsticks *= layout.device_size[j];
  std::vector<int64_t> coord(nd, 0), hc(rank);
  for (int64_t s = 0; s < nsticks; ++s) {
    if (map.nested) {
      // The valid elements of a stick are a prefix: every bound is an upper bound on its entry.
      int64_t count = 0, base = 0, step = 0;
      coord[nd - 1] = 0;
      if (nestedCoord(layout, map, coord, hc)) {
        for (size_t d = 0; d < rank; ++d)
          base += hc[d] * hostStrides[d];
        if (elem.broadcast || elem.hostDim < 0) {
          count = elem.broadcast ? eps : 1;
        } else {
          step = elem.mult * hostStrides[elem.hostDim];
          std::vector<int64_t> scratch(rank);
          for (count = 1; count < eps; ++count) {
            coord[nd - 1] = count;
            if (!nestedCoord(layout, map, coord, scratch))
              break;
          }
        }
      }
      fn(s, base, count, step);
      for (int64_t j = static_cast<int64_t>(nd) - 2; j >= 0; --j) {
        if (++coord[j] < layout.device_size[j])
          break;
        coord[j] = 0;
      }
      continue;
    }
    std::fill(hc.begin(), hc.end(), 0);
    bool valid = true;
    for (size_t j = 0; j + 1 < nd; ++j) {
      const auto &dm = map.dims[j];
      if (dm.broadcast)
        continue;
      if (dm.hostDim < 0) {
        valid &= coord[j] == 0;
        continue;
      }
      hc[dm.hostDim] += coord[j] * dm.mult;
    }
    int64_t count = 0, base = 0, step = 0;
    if (valid) {
      for (size_t d = 0; d < rank; ++d)
        if (d != static_cast<size_t>(elem.hostDim) && hc[d] >= map.hostSizes[d])
          valid = false;
    }
    if (valid) {
      if (elem.broadcast) {
        count = eps;
      } else if (elem.hostDim < 0) {
        count = 1; // sparse / synthetic stick: only element 0 is real
      } else {
        int64_t start = hc[elem.hostDim];
        int64_t size = map.hostSizes[elem.hostDim];
        count = start >= size ? 0 : std::min<int64_t>(eps, (size - start + elem.mult - 1) / elem.mult);
        step = elem.mult * hostStrides[elem.hostDim];
      }
      for (size_t d = 0; d < rank; ++d)
        base += hc[d] * hostStrides[d];
    }
    fn(s, base, count, step);
    for (int64_t j = static_cast<int64_t>(nd) - 2; j >= 0; --j) {
      if (++coord[j] < layout.device_size[j])
        break;
      coord[j] = 0;
    }
  }
}

template <typename T> T loadAs(const void *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T> void storeAs(void *p, T v) { std::memcpy(p, &v, sizeof(T)); }

} // namespace

namespace {
/// The host types a device format converts to and from.
bool convertible(DataFormat f, HostType t) {
  switch (f) {
  case DataFormat::SEN169_FP16: return t == HostType::F16 || t == HostType::BF16 || t == HostType::Bool;
  case DataFormat::IEEE_FP32: return t == HostType::F32;
  case DataFormat::IEEE_INT32: return t == HostType::I32 || t == HostType::I64;
  case DataFormat::SENINT8: return t == HostType::I8;
  case DataFormat::SEN143_FP8: return t == HostType::F8E4M3;
  default: return false;
  }
}
} // namespace

void copyHostToDevice(const HostTensor &src, const SpyreTensorLayout &layout,
                      const LayoutMapping &map, uint8_t *dev) {
  const int64_t hb = hostTypeBytes(src.type);
  const DataFormat f = layout.device_dtype;
  const int64_t db = bytesPerElem(f);
  auto *h = static_cast<const uint8_t *>(src.data);
  auto convert = [&](const uint8_t *in, uint8_t *out) {
    switch (src.type) {
    case HostType::F16: return storeAs<uint16_t>(out, dl16::fromHalf(loadAs<uint16_t>(in)));
    case HostType::BF16: return storeAs<uint16_t>(out, dl16::fromBf16(loadAs<uint16_t>(in)));
    case HostType::Bool: return storeAs<uint16_t>(out, dl16::fromFloat(*in ? 1.0f : 0.0f));
    case HostType::I64: return storeAs<int32_t>(out, static_cast<int32_t>(loadAs<int64_t>(in)));
    default: std::memcpy(out, in, db);
    }
  };
  if (!convertible(f, src.type))
    throw Unsupported("host-to-device copy of " + std::string(hostTypeName(src.type)) + " into " +
                      std::string(dataFormatName(f)));
  forEachStick(layout, map, src.strides, [&](int64_t s, int64_t base, int64_t count, int64_t step) {
    uint8_t *stick = dev + s * kStickBytes;
    std::memset(stick, 0, kStickBytes);
    for (int64_t e = 0; e < count; ++e)
      convert(h + (base + e * step) * hb, stick + e * db);
  });
}

void copyDeviceToHost(const uint8_t *dev, const SpyreTensorLayout &layout,
                      const LayoutMapping &map, const HostTensor &dst) {
  const int64_t hb = hostTypeBytes(dst.type);
  const DataFormat f = layout.device_dtype;
  const int64_t db = bytesPerElem(f);
  auto *h = static_cast<uint8_t *>(dst.data);
  auto convert = [&](const uint8_t *in, uint8_t *out) {
    switch (dst.type) {
    case HostType::F16: return storeAs<uint16_t>(out, dl16::toHalf(loadAs<uint16_t>(in)));
    case HostType::BF16: return storeAs<uint16_t>(out, dl16::toBf16(loadAs<uint16_t>(in)));
    case HostType::Bool: *out = dl16::toFloat(loadAs<uint16_t>(in)) != 0.0f; return;
    case HostType::I64: return storeAs<int64_t>(out, loadAs<int32_t>(in));
    default: std::memcpy(out, in, db);
    }
  };
  if (!convertible(f, dst.type))
    throw Unsupported("device-to-host copy of " + std::string(dataFormatName(f)) + " into " +
                      std::string(hostTypeName(dst.type)));
  forEachStick(layout, map, dst.strides, [&](int64_t s, int64_t base, int64_t count, int64_t step) {
    const uint8_t *stick = dev + s * kStickBytes;
    for (int64_t e = 0; e < count; ++e)
      convert(stick + e * db, h + (base + e * step) * hb);
  });
}

} // namespace spyre::sim
