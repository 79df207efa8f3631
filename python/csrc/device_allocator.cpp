// The "spyre" PyTorch device (PrivateUse1), part 1: the simulated DDR, its allocator,
// SpyreTensorImpl and the tensor factories (empty_strided, empty_with_layout). The other parts:
// device_transfers.cpp, device_kernels.cpp, device_hooks.cpp, device_streams.cpp (device_internal.h
// lists them).
// Compute ops are the compile path's business.
//
// Every translation unit that includes ATen costs ~40 s on the 2-core build box: the device is
// split by concept into few files, not one per class.
#include "device_internal.h"
#include "device_options.h"

#include "spyre/isa/error.h"
#include "spyre/sim/host_transfer.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/Allocator.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <numeric>

namespace spyre::py {

using namespace detail;

// ---------------------------------------------------------------------------------------------
// Simulated DDR and the allocator
// ---------------------------------------------------------------------------------------------

namespace {

constexpr uint64_t kDdrBytes = 128ull << 30; // per card: 128 GiB (SPYRE.md §1), reserved lazily

/// Live allocations by DDR address, for storages that wrap a block's pointer without owning it
/// (at::from_blob over a spyre storage: torch's legacy serialisation reads and writes storages
/// that way).
std::mutex gLiveMu;
std::map<std::pair<int, uint64_t>, Allocation *> gLive; // (device, address) -> allocation

void deleteAllocation(void *ctx) {
  auto *a = static_cast<Allocation *>(ctx);
  {
    std::lock_guard<std::mutex> lock(gLiveMu);
    gLive.erase({a->device, a->addr});
  }
  try {
    deviceMemory(a->device).free(a->addr);
  } catch (const std::exception &e) {
    // A deleter must not throw; a failing free means the allocator's books are broken.
    std::cerr << "[spyre] internal error freeing DDR block: " << e.what() << "\n";
  }
  delete a;
}

c10::DataPtr allocateBlock(int device, size_t n) {
  sim::DeviceMemory &mem = deviceMemory(device);
  uint64_t addr = 0;
  try {
    addr = mem.allocate(n);
  } catch (const OutOfMemory &e) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, e.what());
  }
  auto *a = new Allocation{addr, n, std::nullopt, device};
  {
    std::lock_guard<std::mutex> lock(gLiveMu);
    gLive[{device, addr}] = a;
  }
  // The data pointer is the block's host address inside the DDR reservation: unique per
  // block, so torch's aliasing/overlap checks see real distinct addresses.
  return {mem.at(addr, n), a, &deleteAllocation, c10::Device(kSpyre, static_cast<c10::DeviceIndex>(device))};
}

class SpyreAllocator final : public c10::Allocator {
public:
  c10::DataPtr allocate(size_t n) override { return allocateBlock(currentDevice(), n); }
  void copy_data(void *dest, const void *src, std::size_t count) const override {
    // Raw storage-to-storage copies (UntypedStorage.copy_/clone): both sides are host memory.
    std::memcpy(dest, src, count);
  }
};

SpyreAllocator gAllocator;
REGISTER_ALLOCATOR(kSpyre, &gAllocator)

void warnIfDowncast(at::ScalarType t) {
  if (t != at::kLong || !currentDeviceOptions().downcastWarn)
    return;
  TORCH_WARN_ONCE("Backend Spyre does not support int64; downcasting to int32");
}

} // namespace

namespace detail {

c10::Allocator &spyreAllocator() { return gAllocator; }

c10::DataPtr allocateOn(int device, size_t bytes) { return allocateBlock(device, bytes); }

Allocation *allocationOf(const c10::Storage &s) {
  const c10::DataPtr &dp = s.data_ptr();
  if (dp.get_deleter() == &deleteAllocation)
    return static_cast<Allocation *>(dp.get_context());
  // A storage over a block it does not own (from_blob): the block starting at its pointer.
  if (!dp.get() || !dp.device().is_privateuseone())
    return nullptr;
  const int device = std::max<int>(dp.device().index(), 0);
  if (device >= deviceCount() || !deviceMemory(device).contains(dp.get()))
    return nullptr;
  sim::DeviceMemory &mem = deviceMemory(device);
  const uint64_t addr = static_cast<uint64_t>(static_cast<const uint8_t *>(dp.get()) - mem.base());
  std::lock_guard<std::mutex> lock(gLiveMu);
  auto it = gLive.find({device, addr});
  return it == gLive.end() ? nullptr : it->second;
}

/// Python spelling of a dtype for messages (torch_python's getDtypeNames is not exported).
std::string dtypeName(at::ScalarType t) {
  switch (t) {
  case at::kHalf: return "torch.float16";
  case at::kBFloat16: return "torch.bfloat16";
  case at::kFloat: return "torch.float32";
  case at::kDouble: return "torch.float64";
  case at::kInt: return "torch.int32";
  case at::kLong: return "torch.int64";
  case at::kShort: return "torch.int16";
  case at::kChar: return "torch.int8";
  case at::kByte: return "torch.uint8";
  case at::kBool: return "torch.bool";
  case at::kFloat8_e4m3fn: return "torch.float8_e4m3fn";
  case at::kComplexFloat: return "torch.complex64";
  case at::kComplexDouble: return "torch.complex128";
  default: return std::string("torch.") + c10::toString(t);
  }
}

std::optional<HostType> hostTypeOf(at::ScalarType t) {
  switch (t) {
  case at::kHalf: return HostType::F16;
  case at::kBFloat16: return HostType::BF16;
  case at::kFloat: return HostType::F32;
  case at::kInt: return HostType::I32;
  case at::kLong: return HostType::I64;
  case at::kBool: return HostType::Bool;
  case at::kChar: return HostType::I8;
  case at::kFloat8_e4m3fn: return HostType::F8E4M3;
  default: return std::nullopt;
  }
}

std::string vecStr(at::IntArrayRef v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

} // namespace detail

namespace {
std::atomic<bool> gRuntimeStarted{false};
} // namespace

sim::DeviceMemory &deviceMemory(int device) {
  if (device < 0 || device >= deviceCount())
    throw Error("Invalid spyre device index " + std::to_string(device) + ": " + deviceRange());
  // Leaked on purpose: tensors still alive at interpreter teardown free into them after static
  // destructors have run.
  static std::array<std::atomic<sim::DeviceMemory *>, kMaxDevices> memories{};
  static std::mutex mu;
  sim::DeviceMemory *m = memories[device].load(std::memory_order_acquire);
  if (!m) {
    std::lock_guard<std::mutex> lock(mu);
    m = memories[device].load(std::memory_order_relaxed);
    if (!m) {
      m = new sim::DeviceMemory(kDdrBytes);
      memories[device].store(m, std::memory_order_release);
      gRuntimeStarted = true;
    }
  }
  return *m;
}

int deviceIndex(const at::Tensor &t) {
  if (t.device().type() != kSpyre)
    throw Error("expected a spyre tensor, got one on " + t.device().str());
  return t.device().has_index() ? t.device().index() : currentDevice();
}

bool runtimeStarted() { return gRuntimeStarted; }

void startRuntime() { (void)deviceMemory(currentDevice()); }

DataFormat deviceFormatOf(at::ScalarType t) {
  auto h = hostTypeOf(t);
  if (!h)
    throw Unsupported("dtype " + dtypeName(t) + " on spyre (supported: float16, bfloat16, " +
                      "float32, int32, int64 (stored as int32), int8, float8_e4m3fn, bool)");
  return deviceFormatFor(*h);
}

// ---------------------------------------------------------------------------------------------
// SpyreTensorImpl
// ---------------------------------------------------------------------------------------------

namespace detail {

SpyreTensorImpl *spyreImpl(const at::Tensor &t) {
  return dynamic_cast<SpyreTensorImpl *>(t.unsafeGetTensorImpl());
}

void checkSpyre(const at::Tensor &t, const char *what) {
  if (!t.defined())
    throw Error(std::string(what) + ": undefined tensor");
  if (!t.is_privateuseone())
    throw Error(std::string(what) + ": expected a spyre tensor, got a tensor on " +
                t.device().str());
}

Allocation &allocationOrThrow(const at::Tensor &t, const char *what) {
  checkSpyre(t, what);
  Allocation *a = allocationOf(t.storage());
  if (!a || !a->geom)
    throw Error(std::string(what) + ": the storage of this spyre tensor has no device layout " +
                "(it was allocated raw, e.g. through torch.UntypedStorage)");
  if (t.scalar_type() != a->geom->dtype)
    throw Unsupported(std::string(what) + ": a " + dtypeName(t.scalar_type()) +
                      " view of a storage laid out for " + dtypeName(a->geom->dtype));
  return *a;
}

} // namespace detail

namespace {

/// Creates the storage for one tensor of (size, stride, dtype) tiled by `layout`.
at::Tensor makeTensor(at::IntArrayRef size, at::IntArrayRef stride, at::ScalarType dtype,
                      const SpyreTensorLayout &layout) {
  at::detail::check_size_nonnegative(size);
  warnIfDowncast(dtype);
  const int64_t itemsize = static_cast<int64_t>(c10::elementSize(dtype));
  // torch-spyre: max(device bytes, host bytes) so torch's own bounds checks on the storage
  // (as_strided, set_) hold for any view of the host geometry.
  const size_t nbytes = std::max<size_t>(static_cast<size_t>(layout.deviceBytes()),
                                         at::detail::computeStorageNbytes(size, stride, itemsize));
  c10::Storage storage(c10::Storage::use_byte_size_t(), nbytes, &gAllocator, /*resizable=*/true);
  allocationOf(storage)->geom = StorageGeometry{layout, size.vec(), stride.vec(), dtype};
  auto impl = c10::make_intrusive<SpyreTensorImpl>(std::move(storage),
                                                   c10::scalarTypeToTypeMeta(dtype), layout);
  impl->set_sizes_and_strides(size, stride);
  return at::Tensor(std::move(impl));
}

} // namespace

const SpyreTensorLayout &tensorLayout(const at::Tensor &t) {
  checkSpyre(t, "tensorLayout");
  if (auto *impl = spyreImpl(t))
    return impl->layout();
  // Views made by composite ops (e.g. squeeze) are plain TensorImpls over our storage.
  return storageGeometry(t).layout;
}

const StorageGeometry &storageGeometry(const at::Tensor &t) {
  checkSpyre(t, "storageGeometry");
  Allocation *a = allocationOf(t.storage());
  if (!a || !a->geom)
    throw Error("storageGeometry: the storage of this spyre tensor has no device layout");
  return *a->geom;
}

uint64_t deviceAddress(const at::Tensor &t) {
  checkSpyre(t, "deviceAddress");
  if (Allocation *a = allocationOf(t.storage()))
    return a->addr;
  throw Error("deviceAddress: storage is not a simulated-DDR allocation");
}

bool coversStorage(const at::Tensor &t) {
  checkSpyre(t, "coversStorage");
  Allocation *a = allocationOf(t.storage());
  if (!a || !a->geom)
    return false;
  const StorageGeometry &g = *a->geom;
  return t.scalar_type() == g.dtype && t.storage_offset() == 0 && t.sizes() == g.sizes &&
         t.strides() == at::IntArrayRef(g.strides);
}

SpyreTensorLayout defaultLayout(at::IntArrayRef size, at::IntArrayRef stride,
                                at::ScalarType dtype) {
  DataFormat f = deviceFormatOf(dtype);
  if (size.size() != stride.size())
    throw Error("spyre layout: size " + vecStr(size) + " and stride " + vecStr(stride) +
                " differ in rank");
  // Host dims by decreasing stride; ties keep their order, so contiguous tensors get
  // dim_order [0..r-1] exactly like SpyreTensorLayout(size, dtype).
  std::vector<int64_t> order(size.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return stride[a] > stride[b]; });
  return SpyreTensorLayout(size.vec(), stride.vec(), f, order);
}

at::Tensor emptyRaw(at::IntArrayRef size, at::IntArrayRef stride, at::ScalarType dtype) {
  at::detail::check_size_nonnegative(size);
  const size_t nbytes = at::detail::computeStorageNbytes(size, stride, c10::elementSize(dtype));
  c10::Storage storage(c10::Storage::use_byte_size_t(), nbytes, &gAllocator, /*resizable=*/true);
  auto impl = c10::make_intrusive<SpyreTensorImpl>(std::move(storage),
                                                   c10::scalarTypeToTypeMeta(dtype),
                                                   SpyreTensorLayout());
  impl->set_sizes_and_strides(size, stride);
  return at::Tensor(std::move(impl));
}

at::Tensor emptyStrided(at::IntArrayRef size, at::IntArrayRef stride, at::ScalarType dtype) {
  return makeTensor(size, stride, dtype, defaultLayout(size, stride, dtype));
}

at::Tensor emptyWithLayout(at::IntArrayRef size, at::IntArrayRef stride, at::ScalarType dtype,
                           const SpyreTensorLayout &layout) {
  DataFormat f = deviceFormatOf(dtype);
  if (layout.device_dtype != f)
    throw Error("empty_with_layout: layout device_dtype DataFormats." +
                std::string(dataFormatName(layout.device_dtype)) + " does not match " +
                dtypeName(dtype) + ", which lives on the device as DataFormats." +
                std::string(dataFormatName(f)));
  if (size.size() != stride.size())
    throw Error("empty_with_layout: size " + vecStr(size) + " and stride " + vecStr(stride) +
                " differ in rank");
  if (layout.device_size.empty() || layout.device_size.size() != layout.stride_map.size() ||
      layout.device_size.back() != layout.elemsPerStick())
    throw Error("empty_with_layout: malformed layout " + layout.str());
  // Reject layouts that do not describe this host tensor now, not at the first copy.
  if (c10::multiply_integers(size) != 0)
    (void)sim::mapLayout(layout, size.vec(), stride.vec());
  return makeTensor(size, stride, dtype, layout);
}

} // namespace spyre::py
