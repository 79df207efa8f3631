// What the device's translation units share (private to python/csrc): the DataPtr context of a
// spyre storage (Allocation), the allocator, SpyreTensorImpl, dtype spelling, and the storage
// transfers the ATen kernels build on. The files, by concept:
//   device_allocator.cpp  simulated DDR, the allocator, SpyreTensorImpl, tensor factories
//   device_transfers.cpp  host <-> device copies (toCpu, copyFromCpu, staging through the CPU)
//   device_kernels.cpp    the eager ATen kernels that move or reinterpret data
//   device_hooks.cpp      device selection, generator, PrivateUse1 hooks
//   device_streams.cpp    the device guard, streams and events
//   device_options.cpp    the device's knobs (TORCH_SPYRE_DEBUG, TORCH_SPYRE_DOWNCAST_WARN)
//
// Views: a view shares its base's storage, and the bytes of that storage are tiled for one host
// geometry (StorageGeometry: sizes, strides, dtype + layout), recorded on the DDR block itself.
// A view therefore reports the layout of its storage (tensorLayout), and every transfer of a view
// that is not exactly that geometry stages the whole storage through the CPU and applies the view
// there (as torch-spyre does with dma_sizes/dma_strides).
#pragma once
#include "spyre_device.h"

#include <c10/core/Allocator.h>

#include <optional>
#include <string>

namespace spyre::py::detail {

constexpr c10::DeviceType kSpyre = c10::DeviceType::PrivateUse1;

/// DataPtr context of one storage: its DDR block and, once a tensor factory has set it, the host
/// geometry its bytes are tiled for.
struct Allocation {
  uint64_t addr = 0;
  uint64_t bytes = 0; ///< requested size (the storage's nbytes when allocated)
  std::optional<StorageGeometry> geom;
  int device = 0; ///< the card whose DDR holds the block
};

/// The DDR that holds an allocation.
inline sim::DeviceMemory &memoryOf(const Allocation &a) { return deviceMemory(a.device); }
/// An allocation on `device` (the allocator allocates on the current device).
c10::DataPtr allocateOn(int device, size_t bytes);


/// The spyre allocator (simulated DDR blocks with an Allocation context).
c10::Allocator &spyreAllocator();
/// The Allocation of a storage made by spyreAllocator(), else nullptr.
Allocation *allocationOf(const c10::Storage &s);

/// Python spelling of a dtype for messages (torch_python's getDtypeNames is not exported).
std::string dtypeName(at::ScalarType t);
std::optional<HostType> hostTypeOf(at::ScalarType t);
std::string vecStr(at::IntArrayRef v);

/// Throws c10::Error naming the valid range unless index is -1 (current) or a device.
void checkDeviceIndex(c10::DeviceIndex index);

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

SpyreTensorImpl *spyreImpl(const at::Tensor &t);
/// Throws spyre::Error unless t is a defined spyre tensor.
void checkSpyre(const at::Tensor &t, const char *what);
/// t's Allocation with a device layout of t's dtype; throws spyre::Error / Unsupported.
Allocation &allocationOrThrow(const at::Tensor &t, const char *what);

// ---- transfers of a whole storage (device_transfers.cpp) --------------------------------------

/// H2D of a CPU tensor with exactly the storage geometry's sizes and dtype (any strides).
void writeStorage(const Allocation &a, const at::Tensor &src);
/// D2H into a CPU tensor with the storage geometry's sizes and dtype (any non-overlapping
/// strides).
void readStorage(const Allocation &a, const at::Tensor &dst);
/// Elements a CPU image of t's storage needs so that every in-bounds view of the spyre storage
/// is in bounds of the image too.
int64_t storageElems(const at::Tensor &t, const StorageGeometry &g);
/// CPU image of the whole storage: a zeroed buffer with the storage geometry applied at offset
/// 0 and filled from the device. Returns the geometry view; its storage is the image.
at::Tensor stageStorage(const Allocation &a, int64_t elems);

/// Gives t's storage the geometry g, keeping its host bytes (the image of its old geometry, or
/// the verbatim bytes of a raw storage): the bytes g covers are written in g's layout (into a
/// larger DDR block if g needs one); t reports g's layout. Throws if g does not fit the bytes.
void retileStorage(const at::Tensor &t, const StorageGeometry &g);
/// A storage allocated raw (torch.UntypedStorage, torch.load) gets a geometry when a tensor of a
/// device dtype is set on it: the flat vector of its bytes in t's dtype, so that every view of
/// the storage reads the bytes it was given. No-op for a storage with a geometry.
void adoptRawStorage(const at::Tensor &t);
/// UntypedStorage.clone() (deepcopy): when dst views the whole of a raw storage and src the
/// whole of a storage of the same size with a geometry, copies the DDR bytes and the geometry
/// (the clone keeps the layout); false (nothing done) otherwise.
bool cloneWholeStorage(const at::Tensor &src, const at::Tensor &dst);

} // namespace spyre::py::detail
