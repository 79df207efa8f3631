// The "spyre" device, part 2: host <-> device transfers. A transfer of exactly a storage's
// geometry goes straight between the CPU tensor and DDR; any other view stages the whole
// storage through a CPU image and applies the view there.
#include "device_internal.h"
#include "device_options.h"

#include "spyre/isa/error.h"
#include "spyre/sim/host_transfer.h"

#include <ATen/EmptyTensor.h>

#include <algorithm>
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
  return deviceMemory().at(a.addr, static_cast<uint64_t>(a.geom->layout.deviceBytes()));
}

bool isEmpty(const StorageGeometry &g) {
  return std::any_of(g.sizes.begin(), g.sizes.end(), [](int64_t s) { return s == 0; });
}

at::Tensor cpuOptionsLike(const at::Tensor &t) {
  return at::empty_strided(t.sizes(), t.strides(), at::TensorOptions().dtype(t.scalar_type()));
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

} // namespace detail

at::Tensor toCpu(const at::Tensor &t) {
  Allocation &a = allocationOrThrow(t, "spyre->cpu copy");
  if (t.numel() == 0)
    return cpuOptionsLike(t);
  if (coversStorage(t)) {
    at::Tensor out = cpuOptionsLike(t);
    readStorage(a, out);
    return out;
  }
  return stageStorage(a, storageElems(t, *a.geom))
      .as_strided(t.sizes(), t.strides(), t.storage_offset());
}

void copyFromCpu(const at::Tensor &dst, const at::Tensor &srcIn) {
  Allocation &a = allocationOrThrow(dst, "cpu->spyre copy");
  if (!srcIn.device().is_cpu())
    throw Error("cpu->spyre copy: source is on " + srcIn.device().str() + ", expected cpu");
  if (dst.numel() == 0)
    return;
  // Conversions the DMA does not do (e.g. float64 -> float32) happen on the CPU first.
  at::Tensor src = srcIn.to(dst.scalar_type()).resolve_conj().resolve_neg();
  if (coversStorage(dst)) {
    writeStorage(a, src.expand(dst.sizes()));
    return;
  }
  at::Tensor image = stageStorage(a, storageElems(dst, *a.geom));
  image.as_strided(dst.sizes(), dst.strides(), dst.storage_offset()).copy_(src);
  writeStorage(a, image);
}

} // namespace spyre::py
