// libtorch CPU baseline for spyre-jit-bench: the only translation unit of the bench that
// includes torch headers (ATen only; no autograd, no Python). Built as its own shared module,
// loaded on first use by native_loader.cpp (native_baseline.h).
#include "native_baseline.h"
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <algorithm>
#include <chrono>
#include <functional>
#include <torch/headeronly/version.h>

namespace spyre::bench {

namespace {

using Fn = std::function<at::Tensor()>;

/// Builds the op on random inputs of dtype `dt`; the returned closure runs it once.
Fn makeOp(const NativeSpec &s, at::ScalarType dt) {
  std::vector<at::Tensor> in;
  for (const auto &sh : s.shapes)
    in.push_back(at::randn(sh, at::TensorOptions().dtype(dt)));
  const std::string &k = s.kind;
  auto need = [&](size_t n) {
    if (in.size() != n)
      throw std::runtime_error(k + ": expected " + std::to_string(n) + " operands");
  };
  double eps = s.eps;
  if (k == "add" || k == "sub" || k == "mul" || k == "div" || k == "maximum" || k == "minimum") {
    need(2);
    at::Tensor a = in[0], b = in[1];
    if (k == "add") return [a, b] { return at::add(a, b); };
    if (k == "sub") return [a, b] { return at::sub(a, b); };
    if (k == "mul") return [a, b] { return at::mul(a, b); };
    if (k == "div") return [a, b] { return at::div(a, b); };
    if (k == "maximum") return [a, b] { return at::maximum(a, b); };
    return [a, b] { return at::minimum(a, b); };
  }
  if (k == "softmax") {
    need(1);
    at::Tensor x = in[0];
    return [x] { return at::softmax(x, -1); };
  }
  if (k == "layernorm") { // no affine, like the graph
    need(1);
    at::Tensor x = in[0];
    int64_t n = x.size(-1);
    return [x, n, eps] { return at::layer_norm(x, {n}, {}, {}, eps); };
  }
  if (k == "rmsnorm") { // no weight, like the graph
    need(1);
    at::Tensor x = in[0];
    int64_t n = x.size(-1);
    return [x, n, eps] { return at::rms_norm(x, {n}, std::nullopt, eps); };
  }
  if (k == "mm") {
    need(2);
    at::Tensor a = in[0], b = in[1];
    return [a, b] { return at::mm(a, b); };
  }
  if (k == "linear_gelu") { // x, w, bias: gelu(x @ w + b), as the graph
    need(3);
    at::Tensor x = in[0], w = in[1], b = in[2];
    return [x, w, b] { return at::gelu(at::addmm(b, x, w)); };
  }
  if (k == "linear") { // x [M, K], w [N, K], bias [N]: x @ w^T + b, as the graph
    need(3);
    at::Tensor x = in[0], w = in[1], b = in[2];
    return [x, w, b] { return at::linear(x, w, b); };
  }
  if (k == "experts") { // x [E, T, K], w [E, N, K]: x @ w^T per expert, as the graph
    need(2);
    at::Tensor x = in[0], w = in[1];
    return [x, w] { return at::bmm(x, w.transpose(1, 2)); };
  }
  if (k == "swiglu") { // x, w_gate, w_up, w_down
    need(4);
    at::Tensor x = in[0], w1 = in[1], w3 = in[2], w2 = in[3];
    return [x, w1, w3, w2] { return at::mm(at::mul(at::silu(at::mm(x, w1)), at::mm(x, w3)), w2); };
  }
  if (k == "rope") { // x [T, H, 2d], cos/sin [T, 1, d], as the graph
    need(3);
    at::Tensor x = in[0], c = in[1], sn = in[2];
    const int64_t d = c.size(-1);
    return [x, c, sn, d] {
      at::Tensor x1 = x.narrow(-1, 0, d), x2 = x.narrow(-1, d, d);
      return at::cat({x1 * c - x2 * sn, x2 * c + x1 * sn}, -1);
    };
  }
  need(1);
  at::Tensor x = in[0];
  if (k == "relu") return [x] { return at::relu(x); };
  if (k == "neg") return [x] { return at::neg(x); };
  if (k == "abs") return [x] { return at::abs(x); };
  if (k == "clone") return [x] { return x.clone(); };
  if (k == "exp") return [x] { return at::exp(x); };
  if (k == "sigmoid") return [x] { return at::sigmoid(x); };
  if (k == "tanh") return [x] { return at::tanh(x); };
  if (k == "silu") return [x] { return at::silu(x); };
  if (k == "gelu") return [x] { return at::gelu(x); }; // erf form, as --op gelu builds it
  if (k == "erf") return [x] { return at::erf(x); };
  if (k == "sqrt") return [x] { return at::sqrt(x); };
  if (k == "rsqrt") return [x] { return at::rsqrt(x); };
  throw std::runtime_error("no libtorch baseline for op '" + k + "'");
}

double msOf(const Fn &f) {
  auto t0 = std::chrono::steady_clock::now();
  at::Tensor r = f();
  (void)r;
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// Warm-up + timed reps; fewer reps when one run takes over a second.
std::vector<double> timeOp(const Fn &f, int reps) {
  double first = msOf(f);
  if (first > 1000)
    reps = std::min(reps, 2);
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i)
    ms.push_back(msOf(f));
  std::sort(ms.begin(), ms.end());
  return ms;
}

std::string version() { return std::string("libtorch ") + TORCH_VERSION; }

NativeResult run(const NativeSpec &s, int threads, int reps) {
  NativeResult r;
  at::set_num_threads(std::max(1, threads));
  Fn f;
  r.dtype = "f32";
  if (s.f16) {
    try {
      f = makeOp(s, at::kHalf);
      msOf(f); // throws when the CPU kernel has no Half implementation
      r.dtype = "f16";
    } catch (const std::exception &e) {
      std::string what = e.what();
      r.note = "f16 unsupported on CPU (" + what.substr(0, what.find('\n')) + "), f32";
      f = nullptr;
    }
  }
  try {
    if (!f)
      f = makeOp(s, at::kFloat);
    auto ms = timeOp(f, std::max(1, reps));
    r.medianMs = ms[ms.size() / 2];
    r.minMs = ms.front();
    r.reps = static_cast<int>(ms.size());
    if (s.alsoF32 && r.dtype == "f16") {
      auto m32 = timeOp(makeOp(s, at::kFloat), std::max(1, reps));
      r.f32MedianMs = m32[m32.size() / 2];
    } else if (r.dtype == "f32") {
      r.f32MedianMs = r.medianMs;
    }
    r.available = true;
  } catch (const std::exception &e) {
    std::string what = e.what();
    r.available = false;
    r.note = what.substr(0, what.find('\n'));
  }
  return r;
}

} // namespace

} // namespace spyre::bench

// The module's one export (native_baseline.h), found by dlsym in native_loader.cpp.
extern "C" const spyre::bench::NativeModule spyre_bench_native_module{&spyre::bench::version, &spyre::bench::run};
