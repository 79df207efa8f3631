// The "spyre" PyTorch device (PrivateUse1) as seen from C++: the simulated DDR, the layout of a
// spyre tensor, and allocation with an explicit layout. The compile/run path uses this header to
// find its kernel arguments in DDR and to allocate outputs in the layout the compiler chose.
//
// Memory model (device_allocator.cpp): every spyre storage is one DeviceMemory block; its
// DataPtr is the host pointer base()+address (unique, so torch's aliasing checks work), and the
// block carries the host geometry (sizes, strides, dtype) that its bytes are tiled for plus the
// SpyreTensorLayout of that tiling. Views share the block and keep the storage's layout.
//
// Errors: these functions throw spyre::Error / spyre::Unsupported for bad input (allocation
// failures surface as c10::OutOfMemoryError from the allocator). Code reachable from Python should
// run them under withTorchErrors() so users get RuntimeError / NotImplementedError.
#pragma once
#include <ATen/ATen.h>
#include "spyre/isa/error.h"
#include "spyre/isa/layout.h"
#include "spyre/sim/device_memory.h"

#include <optional>
#include <vector>

namespace spyre::py {

/// The simulated DDR of card `device` (0..deviceCount()-1), reserved on first use.
sim::DeviceMemory &deviceMemory(int device);
/// The card whose DDR holds t's storage (t.device().index()).
int deviceIndex(const at::Tensor &t);
const SpyreTensorLayout &tensorLayout(const at::Tensor &t);  // throws spyre::Error if t is not a spyre tensor
uint64_t deviceAddress(const at::Tensor &t);   // DDR address of the tensor's storage (data of storage start)
at::Tensor emptyWithLayout(at::IntArrayRef size, at::IntArrayRef stride, at::ScalarType dtype, const SpyreTensorLayout &layout);
DataFormat deviceFormatOf(at::ScalarType t);   // throws Unsupported for unsupported dtypes

// ---- additions -------------------------------------------------------------------------------

/// The host geometry a spyre storage's bytes are laid out for: the DDR block holds the tensor
/// (sizes, strides, dtype) tiled by `layout` (torch-spyre's dma_sizes/dma_strides).
struct StorageGeometry {
  SpyreTensorLayout layout;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  at::ScalarType dtype = at::kHalf;
};

/// Geometry of t's storage; throws spyre::Error if t is not a spyre tensor or its storage was
/// allocated raw (e.g. through torch.UntypedStorage) and has no layout.
const StorageGeometry &storageGeometry(const at::Tensor &t);
/// True when t is exactly the tensor its storage is laid out for (same sizes, strides, dtype,
/// storage offset 0): its data can be read in DDR directly through tensorLayout(t).
bool coversStorage(const at::Tensor &t);
/// Allocation with the generic stick layout for size/stride (dim order by decreasing stride).
at::Tensor emptyStrided(at::IntArrayRef size, at::IntArrayRef stride, at::ScalarType dtype);
/// A tensor over a storage allocated raw (no geometry: it holds host bytes verbatim), of any
/// dtype; what torch's storage copies view a storage through.
at::Tensor emptyRaw(at::IntArrayRef size, at::IntArrayRef stride, at::ScalarType dtype);
/// Layout empty_strided gives a tensor of that geometry.
SpyreTensorLayout defaultLayout(at::IntArrayRef size, at::IntArrayRef stride, at::ScalarType dtype);

/// Host <-> device transfers used by _copy_from (both accept any strides/views).
at::Tensor toCpu(const at::Tensor &spyreTensor);
void copyFromCpu(const at::Tensor &spyreDst, const at::Tensor &cpuSrc);

// Device selection. A process simulates deviceCount() cards, each with its own DDR: the
// spyre:0..N-1 devices. N is SPYRE_DEVICE_COUNT, else torchrun's LOCAL_WORLD_SIZE (so the
// spyre:LOCAL_RANK convention works), else 1; read once. The cards of two processes are
// different simulations (torch.distributed connects them).
constexpr int kMaxDevices = 16;
int deviceCount();
/// "the simulator has N devices (valid index: 0..N-1; SPYRE_DEVICE_COUNT sets the number)".
std::string deviceRange();
/// This thread's current device (as CUDA's: per thread, 0 initially).
int currentDevice();
/// Makes `index` current; throws spyre::Error naming the valid range for a bad index.
void setDevice(int index);
/// Whether a simulated card has been brought up (its DDR reserved): false until the first
/// allocation or startRuntime(). torch-spyre's lazy initialisation.
bool runtimeStarted();
void startRuntime();

// Streams (device_streams.cpp): ids name streams; 0 is the default stream. All work is complete
// when the call that issued it returns, so streams only order and name work.
c10::StreamId currentStreamId();               // this thread's current stream
c10::StreamId exchangeStreamId(c10::StreamId id); // makes id current, returns the previous one
c10::StreamId newStreamId(int priority);
c10::StreamId poolStreamId(int priority);      // round-robin over a small pool per priority class
/// torch-spyre's host-compute streams (its S_prep streams, for host-side preparation work):
/// a fixed set of kHostComputeStreams ordinary streams, handed out round-robin.
constexpr size_t kHostComputeStreams = 4;
c10::StreamId hostComputeStreamId();
bool isHostComputeStreamId(c10::StreamId id);
int streamPriority(c10::StreamId id);          // throws c10::Error for an unknown id

/// Seeds the spyre default generator (torch.spyre.manual_seed_all).
void manualSeed(uint64_t seed);
uint64_t initialSeed();

/// Runs f, mapping spyre errors onto torch's exception types so that Python sees
/// NotImplementedError (Unsupported), torch.OutOfMemoryError or RuntimeError with our message.
template <typename F> auto withTorchErrors(F &&f) -> decltype(f()) {
  try {
    return f();
  } catch (const Unsupported &e) {
    TORCH_CHECK_NOT_IMPLEMENTED(false, e.what());
  } catch (const OutOfMemory &e) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, e.what());
  } catch (const Error &e) {
    TORCH_CHECK(false, e.what());
  }
}

} // namespace spyre::py
