// spyre-jit-bench measurements of the host itself (one core's fp32 FMA peak and memcpy
// bandwidth) and the stick-op microbenchmark (--micro).
#include "bench.h"
#include "spyre/isa/dl16.h"
#include "spyre/isa/listing.h"
#include "spyre/sim/device_memory.h"
#include "spyre/sim/engine.h"
#include <cstring>
#include <immintrin.h>
#include <random>

namespace spyre::bench {

namespace {


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


} // namespace

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

namespace {

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

} // namespace

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

} // namespace spyre::bench
