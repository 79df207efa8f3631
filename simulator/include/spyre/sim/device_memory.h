// Simulated device DDR ("hbm" in SuperDSC): one lazily backed host reservation, addressed by
// device byte offsets, with a first-fit allocator and torch-style memory statistics.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>

namespace spyre::sim {

struct MemoryStats {
  uint64_t allocated = 0;     ///< bytes in live allocations
  uint64_t peak = 0;          ///< high-water mark of `allocated` since the last reset
  uint64_t numAllocs = 0;     ///< allocations made since the last accumulated-stats reset
  uint64_t numFrees = 0;      ///< frees since the last accumulated-stats reset
  uint64_t live = 0;          ///< allocations alive now
  uint64_t capacity = 0;
};

class DeviceMemory {
public:
  static constexpr uint64_t kAlign = 4096;
  /// free() zeroes a block of at most this many bytes in place (its host pages stay resident
  /// for the next allocation); a larger block's pages go back to the host (MADV_DONTNEED) and
  /// fault in zeroed on the next touch.
  static constexpr uint64_t kZeroInPlaceBytes = 16ull << 20;
  /// Reserves `capacity` bytes of host address space (MAP_NORESERVE; pages materialise on
  /// first touch).
  explicit DeviceMemory(uint64_t capacity);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;

  /// Device address of a fresh, zero-filled block; throws spyre::OutOfMemory naming the size.
  uint64_t allocate(uint64_t bytes);
  /// Frees a block returned by allocate() (see kZeroInPlaceBytes); unknown addresses throw
  /// spyre::Error.
  void free(uint64_t addr);
  /// Size of the live block starting at addr, or 0.
  uint64_t blockSize(uint64_t addr) const;

  uint8_t *base() const { return base_; }
  uint64_t capacity() const { return capacity_; }
  /// Host pointer for [addr, addr+bytes); throws spyre::Error if outside the DDR.
  uint8_t *at(uint64_t addr, uint64_t bytes) const;
  /// Device address of a host pointer inside the DDR reservation.
  uint64_t addressOf(const void *p) const;
  bool contains(const void *p) const;

  MemoryStats stats() const;
  void resetPeak();
  /// Zeroes the allocation and free counters (torch's reset_accumulated_memory_stats); the
  /// live figures stay.
  void resetAccumulated();

private:
  uint8_t *base_ = nullptr;
  uint64_t capacity_ = 0;
  mutable std::mutex mu_;
  std::map<uint64_t, uint64_t> free_; ///< addr -> size, coalesced
  std::map<uint64_t, uint64_t> live_; ///< addr -> size
  MemoryStats stats_;
};

} // namespace spyre::sim
