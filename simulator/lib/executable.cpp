#include "spyre/sim/executable.h"
#include "spyre/isa/backend.h"
#include "spyre/isa/hardware_config.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/timing.h"
#include "spyre/isa/verifier.h"
#include "spyre/sim/trace.h"
#include <chrono>
#include <fstream>

namespace spyre::sim {

namespace {
double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
} // namespace

Executable::Executable(isa::JobPlan plan, Engine &engine, const std::string &dumpDir) : plan_(std::move(plan)) {
  const isa::HardwareConfig hw;
  for (const auto &l : plan_.launches) {
    auto t0 = std::chrono::steady_clock::now();
    CompiledLaunch cl;
    cl.kernel = isa::compileSuperDsc(l.sdsc);
    // Every generated kernel must pass the verifier before an engine sees it: the JIT trusts
    // its addresses.
    std::vector<uint64_t> argBytes;
    for (int b : l.argBuffers) // -1: an LX-resident operand, no DDR behind its segment
      argBytes.push_back(b < 0 ? 0 : static_cast<uint64_t>(plan_.buffers[b].layout.deviceBytes()));
    isa::verifyKernel(cl.kernel, argBytes);
    isa::TimingReport rep = isa::timeKernel(cl.kernel, hw);
    cl.simulatedUs = rep.scheduledUs;
    cl.timing = rep.summary();
    compileMs_ += msSince(t0);
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

double Executable::simulatedUs() const {
  double t = 0;
  for (const auto &l : launches_)
    t += l.simulatedUs;
  return t;
}

void Executable::run(Runtime &rt, uint8_t *ddr, uint64_t ddrSize, const std::vector<uint64_t> &bufferAddr) const {
  if (bufferAddr.size() != plan_.buffers.size())
    throw Error("executable needs " + std::to_string(plan_.buffers.size()) + " buffer addresses, got " +
                std::to_string(bufferAddr.size()));
  for (size_t i = 0; i < launches_.size(); ++i) {
    const auto &l = plan_.launches[i];
    LaunchArgs args;
    args.ddr = ddr;
    args.ddrSize = ddrSize;
    for (int b : l.argBuffers) {
      args.base.push_back(b < 0 ? 0 : bufferAddr[b]);
      args.size.push_back(b < 0 ? 0 : static_cast<uint64_t>(plan_.buffers[b].layout.deviceBytes()));
    }
    const bool tracing = trace::enabled(); // SPYRE_TRACE: simulated-time timeline
    auto t0 = std::chrono::steady_clock::now();
    rt.launch(*launches_[i].prepared, args);
    if (tracing)
      trace::recordLaunch(launches_[i].kernel, launches_[i].prepared, msSince(t0));
  }
}

} // namespace spyre::sim
