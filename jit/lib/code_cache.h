// The JIT code cache, above ORC: relocatable object files keyed by everything the generated
// code depends on. Two levels: a process-wide in-memory map and an on-disk directory shared by
// processes (atomic writes, checksummed entries). See docs/performance.md, "Code cache".
#pragma once
#include "spyre/isa/env.h"
#include "spyre/isa/program.h"
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace spyre::jit {

/// 128-bit content key (xxh3-128 of the key material).
struct CacheKey {
  uint64_t hi = 0, lo = 0;
  std::string hex() const;
  bool operator==(const CacheKey &o) const { return hi == o.hi && lo == o.lo; }
};

CacheKey hashKey(std::string_view material);

/// Appends a binary image of everything in `k` that shapes the generated code (every field of
/// every instruction except the source line; the core count and programs; the number of
/// arguments) and of `name`, the kernel name used for its symbols, to `out`, for the key
/// material. It replaces printing the listing, which cost ~0.4 ms per prepare (also on a hit)
/// for a 32-program kernel.
void appendKernelKey(const isa::Kernel &k, const std::string &name, std::string &out);

/// An object file image (ELF) as produced by codegen.
using ObjectBytes = std::shared_ptr<const std::string>;

struct CacheCounters {
  std::atomic<uint64_t> memoryHits{0}, diskHits{0}, misses{0}, diskWrites{0}, corrupt{0};
};

/// On-disk entry: fixed header (magic, format version, key, payload size, xxh3-64 of the
/// payload) followed by the object file. Written to a unique temporary file in the same
/// directory and renamed over the final name, so readers see either nothing or a whole entry;
/// concurrent writers of one key both write complete, identical entries and the last rename
/// wins. A short, corrupted or foreign entry is reported once per process on stderr and treated
/// as a miss (the caller recompiles and overwrites it).
class DiskCache {
public:
  /// Entries larger than this (or not regular files: a FIFO never blocks the load) are corrupt.
  static constexpr uint64_t kMaxCacheEntryBytes = uint64_t{256} << 20;
  /// dir must be non-empty; created on first store. Failures to create or write are reported
  /// once and make the disk cache a no-op. maxBytes bounds the entries' total size (LRU).
  /// `prefix` starts every entry's file name (generic nests: "gn-"; kernels: none). Entries of
  /// every prefix share the directory's bound and LRU order.
  explicit DiskCache(std::string dir, uint64_t maxBytes = kDefaultMaxBytes, std::string prefix = "")
      : dir_(std::move(dir)), maxBytes_(maxBytes), prefix_(std::move(prefix)) {}
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{1024} << 20; ///< SPYRE_CACHE_MAX_MB default
  const std::string &dir() const { return dir_; }
  uint64_t maxBytes() const { return maxBytes_; }
  std::string pathFor(const CacheKey &k) const;
  /// nullptr on a miss. `corrupt` is set when an entry existed but failed validation. A hit
  /// marks the entry as just used (its modification time: the LRU order, shared by processes).
  ObjectBytes load(const CacheKey &k, bool &corrupt) const;
  /// True when the entry was written. Then trims the directory to maxBytes.
  bool store(const CacheKey &k, std::string_view obj) const;
  /// Least recently used first (oldest modification time), deletes entries (`*.sjo`) until
  /// their total size is at most maxBytes; never `keep`. Returns the number deleted. Entries
  /// another process deletes meanwhile are skipped.
  size_t trim(const std::string &keep = "") const;

private:
  std::string dir_;
  uint64_t maxBytes_;
  std::string prefix_;
};

/// Process-wide in-memory level (shared by every JitEngine; bounded by total bytes).
ObjectBytes memoryCacheLookup(const CacheKey &k);
void memoryCacheStore(const CacheKey &k, ObjectBytes obj);
void memoryCacheClear();

/// An engine's view of both levels for one kind of object (kernels, or generic nests): the
/// process-wide memory level when `memory`, a disk level when `disk` is set, counting into
/// `counters`. With `bypass` (dumping), lookups miss but compiled objects are still stored.
struct CacheLevels {
  bool memory = true;
  const DiskCache *disk = nullptr;
  CacheCounters *counters = nullptr;
  bool bypass = false;

  /// The object under `k` from memory, else from disk (then copied to memory); null on a miss.
  ObjectBytes lookup(const CacheKey &k) const;
  /// After a miss, under `mu` (one compile at a time): the object another thread stored
  /// meanwhile, else `compile()`'s, stored in both levels. `compiled` tells which.
  ObjectBytes fill(const CacheKey &k, std::mutex &mu, const std::function<ObjectBytes()> &compile,
                   bool &compiled) const;
};

/// SPYRE_CACHE_DIR, else $XDG_CACHE_HOME/spyre-jit, else ~/.cache/spyre-jit; "off" when the
/// variable is "off" or no home directory is known (JitOptions::fromEnv).
std::string cacheDirFromEnv(const spyre::Env &env);

/// Writes `msg` to stderr the first time it is called in the process with this `what`.
void warnOnce(const char *what, const std::string &msg);

} // namespace spyre::jit
