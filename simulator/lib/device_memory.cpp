#include "spyre/sim/device_memory.h"
#include "spyre/isa/error.h"
#include <sys/mman.h>
#include <cstring>
#include <string>

namespace spyre::sim {

DeviceMemory::DeviceMemory(uint64_t capacity) : capacity_(capacity) {
  void *p = mmap(nullptr, capacity, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw Error("cannot reserve " + std::to_string(capacity >> 20) +
                " MiB of host address space for the simulated DDR: " + std::strerror(errno));
  base_ = static_cast<uint8_t *>(p);
  free_[0] = capacity;
  stats_.capacity = capacity;
}

DeviceMemory::~DeviceMemory() {
  if (base_)
    munmap(base_, capacity_);
}

uint64_t DeviceMemory::allocate(uint64_t bytes) {
  uint64_t need = (std::max<uint64_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  std::lock_guard<std::mutex> g(mu_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < need)
      continue;
    uint64_t addr = it->first, size = it->second;
    free_.erase(it);
    if (size > need)
      free_[addr + need] = size - need;
    live_[addr] = need;
    stats_.allocated += need;
    stats_.peak = std::max(stats_.peak, stats_.allocated);
    ++stats_.numAllocs;
    ++stats_.live;
    return addr;
  }
  throw OutOfMemory("Spyre device out of memory: tried to allocate " + std::to_string(bytes) +
                    " bytes with " + std::to_string(stats_.allocated) + " of " +
                    std::to_string(capacity_) + " bytes in use");
}

void DeviceMemory::free(uint64_t addr) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = live_.find(addr);
  if (it == live_.end())
    throw Error("device free of unknown address " + std::to_string(addr));
  uint64_t size = it->second;
  live_.erase(it);
  stats_.allocated -= size;
  ++stats_.numFrees;
  --stats_.live;
  // Free blocks are zero (allocate() promises zero-filled memory). A small block is zeroed in
  // place and its pages stay resident: the next run's intermediates and outputs reuse them
  // without a page fault and the kernel's clear_page per 4 KiB (a warm ViT forward spent about
  // a quarter of its time there). A large one gives its pages back to the host.
  if (size <= kZeroInPlaceBytes)
    std::memset(base_ + addr, 0, size);
  else
    madvise(base_ + addr, size, MADV_DONTNEED);
  auto next = free_.lower_bound(addr);
  if (next != free_.end() && addr + size == next->first) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == addr) {
      prev->second += size;
      return;
    }
  }
  free_[addr] = size;
}

uint64_t DeviceMemory::blockSize(uint64_t addr) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = live_.find(addr);
  return it == live_.end() ? 0 : it->second;
}

uint8_t *DeviceMemory::at(uint64_t addr, uint64_t bytes) const {
  if (addr > capacity_ || bytes > capacity_ - addr)
    throw Error("device address range [" + std::to_string(addr) + ", " +
                std::to_string(addr + bytes) + ") is outside the simulated DDR (" +
                std::to_string(capacity_) + " bytes)");
  return base_ + addr;
}

uint64_t DeviceMemory::addressOf(const void *p) const {
  if (!contains(p))
    throw Error("pointer is not inside the simulated DDR");
  return static_cast<const uint8_t *>(p) - base_;
}

bool DeviceMemory::contains(const void *p) const {
  auto *b = static_cast<const uint8_t *>(p);
  return b >= base_ && b < base_ + capacity_;
}

MemoryStats DeviceMemory::stats() const {
  std::lock_guard<std::mutex> g(mu_);
  return stats_;
}

void DeviceMemory::resetPeak() {
  std::lock_guard<std::mutex> g(mu_);
  stats_.peak = stats_.allocated;
}

void DeviceMemory::resetAccumulated() {
  std::lock_guard<std::mutex> g(mu_);
  stats_.numAllocs = 0;
  stats_.numFrees = 0;
}

} // namespace spyre::sim
