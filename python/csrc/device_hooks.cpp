// The "spyre" device, part 4: device selection (deviceCount() simulated cards), the default generators,
// the pinned host allocator and the PrivateUse1 hooks, registered when _C is loaded.
#include "device_internal.h"
#include "device_options.h"

#include "spyre/isa/error.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/impl/alloc_cpu.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace spyre::py {

using namespace detail;

namespace {

/// torch-spyre's SpyreGeneratorImpl: an mt19937 generator like the CPU one, tagged with the
/// spyre device so torch.Generator("spyre") and torch.spyre.manual_seed_all work.
class SpyreGeneratorImpl final : public at::CPUGeneratorImpl {
public:
  explicit SpyreGeneratorImpl(uint64_t seed = c10::default_rng_seed_val, c10::DeviceIndex device = 0)
      : CPUGeneratorImpl(seed) {
    device_ = c10::Device(kSpyre, device);
    key_set_ = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
  }

private:
  SpyreGeneratorImpl *clone_impl() const override {
    auto *g = new SpyreGeneratorImpl(c10::default_rng_seed_val, device_.index());
    auto *self = const_cast<SpyreGeneratorImpl *>(this);
    g->set_engine(self->engine());
    g->set_next_float_normal_sample(self->next_float_normal_sample());
    g->set_next_double_normal_sample(self->next_double_normal_sample());
    return g;
  }
};

/// One default generator per card, as CUDA has one per device.
const at::Generator &defaultGenerator(c10::DeviceIndex device) {
  static std::array<at::Generator, kMaxDevices> *gens = [] {
    auto *g = new std::array<at::Generator, kMaxDevices>(); // outlives static tensors
    for (int i = 0; i < kMaxDevices; ++i)
      (*g)[i] = at::make_generator<SpyreGeneratorImpl>(c10::default_rng_seed_val, static_cast<c10::DeviceIndex>(i));
    return g;
  }();
  return (*gens)[device < 0 ? currentDevice() : device];
}

thread_local int tDevice = 0; // this thread's current device

/// Host memory for Tensor.pin_memory() and DataLoader(pin_memory=True). The simulated card
/// reads host memory directly, so "pinned" memory is ordinary aligned CPU memory; the allocator
/// remembers its blocks so that is_pinned() is true exactly for tensors it allocated (views
/// included: any address inside a live block).
class PinnedHostAllocator final : public c10::Allocator {
public:
  static PinnedHostAllocator &instance() {
    static PinnedHostAllocator *alloc = new PinnedHostAllocator(); // outlives static tensors
    return *alloc;
  }

  c10::DataPtr allocate(size_t n) override {
    size_t bytes = std::max<size_t>(n, 1); // an empty pinned tensor is still pinned
    void *p = c10::alloc_cpu(bytes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks_[static_cast<const char *>(p)] = bytes;
    }
    return {p, p, &release, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &release; }

  void copy_data(void *dest, const void *src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  bool contains(const void *ptr) const {
    const char *p = static_cast<const char *>(ptr);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.upper_bound(p);
    if (it == blocks_.begin())
      return false;
    --it;
    return p >= it->first && p < it->first + it->second;
  }

private:
  static void release(void *p) {
    PinnedHostAllocator &self = instance();
    {
      std::lock_guard<std::mutex> lock(self.mutex_);
      self.blocks_.erase(static_cast<const char *>(p));
    }
    c10::free_cpu(p);
  }

  mutable std::mutex mutex_;
  std::map<const char *, size_t> blocks_; // block start -> size
};

struct SpyreHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  void init() const override {}
  c10::DeviceIndex deviceCount() const override { return static_cast<c10::DeviceIndex>(spyre::py::deviceCount()); }
  void setCurrentDevice(c10::DeviceIndex d) const override { exchangeDevice(d); }
  c10::DeviceIndex getCurrentDevice() const override { return static_cast<c10::DeviceIndex>(currentDevice()); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex d) const override {
    checkDeviceIndex(d);
    const int old = tDevice;
    if (d >= 0)
      tDevice = d;
    return static_cast<c10::DeviceIndex>(old);
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex d) const override {
    return exchangeDevice(d);
  }
  const at::Generator &getDefaultGenerator(c10::DeviceIndex d) const override {
    checkDeviceIndex(d);
    return defaultGenerator(d);
  }
  at::Generator getNewGenerator(c10::DeviceIndex d) const override {
    checkDeviceIndex(d);
    return at::make_generator<SpyreGeneratorImpl>(c10::default_rng_seed_val, d < 0 ? currentDevice() : d);
  }
  bool isPinnedPtr(const void *data) const override {
    return data != nullptr && PinnedHostAllocator::instance().contains(data);
  }
  c10::Allocator *getPinnedMemoryAllocator() const override {
    return &PinnedHostAllocator::instance();
  }
  at::Device getDeviceFromPtr(void *data) const override {
    for (int d = 0; d < spyre::py::deviceCount(); ++d)
      if (runtimeStarted() && deviceMemory(d).contains(data))
        return c10::Device(kSpyre, static_cast<c10::DeviceIndex>(d));
    TORCH_CHECK(false, "pointer is not in the simulated spyre DDR");
  }
  void resizePrivateUse1Bytes(const c10::Storage &storage, size_t newsize) const override {
    // UntypedStorage.resize_(): raw bytes, so the grown storage loses any tensor layout.
    c10::StorageImpl *st = storage.unsafeGetStorageImpl();
    TORCH_CHECK(st->resizable(), "Trying to resize storage that is not resizable");
    c10::DataPtr fresh = spyreAllocator().allocate(newsize);
    std::memcpy(fresh.get(), st->data(), std::min(newsize, st->nbytes()));
    st->set_data_ptr_noswap(std::move(fresh));
    st->set_nbytes(newsize);
  }
};

SpyreHooks gHooks;

// Hooks are registered when _C is loaded (like torch-spyre's module init); loading does not
// touch the DDR reservation, which is created on first allocation.
const bool gHooksRegistered = [] {
  at::RegisterPrivateUse1HooksInterface(&gHooks);
  return true;
}();

} // namespace

std::string deviceRange() {
  const int n = deviceCount();
  return "the simulator has " + std::to_string(n) + (n == 1 ? " device (valid index: 0" : " devices (valid index: 0.." + std::to_string(n - 1)) +
         "; SPYRE_DEVICE_COUNT sets the number)";
}

void detail::checkDeviceIndex(c10::DeviceIndex index) {
  TORCH_CHECK(index == -1 || (index >= 0 && index < deviceCount()), "Invalid spyre device index ", int(index), ": ",
              deviceRange());
}

int deviceCount() {
  static const int n = configuredDeviceCount(kMaxDevices);
  return n;
}

int currentDevice() { return tDevice; }

void setDevice(int index) {
  if (index < 0 || index >= deviceCount())
    throw Error("Invalid spyre device index " + std::to_string(index) + ": " + deviceRange());
  tDevice = index;
}

void manualSeed(uint64_t seed) {
  for (int d = 0; d < deviceCount(); ++d) {
    at::Generator gen = defaultGenerator(static_cast<c10::DeviceIndex>(d));
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_current_seed(seed);
  }
}

uint64_t initialSeed() {
  at::Generator gen = defaultGenerator(-1);
  return gen.current_seed();
}

} // namespace spyre::py
