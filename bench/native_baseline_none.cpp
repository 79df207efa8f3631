// spyre-jit-bench built without libtorch (torch was not importable at CMake time).
#include "native_baseline.h"

namespace spyre::bench {

std::string nativeVersion() { return ""; }

NativeResult runNative(const NativeSpec &, int, int) {
  NativeResult r;
  r.note = "built without libtorch";
  return r;
}

} // namespace spyre::bench
