// spyre-jit-bench: throughput of simulated Spyre kernels on this host, JIT vs interpreter, and
// the simulated device time the timing model assigns them.
#include "spyre/frontend/compiler.h"
#include "spyre/isa/dl16.h"
#include "spyre/jit/jit_engine.h"
#include "spyre/sim/device_memory.h"
#include "spyre/sim/executable.h"
#include "spyre/sim/host_transfer.h"
#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstring>
#include <iostream>
#include <numeric>
#include <random>
#include <sstream>

namespace po = boost::program_options;
using namespace spyre;
using Clock = std::chrono::steady_clock;

namespace {

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

struct Result {
  std::string engine;
  double compileMs = 0, medianMs = 0, minMs = 0, maxMs = 0, sticksPerSec = 0, simUs = 0;
};

Result bench(const std::string &op, const std::vector<int64_t> &shape, HostType dt, const std::string &engineName,
             jit::OptTier tier, int threads, int cores, int reps) {
  frontend::Graph g;
  int arity = (op == "add" || op == "sub" || op == "mul") ? 2 : 1;
  std::vector<int> ins;
  for (int i = 0; i < arity; ++i)
    ins.push_back(g.addInput("in" + std::to_string(i), shape, dt));
  g.outputs = {g.addNode(op, ins, "out", shape, dt)};
  isa::JobPlan plan = frontend::compileGraph(g, {cores, ""});
  std::unique_ptr<sim::Engine> engine;
  if (engineName == "jit")
    engine = std::make_unique<jit::JitEngine>(jit::JitOptions{tier, ""});
  else if (engineName == "interp")
    engine = sim::makeInterpreter();
  else
    throw Error("unknown --engine '" + engineName + "' (jit, interp, both)");
  auto t0 = Clock::now();
  sim::Executable exe(plan, *engine);
  Result r;
  r.engine = engineName;
  r.compileMs = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  r.simUs = exe.simulatedUs();
  sim::DeviceMemory mem(64ull << 30);
  sim::Runtime rt(threads, 32);
  std::vector<uint64_t> addr;
  std::mt19937 gen(1);
  std::normal_distribution<float> nd(0, 1);
  for (const auto &b : plan.buffers) {
    addr.push_back(mem.allocate(b.layout.deviceBytes()));
    if (b.kind == isa::BufferSpec::Kind::Input) { // random DL16 / f32 sticks
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
  int64_t sticks = 0;
  for (const auto &b : plan.buffers)
    sticks += b.layout.deviceBytes() / 128;
  exe.run(rt, mem.base(), mem.capacity(), addr); // warm-up
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    auto s = Clock::now();
    exe.run(rt, mem.base(), mem.capacity(), addr);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
  }
  std::sort(ms.begin(), ms.end());
  r.medianMs = ms[ms.size() / 2];
  r.minMs = ms.front();
  r.maxMs = ms.back();
  r.sticksPerSec = sticks / (r.medianMs * 1e-3);
  return r;
}

} // namespace

int main(int argc, char **argv) {
  po::options_description opts(
      "spyre-jit-bench [options]\n\n"
      "Runs one simulated Spyre op (frontend -> SuperDSC -> backend -> engine) repeatedly and\n"
      "reports host wall time (median/min/max), throughput in sticks/s (operand sticks moved per\n"
      "second), compile time and the simulated device time, for the JIT and the interpreter side\n"
      "by side. Options");
  opts.add_options()("help,h", "show this help")(
      "op", po::value<std::string>()->default_value("add"), "op: add sub mul relu neg abs clone")(
      "shape", po::value<std::string>()->default_value("4096x1024"), "shape, e.g. 4096x1024")(
      "dtype", po::value<std::string>()->default_value("f16"), "f16 or f32")(
      "engine", po::value<std::string>()->default_value("both"), "jit, interp or both")(
      "tier", po::value<std::string>()->default_value("O2"), "JIT tier O0 or O2")(
      "threads", po::value<int>()->default_value(sim::defaultSimThreads()), "host threads (SPYRE_SIM_THREADS)")(
      "cores", po::value<int>(), "simulated cores (default SENCORES or 32)")(
      "reps", po::value<int>()->default_value(20), "timed repetitions")("json", "print JSON instead of a table");
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
  try {
    auto shape = parseShape(vm["shape"].as<std::string>());
    std::string dts = vm["dtype"].as<std::string>();
    HostType dt = dts == "f16" ? HostType::F16 : dts == "f32" ? HostType::F32 : throw Error("bad --dtype " + dts);
    std::string tierS = vm["tier"].as<std::string>();
    jit::OptTier tier = tierS == "O0" ? jit::OptTier::O0 : tierS == "O2" ? jit::OptTier::O2 : throw Error("bad --tier " + tierS);
    int cores = vm.count("cores") ? vm["cores"].as<int>() : frontend::senCoresFromEnv();
    int reps = std::max(1, vm["reps"].as<int>());
    std::string eng = vm["engine"].as<std::string>();
    std::vector<std::string> engines = eng == "both" ? std::vector<std::string>{"jit", "interp"} : std::vector<std::string>{eng};
    std::vector<Result> results;
    for (const auto &e : engines) {
      std::cerr << "[bench] " << vm["op"].as<std::string>() << " " << vm["shape"].as<std::string>() << " on " << e
                << " ...\n";
      results.push_back(bench(vm["op"].as<std::string>(), shape, dt, e, tier, vm["threads"].as<int>(), cores,
                              e == "interp" ? std::max(1, reps / 4) : reps));
    }
    if (vm.count("json")) {
      std::cout << "[";
      for (size_t i = 0; i < results.size(); ++i) {
        const auto &r = results[i];
        std::cout << (i ? "," : "") << "{\"op\":\"" << vm["op"].as<std::string>() << "\",\"shape\":\""
                  << vm["shape"].as<std::string>() << "\",\"engine\":\"" << r.engine << "\",\"compile_ms\":" << r.compileMs
                  << ",\"median_ms\":" << r.medianMs << ",\"min_ms\":" << r.minMs << ",\"max_ms\":" << r.maxMs
                  << ",\"sticks_per_s\":" << r.sticksPerSec << ",\"simulated_us\":" << r.simUs << "}";
      }
      std::cout << "]\n";
    } else {
      printf("%-8s %12s %12s %12s %12s %14s %14s\n", "engine", "compile ms", "median ms", "min ms", "max ms",
             "Msticks/s", "simulated us");
      for (const auto &r : results)
        printf("%-8s %12.3f %12.3f %12.3f %12.3f %14.2f %14.2f\n", r.engine.c_str(), r.compileMs, r.medianMs, r.minMs,
               r.maxMs, r.sticksPerSec / 1e6, r.simUs);
      if (results.size() == 2)
        printf("JIT vs interpreter: %.1fx\n", results[1].medianMs / results[0].medianMs);
    }
  } catch (const std::exception &e) {
    std::cerr << "spyre-jit-bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
