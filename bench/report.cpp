// spyre-jit-bench output: the workload tables, the JIT prepare-time section, the microbenchmark
// table, and the same results as JSON (--json).
#include "bench.h"
#include "spyre/sim/trace.h"
#include <cstdio>
#include <iostream>

namespace spyre::bench {

namespace {

const char *const kUnitNames[5] = {"DMA", "LSU", "SFP", "PT", "RING"};

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

} // namespace

void printJson(const std::vector<WorkloadResult> &rs, const std::vector<CompileResult> &compiles, const Options &o) {
  auto n = [](double v) { return fmt("%.6g", v); };
  std::cout << "[";
  bool firstObj = true;
  for (const auto &w : rs) {
    std::cout << (firstObj ? "" : ",") << "\n{\"workload\":\"" << w.name << "\",\"kernels\":" << w.kernels
              << ",\"sticks\":" << w.sticks << ",\"flops\":" << n(w.flops) << ",\"threads\":" << o.threads
              << ",\"tier\":\"" << jit::tierName(o.tier) << "\"";
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
                << ",\"first_run_ms\":" << n(w.coldPrepareMs + w.jit.firstMs)
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
    const isa::JobTiming &t = w.sim;
    std::cout << ",\"sim\":{\"us\":" << n(t.scheduledUs) << ",\"overlapped_us\":" << n(t.overlappedUs)
              << ",\"serial_us\":" << n(t.serialUs)
              << ",\"launch_us\":" << n(t.launchUs) << ",\"barrier_us\":" << n(t.barrierUs);
    const double unitUs[5] = {t.unitUs.dma, t.unitUs.lsu, t.unitUs.sfp, t.unitUs.pt, t.unitUs.ring};
    for (int k = 0; k < 5; ++k)
      std::cout << ",\"" << kUnitNames[k] << "_us\":" << n(unitUs[k]);
    std::cout << ",\"ddr_bytes\":" << t.ddrBytes << ",\"lsu_sticks\":" << t.lsuSticks
              << ",\"sfp_stick_ops\":" << t.sfpStickOps << ",\"pt_macs\":" << t.ptMacs << "}}";
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
  std::string lib = o.native ? bench::nativeVersion() : ""; // --native off: never loaded
  std::string baseline = !o.native      ? "off (--native off)"
                         : lib.empty() ? "n/a (" + bench::nativeUnavailable() + ")"
                                       : lib + ", same process, same thread count";
  printf("host: %d thread(s), JIT tier %s; libtorch baseline: %s\n\n", o.threads, jit::tierName(o.tier),
         baseline.c_str());
  printf("%-22s %4s %25s %10s %9s %9s %8s %9s %10s %10s %9s %16s %9s\n", "workload", "krn", "JIT ms med (min..max)",
         "Msticks/s", "GFLOP/s", "cold ms", "hit ms", "1st run", "sim us", "interp ms", "JIT/int", "torch ms (dtype)",
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
    printf("%-22s %4zu %25s %10s %9s %9.1f %8.2f %9.1f %10.2f %10s %9s %16s %9s\n", w.name.c_str(), w.kernels,
           jitMs.c_str(), sps.c_str(), gf.c_str(), w.backendMs + w.coldPrepareMs, w.hitPrepareMs,
           w.coldPrepareMs + w.jit.firstMs, w.sim.scheduledUs,
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
    anyStream |= w.error.empty() && w.flops == 0 && w.jit.ran && w.sim.ddrBytes > (8u << 20);
  if (anyStream) {
    double bw = hostMemcpyGBps();
    printf("\nhost memory bandwidth of one core (memcpy, read + write), measured now: %.1f GB/s\n", bw);
    for (const auto &w : rs)
      if (w.error.empty() && w.flops == 0 && w.jit.ran && w.sim.ddrBytes > (8u << 20))
        printf("%-22s JIT simulated-DDR traffic %.2f GB/s = %.1f %% of it (the host also copies every DDR byte\n"
               "%-22s through LX, so it moves at least twice that)\n",
               w.name.c_str(), static_cast<double>(w.sim.ddrBytes) / (w.jit.medianMs * 1e6),
               100.0 * static_cast<double>(w.sim.ddrBytes) / (w.jit.medianMs * 1e6) / (bw * o.threads), "");
  }
  printf("\nsimulated device time (static timing model: sim = scheduled replay, between the overlapped and serial bounds; per unit: sum over kernels and phases of the busiest core):\n");
  printf("%-22s %10s %10s %10s %8s %9s %9s %9s %9s %10s %10s %10s\n", "workload", "sim us", "overlap us", "serial us", "launch",
         "DMA us", "LSU us", "SFP us", "PT us", "DDR MB", "sim TF/s", "sim GB/s");
  for (const auto &w : rs)
    if (w.error.empty())
      printf("%-22s %10.2f %10.2f %10.2f %8.2f %9.2f %9.2f %9.2f %9.2f %10.2f %10.3f %10.1f\n", w.name.c_str(),
             w.sim.scheduledUs, w.sim.overlappedUs, w.sim.serialUs, w.sim.launchUs + w.sim.barrierUs, w.sim.unitUs.dma,
             w.sim.unitUs.lsu, w.sim.unitUs.sfp, w.sim.unitUs.pt, w.sim.ddrBytes / 1e6,
             2.0 * static_cast<double>(w.sim.ptMacs) / (w.sim.scheduledUs * 1e6), w.sim.ddrBytes / (w.sim.scheduledUs * 1e3));
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

} // namespace spyre::bench
