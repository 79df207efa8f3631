// The "spyre" device, part 5: the device guard, streams and events.
//
// The simulator runs every transfer and kernel to completion before the call that issued it
// returns, so work on every stream is complete and in issue order. A stream is therefore a
// name torch's stream API can create, make current, query and synchronize (always complete);
// an event is the host time at which it was recorded, so elapsed_time measures the host time of
// the work issued between two records. The current stream is per thread, as in CUDA.
#include "device_internal.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>

namespace spyre::py {

using namespace detail;

namespace {

std::mutex gStreamsMu;
std::map<c10::StreamId, int> gPriorities = {{0, 0}}; // stream id -> priority; 0 is the default
c10::StreamId gNextId = 1;
thread_local c10::StreamId tCurrent = 0;

constexpr size_t kPoolSize = 4; // streams per priority class in the global pool
std::array<c10::StreamId, kPoolSize> gPool[2] = {};
size_t gPoolNext[2] = {0, 0};
std::array<c10::StreamId, kHostComputeStreams> gHostCompute = {}; // made together on first use
size_t gHostComputeNext = 0;

c10::StreamId newStreamLocked(int priority) {
  const c10::StreamId id = gNextId++;
  gPriorities[id] = priority;
  return id;
}

/// Stream ids are shared by the cards (work is complete when issued on any of them); a stream
/// object names the card it was made for.
c10::Stream makeStream(c10::StreamId id, c10::DeviceIndex device) {
  return c10::Stream(c10::Stream::UNSAFE,
                     c10::Device(kSpyre, device < 0 ? static_cast<c10::DeviceIndex>(currentDevice()) : device), id);
}

struct SpyreEvent {
  std::chrono::steady_clock::time_point recorded;
};

struct SpyreGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kSpyre; }
  c10::Device exchangeDevice(c10::Device d) const override {
    const c10::Device old = getDevice();
    setDevice(d);
    return old;
  }
  c10::Device getDevice() const override { return c10::Device(kSpyre, static_cast<c10::DeviceIndex>(currentDevice())); }
  void setDevice(c10::Device d) const override {
    checkDeviceIndex(d.index());
    if (d.index() >= 0)
      spyre::py::setDevice(d.index());
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0 && d.index() < spyre::py::deviceCount())
      spyre::py::setDevice(d.index());
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    try {
      return static_cast<c10::DeviceIndex>(spyre::py::deviceCount());
    } catch (...) {
      return 0; // an invalid SPYRE_DEVICE_COUNT: reported by every call that needs a device
    }
  }

  c10::Stream getStream(c10::Device d) const override {
    checkDeviceIndex(d.index());
    return makeStream(currentStreamId(), d.index());
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    checkDeviceIndex(d.index());
    return makeStream(0, d.index());
  }
  c10::Stream getNewStream(c10::Device d, int priority) const override {
    checkDeviceIndex(d.index());
    return makeStream(newStreamId(priority), d.index());
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool isHighPriority) const override {
    checkDeviceIndex(d.index());
    return makeStream(poolStreamId(isHighPriority ? -1 : 0), d.index());
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    checkDeviceIndex(s.device_index());
    return makeStream(exchangeStreamId(s.id()), s.device_index());
  }
  // Work is complete when the call that issued it returns.
  bool queryStream(const c10::Stream &s) const override {
    streamPriority(s.id()); // validates
    return true;
  }
  void synchronizeStream(const c10::Stream &s) const override { streamPriority(s.id()); }
  void synchronizeDevice(const c10::DeviceIndex d) const override { checkDeviceIndex(d); }

  void record(void **event, const c10::Stream &s, const c10::DeviceIndex d,
              const c10::EventFlag) const override {
    checkDeviceIndex(d);
    streamPriority(s.id());
    if (*event == nullptr)
      *event = new SpyreEvent();
    static_cast<SpyreEvent *>(*event)->recorded = std::chrono::steady_clock::now();
  }
  // A stream waiting for an event: the event's work is already complete.
  void block(void *, const c10::Stream &s) const override { streamPriority(s.id()); }
  bool queryEvent(void *) const override { return true; }
  void synchronizeEvent(void *) const override {}
  void destroyEvent(void *event, const c10::DeviceIndex) const noexcept override {
    delete static_cast<SpyreEvent *>(event);
  }
  double elapsedTime(void *start, void *end, const c10::DeviceIndex d) const override {
    checkDeviceIndex(d);
    TORCH_CHECK(start && end, "Both events must be recorded before calculating elapsed time.");
    auto dt = static_cast<SpyreEvent *>(end)->recorded - static_cast<SpyreEvent *>(start)->recorded;
    return std::chrono::duration<double, std::milli>(dt).count();
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, SpyreGuardImpl);

} // namespace

c10::StreamId currentStreamId() { return tCurrent; }

c10::StreamId exchangeStreamId(c10::StreamId id) {
  streamPriority(id); // validates
  const c10::StreamId old = tCurrent;
  tCurrent = id;
  return old;
}

c10::StreamId newStreamId(int priority) {
  std::lock_guard<std::mutex> lock(gStreamsMu);
  return newStreamLocked(priority);
}

c10::StreamId poolStreamId(int priority) {
  std::lock_guard<std::mutex> lock(gStreamsMu);
  const int cls = priority < 0 ? 1 : 0;
  c10::StreamId &slot = gPool[cls][gPoolNext[cls]];
  if (slot == 0)
    slot = newStreamLocked(cls ? -1 : 0);
  gPoolNext[cls] = (gPoolNext[cls] + 1) % kPoolSize;
  return slot;
}

c10::StreamId hostComputeStreamId() {
  std::lock_guard<std::mutex> lock(gStreamsMu);
  if (gHostCompute[0] == 0)
    for (c10::StreamId &id : gHostCompute)
      id = newStreamLocked(0);
  const c10::StreamId id = gHostCompute[gHostComputeNext];
  gHostComputeNext = (gHostComputeNext + 1) % kHostComputeStreams;
  return id;
}

bool isHostComputeStreamId(c10::StreamId id) {
  std::lock_guard<std::mutex> lock(gStreamsMu);
  return id != 0 && std::find(gHostCompute.begin(), gHostCompute.end(), id) != gHostCompute.end();
}

int streamPriority(c10::StreamId id) {
  std::lock_guard<std::mutex> lock(gStreamsMu);
  auto it = gPriorities.find(id);
  TORCH_CHECK(it != gPriorities.end(), "unknown spyre stream id ", id,
              " (streams come from torch.Stream / torch.spyre.Stream)");
  return it->second;
}

} // namespace spyre::py
