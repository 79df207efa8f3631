// The native baseline of spyre-jit-bench: the same op on libtorch CPU, in the same process.
// No torch header here: native_baseline.cpp, the only translation unit that includes libtorch,
// is a separate shared module (libspyre_bench_native.so next to the executable) that
// native_loader.cpp loads on first use, so that runs without the baseline (--native off,
// --listing, every command-line error) do not pay the ~1.5 s of loading libtorch. Without an
// importable torch at CMake time the module is not built and the baseline is "n/a".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace spyre::bench {

struct NativeSpec {
  /// "add", "softmax", "layernorm", "rmsnorm", "mm", "linear", "experts", "swiglu", "rope", or a
  /// single ATen op name (add sub mul div maximum minimum relu neg abs clone exp sigmoid tanh silu
  /// sqrt rsqrt).
  std::string kind;
  /// Operand shapes in graph-input order.
  std::vector<std::vector<int64_t>> shapes;
  bool f16 = true;     ///< try fp16 first (falls back to fp32 where libtorch CPU lacks it)
  bool alsoF32 = false; ///< also time fp32 (matmul: the host FMA-peak comparison)
  double eps = 1e-5;
};

struct NativeResult {
  bool available = false;
  std::string dtype;  ///< "f16" or "f32"
  std::string note;   ///< why n/a, or why fp32
  double medianMs = 0, minMs = 0;
  int reps = 0;
  double f32MedianMs = 0; ///< when alsoF32
};

/// "libtorch 2.x.y", or "" when the baseline is not available (loads the module).
std::string nativeVersion();
/// Why the baseline is not available (e.g. "built without libtorch"); "" when it is.
std::string nativeUnavailable();
/// Times `reps` runs (fewer when one run takes over a second) after one warm-up, on `threads`
/// intra-op threads.
/// Not available: `note` says why.
NativeResult runNative(const NativeSpec &spec, int threads, int reps);

/// What the module exports, as one C symbol (kNativeModuleSymbol) so that dlsym needs no
/// mangled names.
struct NativeModule {
  std::string (*version)();
  NativeResult (*run)(const NativeSpec &spec, int threads, int reps);
};
inline constexpr const char *kNativeModuleSymbol = "spyre_bench_native_module";

} // namespace spyre::bench
