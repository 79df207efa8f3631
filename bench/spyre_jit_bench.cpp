// spyre-jit-bench: throughput of simulated Spyre kernels on this host, JIT vs interpreter vs
// native libtorch CPU, and the simulated device time the timing model assigns them.
//
// Two modes: named workloads (--workload NAME|all; graph-IR graphs with the shapes of the public
// Spyre kernel examples) and the single-op mode (--op/--shape/--dtype). See docs/performance.md.
#include "native_baseline.h"
#include "spyre/frontend/compiler.h"
#include "spyre/isa/backend.h"
#include "spyre/isa/dl16.h"
#include "spyre/isa/hardware_config.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/timing.h"
#include "spyre/jit/jit_engine.h"
#include "spyre/sim/device_memory.h"
#include "spyre/sim/executable.h"
#include "spyre/sim/host_transfer.h"
#include "spyre/sim/trace.h"
#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <array>
#include <immintrin.h>
#include <unistd.h>
#include <iostream>
#include <numeric>
#include <random>
#include <sstream>

namespace po = boost::program_options;
using namespace spyre;
using Clock = std::chrono::steady_clock;

namespace {

/// The process environment: read here, at the boundary, and nowhere in the libraries.
const Env &processEnv() {
  static const Env env(&std::getenv);
  return env;
}

/// JIT options from the environment (SPYRE_JIT_TIMES, SPYRE_JIT_PASSES, ...) with the bench's
/// own tier, dump directory and caches.
jit::JitOptions benchJit(jit::OptTier tier, const std::string &dumpDir, const std::string &cacheDir, bool memoryCache) {
  jit::JitOptions o = jit::JitOptions::fromEnv(processEnv());
  o.tier = tier;
  o.dumpDir = dumpDir;
  o.cacheDir = cacheDir;
  o.memoryCache = memoryCache;
  return o;
}

std::vector<int64_t> parseShape(const std::string &s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, 'x')) {
    try {
      out.push_back(std::stoll(part));
    } catch (...) {
      throw Error("bad --shape '" + s + "' (expected e.g. 4096x1024)");
    }
    if (out.back() <= 0)
      throw Error("bad --shape '" + s + "': dimensions must be positive");
  }
  if (out.empty())
    throw Error("empty --shape");
  return out;
}

double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
double minimum(const std::vector<double> &v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }

/// JIT prepare time per kernel (median over the plan's kernels x reps), by cache state.
struct CompileResult {
  std::string tier;
  double missMinMs = 0, missMs = 0, missCpuMs = 0, lowerMs = 0, optMs = 0, codegenMs = 0, cgSetupMs = 0, linkMs = 0,
         lookupMs = 0, memoryHitMs = 0, diskHitMs = 0;
  size_t kernels = 0;
};

CompileResult compileBench(const std::vector<isa::Kernel> &kernels, jit::OptTier tier, int reps) {
  CompileResult r;
  r.tier = tier == jit::OptTier::O0 ? "O0" : "O2";
  r.kernels = kernels.size();
  std::string dir = (std::filesystem::temp_directory_path() / ("spyre-jit-bench-cache-" + std::to_string(getpid()))).string();
  std::vector<double> miss, missCpu, lower, opt, cg, cgSetup, link, lookup, mem, disk;
  {
    jit::JitEngine cold(benchJit(tier, "", "off", false));
    for (int i = 0; i < reps; ++i)
      for (const auto &k : kernels) {
        cold.prepare(k);
        auto t = cold.lastCompileTimes();
        miss.push_back(t.totalMs);
        missCpu.push_back(t.cpuMs);
        lower.push_back(t.lowerMs);
        opt.push_back(t.optMs);
        cg.push_back(t.codegenMs);
        cgSetup.push_back(t.cgSetupMs);
        link.push_back(t.linkMs);
        lookup.push_back(t.lookupMs);
      }
  }
  {
    jit::clearMemoryCache();
    jit::JitEngine warm(benchJit(tier, "", "off", true));
    for (const auto &k : kernels)
      warm.prepare(k);
    for (int i = 0; i < reps; ++i)
      for (const auto &k : kernels) {
        warm.prepare(k);
        mem.push_back(warm.lastCompileMs());
      }
  }
  {
    jit::JitEngine fill(benchJit(tier, "", dir, false));
    for (const auto &k : kernels)
      fill.prepare(k);
    jit::JitEngine fromDisk(benchJit(tier, "", dir, false));
    for (int i = 0; i < reps; ++i)
      for (const auto &k : kernels) {
        fromDisk.prepare(k);
        disk.push_back(fromDisk.lastCompileMs());
      }
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  r.missMs = median(miss);
  r.missMinMs = minimum(miss);
  r.missCpuMs = median(missCpu);
  r.lowerMs = median(lower);
  r.optMs = median(opt);
  r.codegenMs = median(cg);
  r.cgSetupMs = median(cgSetup);
  r.linkMs = median(link);
  r.lookupMs = median(lookup);
  r.memoryHitMs = median(mem);
  r.diskHitMs = median(disk);
  return r;
}


// ---------------------------------------------------------------------------------------------
// Host fp32 FMA peak of one core, measured (12 independent FMA chains per vector unit width).

// 12 independent FMA chains (enough to cover the FMA latency on both ports), spelled out so
// they stay in registers; the vector types never cross a function boundary.
#define SPYRE_FMA_CHAINS(V, SET1, FMA, ADD)                                                          \
  V a0 = SET1(1.0f), a1 = SET1(1.001f), a2 = SET1(1.002f), a3 = SET1(1.003f), a4 = SET1(1.004f),      \
    a5 = SET1(1.005f), a6 = SET1(1.006f), a7 = SET1(1.007f), a8 = SET1(1.008f), a9 = SET1(1.009f),    \
    a10 = SET1(1.01f), a11 = SET1(1.011f);                                                           \
  const V x = SET1(0.999999f), y = SET1(1e-7f);                                                      \
  for (int64_t i = 0; i < n; ++i) {                                                                  \
    a0 = FMA(a0, x, y), a1 = FMA(a1, x, y), a2 = FMA(a2, x, y), a3 = FMA(a3, x, y);                  \
    a4 = FMA(a4, x, y), a5 = FMA(a5, x, y), a6 = FMA(a6, x, y), a7 = FMA(a7, x, y);                  \
    a8 = FMA(a8, x, y), a9 = FMA(a9, x, y), a10 = FMA(a10, x, y), a11 = FMA(a11, x, y);              \
  }                                                                                                  \
  V s = ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7)));                            \
  s = ADD(s, ADD(ADD(a8, a9), ADD(a10, a11)));
__attribute__((target("avx512f"))) float chains512(int64_t n) {
  SPYRE_FMA_CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps)
  float out[16];
  _mm512_storeu_ps(out, s);
  return out[0];
}
__attribute__((target("avx2,fma"))) float chains256(int64_t n) {
  SPYRE_FMA_CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps)
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0];
}
#undef SPYRE_FMA_CHAINS

/// One core's memory bandwidth: memcpy between two 256 MiB buffers (far beyond the caches),
/// counted as bytes read + bytes written per second, best of 3.
double hostMemcpyGBps() {
  const size_t bytes = 256ull << 20;
  std::vector<uint8_t> a(bytes, 1), b(bytes, 2);
  double best = 0;
  for (int r = 0; r < 3; ++r) {
    auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    best = std::max(best, 2.0 * static_cast<double>(bytes) / (msSince(t0) * 1e-3) / 1e9);
    std::swap(a, b);
  }
  return best;
}

/// GFLOP/s of one core running only fp32 FMAs at the widest vector width the host has (best of
/// 5 runs of ~20 ms); 0 if the host has neither AVX-512F nor AVX2+FMA.
double hostFmaPeakGflops() {
  bool w512 = __builtin_cpu_supports("avx512f"), w256 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (!w512 && !w256)
    return 0;
  const int64_t iters = 2000000;
  float sink = 0;
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    auto t0 = Clock::now();
    sink += w512 ? chains512(iters) : chains256(iters);
    double s = msSince(t0) * 1e-3;
    best = std::max(best, static_cast<double>(iters) * 12 * (w512 ? 16 : 8) * 2 / s / 1e9);
  }
  volatile float keep = sink;
  (void)keep;
  return best;
}

// ---------------------------------------------------------------------------------------------
// Workloads

struct Workload {
  std::string name;
  std::string what; ///< one-line description for --list
  std::function<frontend::Graph()> build;
  bench::NativeSpec native;
};

using Shape = std::vector<int64_t>;
frontend::Attr dims(std::vector<double> d) { return frontend::Attr(std::move(d)); }

frontend::Graph singleOpGraph(const std::string &op, const Shape &shape, HostType dt) {
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

/// Workloads selected by a comma list of names; a name also selects every workload it prefixes
/// (`softmax` = both softmaxes, `vector_add` = vector_add_4096); `all` selects everything.
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

// ---------------------------------------------------------------------------------------------
// Running one workload

struct Options {
  std::string engine = "both";
  jit::OptTier tier = jit::OptTier::O2;
  int threads = 1, cores = 32, reps = 20, interpReps = 0;
  double interpBudgetS = 200;
  bool native = true;
  bool profile = false; ///< --profile: host time per kernel of the JIT runs
  std::string dumpDir;  ///< --dump: listings, LLVM IR and objects of the JIT run
};

struct RunStats {
  bool ran = false;
  std::string note;
  int reps = 0;
  double medianMs = 0, minMs = 0, maxMs = 0;
  /// --profile: per launch of the plan, the median over the timed runs of its wall time and of
  /// the summed time of its cores' phase code (sim::LaunchTimes).
  std::vector<sim::LaunchTimes> perLaunch;
};

struct WorkloadResult {
  std::string name;
  std::string error; ///< the frontend/backend refused the workload (reported, not fatal)
  size_t kernels = 0;
  int64_t sticks = 0; ///< sticks of every plan buffer (inputs, intermediates, outputs)
  double flops = 0;   ///< 2·M·N·K of the graph's matmuls
  // JIT compile: backend (SuperDSC -> kernel, verifier, timing) and engine prepare, cold (empty
  // memory cache, no disk cache) and on a hit (a second Executable on the same engine).
  double backendMs = 0, coldPrepareMs = 0, hitPrepareMs = 0;
  jit::CacheStats cache;
  RunStats jit, interp;
  double interpEstimateS = 0;
  // Simulated device time (static timing model, overlapped mode) and its breakdown.
  double simUs = 0, simOverlappedUs = 0, simSerialUs = 0, launchUs = 0, barrierUs = 0;
  double unitUs[5] = {0, 0, 0, 0, 0}; ///< DMA LSU SFP PT RING: Σ kernels Σ phases max over cores
  uint64_t ddrBytes = 0, lsuSticks = 0, sfpStickOps = 0, ptMacs = 0;
  bench::NativeResult native;
};
const char *const kUnitNames[5] = {"DMA", "LSU", "SFP", "PT", "RING"};

double graphFlops(const frontend::Graph &g) {
  double f = 0;
  for (const auto &n : g.nodes)
    if (n.op == "matmul") {
      const auto &out = g.values[n.output].shape;
      const auto &a = g.values[n.inputs[0]].shape;
      double elems = 1;
      for (int64_t d : out)
        elems *= static_cast<double>(d);
      f += 2 * elems * static_cast<double>(a.back());
    }
  return f;
}

/// Random DL16 / fp32 sticks in the inputs of `plan`, at addresses from `mem`.
std::vector<uint64_t> allocBuffers(const isa::JobPlan &plan, sim::DeviceMemory &mem) {
  std::vector<uint64_t> addr;
  std::mt19937 gen(1);
  std::normal_distribution<float> nd(0, 1);
  for (const auto &b : plan.buffers) {
    addr.push_back(mem.allocate(b.layout.deviceBytes()));
    if (b.kind == isa::BufferSpec::Kind::Input) {
      uint8_t *p = mem.at(addr.back(), b.layout.deviceBytes());
      int64_t n = b.layout.deviceBytes() / 4;
      for (int64_t i = 0; i < n; ++i) {
        float v = nd(gen);
        if (b.layout.device_dtype == DataFormat::SEN169_FP16) {
          uint16_t h[2] = {dl16::fromFloat(v), dl16::fromFloat(-v)};
          std::memcpy(p + 4 * i, h, 4);
        } else {
          std::memcpy(p + 4 * i, &v, 4);
        }
      }
    }
  }
  return addr;
}

void progress(const std::string &what) { std::cerr << "[bench] " << what << "\n" << std::flush; }

/// One warm-up run (the only one recorded in SPYRE_TRACE) and `reps` timed runs.
RunStats timeRuns(const sim::Executable &exe, const isa::JobPlan &plan, int threads, int reps, bool trace,
                  const std::string &what, bool profile = false) {
  sim::DeviceMemory mem(64ull << 30);
  sim::Runtime rt(threads, 32);
  auto addr = allocBuffers(plan, mem);
  auto tw = Clock::now();
  {
    std::optional<sim::trace::Pause> pause;
    if (!trace)
      pause.emplace();
    exe.run(rt, mem.base(), mem.capacity(), addr); // warm-up
  }
  double warmMs = msSince(tw);
  sim::trace::Pause pause;
  std::vector<double> ms;
  rt.setProfiling(profile);
  auto start = Clock::now();
  for (int i = 0; i < reps; ++i) {
    auto s = Clock::now();
    exe.run(rt, mem.base(), mem.capacity(), addr);
    ms.push_back(msSince(s));
    if (warmMs > 500 && i + 1 < reps)
      std::cerr << "\r[bench]   " << what << " rep " << (i + 1) << "/" << reps << " (" << static_cast<int>(msSince(start) / 1e3)
                << " s)" << std::flush;
  }
  if (warmMs > 500 && reps > 1)
    std::cerr << "\n";
  std::sort(ms.begin(), ms.end());
  RunStats r;
  if (profile) {
    // launchTimes() holds reps × launches entries in run order.
    const auto &lt = rt.launchTimes();
    size_t n = lt.size() / static_cast<size_t>(reps);
    for (size_t i = 0; i < n; ++i) {
      std::vector<double> wall, core;
      for (size_t k = i; k < lt.size(); k += n) {
        wall.push_back(lt[k].wallMs);
        core.push_back(lt[k].coreMs);
      }
      std::sort(wall.begin(), wall.end());
      std::sort(core.begin(), core.end());
      sim::LaunchTimes t = lt[i];
      t.wallMs = wall[wall.size() / 2];
      t.coreMs = core[core.size() / 2];
      r.perLaunch.push_back(t);
    }
  }
  r.ran = true;
  r.reps = reps;
  r.medianMs = ms[ms.size() / 2];
  r.minMs = ms.front();
  r.maxMs = ms.back();
  return r;
}

/// Rough interpreter time of one run, from the timing model's work counters (calibrated on this
/// machine's interpreter: see docs/performance.md). Only used to skip hopeless interpreter runs.
double estimateInterpSeconds(const WorkloadResult &w) {
  // Measured at 2 threads: ~400 ns per LSU stick / SFP stick-op, ~10 ns per PT MAC, ~0.5 ns
  // per DDR byte; the estimate only has to be right within a factor of a few.
  return (static_cast<double>(w.lsuSticks) + static_cast<double>(w.sfpStickOps)) * 400e-9 +
         static_cast<double>(w.ptMacs) * 10e-9 + static_cast<double>(w.ddrBytes) * 0.5e-9;
}

WorkloadResult runWorkload(const std::string &name, const frontend::Graph &g, const bench::NativeSpec *native,
                           const Options &o) {
  WorkloadResult w;
  w.name = name;
  sim::trace::setLabel(name);
  isa::JobPlan plan = frontend::compileGraph(g, {o.cores, o.dumpDir});
  w.kernels = plan.launches.size();
  w.flops = graphFlops(g);
  for (const auto &b : plan.buffers)
    w.sticks += b.layout.deviceBytes() / 128;

  const isa::HardwareConfig hw;
  for (const auto &l : plan.launches) {
    isa::TimingReport rep = isa::timeKernel(isa::compileSuperDsc(l.sdsc), hw);
    w.simUs += rep.scheduledUs;
    w.simOverlappedUs += rep.overlappedUs;
    w.simSerialUs += rep.serialUs;
    w.launchUs += rep.launchUs;
    w.barrierUs += rep.barrierUs;
    w.ddrBytes += rep.ddrBytes;
    w.lsuSticks += rep.lsuSticks;
    w.sfpStickOps += rep.sfpStickOps;
    w.ptMacs += rep.ptMacs;
    for (int p = 0; p < rep.numPhases(); ++p) {
      double mx[5] = {0, 0, 0, 0, 0};
      for (const auto &core : rep.perCorePhase) {
        if (p >= static_cast<int>(core.size()))
          continue;
        const auto &u = core[p];
        const double c[5] = {u.dma, u.lsu, u.sfp, u.pt, u.ring};
        for (int k = 0; k < 5; ++k)
          mx[k] = std::max(mx[k], c[k]);
      }
      for (int k = 0; k < 5; ++k)
        w.unitUs[k] += mx[k] / hw.cyclesPerUs();
    }
  }

  bool runJit = o.engine != "interp", runInterp = o.engine != "jit";
  if (runJit) {
    progress(name + ": JIT compile (" + std::to_string(w.kernels) + " kernel(s))");
    jit::clearMemoryCache();
    jit::JitEngine engine(benchJit(o.tier, o.dumpDir, "off", true));
    sim::Executable exe(plan, engine, o.dumpDir);
    w.backendMs = exe.compileMs();
    w.coldPrepareMs = exe.prepareMs();
    {
      sim::Executable again(plan, engine); // same kernels: in-memory code cache hits
      w.hitPrepareMs = again.prepareMs();
    }
    w.cache = engine.cacheStats();
    progress(name + ": JIT runs");
    w.jit = timeRuns(exe, plan, o.threads, o.reps, true, name + " jit", o.profile);
  }
  if (runInterp) {
    w.interpEstimateS = estimateInterpSeconds(w);
    int reps = o.interpReps > 0 ? o.interpReps : std::max(1, o.reps / 4);
    if (w.interpEstimateS * (reps + 1) > o.interpBudgetS && w.interpEstimateS > o.interpBudgetS / 2) {
      char b[160];
      std::snprintf(b, sizeof b, "skipped: ~%.0f s per run estimated (--interp-budget %.0f s)", w.interpEstimateS,
                    o.interpBudgetS);
      w.interp.note = b;
      progress(name + ": interpreter " + b);
    } else {
      if (w.interpEstimateS * (reps + 1) > o.interpBudgetS)
        reps = 1;
      progress(name + ": interpreter runs (" + std::to_string(reps) + ")");
      auto engine = sim::makeInterpreter();
      sim::Executable exe(plan, *engine);
      w.interp = timeRuns(exe, plan, o.threads, reps, !runJit, name + " interp");
    }
  }
  if (o.native && native) {
    progress(name + ": libtorch CPU");
    w.native = bench::runNative(*native, o.threads, o.reps);
  } else {
    w.native.note = o.native ? "no baseline for this op" : "--native off";
  }
  return w;
}

// ---------------------------------------------------------------------------------------------
// Output

std::string fmt(const char *f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string jsonStr(const std::string &v) {
  std::string o = "\"";
  for (char c : v)
    if (c == '"' || c == '\\')
      o += '\\', o += c;
    else
      o += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  return o + "\"";
}

void printJson(const std::vector<WorkloadResult> &rs, const std::vector<CompileResult> &compiles, const Options &o) {
  auto n = [](double v) { return fmt("%.6g", v); };
  std::cout << "[";
  bool firstObj = true;
  for (const auto &w : rs) {
    std::cout << (firstObj ? "" : ",") << "\n{\"workload\":\"" << w.name << "\",\"kernels\":" << w.kernels
              << ",\"sticks\":" << w.sticks << ",\"flops\":" << n(w.flops) << ",\"threads\":" << o.threads
              << ",\"tier\":\"" << (o.tier == jit::OptTier::O0 ? "O0" : "O2") << "\"";
    firstObj = false;
    if (!w.error.empty()) {
      std::cout << ",\"error\":" << jsonStr(w.error) << "}";
      continue;
    }
    if (w.jit.ran) {
      std::cout << ",\"jit\":{\"median_ms\":" << n(w.jit.medianMs) << ",\"min_ms\":" << n(w.jit.minMs)
                << ",\"max_ms\":" << n(w.jit.maxMs) << ",\"reps\":" << w.jit.reps
                << ",\"sticks_per_s\":" << n(w.sticks / (w.jit.medianMs * 1e-3))
                << ",\"gflops\":" << n(w.flops / (w.jit.medianMs * 1e6)) << ",\"backend_ms\":" << n(w.backendMs)
                << ",\"compile_cold_ms\":" << n(w.coldPrepareMs) << ",\"compile_hit_ms\":" << n(w.hitPrepareMs)
                << ",\"cache_hits\":" << w.cache.hits() << ",\"cache_misses\":" << w.cache.misses << "}";
    }
    std::cout << ",\"interp\":{\"ran\":" << (w.interp.ran ? "true" : "false");
    if (w.interp.ran)
      std::cout << ",\"median_ms\":" << n(w.interp.medianMs) << ",\"min_ms\":" << n(w.interp.minMs)
                << ",\"max_ms\":" << n(w.interp.maxMs) << ",\"reps\":" << w.interp.reps;
    if (!w.interp.note.empty())
      std::cout << ",\"note\":" << jsonStr(w.interp.note);
    std::cout << "}";
    if (w.jit.ran && w.interp.ran)
      std::cout << ",\"jit_vs_interp\":" << n(w.interp.medianMs / w.jit.medianMs);
    std::cout << ",\"native\":{\"available\":" << (w.native.available ? "true" : "false");
    if (w.native.available)
      std::cout << ",\"lib\":\"" << bench::nativeVersion() << "\",\"dtype\":\"" << w.native.dtype
                << "\",\"median_ms\":" << n(w.native.medianMs) << ",\"min_ms\":" << n(w.native.minMs)
                << ",\"f32_median_ms\":" << n(w.native.f32MedianMs);
    if (!w.native.note.empty())
      std::cout << ",\"note\":" << jsonStr(w.native.note);
    std::cout << "}";
    if (w.jit.ran && w.native.available)
      std::cout << ",\"jit_vs_native\":" << n(w.jit.medianMs / w.native.medianMs);
    std::cout << ",\"sim\":{\"us\":" << n(w.simUs) << ",\"overlapped_us\":" << n(w.simOverlappedUs)
              << ",\"serial_us\":" << n(w.simSerialUs)
              << ",\"launch_us\":" << n(w.launchUs) << ",\"barrier_us\":" << n(w.barrierUs);
    for (int k = 0; k < 5; ++k)
      std::cout << ",\"" << kUnitNames[k] << "_us\":" << n(w.unitUs[k]);
    std::cout << ",\"ddr_bytes\":" << w.ddrBytes << ",\"lsu_sticks\":" << w.lsuSticks
              << ",\"sfp_stick_ops\":" << w.sfpStickOps << ",\"pt_macs\":" << w.ptMacs << "}}";
  }
  for (const auto &c : compiles)
    std::cout << ",\n{\"compile\":\"" << c.tier << "\",\"kernels\":" << c.kernels << ",\"miss_ms\":" << c.missMs << ",\"miss_min_ms\":" << c.missMinMs << ",\"miss_cpu_ms\":" << c.missCpuMs
              << ",\"lower_ms\":" << c.lowerMs << ",\"opt_ms\":" << c.optMs << ",\"codegen_ms\":" << c.codegenMs << ",\"cg_setup_ms\":" << c.cgSetupMs
              << ",\"lookup_ms\":" << c.lookupMs
              << ",\"link_ms\":" << c.linkMs << ",\"memory_hit_ms\":" << c.memoryHitMs
              << ",\"disk_hit_ms\":" << c.diskHitMs << "}";
  std::cout << "\n]\n";
}

/// The compile section: per-phase medians of cold prepares, then cache hits.
void printCompiles(const std::vector<CompileResult> &compiles, int compileReps) {
  if (compiles.empty())
    return;
  printf("\nJIT prepare ms per kernel (median; %zu kernel(s) x %d reps; codegen includes cg setup, link includes "
         "lookup):\n",
         compiles[0].kernels, compileReps);
  printf("%-5s %9s %9s %9s %8s %8s %9s %9s %8s %8s %11s %9s\n", "tier", "miss", "miss min", "miss CPU", "lower", "opt",
         "codegen", "cg setup", "link", "lookup", "memory hit", "disk hit");
  for (const auto &c : compiles)
    printf("%-5s %9.3f %9.3f %9.3f %8.3f %8.3f %9.3f %9.3f %8.3f %8.3f %11.3f %9.3f\n", c.tier.c_str(), c.missMs,
           c.missMinMs, c.missCpuMs, c.lowerMs, c.optMs, c.codegenMs, c.cgSetupMs, c.linkMs, c.lookupMs, c.memoryHitMs,
           c.diskHitMs);
}

void printTables(const std::vector<WorkloadResult> &rs, const std::vector<CompileResult> &compiles, int compileReps,
                 const Options &o) {
  std::string lib = bench::nativeVersion();
  printf("host: %d thread(s), JIT tier %s; libtorch baseline: %s\n\n", o.threads, o.tier == jit::OptTier::O0 ? "O0" : "O2",
         lib.empty() ? "n/a (built without libtorch)" : (lib + ", same process, same thread count").c_str());
  printf("%-22s %4s %25s %10s %9s %9s %8s %10s %10s %9s %16s %9s\n", "workload", "krn", "JIT ms med (min..max)",
         "Msticks/s", "GFLOP/s", "cold ms", "hit ms", "sim us", "interp ms", "JIT/int", "torch ms (dtype)",
         "JIT/torch");
  for (const auto &w : rs) {
    if (!w.error.empty()) {
      printf("%-22s  error: %s\n", w.name.c_str(), w.error.c_str());
      continue;
    }
    std::string jitMs = w.jit.ran ? fmt("%.3f", w.jit.medianMs) + " (" + fmt("%.3f", w.jit.minMs) + ".." +
                                        fmt("%.3f", w.jit.maxMs) + ")"
                                  : "-";
    std::string sps = w.jit.ran ? fmt("%.1f", w.sticks / (w.jit.medianMs * 1e-3) / 1e6) : "-";
    std::string gf = w.jit.ran && w.flops > 0 ? fmt("%.2f", w.flops / (w.jit.medianMs * 1e6)) : "-";
    std::string interp = w.interp.ran ? fmt("%.2f", w.interp.medianMs) : "n/a";
    std::string ratio = w.jit.ran && w.interp.ran ? fmt("%.1fx", w.interp.medianMs / w.jit.medianMs) : "-";
    std::string nat = w.native.available ? fmt("%.3f", w.native.medianMs) + " (" + w.native.dtype + ")" : "n/a";
    std::string natR = w.jit.ran && w.native.available ? fmt("%.2fx", w.jit.medianMs / w.native.medianMs) : "-";
    printf("%-22s %4zu %25s %10s %9s %9.1f %8.2f %10.2f %10s %9s %16s %9s\n", w.name.c_str(), w.kernels,
           jitMs.c_str(), sps.c_str(), gf.c_str(), w.backendMs + w.coldPrepareMs, w.hitPrepareMs, w.simUs,
           interp.c_str(), ratio.c_str(), nat.c_str(), natR.c_str());
  }
  bool anyFlops = false;
  for (const auto &w : rs)
    anyFlops |= w.error.empty() && w.flops > 0 && w.jit.ran;
  if (anyFlops) {
    double peak = hostFmaPeakGflops();
    printf("\nhost fp32 FMA peak of one core, measured now: %.1f GFLOP/s\n", peak);
    for (const auto &w : rs)
      if (w.error.empty() && w.flops > 0 && w.jit.ran && peak > 0)
        printf("%-22s JIT %.2f GFLOP/s = %.1f %% of the peak x %d thread(s)\n", w.name.c_str(),
               w.flops / (w.jit.medianMs * 1e6), 100.0 * w.flops / (w.jit.medianMs * 1e6) / (peak * o.threads), o.threads);
  }
  bool anyStream = false;
  for (const auto &w : rs)
    anyStream |= w.error.empty() && w.flops == 0 && w.jit.ran && w.ddrBytes > (8u << 20);
  if (anyStream) {
    double bw = hostMemcpyGBps();
    printf("\nhost memory bandwidth of one core (memcpy, read + write), measured now: %.1f GB/s\n", bw);
    for (const auto &w : rs)
      if (w.error.empty() && w.flops == 0 && w.jit.ran && w.ddrBytes > (8u << 20))
        printf("%-22s JIT simulated-DDR traffic %.2f GB/s = %.1f %% of it (the host also copies every DDR byte\n"
               "%-22s through LX, so it moves at least twice that)\n",
               w.name.c_str(), static_cast<double>(w.ddrBytes) / (w.jit.medianMs * 1e6),
               100.0 * static_cast<double>(w.ddrBytes) / (w.jit.medianMs * 1e6) / (bw * o.threads), "");
  }
  printf("\nsimulated device time (static timing model: sim = scheduled replay, between the overlapped and serial bounds; per unit: sum over kernels and phases of the busiest core):\n");
  printf("%-22s %10s %10s %10s %8s %9s %9s %9s %9s %10s %10s %10s\n", "workload", "sim us", "overlap us", "serial us", "launch",
         "DMA us", "LSU us", "SFP us", "PT us", "DDR MB", "sim TF/s", "sim GB/s");
  for (const auto &w : rs)
    if (w.error.empty())
      printf("%-22s %10.2f %10.2f %10.2f %8.2f %9.2f %9.2f %9.2f %9.2f %10.2f %10.3f %10.1f\n", w.name.c_str(), w.simUs,
           w.simOverlappedUs, w.simSerialUs, w.launchUs + w.barrierUs, w.unitUs[0], w.unitUs[1], w.unitUs[2], w.unitUs[3],
           w.ddrBytes / 1e6, 2.0 * static_cast<double>(w.ptMacs) / (w.simUs * 1e6), w.ddrBytes / (w.simUs * 1e3));
  printf("\n");
  for (const auto &w : rs) {
    if (w.jit.ran && w.interp.ran)
      printf("%s: JIT vs interpreter: %.1fx (interpreter median of %d)\n", w.name.c_str(),
             w.interp.medianMs / w.jit.medianMs, w.interp.reps);
    else if (!w.interp.note.empty())
      printf("%s: interpreter %s\n", w.name.c_str(), w.interp.note.c_str());
    if (w.jit.ran)
      printf("%s: JIT code cache (this run): %llu hit(s), %llu miss(es)\n", w.name.c_str(),
             static_cast<unsigned long long>(w.cache.hits()), static_cast<unsigned long long>(w.cache.misses));
    if (!w.native.note.empty())
      printf("%s: libtorch: %s\n", w.name.c_str(), w.native.note.c_str());
    if (w.native.available && w.native.dtype == "f16" && w.native.f32MedianMs > 0 && w.jit.ran)
      printf("%s: libtorch f32: %.3f ms (JIT/torch-f32 %.2fx)\n", w.name.c_str(), w.native.f32MedianMs,
             w.jit.medianMs / w.native.f32MedianMs);
  }
  for (const auto &w : rs) {
    if (w.jit.perLaunch.empty())
      continue;
    printf("\n%s: JIT host time per kernel (--profile; medians; idle = wall - core ms / min(threads, "
           "cores): barriers and load imbalance)\n",
           w.name.c_str());
    printf("  %-28s %5s %6s %10s %10s %10s\n", "kernel", "cores", "phases", "wall ms", "core ms", "idle ms");
    double tw = 0, tc = 0, ti = 0;
    for (const auto &l : w.jit.perLaunch) {
      double idle = l.wallMs - l.coreMs / std::min(o.threads, std::max(1, l.cores));
      printf("  %-28s %5d %6d %10.3f %10.3f %10.3f\n", l.kernel.c_str(), l.cores, l.phases, l.wallMs, l.coreMs, idle);
      tw += l.wallMs;
      tc += l.coreMs;
      ti += idle;
    }
    printf("  %-28s %5s %6s %10.3f %10.3f %10.3f\n", "total", "", "", tw, tc, ti);
  }
  printCompiles(compiles, compileReps);
  std::string tr = sim::trace::path();
  if (!tr.empty())
    printf("\nsimulated-time trace (one warm-up run per workload): %s\n", tr.c_str());
}

// ---------------------------------------------------------------------------------------------
// Stick-op microbenchmark: one core, operands resident in LX (host L2), no DMA.

struct MicroOp {
  const char *name;
  const char *body; ///< one iteration; r1 = byte offset of the stick
  int lsu, sfp;     ///< LSU sticks and SFP stick-ops per iteration (the timing model's units)
};

const MicroOp kMicroOps[] = {
    {"add.dl16", "ld.dl16 v0, lx[r1]\n ld.dl16 v1, lx[r1+0x40000]\n add.dl16 v2, v0, v1\n st.dl16 lx[r1+0x80000], v2", 3, 1},
    {"mul.dl16 x2", "ld.dl16 v0, lx[r1]\n ld.dl16 v1, lx[r1+0x40000]\n mul.dl16 v2, v0, v1\n mul.dl16 v3, v2, v0\n"
                    " st.dl16 lx[r1+0x80000], v3", 3, 2},
    {"relu.dl16", "ld.dl16 v0, lx[r1]\n relu.dl16 v2, v0\n st.dl16 lx[r1+0x80000], v2", 2, 1},
    {"exp.dl16", "ld.dl16 v0, lx[r1]\n exp.dl16 v2, v0\n st.dl16 lx[r1+0x80000], v2", 2, 1},
    {"add.f32", "ld.f32 v0, lx[r1]\n ld.f32 v1, lx[r1+0x40000]\n add.f32 v2, v0, v1\n st.f32 lx[r1+0x80000], v2", 3, 1},
};

struct MicroResult {
  std::string name;
  double jitNs = 0, interpNs = 0; ///< per iteration
  int lsu = 0, sfp = 0;
};

/// ns per loop iteration of `op` (2048 sticks x `outer` per launch), median of `reps` launches.
double microRun(sim::Engine &engine, const MicroOp &op, int outer, int reps) {
  std::string text = std::string(".kernel micro cores=1\n.args x\n.core 0\n    loop ") + std::to_string(outer) +
                     " {\n    li r1, 0\n    loop 2048 {\n " + op.body + "\n addi r1, r1, 128\n    }\n    }\n";
  isa::Kernel k = isa::parseKernel(text, op.name);
  auto pk = engine.prepare(k);
  sim::DeviceMemory mem(1 << 20);
  sim::Runtime rt(1, 1);
  sim::LaunchArgs la;
  la.ddr = mem.base();
  la.ddrSize = mem.capacity();
  la.base = {mem.allocate(128)};
  la.size = {128};
  std::mt19937 gen(3);
  std::normal_distribution<float> nd(0, 2);
  uint8_t *lx = rt.cores()[0].lx;
  for (int64_t i = 0; i < 3 * 2048 * 128 / 4; ++i) { // three 256 KiB arrays: DL16 pairs or fp32
    float v = nd(gen);
    uint16_t h[2] = {dl16::fromFloat(v), dl16::fromFloat(-v)};
    if (std::strstr(op.name, "f32"))
      std::memcpy(lx + 4 * i, &v, 4);
    else
      std::memcpy(lx + 4 * i, h, 4);
  }
  rt.launch(*pk, la); // warm-up
  std::vector<double> ns;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    rt.launch(*pk, la);
    ns.push_back(msSince(t0) * 1e6 / (2048.0 * outer));
  }
  return median(ns);
}

std::vector<MicroResult> microBench(const Options &o) {
  std::vector<MicroResult> out;
  jit::JitEngine jit(benchJit(o.tier, "", "off", false));
  auto interp = sim::makeInterpreter();
  for (const auto &op : kMicroOps) {
    progress(std::string("micro ") + op.name);
    MicroResult r;
    r.name = op.name;
    r.lsu = op.lsu;
    r.sfp = op.sfp;
    r.jitNs = microRun(jit, op, 16, std::max(5, o.reps));
    if (o.engine != "jit")
      r.interpNs = microRun(*interp, op, 1, 3);
    out.push_back(r);
  }
  return out;
}

void printMicro(const std::vector<MicroResult> &rs, bool json) {
  if (json) {
    std::cout << "[";
    for (size_t i = 0; i < rs.size(); ++i) {
      const auto &r = rs[i];
      std::cout << (i ? "," : "") << "\n{\"micro\":\"" << r.name << "\",\"jit_ns_per_iter\":" << r.jitNs
                << ",\"interp_ns_per_iter\":" << r.interpNs << ",\"lsu\":" << r.lsu << ",\"sfp\":" << r.sfp << "}";
    }
    std::cout << "\n]\n";
    return;
  }
  printf("stick-op microbenchmark: 1 core, 2048-stick operands resident in LX (host L2), no DMA; stick-ops = LSU\n"
         "sticks + SFP stick-ops (the timing model's units), output sticks = loop iterations\n");
  printf("%-12s %12s %14s %16s %14s %14s %9s\n", "op", "JIT ns/iter", "JIT Mstick-ops/s", "JIT Mout-sticks/s",
         "interp ns/iter", "interp Msops/s", "JIT/int");
  for (const auto &r : rs) {
    double ops = r.lsu + r.sfp;
    printf("%-12s %12.2f %16.1f %16.1f %14.1f %14.2f %8.1fx\n", r.name.c_str(), r.jitNs, ops / r.jitNs * 1e3,
           1e3 / r.jitNs, r.interpNs, r.interpNs > 0 ? ops / r.interpNs * 1e3 : 0.0,
           r.interpNs > 0 ? r.interpNs / r.jitNs : 0.0);
  }
}

} // namespace

int main(int argc, char **argv) {
  sim::trace::configure(sim::trace::TraceOptions::fromEnv(processEnv())); // SPYRE_TRACE
  po::options_description opts(
      "spyre-jit-bench [options]\n\n"
      "Runs simulated Spyre workloads (graph -> frontend -> SuperDSC -> backend -> engine) repeatedly\n"
      "and reports host wall time (median/min/max), throughput (sticks/s; GFLOP/s for matmuls), JIT\n"
      "compile time cold and on a code-cache hit, the simulated device time with its per-unit\n"
      "breakdown, the reference interpreter's time and the same op on libtorch CPU in this process.\n"
      "--workload NAME|all runs named workloads (--list); otherwise one op (--op/--shape/--dtype).\n"
      "SPYRE_TRACE=file.json writes a Chrome/Perfetto trace of simulated time (one run per workload).\n"
      "Options");
  opts.add_options()("help,h", "show this help")("list", "list the workloads")(
      "workload", po::value<std::string>(), "workload name(s), comma separated, a name prefix, or all")(
      "op", po::value<std::string>()->default_value("add"),
      "single-op mode: add sub mul div maximum minimum relu neg abs clone exp ...")(
      "shape", po::value<std::string>()->default_value("4096x1024"), "shape, e.g. 4096x1024 (matmul: MxKxN)")(
      "dtype", po::value<std::string>()->default_value("f16"), "f16 or f32")(
      "engine", po::value<std::string>()->default_value("both"), "jit, interp or both")(
      "tier", po::value<std::string>()->default_value("O2"),
      "JIT tier O0 or O2 (the compile section times both unless this is given)")(
      "threads", po::value<int>()->default_value(sim::RuntimeOptions::fromEnv(processEnv()).threads),
      "host threads (SPYRE_SIM_THREADS)")(
      "cores", po::value<int>(), "simulated cores (default SENCORES or 32)")(
      "reps", po::value<int>()->default_value(20), "timed repetitions (JIT and libtorch)")(
      "interp-reps", po::value<int>()->default_value(0), "interpreter repetitions (default reps/4, at least 1)")(
      "interp-budget", po::value<double>()->default_value(200),
      "skip the interpreter when its estimated time exceeds this many seconds")(
      "native", po::value<std::string>()->default_value("on"), "libtorch CPU baseline: on or off")(
      "compile-reps", po::value<int>()->default_value(5),
      "single-op mode: JIT prepare-time repetitions per kernel and tier (O0, O2): cold (no cache), memory-cache hit "
      "and disk-cache hit (private temporary directory); 0 skips")(
      "compile-only", "single-op mode: only the JIT prepare-time section (--compile-reps), no runs")(
      "listing", po::value<std::string>(),
      "JIT prepare-time section (as --compile-only) for the kernel of this ISA listing file instead of an op")(
      "micro", "stick-op microbenchmark instead: add/mul/relu/exp per stick on LX-resident data, JIT vs interpreter")(
      "dump", po::value<std::string>(), "write SuperDSC, ISA listings, LLVM IR (before/after passes) and objects here")(
      "profile", "also print the JIT's host time per kernel (wall, summed core time, idle host threads)")(
      "json", "print JSON instead of a table");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, opts), vm);
    po::notify(vm);
  } catch (const po::error &e) {
    std::cerr << "spyre-jit-bench: " << e.what() << "\n" << opts << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  if (vm.count("list")) {
    for (const auto &w : workloads())
      printf("%-22s %s\n", w.name.c_str(), w.what.c_str());
    return 0;
  }
  try {
    Options o;
    std::string tierS = vm["tier"].as<std::string>();
    o.tier = tierS == "O0" ? jit::OptTier::O0 : tierS == "O2" ? jit::OptTier::O2 : throw Error("bad --tier " + tierS);
    o.cores = vm.count("cores") ? vm["cores"].as<int>() : frontend::senCoresFromEnv();
    o.reps = std::max(1, vm["reps"].as<int>());
    o.interpReps = vm["interp-reps"].as<int>();
    o.interpBudgetS = vm["interp-budget"].as<double>();
    o.threads = std::max(1, vm["threads"].as<int>());
    o.engine = vm["engine"].as<std::string>();
    if (o.engine != "jit" && o.engine != "interp" && o.engine != "both")
      throw Error("unknown --engine '" + o.engine + "' (jit, interp, both)");
    std::string nat = vm["native"].as<std::string>();
    o.native = nat == "on" ? true : nat == "off" ? false : throw Error("bad --native " + nat + " (on, off)");
    o.profile = vm.count("profile") > 0;
    if (vm.count("dump")) {
      o.dumpDir = vm["dump"].as<std::string>();
      std::filesystem::create_directories(o.dumpDir);
    }

    std::vector<WorkloadResult> results;
    std::vector<CompileResult> compiles;
    int compileReps = vm["compile-reps"].as<int>();
    // The compile section times both tiers unless --tier is given.
    std::vector<jit::OptTier> compileTiers{jit::OptTier::O0, jit::OptTier::O2};
    if (!vm["tier"].defaulted())
      compileTiers = {o.tier};
    if (vm.count("micro")) {
      printMicro(microBench(o), vm.count("json") > 0);
      return 0;
    }
    if (vm.count("listing")) {
      std::string path = vm["listing"].as<std::string>();
      std::ifstream in(path);
      if (!in)
        throw Error("cannot read listing '" + path + "'");
      std::stringstream text;
      text << in.rdbuf();
      std::vector<isa::Kernel> kernels{isa::parseKernel(text.str(), path)};
      for (jit::OptTier t : compileTiers)
        compiles.push_back(compileBench(kernels, t, std::max(1, compileReps)));
      printCompiles(compiles, std::max(1, compileReps));
      return 0;
    } else if (vm.count("workload")) {
      auto ws = selectWorkloads(vm["workload"].as<std::string>());
      for (size_t i = 0; i < ws.size(); ++i) {
        progress("(" + std::to_string(i + 1) + "/" + std::to_string(ws.size()) + ") " + ws[i].name);
        try {
          results.push_back(runWorkload(ws[i].name, ws[i].build(), &ws[i].native, o));
        } catch (const std::exception &e) { // e.g. Unsupported: report and go on
          progress(ws[i].name + ": " + e.what());
          WorkloadResult w;
          w.name = ws[i].name;
          w.error = e.what();
          results.push_back(w);
        }
      }
    } else {
      auto shape = parseShape(vm["shape"].as<std::string>());
      std::string dts = vm["dtype"].as<std::string>();
      HostType dt = dts == "f16" ? HostType::F16 : dts == "f32" ? HostType::F32 : throw Error("bad --dtype " + dts);
      std::string op = vm["op"].as<std::string>();
      frontend::Graph g = singleOpGraph(op, shape, dt);
      if (compileReps > 0 && o.engine != "interp") {
        isa::JobPlan plan = frontend::compileGraph(g, {o.cores, ""});
        std::vector<isa::Kernel> kernels;
        for (const auto &l : plan.launches)
          kernels.push_back(isa::compileSuperDsc(l.sdsc));
        for (jit::OptTier t : compileTiers)
          compiles.push_back(compileBench(kernels, t, compileReps));
        jit::clearMemoryCache(); // the timed run below compiles as a fresh process would
      }
      if (vm.count("compile-only")) {
        printCompiles(compiles, compileReps);
        return 0;
      }
      bench::NativeSpec ns{op, {}};
      ns.f16 = dt == HostType::F16;
      for (const auto &in : g.inputs)
        ns.shapes.push_back(g.values[in].shape);
      results.push_back(runWorkload(op + "_" + vm["shape"].as<std::string>() + "_" + dts, g, &ns, o));
    }
    if (vm.count("json"))
      printJson(results, compiles, o);
    else
      printTables(results, compiles, compileReps, o);
  } catch (const std::exception &e) {
    std::cerr << "spyre-jit-bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
