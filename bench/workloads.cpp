// spyre-jit-bench workloads: the named graph-IR workloads (shapes of the public Spyre kernel
// examples), most as graph text, their selection by name, and the single-op graph of
// --op/--shape/--dtype.
#include "bench.h"
#include "spyre/isa/error.h"
#include <array>
#include <sstream>

namespace spyre::bench {

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

/// The graph IR text `tmpl` (parseGraph's syntax) with every `$X` replaced by the value of X.
frontend::Graph graphOf(std::string tmpl, const std::vector<std::pair<char, int64_t>> &dims) {
  for (auto [name, value] : dims)
    for (size_t at; (at = tmpl.find(std::string("$") + name)) != std::string::npos;)
      tmpl.replace(at, 2, std::to_string(value));
  return frontend::parseGraph(tmpl, "<bench workload>");
}

/// nn.Linear with bias and GELU: one fused matmul kernel (matmul-fusion, superdsc.md §6.11).
constexpr const char *kLinearGelu = R"(graph(%x: f16[$M, $K], %w: f16[$K, $N], %b: f16[$N]) {
  %m = matmul(%x, %w) : f16[$M, $N]
  %a = add(%m, %b) : f16[$M, $N]
  %y = gelu(%a) : f16[$M, $N]
  return (%y)
}
)";

/// softmax over the last dim: amax, sub, exp, sum, div (keepdim reductions, broadcasting).
constexpr const char *kSoftmax = R"(graph(%x: f16[$R, $C]) {
  %m = amax(%x, dims=[1], keepdim=1) : f16[$R, 1]
  %d = sub(%x, %m) : f16[$R, $C]
  %e = exp(%d) : f16[$R, $C]
  %s = sum(%e, dims=[1], keepdim=1) : f16[$R, 1]
  %y = div(%e, %s) : f16[$R, $C]
  return (%y)
})";

/// layernorm without affine (centred: x - mean(x) first) and rmsnorm without weight: then
/// c · rsqrt(mean(c · c) + 1e-5) over the last dim (mul, mean, add eps, rsqrt, mul).
frontend::Graph normGraph(int64_t rows, int64_t cols, bool centred) {
  frontend::Graph g;
  const auto F = HostType::F16;
  const std::map<std::string, frontend::Attr> rowMean = {{"dims", frontend::Attr(std::vector<double>{1})},
                                                          {"keepdim", 1.0}};
  int c = g.addInput("x", {rows, cols}, F);
  if (centred) {
    int mu = g.addNode("mean", {c}, "mu", {rows, 1}, F, rowMean);
    c = g.addNode("sub", {c, mu}, "d", {rows, cols}, F);
  }
  int sq = g.addNode("mul", {c, c}, centred ? "d2" : "x2", {rows, cols}, F);
  int ms = g.addNode("mean", {sq}, centred ? "var" : "ms", {rows, 1}, F, rowMean);
  int eps = g.addNode("add", {ms}, centred ? "ve" : "mse", {rows, 1}, F, {{"scalar", 1e-5}});
  int r = g.addNode("rsqrt", {eps}, "r", {rows, 1}, F);
  g.outputs = {g.addNode("mul", {c, r}, "y", {rows, cols}, F)};
  return g;
}

/// F.layer_norm as the models run it (torch-spyre's ops, fp32 statistics; no affine, like the
/// libtorch baseline): one row-fused kernel since the row-fusion pass takes the triple.
constexpr const char *kLayerNormCard = R"(graph(%x: f16[$R, $C]) {
  %s = exx2(%x) : f32[$R, 2]
  %r = layernormscale(%s, eps=1e-05) : f32[$R, 1]
  %y = layernormnorm(%x, %s, %r, bias=0, weight=0) : f16[$R, $C]
  return (%y)
}
)";

/// nn.Linear with bias as a model stores it: the weight [N, K] (x @ w^T), read sticked on K by
/// the matmul (transb) and the bias add fused into it (matmul-fusion): BERT's and ViT's
/// projections.
constexpr const char *kLinearBias = R"(graph(%x: f16[$M, $K], %w: f16[$N, $K], %b: f16[$N]) {
  %wt = transpose(%w) : f16[$K, $N]
  %m = matmul(%x, %wt) : f16[$M, $N]
  %y = add(%m, %b) : f16[$M, $N]
  return (%y)
}
)";

/// Batched expert matmuls as a MoE model runs them: x [E, T, K] @ w[E]^T with the expert weights
/// stored [E, N, K] (read sticked on K).
constexpr const char *kExperts = R"(graph(%x: f16[$E, $T, $K], %w: f16[$E, $N, $K]) {
  %wt = transpose(%w) : f16[$E, $K, $N]
  %y = matmul(%x, %wt) : f16[$E, $T, $N]
  return (%y)
}
)";

constexpr const char *kMatmul = R"(graph(%a: f16[$M, $K], %b: f16[$K, $N]) {
  %c = matmul(%a, %b) : f16[$M, $N]
  return (%c)
})";

/// SwiGLU FFN: (silu(x W_gate) * (x W_up)) W_down.
constexpr const char *kSwiglu = R"(graph(%x: f16[$T, $H], %w_gate: f16[$H, $F], %w_up: f16[$H, $F], %w_down: f16[$F, $H]) {
  %gate = matmul(%x, %w_gate) : f16[$T, $F]
  %up = matmul(%x, %w_up) : f16[$T, $F]
  %act = silu(%gate) : f16[$T, $F]
  %hid = mul(%act, %up) : f16[$T, $F]
  %y = matmul(%hid, %w_down) : f16[$T, $H]
  return (%y)
})";

constexpr const char *kVectorAdd = R"(graph(%a: f16[4096], %b: f16[4096]) {
  %c = add(%a, %b) : f16[4096]
  return (%c)
})";

/// Rotary position embedding (rotate-half form) of 4096 tokens x 40 heads x head dim 128
/// (x f16[163840, 128] as [T, H, 128]) with cos/sin tables f16[4096, 64] broadcast over heads:
/// y = cat(x1 cos - x2 sin, x2 cos + x1 sin) where x1, x2 are x's two halves.
constexpr const char *kRope = R"(graph(%x: f16[$T, $H, 128], %cos: f16[$T, 1, 64], %sin: f16[$T, 1, 64]) {
  %x1 = slice(%x, dim=2, start=0, end=64) : f16[$T, $H, 64]
  %x2 = slice(%x, dim=2, start=64, end=128) : f16[$T, $H, 64]
  %a = mul(%x1, %cos) : f16[$T, $H, 64]
  %b = mul(%x2, %sin) : f16[$T, $H, 64]
  %lo = sub(%a, %b) : f16[$T, $H, 64]
  %c = mul(%x2, %cos) : f16[$T, $H, 64]
  %d = mul(%x1, %sin) : f16[$T, $H, 64]
  %hi = add(%c, %d) : f16[$T, $H, 64]
  %y = cat(%lo, %hi, dim=2) : f16[$T, $H, 128]
  return (%y)
})";

frontend::Graph matmulGraph(int64_t m, int64_t k, int64_t n) { return graphOf(kMatmul, {{'M', m}, {'K', k}, {'N', n}}); }

} // namespace

std::vector<Workload> workloads() {
  std::vector<Workload> w;
  w.push_back({"vector_add_4096", "add of two f16[4096] vectors (32 cores)",
               [] { return frontend::parseGraph(kVectorAdd, "<bench workload>"); },
               {"add", {{4096}, {4096}}}});
  for (int64_t cols : {1024, 2048})
    w.push_back({"softmax_4096x" + std::to_string(cols), "softmax(f16[4096, N], -1): amax sub exp sum div",
                 [cols] { return graphOf(kSoftmax, {{'R', 4096}, {'C', cols}}); }, {"softmax", {{4096, cols}}}});
  w.push_back({"layernorm_1151x8192", "layernorm (no affine) of f16[1151, 8192]: mean sub mul mean add rsqrt mul",
               [] { return normGraph(1151, 8192, true); }, {"layernorm", {{1151, 8192}}}});
  for (auto [rows, cols] : {std::array<int64_t, 2>{1151, 8192}, std::array<int64_t, 2>{65, 256}})
    w.push_back({"layernorm_card_" + std::to_string(rows) + "x" + std::to_string(cols),
                 "F.layer_norm (no affine) as the models run it: exx2 layernormscale layernormnorm (fp32 statistics)",
                 [rows, cols] { return graphOf(kLayerNormCard, {{'R', rows}, {'C', cols}}); },
                 {"layernorm", {{rows, cols}}}});
  w.push_back({"rmsnorm_256x4096", "rmsnorm (no weight) of f16[256, 4096]: mul mean add rsqrt mul",
               [] { return normGraph(256, 4096, false); }, {"rmsnorm", {{256, 4096}}}});
  for (auto [m, k, n] : {std::array<int64_t, 3>{64, 2048, 8192}, std::array<int64_t, 3>{4096, 2048, 1024}}) {
    bench::NativeSpec ns{"mm", {{m, k}, {k, n}}};
    ns.alsoF32 = true;
    w.push_back({"matmul_" + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n),
                 "f16[M, K] @ f16[K, N] (name: M x K x N)", [m, k, n] { return matmulGraph(m, k, n); }, ns});
  }
  {
    bench::NativeSpec ns{"linear_gelu", {{256, 1024}, {1024, 1024}, {1024}}};
    ns.alsoF32 = true;
    w.push_back({"linear_bias_gelu_256x1024x1024", "nn.Linear + bias + GELU: gelu(f16[256, 1024] @ f16[1024, 1024] + b)",
                 [] { return graphOf(kLinearGelu, {{'M', 256}, {'K', 1024}, {'N', 1024}}); }, ns});
  }
  // Model-shaped linears with a transposed weight and bias (M x K x N): BERT's attention
  // projections and its FFN's second linear.
  for (auto [m, k, n] : {std::array<int64_t, 3>{64, 256, 256}, std::array<int64_t, 3>{64, 512, 256}}) {
    bench::NativeSpec ns{"linear", {{m, k}, {n, k}, {n}}};
    ns.alsoF32 = true;
    w.push_back({"linear_" + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n),
                 "nn.Linear as stored: f16[M, K] @ f16[N, K]^T + b[N] (name: M x K x N)",
                 [m, k, n] { return graphOf(kLinearBias, {{'M', m}, {'K', k}, {'N', n}}); }, ns});
  }
  // GraniteMoE's two expert matmuls per layer (4 experts, 128 rows each; hidden 256, 2 x 512).
  for (auto [e, t, k, n] : {std::array<int64_t, 4>{4, 128, 256, 1024}, std::array<int64_t, 4>{4, 128, 512, 256}}) {
    bench::NativeSpec ns{"experts", {{e, t, k}, {e, n, k}}};
    ns.alsoF32 = true;
    w.push_back({"experts_" + std::to_string(e) + "x" + std::to_string(t) + "x" + std::to_string(k) + "x" +
                     std::to_string(n),
                 "batched expert matmul: f16[E, T, K] @ f16[E, N, K]^T (name: E x T x K x N)",
                 [e, t, k, n] { return graphOf(kExperts, {{'E', e}, {'T', t}, {'K', k}, {'N', n}}); }, ns});
  }
  {
    bench::NativeSpec ns{"swiglu", {{4, 256}, {256, 1024}, {256, 1024}, {1024, 256}}};
    ns.alsoF32 = true;
    w.push_back({"swiglu_4x256x1024", "SwiGLU FFN, x f16[4, 256], W_gate/W_up [256, 1024], W_down [1024, 256]",
                 [] { return graphOf(kSwiglu, {{'T', 4}, {'H', 256}, {'F', 1024}}); }, ns});
  }
  {
    bench::NativeSpec ns{"mm", {{1, 8192}, {8192, 128}}};
    ns.alsoF32 = true;
    w.push_back({"attn_pv_1x8192x128", "decode attention P.V: f16[1, 8192] @ f16[8192, 128]",
                 [] { return matmulGraph(1, 8192, 128); }, ns});
  }
  w.push_back({"rope_163840x128", "rotary embedding of f16[4096 x 40, 128] with cos/sin f16[4096, 64]: slice mul sub add cat",
               [] { return graphOf(kRope, {{'T', 4096}, {'H', 40}}); },
               {"rope", {{4096, 40, 128}, {4096, 1, 64}, {4096, 1, 64}}}});
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
