// spyre-jit-bench: throughput of simulated Spyre kernels on this host, JIT vs interpreter vs
// native libtorch CPU, and the simulated device time the timing model assigns them.
//
// Two modes: named workloads (--workload NAME|all; graph-IR graphs with the shapes of the public
// Spyre kernel examples) and the single-op mode (--op/--shape/--dtype). See docs/performance.md.
#include "bench.h"
#include "options.h"
#include "spyre/frontend/compiler.h"
#include "spyre/backend/backend.h"
#include "spyre/isa/file_io.h"
#include "spyre/isa/listing.h"
#include "spyre/sim/runtime.h"
#include "spyre/sim/trace.h"
#include "spyre/tools/command_line.h"
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace spyre;
using namespace spyre::bench;

int main(int argc, char **argv) {
  sim::trace::configure(sim::trace::TraceOptions::fromEnv(processEnv())); // SPYRE_TRACE
  po::options_description opts = commandLine();
  po::variables_map vm;
  if (auto exit = tools::parseCommandLine("spyre-jit-bench", argc, argv, opts, vm))
    return *exit;
  if (vm.count("list")) {
    for (const auto &w : workloads())
      printf("%-22s %s\n", w.name.c_str(), w.what.c_str());
    return 0;
  }
  try {
    Options o = optionsFrom(vm);

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
      std::vector<isa::Kernel> kernels{isa::parseKernel(isa::readInputFile(path), path)}; // bounded, regular files
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
      checkShapeFits(g, vm["shape"].as<std::string>());
      if (compileReps > 0 && o.engine != "interp") {
        isa::JobPlan plan = frontend::compileGraph(g, compileOptions(o.cores, ""));
        std::vector<isa::Kernel> kernels;
        for (const auto &l : plan.launches)
          kernels.push_back(backend::compileSuperDsc(l.sdsc, o.backendOpts));
        for (jit::OptTier t : compileTiers)
          compiles.push_back(compileBench(kernels, t, compileReps));
        jit::clearMemoryCache(); // the timed run below compiles as a fresh process would
      }
      if (vm.count("compile-only")) {
        printCompiles(compiles, compileReps);
        return 0;
      }
      // --op matmul is libtorch's mm, also timed in fp32 (this host's fp16 GEMM is ~250x slower).
      bench::NativeSpec ns{op == "matmul" ? "mm" : op, {}};
      ns.f16 = dt == HostType::F16;
      ns.alsoF32 = op == "matmul";
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
