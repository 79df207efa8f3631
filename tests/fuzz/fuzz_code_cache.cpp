// A JIT code cache entry file (jit/lib/code_cache.cpp, DiskCache::load): the input is written as
// the entry of the key its header names (bytes 16..31; a fixed key for shorter inputs), then
// loaded. A load may only return nothing (a miss or a corrupt entry) or exactly the payload
// after the 48-byte header; an entry that loads must also store and load back unchanged.
#include "../../jit/lib/code_cache.h"
#include "fuzz_common.h"
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <unistd.h>

using namespace spyre;

namespace {

const std::string &cacheDir() {
  static const std::string dir = [] {
    const char *tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/spyre-fuzz-cache-XXXXXX";
    if (!::mkdtemp(tmpl.data()))
      fuzz::finding("cannot create a temporary directory from " + tmpl);
    return tmpl;
  }();
  return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  jit::CacheKey key{0x0123456789abcdefull, 0xfedcba9876543210ull};
  if (size >= 32) {
    std::memcpy(&key.hi, data + 16, 8);
    std::memcpy(&key.lo, data + 24, 8);
  }
  jit::DiskCache cache(cacheDir());
  const std::string path = cache.pathFor(key);
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
    if (!f)
      fuzz::finding("cannot write " + path);
  }
  fuzz::accepted([&] {
    bool corrupt = false;
    jit::ObjectBytes obj = cache.load(key, corrupt);
    if (obj && corrupt)
      fuzz::finding("load returned an entry and flagged it corrupt");
    if (obj) {
      if (size < 48 || *obj != std::string_view(reinterpret_cast<const char *>(data) + 48, size - 48))
        fuzz::finding("load returned bytes that are not the entry's payload");
      if (!cache.store(key, *obj))
        fuzz::finding("store of a loaded entry failed");
      jit::ObjectBytes again = cache.load(key, corrupt);
      if (!again || *again != *obj || corrupt)
        fuzz::finding("a stored entry does not load back");
    }
  });
  ::unlink(path.c_str());
  return 0;
}
