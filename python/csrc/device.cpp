// The "spyre" PyTorch device (PrivateUse1): simulated DDR allocator, SpyreTensorImpl, the eager
// ATen kernels that only move or reinterpret data (allocation, copies, views, resize, fill), the
// PrivateUse1 hooks and the device guard. Compute ops are the compile path's business.
//
// Why one file: every translation unit that includes ATen costs ~40 s on the 2-core build box,
// so everything that needs torch headers lives here and in module.cpp.
//
// Views: a view shares its base's storage, and the bytes of that storage are tiled for one host
// geometry (StorageGeometry: sizes, strides, dtype + layout), recorded on the DDR block itself.
// A view therefore reports the layout of its storage (tensorLayout), and every transfer of a view
// that is not exactly that geometry stages the whole storage through the CPU and applies the view
// there (as torch-spyre does with dma_sizes/dma_strides).
#include "spyre_device.h"

#include "spyre/isa/error.h"
#include "spyre/sim/host_transfer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <ATen/InferSize.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/TensorUtils.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/Resize.h>
#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <numeric>
#include <strings.h>

namespace spyre::py {

// ---------------------------------------------------------------------------------------------
// Simulated DDR and the allocator
// ---------------------------------------------------------------------------------------------

namespace {

constexpr uint64_t kDdrBytes = 128ull << 30; // one card: 128 GiB (SPYRE.md §1)
constexpr c10::DeviceType kSpyre = c10::DeviceType::PrivateUse1;

/// DataPtr context of one storage: its DDR block and, once a tensor factory has set it, the host
/// geometry its bytes are tiled for.
struct Allocation {
  uint64_t addr = 0;
  uint64_t bytes = 0; ///< requested size (the storage's nbytes when allocated)
  std::optional<StorageGeometry> geom;
};

void deleteAllocation(void *ctx) {
  auto *a = static_cast<Allocation *>(ctx);
  try {
    deviceMemory().free(a->addr);
  } catch (const std::exception &e) {
    // A deleter must not throw; a failing free means the allocator's books are broken.
    std::cerr << "[spyre] internal error freeing DDR block: " << e.what() << "\n";
  }
  delete a;
}

class SpyreAllocator final : public c10::Allocator {
public:
  c10::DataPtr allocate(size_t n) override {
    uint64_t addr = 0;
    try {
      addr = deviceMemory().allocate(n);
    } catch (const OutOfMemory &e) {
      TORCH_CHECK_WITH(OutOfMemoryError, false, e.what());
    }
    auto *a = new Allocation{addr, n, std::nullopt};
    // The data pointer is the block's host address inside the DDR reservation: unique per
    // block, so torch's aliasing/overlap checks see real distinct addresses.
    return {deviceMemory().at(addr, n), a, &deleteAllocation, c10::Device(kSpyre, 0)};
  }
  void copy_data(void *dest, const void *src, std::size_t count) const override {
    // Raw storage-to-storage copies (UntypedStorage.copy_/clone): both sides are host memory.
    std::memcpy(dest, src, count);
  }
};

SpyreAllocator gAllocator;
REGISTER_ALLOCATOR(kSpyre, &gAllocator)

Allocation *allocationOf(const c10::Storage &s) {
  const c10::DataPtr &dp = s.data_ptr();
  if (dp.get_deleter() != &deleteAllocation)
    return nullptr;
  return static_cast<Allocation *>(dp.get_context());
}

bool debugEnabled() {
  const char *v = std::getenv("TORCH_SPYRE_DEBUG");
  return v && *v && std::strcmp(v, "0") != 0;
}

bool envOff(const char *v) {
  return v && (std::strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0 ||
               strcasecmp(v, "off") == 0 || strcasecmp(v, "no") == 0);
}

void warnIfDowncast(at::ScalarType t) {
  if (t != at::kLong || envOff(std::getenv("TORCH_SPYRE_DOWNCAST_WARN")))
    return;
  TORCH_WARN_ONCE("Backend Spyre does not support int64; downcasting to int32");
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
  default: return std::nullopt;
  }
}

std::string vecStr(at::IntArrayRef v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

} // namespace

sim::DeviceMemory &deviceMemory() {
  // Leaked on purpose: tensors still alive at interpreter teardown free into it after static
  // destructors have run.
  static auto *mem = new sim::DeviceMemory(kDdrBytes);
  return *mem;
}

DataFormat deviceFormatOf(at::ScalarType t) {
  auto h = hostTypeOf(t);
  if (!h)
    throw Unsupported("dtype " + dtypeName(t) + " on spyre (supported: float16, bfloat16, " +
                      "float32, int32, int64 (stored as int32), bool)");
  return deviceFormatFor(*h);
}

// ---------------------------------------------------------------------------------------------
// SpyreTensorImpl
// ---------------------------------------------------------------------------------------------

namespace {

/// A dense PrivateUse1 tensor that also carries the SpyreTensorLayout of its storage (what
/// torch-spyre's get_spyre_tensor_layout returns).
class SpyreTensorImpl final : public c10::TensorImpl {
public:
  SpyreTensorImpl(c10::Storage &&storage, const caffe2::TypeMeta dtype, SpyreTensorLayout layout)
      : TensorImpl(std::move(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), dtype),
        layout_(std::move(layout)) {}
  SpyreTensorImpl(ImplType view, c10::Storage &&storage, c10::DispatchKeySet keys,
                  const caffe2::TypeMeta dtype, SpyreTensorLayout layout)
      : TensorImpl(view, std::move(storage), keys, dtype), layout_(std::move(layout)) {}

  const SpyreTensorLayout &layout() const { return layout_; }
  void setLayout(SpyreTensorLayout l) { layout_ = std::move(l); }

  c10::intrusive_ptr<c10::TensorImpl>
  shallow_copy_and_detach(const c10::VariableVersion &version_counter,
                          bool allow_tensor_metadata_change) const override {
    return detachCopy(version_counter, allow_tensor_metadata_change);
  }
  c10::intrusive_ptr<c10::TensorImpl>
  shallow_copy_and_detach(c10::VariableVersion &&version_counter,
                          bool allow_tensor_metadata_change) const override {
    return detachCopy(std::move(version_counter), allow_tensor_metadata_change);
  }
  void shallow_copy_from(const c10::intrusive_ptr<c10::TensorImpl> &impl) override {
    copy_tensor_metadata(impl.get(), this, version_counter(), allow_tensor_metadata_change());
    if (auto *s = dynamic_cast<const SpyreTensorImpl *>(impl.get()))
      layout_ = s->layout_;
  }

private:
  template <typename Version>
  c10::intrusive_ptr<c10::TensorImpl> detachCopy(Version &&version,
                                                 bool allowMetadataChange) const {
    auto impl = c10::make_intrusive<SpyreTensorImpl>(c10::Storage(storage()), dtype(), layout_);
    copy_tensor_metadata(this, impl.get(), std::forward<Version>(version), allowMetadataChange);
    impl->refresh_numel();
    impl->refresh_contiguous();
    return impl;
  }

  SpyreTensorLayout layout_;
};

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

// ---------------------------------------------------------------------------------------------
// Host <-> device transfers
// ---------------------------------------------------------------------------------------------

namespace {

sim::HostTensor hostView(const at::Tensor &cpu) {
  return {cpu.data_ptr(), *hostTypeOf(cpu.scalar_type()), cpu.sizes().vec(),
          cpu.strides().vec()};
}

void logTransfer(const char *dir, const Allocation &a, const at::Tensor &host) {
  if (!debugEnabled())
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

/// H2D of a CPU tensor with exactly the storage geometry's sizes and dtype (any strides).
bool isEmpty(const StorageGeometry &g) {
  return std::any_of(g.sizes.begin(), g.sizes.end(), [](int64_t s) { return s == 0; });
}

void writeStorage(const Allocation &a, const at::Tensor &src) {
  const StorageGeometry &g = *a.geom;
  if (isEmpty(g))
    return;
  logTransfer("H2D", a, src);
  auto map = sim::mapLayout(g.layout, g.sizes, g.strides);
  sim::copyHostToDevice(hostView(src), g.layout, map, ddrOf(a));
}

/// D2H into a CPU tensor with the storage geometry's sizes and dtype (any non-overlapping
/// strides).
void readStorage(const Allocation &a, const at::Tensor &dst) {
  const StorageGeometry &g = *a.geom;
  if (isEmpty(g))
    return;
  logTransfer("D2H", a, dst);
  auto map = sim::mapLayout(g.layout, g.sizes, g.strides);
  sim::copyDeviceToHost(ddrOf(a), g.layout, map, hostView(dst));
}

/// Elements a CPU image of t's storage needs so that every in-bounds view of the spyre storage
/// is in bounds of the image too.
int64_t storageElems(const at::Tensor &t, const StorageGeometry &g) {
  const size_t item = c10::elementSize(g.dtype);
  size_t bytes = std::max<size_t>(t.storage().nbytes(),
                                  at::detail::computeStorageNbytes(g.sizes, g.strides, item));
  return static_cast<int64_t>((bytes + item - 1) / item);
}

/// CPU image of the whole storage: a zeroed buffer with the storage geometry applied at offset
/// 0 and filled from the device. Returns the geometry view; its storage is the image.
at::Tensor stageStorage(const Allocation &a, int64_t elems) {
  const StorageGeometry &g = *a.geom;
  at::Tensor buf = at::zeros({elems}, at::TensorOptions().dtype(g.dtype));
  at::Tensor image = buf.as_strided(g.sizes, g.strides, 0);
  readStorage(a, image);
  return image;
}

at::Tensor cpuOptionsLike(const at::Tensor &t) {
  return at::empty_strided(t.sizes(), t.strides(), at::TensorOptions().dtype(t.scalar_type()));
}

} // namespace

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

// ---------------------------------------------------------------------------------------------
// ATen kernels
// ---------------------------------------------------------------------------------------------

namespace {

void checkOptions(std::optional<at::Layout> layout, std::optional<at::Device> device,
                  std::optional<bool> pinMemory) {
  TORCH_CHECK(!layout || *layout == at::kStrided, "spyre supports only torch.strided tensors, got ",
              *layout);
  TORCH_CHECK(!device || device->type() == kSpyre, "spyre empty: bad device ", *device);
  TORCH_CHECK(!device || !device->has_index() || device->index() < kDeviceCount,
              "Invalid spyre device index ", device ? int(device->index()) : 0,
              ": the simulator has ", kDeviceCount, " device (valid index: 0)");
  TORCH_CHECK(!pinMemory || !*pinMemory, "spyre tensors cannot be pinned (pin_memory=True)");
}

at::Tensor spyreEmptyStrided(at::IntArrayRef size, at::IntArrayRef stride,
                             std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                             std::optional<at::Device> device, std::optional<bool> pinMemory) {
  checkOptions(layout, device, pinMemory);
  return withTorchErrors([&] {
    return emptyStrided(size, stride, dtype.value_or(c10::get_default_dtype_as_scalartype()));
  });
}

at::Tensor spyreEmpty(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                      std::optional<at::Layout> layout, std::optional<at::Device> device,
                      std::optional<bool> pinMemory,
                      std::optional<at::MemoryFormat> memoryFormat) {
  checkOptions(layout, device, pinMemory);
  at::detail::check_size_nonnegative(size);
  // Let torch work out (and validate) the strides of the memory format on a meta tensor.
  auto strides = at::empty(size, at::TensorOptions().device(at::kMeta).dtype(at::kByte),
                           memoryFormat.value_or(at::MemoryFormat::Contiguous))
                     .strides()
                     .vec();
  return spyreEmptyStrided(size, strides, dtype, layout, device, pinMemory);
}

at::Tensor spyreCopyFrom(const at::Tensor &self, const at::Tensor &dst, bool /*nonBlocking*/) {
  // Transfers are synchronous in the simulator, so non_blocking changes nothing.
  return withTorchErrors([&] {
    if (dst.numel() == 0)
      return dst;
    if (dst.is_privateuseone()) {
      at::Tensor src = self.is_privateuseone() ? toCpu(self) : self; // D2D goes via the host
      copyFromCpu(dst, src);
      return dst;
    }
    if (!dst.device().is_cpu())
      throw Unsupported("copy from spyre to " + dst.device().str());
    if (self.numel() == dst.numel() && self.sizes() == dst.sizes() &&
        self.scalar_type() == dst.scalar_type() && coversStorage(self) &&
        dst.is_non_overlapping_and_dense() && !dst.is_conj() && !dst.is_neg()) {
      readStorage(allocationOrThrow(self, "spyre->cpu copy"), dst); // straight into dst
      return dst;
    }
    dst.copy_(toCpu(self));
    return dst;
  });
}

at::Tensor spyreCopyFromAndResize(const at::Tensor &self, const at::Tensor &dst) {
  dst.resize_(self.sizes());
  return spyreCopyFrom(self, dst, false);
}

/// A new tensor over self's storage with the given geometry, keeping the storage's layout.
at::Tensor makeView(const at::Tensor &self, at::IntArrayRef size, at::IntArrayRef stride,
                    int64_t offset) {
  SpyreTensorLayout layout;
  if (auto *impl = spyreImpl(self))
    layout = impl->layout();
  else if (Allocation *a = allocationOf(self.storage()); a && a->geom)
    layout = a->geom->layout;
  auto impl = c10::make_intrusive<SpyreTensorImpl>(c10::TensorImpl::VIEW,
                                                   c10::Storage(self.storage()), self.key_set(),
                                                   self.dtype(), std::move(layout));
  impl->set_sizes_and_strides(size, stride, offset);
  return at::Tensor(std::move(impl));
}

at::Tensor spyreAsStrided(const at::Tensor &self, at::IntArrayRef size, at::IntArrayRef stride,
                          std::optional<int64_t> storageOffset) {
  int64_t offset = storageOffset.value_or(self.storage_offset());
  TORCH_CHECK(size.size() == stride.size(), "as_strided: mismatch in length of strides (",
              stride.size(), ") and shape (", size.size(), ")");
  TORCH_CHECK(offset >= 0, "as_strided: negative storage offset ", offset);
  for (int64_t s : stride)
    TORCH_CHECK(s >= 0, "as_strided: negative strides are not supported, got ", stride);
  at::native::checkInBoundsForStorage(size, stride, offset, self.dtype(), self.storage());
  return makeView(self, size, stride, offset);
}

at::Tensor spyreView(const at::Tensor &self, at::IntArrayRef size) {
  auto inferred = at::infer_size_dv(size, self.numel());
  auto stride = at::detail::computeStride(self.sizes(), self.strides(), inferred);
  TORCH_CHECK(stride.has_value(),
              "view size is not compatible with input tensor's size and stride (at least one "
              "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
  return makeView(self, inferred, *stride, self.storage_offset());
}

at::Tensor spyreUnsafeView(const at::Tensor &self, at::IntArrayRef size) {
  return spyreView(self, size);
}

at::Tensor spyreReshapeAlias(const at::Tensor &self, at::IntArrayRef size,
                             at::IntArrayRef stride) {
  return makeView(self, size, stride, self.storage_offset());
}

at::Tensor spyreAlias(const at::Tensor &self) {
  return makeView(self, self.sizes(), self.strides(), self.storage_offset());
}

/// resize_: the host semantics of resize_ (bytes kept in storage order, storage grows) applied
/// to the CPU image of the storage, then written back — into the same DDR block when the new
/// tiling fits, else into a fresh block swapped into the shared StorageImpl.
const at::Tensor &spyreResize(const at::Tensor &self, at::IntArrayRef size,
                              std::optional<at::MemoryFormat> memoryFormat) {
  at::detail::check_size_nonnegative(size);
  if (self.sizes() == size && (!memoryFormat || self.is_contiguous(*memoryFormat)))
    return self;
  return withTorchErrors([&]() -> const at::Tensor & {
    Allocation &a = allocationOrThrow(self, "resize_");
    const bool whole = coversStorage(self);
    const at::ScalarType dtype = self.scalar_type();
    at::Tensor image = stageStorage(a, storageElems(self, *a.geom));
    at::Tensor host = image.as_strided(self.sizes(), self.strides(), self.storage_offset());
    host.resize_(size, memoryFormat);

    // New geometry: the resized tensor itself when it owned the storage; otherwise the whole
    // storage as a flat vector so other views of it keep their data.
    at::Tensor content = host;
    if (!whole || host.storage_offset() != 0) {
      int64_t n = static_cast<int64_t>(host.storage().nbytes() / c10::elementSize(dtype));
      content = at::empty({0}, host.options()).set_(host.storage(), 0, {n}, {1});
    }
    StorageGeometry g{defaultLayout(content.sizes(), content.strides(), dtype),
                      content.sizes().vec(), content.strides().vec(), dtype};
    const size_t itemsize = c10::elementSize(dtype);
    size_t need = std::max<size_t>(
        {static_cast<size_t>(g.layout.deviceBytes()),
         at::detail::computeStorageNbytes(g.sizes, g.strides, itemsize),
         at::detail::computeStorageNbytes(host.sizes(), host.strides(), itemsize,
                                          host.storage_offset())});
    c10::StorageImpl *st = self.storage().unsafeGetStorageImpl();
    if (need <= deviceMemory().blockSize(a.addr)) {
      a.geom = g; // same DDR block (allocations are 4 KiB granular), retiled in place
      a.bytes = std::max<uint64_t>(a.bytes, need);
      st->set_nbytes(a.bytes);
      writeStorage(a, content);
    } else {
      TORCH_CHECK(st->resizable(), "Trying to resize storage that is not resizable");
      c10::DataPtr fresh = gAllocator.allocate(need);
      auto *na = static_cast<Allocation *>(fresh.get_context());
      na->geom = g;
      writeStorage(*na, content);
      st->set_data_ptr_noswap(std::move(fresh)); // frees the old block (`a` dangles now)
      st->set_nbytes(need);
    }
    self.unsafeGetTensorImpl()->set_sizes_and_strides(host.sizes(), host.strides(),
                                                      host.storage_offset());
    if (auto *impl = spyreImpl(self))
      impl->setLayout(g.layout);
    return self;
  });
}

at::Tensor &spyreSetStorage(at::Tensor &self, at::Storage source, int64_t offset,
                            at::IntArrayRef size, at::IntArrayRef stride) {
  TORCH_CHECK(source.device().type() == kSpyre, "set_: storage on ", source.device(),
              " cannot back a spyre tensor");
  at::native::checkSetStorage(self, source, offset, size, stride);
  self.unsafeGetTensorImpl()->set_sizes_and_strides(size, stride, offset);
  at::native::checkInBoundsForStorage(size, stride, offset, self.dtype(), self.storage());
  if (auto *impl = spyreImpl(self))
    if (Allocation *a = allocationOf(self.storage()); a && a->geom)
      impl->setLayout(a->geom->layout);
  return self;
}

at::Tensor &spyreSetStorageWhole(at::Tensor &self, at::Storage source) {
  int64_t n = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return spyreSetStorage(self, std::move(source), 0, {n}, {1});
}

at::Tensor &spyreSetTensor(at::Tensor &self, const at::Tensor &source) {
  if (self.is_same(source))
    return self;
  return spyreSetStorage(self, source.storage(), source.storage_offset(), source.sizes(),
                         source.strides());
}

at::Tensor spyreUnfold(const at::Tensor &self, int64_t dim, int64_t size, int64_t step) {
  dim = c10::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
  int64_t extent = self.dim() == 0 ? 1 : self.size(dim);
  int64_t stride = self.dim() == 0 ? 1 : self.stride(dim);
  TORCH_CHECK(size <= extent, "maximum size for tensor at dimension ", dim, " is ", extent,
              " but size is ", size);
  TORCH_CHECK(step > 0, "step is ", step, " but must be > 0");
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  std::vector<int64_t> strides(self.strides().begin(), self.strides().end());
  if (self.dim() > 0) {
    sizes[dim] = (extent - size) / step + 1;
    strides[dim] = step * stride;
  }
  sizes.push_back(size);
  strides.push_back(stride);
  return makeView(self, sizes, strides, self.storage_offset());
}

at::Scalar spyreLocalScalarDense(const at::Tensor &self) {
  return withTorchErrors([&] { return at::_local_scalar_dense(toCpu(self)); });
}

at::Tensor &spyreFill(at::Tensor &self, const at::Scalar &value) {
  at::assert_no_internal_overlap(self);
  withTorchErrors([&] {
    at::Tensor host = at::empty(self.sizes(), at::TensorOptions().dtype(self.scalar_type()));
    host.fill_(value);
    copyFromCpu(self, host);
  });
  return self;
}

at::Tensor &spyreZero(at::Tensor &self) { return spyreFill(self, 0); }

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(spyreEmpty));
  m.impl("empty_strided", TORCH_FN(spyreEmptyStrided));
  m.impl("_copy_from", TORCH_FN(spyreCopyFrom));
  m.impl("_copy_from_and_resize", TORCH_FN(spyreCopyFromAndResize));
  m.impl("view", TORCH_FN(spyreView));
  m.impl("_unsafe_view", TORCH_FN(spyreUnsafeView));
  m.impl("_reshape_alias", TORCH_FN(spyreReshapeAlias));
  m.impl("as_strided", TORCH_FN(spyreAsStrided));
  m.impl("alias", TORCH_FN(spyreAlias));
  m.impl("resize_", TORCH_FN(spyreResize));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(spyreSetStorage));
  m.impl("set_.source_Storage", TORCH_FN(spyreSetStorageWhole));
  m.impl("set_.source_Tensor", TORCH_FN(spyreSetTensor));
  m.impl("unfold", TORCH_FN(spyreUnfold));
  m.impl("_local_scalar_dense", TORCH_FN(spyreLocalScalarDense));
  m.impl("fill_.Scalar", TORCH_FN(spyreFill));
  m.impl("zero_", TORCH_FN(spyreZero));
}

// ---------------------------------------------------------------------------------------------
// Device selection, generator, hooks, guard
// ---------------------------------------------------------------------------------------------

namespace {

/// torch-spyre's SpyreGeneratorImpl: an mt19937 generator like the CPU one, tagged with the
/// spyre device so torch.Generator("spyre") and torch.spyre.manual_seed_all work.
class SpyreGeneratorImpl final : public at::CPUGeneratorImpl {
public:
  explicit SpyreGeneratorImpl(uint64_t seed = c10::default_rng_seed_val)
      : CPUGeneratorImpl(seed) {
    device_ = c10::Device(kSpyre, 0);
    key_set_ = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
  }

private:
  SpyreGeneratorImpl *clone_impl() const override {
    auto *g = new SpyreGeneratorImpl();
    auto *self = const_cast<SpyreGeneratorImpl *>(this);
    g->set_engine(self->engine());
    g->set_next_float_normal_sample(self->next_float_normal_sample());
    g->set_next_double_normal_sample(self->next_double_normal_sample());
    return g;
  }
};

const at::Generator &defaultGenerator() {
  static at::Generator gen = at::make_generator<SpyreGeneratorImpl>(c10::default_rng_seed_val);
  return gen;
}

void checkIndex(c10::DeviceIndex index) {
  TORCH_CHECK(index == -1 || (index >= 0 && index < kDeviceCount), "Invalid spyre device index ",
              int(index), ": the simulator has ", kDeviceCount, " device (valid index: 0)");
}

struct SpyreHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  void init() const override {}
  c10::DeviceIndex deviceCount() const override { return kDeviceCount; }
  void setCurrentDevice(c10::DeviceIndex d) const override { checkIndex(d); }
  c10::DeviceIndex getCurrentDevice() const override { return 0; }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex d) const override {
    checkIndex(d);
    return 0;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex d) const override {
    return exchangeDevice(d);
  }
  const at::Generator &getDefaultGenerator(c10::DeviceIndex d) const override {
    checkIndex(d);
    return defaultGenerator();
  }
  at::Generator getNewGenerator(c10::DeviceIndex d) const override {
    checkIndex(d);
    return at::make_generator<SpyreGeneratorImpl>();
  }
  at::Device getDeviceFromPtr(void *data) const override {
    TORCH_CHECK(deviceMemory().contains(data), "pointer is not in the simulated spyre DDR");
    return c10::Device(kSpyre, 0);
  }
  void resizePrivateUse1Bytes(const c10::Storage &storage, size_t newsize) const override {
    // UntypedStorage.resize_(): raw bytes, so the grown storage loses any tensor layout.
    c10::StorageImpl *st = storage.unsafeGetStorageImpl();
    TORCH_CHECK(st->resizable(), "Trying to resize storage that is not resizable");
    c10::DataPtr fresh = gAllocator.allocate(newsize);
    std::memcpy(fresh.get(), st->data(), std::min(newsize, st->nbytes()));
    st->set_data_ptr_noswap(std::move(fresh));
    st->set_nbytes(newsize);
  }
};

SpyreHooks gHooks;

struct SpyreGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kSpyre; }
  c10::Device exchangeDevice(c10::Device d) const override {
    checkIndex(d.index());
    return c10::Device(kSpyre, 0);
  }
  c10::Device getDevice() const override { return c10::Device(kSpyre, 0); }
  void setDevice(c10::Device d) const override { checkIndex(d.index()); }
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, c10::Device(kSpyre, 0));
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    return c10::Stream(c10::Stream::DEFAULT, c10::Device(kSpyre, 0));
  }
  c10::DeviceIndex deviceCount() const noexcept override { return kDeviceCount; }
  // Everything the simulator does is synchronous: streams and events are always complete.
  bool queryStream(const c10::Stream &) const override { return true; }
  void synchronizeStream(const c10::Stream &) const override {}
  void synchronizeDevice(const c10::DeviceIndex) const override {}
  void record(void **, const c10::Stream &, const c10::DeviceIndex,
              const c10::EventFlag) const override {}
  void block(void *, const c10::Stream &) const override {}
  bool queryEvent(void *) const override { return true; }
  void destroyEvent(void *, const c10::DeviceIndex) const noexcept override {}
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, SpyreGuardImpl);

// Hooks are registered when _C is loaded (like torch-spyre's module init); loading does not
// touch the DDR reservation, which is created on first allocation.
const bool gHooksRegistered = [] {
  at::RegisterPrivateUse1HooksInterface(&gHooks);
  return true;
}();

} // namespace

int currentDevice() { return 0; }

void setDevice(int index) {
  if (index != 0)
    throw Error("Invalid spyre device index " + std::to_string(index) +
                ": the simulator has 1 device (valid index: 0)");
}

void manualSeed(uint64_t seed) {
  at::Generator gen = defaultGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_current_seed(seed);
}

uint64_t initialSeed() {
  at::Generator gen = defaultGenerator();
  return gen.current_seed();
}

} // namespace spyre::py
