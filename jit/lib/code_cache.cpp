#include "code_cache.h"
#include "spyre/isa/file_io.h"
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <iostream>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/xxhash.h>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <thread>
#include <type_traits>
#include <unistd.h>
#include <unordered_map>
#include <vector>

namespace spyre::jit {

namespace {

constexpr char kMagic[8] = {'S', 'P', 'Y', 'R', 'E', 'J', 'O', 'B'};
constexpr uint32_t kFormatVersion = 1;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t reserved;
  uint64_t keyHi, keyLo;
  uint64_t payloadBytes;
  uint64_t checksum; ///< xxh3-64 of the payload
};
static_assert(sizeof(Header) == 48);

uint64_t checksumOf(std::string_view s) { return llvm::xxh3_64bits(llvm::StringRef(s.data(), s.size())); }

bool writeAll(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

struct KeyHash {
  size_t operator()(const CacheKey &k) const { return static_cast<size_t>(k.hi ^ (k.lo * 0x9E3779B97F4A7C15ull)); }
};

struct MemoryLevel {
  std::mutex mu;
  std::unordered_map<CacheKey, ObjectBytes, KeyHash> map;
  size_t bytes = 0;
  static constexpr size_t kMaxBytes = 256u << 20;
};

MemoryLevel &memoryLevel() {
  static MemoryLevel *m = new MemoryLevel; // never destroyed: engines may outlive statics
  return *m;
}

} // namespace

std::string CacheKey::hex() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return buf;
}

namespace {
template <typename T> void put(std::string &out, const T &v) {
  static_assert(std::is_trivially_copyable_v<T>);
  out.append(reinterpret_cast<const char *>(&v), sizeof v);
}
} // namespace

void appendKernelKey(const isa::Kernel &k, const std::string &name, std::string &out) {
  put(out, name.size());
  out += name;
  put(out, k.numCores);
  put(out, k.args.size());
  put(out, k.programs.size());
  for (const auto &p : k.programs) {
    put(out, p.firstCore);
    put(out, p.lastCore);
    put(out, p.body.size());
    for (const isa::Instr &in : p.body)
      isa::appendInstrIdentity(out, in); // every field but the source line
  }
}

CacheKey hashKey(std::string_view material) {
  auto h = llvm::xxh3_128bits(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(material.data()), material.size()));
  return {h.high64, h.low64};
}

void warnOnce(const char *what, const std::string &msg) {
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> g(mu);
  if (seen.insert(what).second)
    std::cerr << "spyre-jit: warning: " << msg << "\n";
}

std::string cacheDirFromEnv(const spyre::Env &env) {
  if (std::string e = env.string("SPYRE_CACHE_DIR"); !e.empty())
    return e; // "off" disables the disk cache
  if (std::string x = env.string("XDG_CACHE_HOME"); !x.empty())
    return x + "/spyre-jit";
  if (std::string h = env.string("HOME"); !h.empty())
    return h + "/.cache/spyre-jit";
  return "off";
}

std::string DiskCache::pathFor(const CacheKey &k) const { return dir_ + "/" + prefix_ + k.hex() + ".sjo"; }

ObjectBytes DiskCache::load(const CacheKey &k, bool &corrupt) const {
  corrupt = false;
  std::string path = pathFor(k);
  // The bounded reader: a FIFO, device or directory in the cache is refused without blocking,
  // and no entry is read beyond kMaxCacheEntryBytes.
  isa::FileRead file = isa::readRegularFile(path, kMaxCacheEntryBytes);
  if (file.status == isa::FileRead::Status::Missing)
    return nullptr;
  auto bad = [&](const std::string &why) -> ObjectBytes {
    corrupt = true;
    warnOnce("corrupt-entry", "ignoring corrupted JIT cache entry " + path + " (" + why +
                                  "); recompiling (further corrupted entries are not reported)");
    return nullptr;
  };
  if (!file.ok())
    return bad(file.error.substr(path.size() + 2)); // the reason after "<path>: "
  const std::string &data = file.data;
  Header h;
  if (data.size() < sizeof h)
    return bad("truncated header");
  std::memcpy(&h, data.data(), sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.version != kFormatVersion)
    return bad("not a spyre-jit cache entry of this version");
  if (h.keyHi != k.hi || h.keyLo != k.lo)
    return bad("key mismatch");
  if (h.payloadBytes != data.size() - sizeof h)
    return bad("truncated payload");
  std::string_view payload(data.data() + sizeof h, data.size() - sizeof h);
  if (checksumOf(payload) != h.checksum)
    return bad("checksum mismatch");
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0); // just used: last in the LRU order
  return std::make_shared<const std::string>(payload);
}

size_t DiskCache::trim(const std::string &keep) const {
  struct Entry {
    struct timespec used;
    uint64_t bytes;
    std::string path;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir_, ec), end; it != end && !ec; it.increment(ec)) {
    const std::string &path = it->path();
    struct stat st;
    if (!llvm::StringRef(path).ends_with(".sjo") || ::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    entries.push_back({st.st_mtim, static_cast<uint64_t>(st.st_size), path});
    total += static_cast<uint64_t>(st.st_size);
  }
  if (total <= maxBytes_)
    return 0;
  std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec : a.used.tv_nsec < b.used.tv_nsec;
  });
  size_t removed = 0;
  for (const Entry &e : entries) {
    if (total <= maxBytes_)
      break;
    if (e.path == keep)
      continue;
    if (::unlink(e.path.c_str()) == 0)
      ++removed;
    total -= e.bytes; // gone either way (another process may have removed it)
  }
  return removed;
}

bool DiskCache::store(const CacheKey &k, std::string_view obj) const {
  if (auto ec = llvm::sys::fs::create_directories(dir_)) {
    warnOnce("cache-dir", "cannot create the JIT cache directory " + dir_ + ": " + ec.message() +
                              " (set SPYRE_CACHE_DIR, or SPYRE_CACHE_DIR=off)");
    return false;
  }
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kFormatVersion;
  h.keyHi = k.hi;
  h.keyLo = k.lo;
  h.payloadBytes = obj.size();
  h.checksum = checksumOf(obj);
  static std::atomic<uint64_t> seq{0};
  std::string final = pathFor(k);
  // Unique per process, thread and call: concurrent writers never share a temporary.
  std::string tmp = final + ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()) & 0xFFFFFF) + "." +
                    std::to_string(seq++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    warnOnce("cache-write", "cannot write to the JIT cache directory " + dir_ + ": " + std::strerror(errno));
    return false;
  }
  bool ok = writeAll(fd, reinterpret_cast<const char *>(&h), sizeof h) && writeAll(fd, obj.data(), obj.size());
  ok = (::close(fd) == 0) && ok;
  if (ok && ::rename(tmp.c_str(), final.c_str()) == 0) {
    trim(final);
    return true;
  }
  warnOnce("cache-write", "cannot write JIT cache entry " + final + ": " + std::strerror(errno));
  ::unlink(tmp.c_str());
  return false;
}

ObjectBytes memoryCacheLookup(const CacheKey &k) {
  auto &m = memoryLevel();
  std::lock_guard<std::mutex> g(m.mu);
  auto it = m.map.find(k);
  return it == m.map.end() ? nullptr : it->second;
}

void memoryCacheStore(const CacheKey &k, ObjectBytes obj) {
  auto &m = memoryLevel();
  std::lock_guard<std::mutex> g(m.mu);
  if (m.bytes + obj->size() > MemoryLevel::kMaxBytes) { // crude bound: start over
    m.map.clear();
    m.bytes = 0;
  }
  auto [it, inserted] = m.map.emplace(k, obj);
  if (inserted)
    m.bytes += obj->size();
}

ObjectBytes CacheLevels::lookup(const CacheKey &k) const {
  if (bypass)
    return nullptr;
  if (memory)
    if (ObjectBytes obj = memoryCacheLookup(k)) {
      ++counters->memoryHits;
      return obj;
    }
  if (!disk)
    return nullptr;
  bool corrupt = false;
  ObjectBytes obj = disk->load(k, corrupt);
  if (obj) {
    ++counters->diskHits;
    if (memory)
      memoryCacheStore(k, obj);
  } else if (corrupt) {
    ++counters->corrupt;
  }
  return obj;
}

ObjectBytes CacheLevels::fill(const CacheKey &k, std::mutex &mu, const std::function<ObjectBytes()> &compile,
                              bool &compiled) const {
  std::lock_guard<std::mutex> g(mu);
  // Another thread of this engine may have compiled the same object while this one waited.
  if (!bypass && memory)
    if (ObjectBytes obj = memoryCacheLookup(k)) {
      ++counters->memoryHits;
      compiled = false;
      return obj;
    }
  ++counters->misses;
  compiled = true;
  ObjectBytes obj = compile();
  if (memory)
    memoryCacheStore(k, obj);
  if (disk && disk->store(k, *obj))
    ++counters->diskWrites;
  return obj;
}

void memoryCacheClear() {
  auto &m = memoryLevel();
  std::lock_guard<std::mutex> g(m.mu);
  m.map.clear();
  m.bytes = 0;
}

} // namespace spyre::jit
