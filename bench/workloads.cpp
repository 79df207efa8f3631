// spyre-jit-bench workloads: the named graph-IR workloads (shapes of the public Spyre kernel
// examples), their selection by name, and the single-op graph of --op/--shape/--dtype.
#include "bench.h"
#include "spyre/isa/error.h"
#include <array>
#include <sstream>

namespace spyre::bench {

namespace {


frontend::Attr dims(std::vector<double> d) { return frontend::Attr(std::move(d)); }

} // namespace

frontend::Graph singleOpGraph(const std::string &op, const std::vector<int64_t> &shape, HostType dt) {
  frontend::Graph g;
  if (op == "matmul") { // --shape MxKxN: [M, K] @ [K, N]
    if (shape.size() != 3)
      throw Error("--op matmul takes --shape MxKxN, got " + std::to_string(shape.size()) + " dims");
    int a = g.addInput("a", {shape[0], shape[1]}, dt), b = g.addInput("b", {shape[1], shape[2]}, dt);
    g.outputs = {g.addNode("matmul", {a, b}, "out", {shape[0], shape[2]}, dt)};
    return g;
  }
  static const std::vector<std::string> binary = {"add", "sub", "mul", "div", "maximum", "minimum"};
  int arity = std::count(binary.begin(), binary.end(), op) ? 2 : 1;
  std::vector<int> ins;
  for (int i = 0; i < arity; ++i)
    ins.push_back(g.addInput("in" + std::to_string(i), shape, dt));
  g.outputs = {g.addNode(op, ins, "out", shape, dt)};
  return g;
}

namespace {

/// softmax over the last dim: amax, sub, exp, sum, div (keepdim reductions, broadcasting).
frontend::Graph softmaxGraph(int64_t rows, int64_t cols) {
  frontend::Graph g;
  const auto F = HostType::F16;
  int x = g.addInput("x", {rows, cols}, F);
  int m = g.addNode("amax", {x}, "m", {rows, 1}, F, {{"dims", dims({1})}, {"keepdim", 1.0}});
  int d = g.addNode("sub", {x, m}, "d", {rows, cols}, F);
  int e = g.addNode("exp", {d}, "e", {rows, cols}, F);
  int s = g.addNode("sum", {e}, "s", {rows, 1}, F, {{"dims", dims({1})}, {"keepdim", 1.0}});
  g.outputs = {g.addNode("div", {e, s}, "y", {rows, cols}, F)};
  return g;
}

/// layernorm without affine: mean, sub, mul, mean, add eps, rsqrt, mul.
frontend::Graph layernormGraph(int64_t rows, int64_t cols) {
  frontend::Graph g;
  const auto F = HostType::F16;
  int x = g.addInput("x", {rows, cols}, F);
  int mu = g.addNode("mean", {x}, "mu", {rows, 1}, F, {{"dims", dims({1})}, {"keepdim", 1.0}});
  int d = g.addNode("sub", {x, mu}, "d", {rows, cols}, F);
  int d2 = g.addNode("mul", {d, d}, "d2", {rows, cols}, F);
  int var = g.addNode("mean", {d2}, "var", {rows, 1}, F, {{"dims", dims({1})}, {"keepdim", 1.0}});
  int ve = g.addNode("add", {var}, "ve", {rows, 1}, F, {{"scalar", 1e-5}});
  int r = g.addNode("rsqrt", {ve}, "r", {rows, 1}, F);
  g.outputs = {g.addNode("mul", {d, r}, "y", {rows, cols}, F)};
  return g;
}

/// rmsnorm without weight: mul, mean, add eps, rsqrt, mul.
frontend::Graph rmsnormGraph(int64_t rows, int64_t cols) {
  frontend::Graph g;
  const auto F = HostType::F16;
  int x = g.addInput("x", {rows, cols}, F);
  int x2 = g.addNode("mul", {x, x}, "x2", {rows, cols}, F);
  int ms = g.addNode("mean", {x2}, "ms", {rows, 1}, F, {{"dims", dims({1})}, {"keepdim", 1.0}});
  int mse = g.addNode("add", {ms}, "mse", {rows, 1}, F, {{"scalar", 1e-5}});
  int r = g.addNode("rsqrt", {mse}, "r", {rows, 1}, F);
  g.outputs = {g.addNode("mul", {x, r}, "y", {rows, cols}, F)};
  return g;
}

frontend::Graph matmulGraph(int64_t m, int64_t k, int64_t n) {
  frontend::Graph g;
  const auto F = HostType::F16;
  int a = g.addInput("a", {m, k}, F);
  int b = g.addInput("b", {k, n}, F);
  g.outputs = {g.addNode("matmul", {a, b}, "c", {m, n}, F)};
  return g;
}

/// SwiGLU FFN: (silu(x W_gate) * (x W_up)) W_down.
frontend::Graph swigluGraph(int64_t t, int64_t h, int64_t f) {
  frontend::Graph g;
  const auto F = HostType::F16;
  int x = g.addInput("x", {t, h}, F);
  int w1 = g.addInput("w_gate", {h, f}, F);
  int w3 = g.addInput("w_up", {h, f}, F);
  int w2 = g.addInput("w_down", {f, h}, F);
  int gate = g.addNode("matmul", {x, w1}, "gate", {t, f}, F);
  int up = g.addNode("matmul", {x, w3}, "up", {t, f}, F);
  int act = g.addNode("silu", {gate}, "act", {t, f}, F);
  int hid = g.addNode("mul", {act, up}, "hid", {t, f}, F);
  g.outputs = {g.addNode("matmul", {hid, w2}, "y", {t, h}, F)};
  return g;
}

} // namespace

std::vector<Workload> workloads() {
  std::vector<Workload> w;
  w.push_back({"vector_add_4096", "add of two f16[4096] vectors (32 cores)",
               [] {
                 frontend::Graph g;
                 int a = g.addInput("a", {4096}, HostType::F16), b = g.addInput("b", {4096}, HostType::F16);
                 g.outputs = {g.addNode("add", {a, b}, "c", {4096}, HostType::F16)};
                 return g;
               },
               {"add", {{4096}, {4096}}}});
  for (int64_t cols : {1024, 2048})
    w.push_back({"softmax_4096x" + std::to_string(cols), "softmax(f16[4096, N], -1): amax sub exp sum div",
                 [cols] { return softmaxGraph(4096, cols); }, {"softmax", {{4096, cols}}}});
  w.push_back({"layernorm_1151x8192", "layernorm (no affine) of f16[1151, 8192]: mean sub mul mean add rsqrt mul",
               [] { return layernormGraph(1151, 8192); }, {"layernorm", {{1151, 8192}}}});
  w.push_back({"rmsnorm_256x4096", "rmsnorm (no weight) of f16[256, 4096]: mul mean add rsqrt mul",
               [] { return rmsnormGraph(256, 4096); }, {"rmsnorm", {{256, 4096}}}});
  for (auto [m, k, n] : {std::array<int64_t, 3>{64, 2048, 8192}, std::array<int64_t, 3>{4096, 2048, 1024}}) {
    bench::NativeSpec ns{"mm", {{m, k}, {k, n}}};
    ns.alsoF32 = true;
    w.push_back({"matmul_" + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n),
                 "f16[M, K] @ f16[K, N] (name: M x K x N)", [m, k, n] { return matmulGraph(m, k, n); }, ns});
  }
  {
    bench::NativeSpec ns{"swiglu", {{4, 256}, {256, 1024}, {256, 1024}, {1024, 256}}};
    ns.alsoF32 = true;
    w.push_back({"swiglu_4x256x1024", "SwiGLU FFN, x f16[4, 256], W_gate/W_up [256, 1024], W_down [1024, 256]",
                 [] { return swigluGraph(4, 256, 1024); }, ns});
  }
  {
    bench::NativeSpec ns{"mm", {{1, 8192}, {8192, 128}}};
    ns.alsoF32 = true;
    w.push_back({"attn_pv_1x8192x128", "decode attention P.V: f16[1, 8192] @ f16[8192, 128]",
                 [] { return matmulGraph(1, 8192, 128); }, ns});
  }
  return w;
}

std::vector<Workload> selectWorkloads(const std::string &spec) {
  auto all = workloads();
  if (spec == "all")
    return all;
  std::vector<Workload> out;
  std::stringstream ss(spec);
  std::string name;
  while (std::getline(ss, name, ',')) {
    size_t before = out.size();
    for (const auto &w : all)
      if (w.name == name || w.name.rfind(name + "_", 0) == 0)
        out.push_back(w);
    if (out.size() == before) {
      std::string names;
      for (const auto &w : all)
        names += " " + w.name;
      throw Error("unknown --workload '" + name + "'; known:" + names + " (or all)");
    }
  }
  return out;
}

} // namespace spyre::bench
