// spyre-jit-bench's command line: the options it takes and the Options of a run they give.
#include "options.h"
#include "spyre/frontend/compiler.h"
#include "spyre/isa/env.h"
#include "spyre/isa/error.h"
#include "spyre/isa/superdsc.h"
#include "spyre/sim/runtime.h"
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace spyre::bench {

std::vector<int64_t> parseShape(const std::string &s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, 'x')) {
    int64_t v = 0;
    auto r = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || !std::isdigit(static_cast<unsigned char>(part[0])) || r.ptr != part.data() + part.size() ||
        (r.ec != std::errc() && r.ec != std::errc::result_out_of_range))
      throw Error("bad --shape '" + s + "' (expected e.g. 4096x1024)");
    if (r.ec == std::errc::result_out_of_range || v > kMaxShapeDim)
      throw Error("bad --shape '" + s + "': dimension " + part + " is larger than " + std::to_string(kMaxShapeDim));
    if (v <= 0)
      throw Error("bad --shape '" + s + "': dimensions must be positive");
    out.push_back(v);
  }
  if (out.empty())
    throw Error("empty --shape");
  if (s.back() == 'x')
    throw Error("bad --shape '" + s + "' (expected e.g. 4096x1024)");
  return out;
}

void checkShapeFits(const frontend::Graph &g, const std::string &shapeText) {
  for (const auto &v : g.values) {
    // Each dim is at most 2^40 and the product stops once past 2^34: no overflow in 128 bits.
    unsigned __int128 bytes = static_cast<unsigned __int128>(hostTypeBytes(v.dtype));
    bool over = false;
    for (size_t i = 0; i < v.shape.size() && !over; ++i)
      over = (bytes *= static_cast<unsigned __int128>(v.shape[i])) > isa::kSegmentBytes;
    if (!over)
      continue;
    std::string dims;
    for (int64_t d : v.shape)
      dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    throw Error("bad --shape '" + shapeText + "': the op's tensor [" + dims + "] needs more than " +
                std::to_string(isa::kSegmentBytes) + " bytes (16 GiB, the most one kernel argument can address)");
  }
}

po::options_description commandLine() {
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
      "JIT tier O0, O2 or tiered (O0 code at once, O2 compiled in the background; the timed runs wait for "
      "O2). The compile section times O0 and O2 unless this is given")(
      "threads", po::value<int>()->default_value(sim::RuntimeOptions::fromEnv(processEnv()).threads), "host threads (SPYRE_SIM_THREADS)")(
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
  return opts;
}

Options optionsFrom(const po::variables_map &vm) {
  Options o;
  o.backendOpts = backend::BackendOptions::fromEnv(processEnv());
  std::string tierS = vm["tier"].as<std::string>();
  o.tier = tierS == "O0"       ? jit::OptTier::O0
           : tierS == "O2"     ? jit::OptTier::O2
           : tierS == "tiered" ? jit::OptTier::Tiered
                               : throw Error("bad --tier " + tierS + " (O0, O2, tiered)");
  o.cores = vm.count("cores") ? vm["cores"].as<int>() : frontend::CompileOptions::fromEnv(processEnv()).maxCores;
  if (o.cores < 1 || o.cores > isa::kMaxSdscCores)
    throw Error("bad --cores " + std::to_string(o.cores) + " (expected an integer in 1.." +
                std::to_string(isa::kMaxSdscCores) + ")");
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
  return o;
}

const Env &processEnv() {
  static const Env env(&std::getenv);
  return env;
}

jit::JitOptions benchJit(jit::OptTier tier, const std::string &dumpDir, const std::string &cacheDir, bool memoryCache) {
  jit::JitOptions o = jit::JitOptions::fromEnv(processEnv());
  o.tier = tier;
  o.dumpDir = dumpDir;
  o.cacheDir = cacheDir;
  o.memoryCache = memoryCache;
  return o;
}

frontend::CompileOptions compileOptions(int cores, const std::string &dumpDir) {
  frontend::CompileOptions c = frontend::CompileOptions::fromEnv(processEnv());
  c.maxCores = cores;
  c.dumpDir = dumpDir;
  return c;
}

} // namespace spyre::bench
