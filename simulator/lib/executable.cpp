#include "spyre/sim/executable.h"
#include "spyre/isa/error.h"
#include "spyre/isa/listing.h"
#include "spyre/sim/trace.h"
#include <chrono>
#include <fstream>
#include <mutex>

namespace spyre::sim {

namespace {
std::mutex g_totalsMu;
RunTotals g_totals;

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// The executable was handed `got` of what it needs `want` of (one per launch / plan buffer).
void requireCount(const char *what, size_t want, size_t got) {
  if (got != want)
    throw Error("executable needs " + std::to_string(want) + " " + what + ", got " + std::to_string(got));
}
} // namespace

Executable::Executable(isa::JobPlan plan, std::vector<isa::CompiledKernel> kernels, Engine &engine,
                       const std::string &dumpDir)
    : plan_(std::move(plan)) {
  requireCount("compiled kernels", plan_.launches.size(), kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    const auto &l = plan_.launches[i];
    CompiledLaunch cl;
    cl.kernel = std::move(kernels[i].kernel);
    cl.simulatedUs = kernels[i].simulatedUs;
    cl.timing = std::move(kernels[i].timing);
    if (!dumpDir.empty()) {
      std::string base = l.sdscFile.substr(0, l.sdscFile.rfind('.'));
      std::ofstream(dumpDir + "/" + base + ".lst") << isa::printKernel(cl.kernel);
      std::ofstream(dumpDir + "/" + base + ".timing.txt") << cl.timing;
    }
    auto t1 = std::chrono::steady_clock::now();
    cl.prepared = engine.prepare(cl.kernel);
    prepareMs_ += msSince(t1);
    launches_.push_back(std::move(cl));
  }
}

RunTotals runTotals() {
  std::lock_guard<std::mutex> lk(g_totalsMu);
  return g_totals;
}

double Executable::simulatedUs() const {
  double t = 0;
  for (const auto &l : launches_)
    t += l.simulatedUs;
  return t;
}

void Executable::run(Runtime &rt, uint8_t *ddr, uint64_t ddrSize, const std::vector<uint64_t> &bufferAddr,
                     const std::vector<double> &scalars) const {
  requireCount("buffer addresses", plan_.buffers.size(), bufferAddr.size());
  requireCount("scalar arguments", static_cast<size_t>(plan_.numScalars), scalars.size());
  double hostMs = 0;
  LaunchArgs args; // one for all launches: no allocation per launch
  args.ddr = ddr;
  args.ddrSize = ddrSize;
  args.scalars = scalars;
  for (size_t i = 0; i < launches_.size(); ++i) {
    const auto &l = plan_.launches[i];
    args.base.clear();
    args.size.clear();
    for (int b : l.argBuffers) {
      args.base.push_back(b < 0 ? 0 : bufferAddr[b]);
      args.size.push_back(b < 0 ? 0 : static_cast<uint64_t>(plan_.buffers[b].layout.deviceBytes()));
    }
    const bool tracing = trace::enabled(); // SPYRE_TRACE: simulated-time timeline
    auto t0 = std::chrono::steady_clock::now();
    rt.launch(*launches_[i].prepared, args);
    const double ms = msSince(t0);
    hostMs += ms;
    if (tracing)
      trace::recordLaunch(launches_[i].kernel, launches_[i].prepared, ms);
  }
  std::lock_guard<std::mutex> lk(g_totalsMu);
  g_totals.kernels += launches_.size();
  g_totals.simulatedUs += simulatedUs();
  g_totals.hostMs += hostMs;
}

} // namespace spyre::sim
