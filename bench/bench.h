// spyre-jit-bench's shared types: the options of a run, the results of a workload, of the JIT
// prepare-time section and of the stick-op microbenchmark, and the functions that make and print
// them (workloads.cpp: the workloads table; measure.cpp: running and timing one workload;
// micro.cpp: the host's own peaks and the stick-op microbenchmark; report.cpp: tables and JSON).
#pragma once
#include "native_baseline.h"
#include "spyre/backend/backend.h"
#include "spyre/frontend/compiler.h"
#include "spyre/frontend/graph.h"
#include "spyre/isa/env.h"
#include "spyre/isa/program.h"
#include "spyre/isa/timing.h"
#include "spyre/jit/jit_engine.h"
#include "spyre/sim/runtime.h"
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace spyre::bench {

using Clock = std::chrono::steady_clock;

inline double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
inline double minimum(const std::vector<double> &v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }

/// One progress line on stderr ("[bench] what").
void progress(const std::string &what);

/// JIT prepare time per kernel (median over the plan's kernels x reps), by cache state.
struct CompileResult {
  std::string tier;
  double missMinMs = 0, missMs = 0, missCpuMs = 0, lowerMs = 0, optMs = 0, codegenMs = 0, cgSetupMs = 0, linkMs = 0,
         lookupMs = 0, memoryHitMs = 0, diskHitMs = 0;
  size_t kernels = 0;
};

struct Options {
  std::string engine = "both";
  jit::OptTier tier = jit::OptTier::O2;
  int threads = 1, cores = 32, reps = 20, interpReps = 0;
  double interpBudgetS = 200;
  bool native = true;
  bool profile = false; ///< --profile: host time per kernel of the JIT runs
  std::string dumpDir;  ///< --dump: listings, LLVM IR and objects of the JIT run
  backend::BackendOptions backendOpts; ///< SPYRE_MULTICAST
};

struct RunStats {
  bool ran = false;
  std::string note;
  int reps = 0;
  double medianMs = 0, minMs = 0, maxMs = 0;
  double firstMs = 0; ///< the warm-up run (the first run of the prepared kernels)
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
  /// Simulated device time (static timing model) and its breakdown.
  isa::JobTiming sim;
  bench::NativeResult native;
};

struct Workload {
  std::string name;
  std::string what; ///< one-line description for --list
  std::function<frontend::Graph()> build;
  bench::NativeSpec native;
};

struct MicroResult {
  std::string name;
  double jitNs = 0, interpNs = 0; ///< per iteration
  int lsu = 0, sfp = 0;
};

// workloads.cpp
frontend::Graph singleOpGraph(const std::string &op, const std::vector<int64_t> &shape, HostType dt);
std::vector<Workload> workloads();
/// Workloads selected by a comma list of names; a name also selects every workload it prefixes
/// (`softmax` = both softmaxes, `vector_add` = vector_add_4096); `all` selects everything.
std::vector<Workload> selectWorkloads(const std::string &spec);

/// The process environment: read here, at the boundary (options.cpp), and nowhere in the libraries.
const Env &processEnv();
/// JIT options from the environment (SPYRE_JIT_TIMES, SPYRE_JIT_PASSES, ...) with the bench's own
/// tier, dump directory and caches.
jit::JitOptions benchJit(jit::OptTier tier, const std::string &dumpDir, const std::string &cacheDir, bool memoryCache);
/// The frontend's options from the environment (LX_PLANNING, ..), with the bench's core count and dump dir.
frontend::CompileOptions compileOptions(int cores, const std::string &dumpDir);
// measure.cpp
CompileResult compileBench(const std::vector<isa::Kernel> &kernels, jit::OptTier tier, int reps);
WorkloadResult runWorkload(const std::string &name, const frontend::Graph &g, const bench::NativeSpec *native,
                           const Options &o);

// micro.cpp
/// One core's memory bandwidth (memcpy, read + write), GB/s.
double hostMemcpyGBps();
/// GFLOP/s of one core running only fp32 FMAs; 0 without AVX-512F or AVX2+FMA.
double hostFmaPeakGflops();
std::vector<MicroResult> microBench(const Options &o);

// report.cpp
void printJson(const std::vector<WorkloadResult> &rs, const std::vector<CompileResult> &compiles, const Options &o);
/// The compile section: per-phase medians of cold prepares, then cache hits.
void printCompiles(const std::vector<CompileResult> &compiles, int compileReps);
void printTables(const std::vector<WorkloadResult> &rs, const std::vector<CompileResult> &compiles, int compileReps,
                 const Options &o);
void printMicro(const std::vector<MicroResult> &rs, bool json);

} // namespace spyre::bench
