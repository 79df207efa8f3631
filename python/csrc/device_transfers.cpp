// The "spyre" device, part 2: host <-> device transfers. A transfer of exactly a storage's
// geometry goes straight between the CPU tensor and DDR; any other view stages the whole
// storage through a CPU image and applies the view there. A view of another dtype than its
// storage's (the uint8 views torch's storage copies make) reads and writes the bytes of that CPU
// image, so a storage's bytes are, seen from the host, its host-order image. A storage allocated
// raw (no geometry yet) holds those host bytes verbatim.
#include "device_internal.h"
#include "device_options.h"

#include "spyre/isa/error.h"
#include "spyre/sim/host_transfer.h"

#include <ATen/EmptyTensor.h>

#include <algorithm>
#include <cstring>
#include <iostream>

namespace spyre::py {

using namespace detail;

namespace {

sim::HostTensor hostView(const at::Tensor &cpu) {
  return {cpu.data_ptr(), *hostTypeOf(cpu.scalar_type()), cpu.sizes().vec(),
          cpu.strides().vec()};
}

void logTransfer(const char *dir, const Allocation &a, const at::Tensor &host) {
  if (!currentDeviceOptions().debug)
    return;
  const StorageGeometry &g = *a.geom;
  std::cerr << "[spyre] " << dir << " " << dtypeName(g.dtype) << " size=" << vecStr(g.sizes)
            << " stride=" << vecStr(g.strides) << " host_stride=" << vecStr(host.strides())
            << " " << g.layout.str() << " ddr=0x" << std::hex << a.addr << std::dec << " ("
            << g.layout.deviceBytes() << " bytes)\n";
}

uint8_t *ddrOf(const Allocation &a) {
  return memoryOf(a).at(a.addr, static_cast<uint64_t>(a.geom->layout.deviceBytes()));
}

bool isEmpty(const StorageGeometry &g) {
  return std::any_of(g.sizes.begin(), g.sizes.end(), [](int64_t s) { return s == 0; });
}

at::Tensor cpuOptionsLike(const at::Tensor &t) {
  return at::empty_strided(t.sizes(), t.strides(), at::TensorOptions().dtype(t.scalar_type()));
}

Allocation &allocationOfSpyre(const at::Tensor &t, const char *what) {
  checkSpyre(t, what);
  Allocation *a = allocationOf(t.storage());
  if (!a)
    throw Error(std::string(what) + ": the storage is not a simulated-DDR allocation");
  return *a;
}

/// t as a CPU tensor over `image`'s storage (t's dtype, sizes, strides and storage offset).
at::Tensor viewOfImage(const at::Tensor &image, const at::Tensor &t) {
  return at::empty({0}, at::TensorOptions().dtype(t.scalar_type()))
      .set_(image.storage(), t.storage_offset(), t.sizes(), t.strides());
}

/// The CPU image of a storage allocated raw: its bytes, verbatim.
at::Tensor rawImage(const Allocation &a, const at::Tensor &t) {
  const uint64_t n = std::max<uint64_t>(a.bytes, t.storage().nbytes());
  at::Tensor bytes = at::empty({static_cast<int64_t>(n)}, at::TensorOptions().dtype(at::kByte));
  if (n)
    std::memcpy(bytes.data_ptr(), memoryOf(a).at(a.addr, n), n);
  return bytes;
}

void writeRawImage(const Allocation &a, const at::Tensor &bytes) {
  const uint64_t n = static_cast<uint64_t>(bytes.numel());
  if (n)
    std::memcpy(memoryOf(a).at(a.addr, n), bytes.data_ptr(), n);
}

} // namespace

namespace detail {

namespace {
/// One host<->device copy of an allocation's storage (nothing for an empty one), logged.
template <typename Copy>
void transfer(const char *direction, const Allocation &a, const at::Tensor &host, Copy copy) {
  const StorageGeometry &g = *a.geom;
  if (isEmpty(g))
    return;
  logTransfer(direction, a, host);
  copy(g, sim::mapLayout(g.layout, g.sizes, g.strides));
}
} // namespace

void writeStorage(const Allocation &a, const at::Tensor &src) {
  transfer("H2D", a, src, [&](const StorageGeometry &g, const auto &map) {
    sim::copyHostToDevice(hostView(src), g.layout, map, ddrOf(a));
  });
}

void readStorage(const Allocation &a, const at::Tensor &dst) {
  transfer("D2H", a, dst, [&](const StorageGeometry &g, const auto &map) {
    sim::copyDeviceToHost(ddrOf(a), g.layout, map, hostView(dst));
  });
}

int64_t storageElems(const at::Tensor &t, const StorageGeometry &g) {
  const size_t item = c10::elementSize(g.dtype);
  size_t bytes = std::max<size_t>(t.storage().nbytes(),
                                  at::detail::computeStorageNbytes(g.sizes, g.strides, item));
  return static_cast<int64_t>((bytes + item - 1) / item);
}

at::Tensor stageStorage(const Allocation &a, int64_t elems) {
  const StorageGeometry &g = *a.geom;
  at::Tensor buf = at::zeros({elems}, at::TensorOptions().dtype(g.dtype));
  at::Tensor image = buf.as_strided(g.sizes, g.strides, 0);
  readStorage(a, image);
  return image;
}

/// The host image of t's whole storage as bytes: verbatim for a raw storage, else the staged
/// image of its geometry.
at::Tensor storageImageBytes(const Allocation &a, const at::Tensor &t) {
  if (!a.geom)
    return rawImage(a, t);
  at::Tensor image = stageStorage(a, storageElems(t, *a.geom));
  return at::empty({0}, at::TensorOptions().dtype(at::kByte))
      .set_(image.storage(), 0, {static_cast<int64_t>(image.storage().nbytes())}, {1});
}

void retileStorage(const at::Tensor &t, const StorageGeometry &g) {
  Allocation &a = allocationOfSpyre(t, "retile");
  at::Tensor bytes = storageImageBytes(a, t);
  const size_t item = c10::elementSize(g.dtype);
  const size_t hostBytes = at::detail::computeStorageNbytes(g.sizes, g.strides, item);
  if (hostBytes > static_cast<size_t>(bytes.numel()))
    throw Error("spyre storage of " + std::to_string(bytes.numel()) + " bytes cannot hold a " +
                dtypeName(g.dtype) + " tensor of size " + vecStr(g.sizes) + " and stride " +
                vecStr(g.strides));
  at::Tensor content = at::empty({0}, at::TensorOptions().dtype(g.dtype))
                           .set_(bytes.storage(), 0, g.sizes, g.strides);
  c10::StorageImpl *st = t.storage().unsafeGetStorageImpl();
  const uint64_t need = static_cast<uint64_t>(g.layout.deviceBytes());
  if (need <= memoryOf(a).blockSize(a.addr)) {
    a.geom = g; // same DDR block, retiled in place
    writeStorage(a, content);
  } else {
    // The storage's nbytes (its host view) stay; only the DDR block grows (on the same card).
    c10::DataPtr fresh = allocateOn(a.device, need);
    auto *na = static_cast<Allocation *>(fresh.get_context());
    na->geom = g;
    writeStorage(*na, content);
    st->set_data_ptr_noswap(std::move(fresh)); // frees the old block (`a` dangles now)
  }
  if (auto *impl = spyreImpl(t))
    impl->setLayout(g.layout);
}

void adoptRawStorage(const at::Tensor &t) {
  Allocation *a = allocationOf(t.storage());
  if (!a || a->geom || !hostTypeOf(t.scalar_type()))
    return;
  const int64_t n =
      static_cast<int64_t>(t.storage().nbytes() / c10::elementSize(t.scalar_type()));
  if (n == 0)
    return;
  retileStorage(t, StorageGeometry{defaultLayout({n}, {1}, t.scalar_type()), {n}, {1},
                                   t.scalar_type()});
}

bool cloneWholeStorage(const at::Tensor &src, const at::Tensor &dst) {
  Allocation *sa = allocationOf(src.storage()), *da = allocationOf(dst.storage());
  if (!sa || !da || !sa->geom || da->geom || src.scalar_type() != dst.scalar_type() ||
      src.storage().nbytes() != dst.storage().nbytes())
    return false;
  auto whole = [](const at::Tensor &t) {
    return t.storage_offset() == 0 && t.dim() == 1 && t.stride(0) == 1 &&
           static_cast<size_t>(t.numel()) * t.element_size() == t.storage().nbytes();
  };
  const uint64_t n = static_cast<uint64_t>(sa->geom->layout.deviceBytes());
  if (!whole(src) || !whole(dst) || n > memoryOf(*da).blockSize(da->addr))
    return false;
  if (n)
    std::memcpy(memoryOf(*da).at(da->addr, n), memoryOf(*sa).at(sa->addr, n), n);
  da->geom = sa->geom;
  return true;
}

} // namespace detail

at::Tensor toCpu(const at::Tensor &t) {
  Allocation &a = allocationOfSpyre(t, "spyre->cpu copy");
  if (t.numel() == 0)
    return cpuOptionsLike(t);
  if (!a.geom)
    return viewOfImage(rawImage(a, t), t).clone();
  if (coversStorage(t)) {
    at::Tensor out = cpuOptionsLike(t);
    readStorage(a, out);
    return out;
  }
  return viewOfImage(stageStorage(a, storageElems(t, *a.geom)), t);
}

void copyFromCpu(const at::Tensor &dst, const at::Tensor &srcIn) {
  Allocation &a = allocationOfSpyre(dst, "cpu->spyre copy");
  if (!srcIn.device().is_cpu())
    throw Error("cpu->spyre copy: source is on " + srcIn.device().str() + ", expected cpu");
  if (dst.numel() == 0)
    return;
  // Conversions the DMA does not do (e.g. float64 -> float32) happen on the CPU first.
  at::Tensor src = srcIn.to(dst.scalar_type()).resolve_conj().resolve_neg();
  if (!a.geom) {
    at::Tensor bytes = rawImage(a, dst);
    viewOfImage(bytes, dst).copy_(src);
    writeRawImage(a, bytes);
    return;
  }
  if (coversStorage(dst)) {
    writeStorage(a, src.expand(dst.sizes()));
    return;
  }
  at::Tensor image = stageStorage(a, storageElems(dst, *a.geom));
  viewOfImage(image, dst).copy_(src);
  writeStorage(a, image);
}

} // namespace spyre::py
