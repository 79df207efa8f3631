// spyre-jit-bench measurements of one workload: compile it, time its kernels on the static
// timing model, run it on the JIT and the interpreter (and libtorch), and time JIT prepares.
#include "bench.h"
#include "spyre/frontend/compiler.h"
#include "spyre/backend/backend.h"
#include "spyre/isa/dl16.h"
#include "spyre/isa/hardware_config.h"
#include "spyre/isa/timing.h"
#include "spyre/sim/device_memory.h"
#include "spyre/sim/executable.h"
#include "spyre/sim/trace.h"
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <unistd.h>

namespace spyre::bench {

CompileResult compileBench(const std::vector<isa::Kernel> &kernels, jit::OptTier tier, int reps) {
  CompileResult r;
  r.tier = jit::tierName(tier);
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

namespace {


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

/// One warm-up run (the only one recorded in SPYRE_TRACE) and `reps` timed runs.
/// `tiered`: a tiered engine whose O2 code the timed runs wait for (after the warm-up run).
RunStats timeRuns(const sim::Executable &exe, const isa::JobPlan &plan, int threads, int reps, bool trace,
                  const std::string &what, bool profile = false, jit::JitEngine *tiered = nullptr) {
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
  if (tiered)
    tiered->waitForTierUp();
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
  r.firstMs = warmMs;
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
  return (static_cast<double>(w.sim.lsuSticks) + static_cast<double>(w.sim.sfpStickOps)) * 400e-9 +
         static_cast<double>(w.sim.ptMacs) * 10e-9 + static_cast<double>(w.sim.ddrBytes) * 0.5e-9;
}

} // namespace

void progress(const std::string &what) { std::cerr << "[bench] " << what << "\n" << std::flush; }

WorkloadResult runWorkload(const std::string &name, const frontend::Graph &g, const bench::NativeSpec *native,
                           const Options &o) {
  WorkloadResult w;
  w.name = name;
  sim::trace::setLabel(name);
  isa::JobPlan plan = frontend::compileGraph(g, compileOptions(o.cores, o.dumpDir));
  w.kernels = plan.launches.size();
  w.flops = graphFlops(g);
  for (const auto &b : plan.buffers)
    w.sticks += b.layout.deviceBytes() / 128;

  const isa::HardwareConfig hw;
  const backend::CompiledJob job = backend::compileJobPlan(plan, o.backendOpts, hw);
  for (const auto &ck : job.kernels)
    w.sim.add(isa::timeKernel(ck.kernel, hw), hw);

  bool runJit = o.engine != "interp", runInterp = o.engine != "jit";
  if (runJit) {
    progress(name + ": JIT compile (" + std::to_string(w.kernels) + " kernel(s))");
    jit::clearMemoryCache();
    jit::JitEngine engine(benchJit(o.tier, o.dumpDir, "off", true));
    sim::Executable exe(plan, job.kernels, engine, o.dumpDir);
    w.backendMs = job.compileMs;
    w.coldPrepareMs = exe.prepareMs();
    {
      sim::Executable again(plan, job.kernels, engine); // same kernels: in-memory code cache hits
      w.hitPrepareMs = again.prepareMs();
    }
    w.cache = engine.cacheStats();
    progress(name + ": JIT runs");
    w.jit = timeRuns(exe, plan, o.threads, o.reps, true, name + " jit", o.profile,
                     o.tier == jit::OptTier::Tiered ? &engine : nullptr);
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
      sim::Executable exe(plan, job.kernels, *engine);
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

} // namespace spyre::bench
