// The "spyre" device, part 3: the eager ATen kernels that only move or reinterpret data
// (allocation, copies, views, resize_, set_, fill_). Compute ops are registered from Python
// (_eager.py) and run through the compile path.
#include "device_internal.h"

#include <c10/core/DeviceGuard.h>

#include "spyre/isa/error.h"

#include <ATen/EmptyTensor.h>
#include <ATen/InferSize.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/TensorUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <algorithm>

namespace spyre::py {

using namespace detail;

namespace {

void checkOptions(std::optional<at::Layout> layout, std::optional<at::Device> device,
                  std::optional<bool> pinMemory) {
  TORCH_CHECK(!layout || *layout == at::kStrided, "spyre supports only torch.strided tensors, got ",
              *layout);
  TORCH_CHECK(!device || device->type() == kSpyre, "spyre empty: bad device ", *device);
  if (device && device->has_index())
    checkDeviceIndex(device->index());
  TORCH_CHECK(!pinMemory || !*pinMemory, "spyre tensors cannot be pinned (pin_memory=True)");
}

at::Tensor spyreEmptyStrided(at::IntArrayRef size, at::IntArrayRef stride,
                             std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                             std::optional<at::Device> device, std::optional<bool> pinMemory) {
  checkOptions(layout, device, pinMemory);
  c10::OptionalDeviceGuard onDevice; // allocate on spyre:N when asked (the allocator uses the current device)
  if (device && device->has_index())
    onDevice.reset_device(*device);
  return withTorchErrors([&] {
    const at::ScalarType t = dtype.value_or(c10::get_default_dtype_as_scalartype());
    // A tensor without elements of a dtype the card does not hold: the byte views torch's
    // storage copies set on a storage (UntypedStorage.copy_, .cpu(), torch.save).
    if (!hostTypeOf(t) && c10::multiply_integers(size) == 0)
      return emptyRaw(size, stride, t);
    return emptyStrided(size, stride, t);
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
      if (self.is_privateuseone() && cloneWholeStorage(self, dst))
        return dst;
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
    if (need <= memoryOf(a).blockSize(a.addr)) {
      a.geom = g; // same DDR block (allocations are 4 KiB granular), retiled in place
      a.bytes = std::max<uint64_t>(a.bytes, need);
      st->set_nbytes(a.bytes);
      writeStorage(a, content);
    } else {
      TORCH_CHECK(st->resizable(), "Trying to resize storage that is not resizable");
      c10::DataPtr fresh = allocateOn(a.device, need);
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
  withTorchErrors([&] { adoptRawStorage(self); });
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

} // namespace spyre::py
