// The native baseline of spyre-jit-bench: the same op on libtorch CPU, in the same process.
// No torch header here: native_baseline.cpp is the only translation unit that includes
// libtorch, and native_baseline_none.cpp replaces it when torch is not importable at CMake time.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace spyre::bench {

struct NativeSpec {
  /// "add", "softmax", "layernorm", "rmsnorm", "mm", "swiglu", or a single ATen op name
  /// (add sub mul div maximum minimum relu neg abs clone exp sigmoid tanh silu sqrt rsqrt).
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

/// "libtorch 2.x.y" or "" when the bench was built without libtorch.
std::string nativeVersion();
/// Times `reps` runs (fewer when one run takes over a second) after one warm-up, on `threads`
/// intra-op threads.
NativeResult runNative(const NativeSpec &spec, int threads, int reps);

} // namespace spyre::bench
