// Loads the libtorch baseline module (native_baseline.h) on the first call that needs it.
// SPYRE_BENCH_NATIVE_MODULE is its file name, next to the executable, or "" when CMake found no
// torch and did not build it.
#include "native_baseline.h"
#include <dlfcn.h>
#include <filesystem>
#include <mutex>

namespace spyre::bench {

namespace {

struct Loaded {
  const NativeModule *module = nullptr;
  std::string why; ///< when module is null
};

const Loaded &loaded() {
  static Loaded l;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string name = SPYRE_BENCH_NATIVE_MODULE;
    if (name.empty()) {
      l.why = "built without libtorch";
      return;
    }
    std::error_code ec;
    std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    std::string path = (ec ? std::filesystem::path(name) : exe.parent_path() / name).string();
    void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char *e = dlerror();
      l.why = "cannot load the libtorch baseline: " + std::string(e ? e : path);
      return;
    }
    l.module = static_cast<const NativeModule *>(dlsym(h, kNativeModuleSymbol));
    if (!l.module)
      l.why = path + ": no symbol " + kNativeModuleSymbol;
  });
  return l;
}

} // namespace

std::string nativeVersion() {
  const Loaded &l = loaded();
  return l.module ? l.module->version() : "";
}

std::string nativeUnavailable() { return loaded().why; }

NativeResult runNative(const NativeSpec &spec, int threads, int reps) {
  const Loaded &l = loaded();
  if (l.module)
    return l.module->run(spec, threads, reps);
  NativeResult r;
  r.note = l.why;
  return r;
}

} // namespace spyre::bench
