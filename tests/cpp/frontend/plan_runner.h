// Test harness: runs a compiled JobPlan on a fresh simulated DDR. Inputs and outputs travel as
// floats converted to / from each buffer's host dtype (fp16 through IEEE half, bool as != 0).
#pragma once
#include "spyre/backend/backend.h"
#include "spyre/isa/dl16.h"
#include "spyre/isa/job_plan.h"
#include "spyre/sim/device_memory.h"
#include "spyre/sim/executable.h"
#include "spyre/jit/jit_engine.h"
#include "spyre/sim/engine.h"
#include "spyre/sim/host_transfer.h"
#include <cstdint>
#include <vector>

namespace spyre::test {

inline int64_t numel(const std::vector<int64_t> &s) {
  int64_t n = 1;
  for (auto d : s)
    n *= d;
  return n;
}

/// Coordinates of flat index i of a row-major `shape`, and back.
inline std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t> &shape) {
  std::vector<int64_t> c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    c[d] = i % shape[d];
    i /= shape[d];
  }
  return c;
}

inline int64_t ravel(const std::vector<int64_t> &c, const std::vector<int64_t> &shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    i = i * shape[d] + c[d];
  return i;
}

class PlanRunner {
public:
  PlanRunner(const isa::JobPlan &plan, sim::Engine &engine, int threads = 2, const backend::BackendOptions &opts = {})
      : plan_(plan), exe_(plan, backend::compileJobPlan(plan, opts).kernels, engine), mem_(1ull << 32), rt_(threads, 32) {
    for (const auto &b : plan_.buffers)
      addr_.push_back(mem_.allocate(b.layout.deviceBytes()));
  }

  /// Uploads graph input i.
  void setInput(size_t i, const std::vector<float> &values) {
    int buf = plan_.inputs.at(i);
    switch (plan_.buffers[buf].hostType) {
    case HostType::F32: {
      std::vector<float> v = values;
      transfer(buf, v.data(), HostType::F32, true);
      return;
    }
    case HostType::Bool: {
      std::vector<uint8_t> v;
      for (float x : values)
        v.push_back(x != 0);
      transfer(buf, v.data(), HostType::Bool, true);
      return;
    }
    default: {
      std::vector<uint16_t> v;
      for (float x : values)
        v.push_back(dl16::floatToHalf(x));
      transfer(buf, v.data(), HostType::F16, true);
    }
    }
  }

  void run() { exe_.run(rt_, mem_.base(), mem_.capacity(), addr_); }

  /// Downloads graph output i (fp16 and bool outputs read back through IEEE half).
  std::vector<float> output(size_t i) {
    int buf = plan_.outputs.at(i);
    std::vector<float> out(numel(plan_.buffers[buf].hostShape));
    if (plan_.buffers[buf].hostType == HostType::F32) {
      transfer(buf, out.data(), HostType::F32, false);
      return out;
    }
    std::vector<uint16_t> h(out.size());
    transfer(buf, h.data(), HostType::F16, false);
    for (size_t k = 0; k < h.size(); ++k)
      out[k] = dl16::halfToFloat(h[k]);
    return out;
  }

  /// The device bytes of plan buffer `buf`.
  uint8_t *device(int buf) { return mem_.at(addr_[buf], plan_.buffers[buf].layout.deviceBytes()); }

private:
  void transfer(int buf, void *host, HostType t, bool toDevice) {
    const auto &b = plan_.buffers[buf];
    std::vector<int64_t> st = contiguousStrides(b.hostShape);
    auto map = sim::mapLayout(b.layout, b.hostShape, st);
    sim::HostTensor h{host, t, b.hostShape, st};
    if (toDevice)
      sim::copyHostToDevice(h, b.layout, map, device(buf));
    else
      sim::copyDeviceToHost(device(buf), b.layout, map, h);
  }

  const isa::JobPlan &plan_;
  sim::Executable exe_;
  sim::DeviceMemory mem_;
  sim::Runtime rt_;
  std::vector<uint64_t> addr_;
};

/// Every graph output of one run of a plan on each engine.
struct BothEngines {
  std::vector<std::vector<float>> interp, jit;
};

/// Runs `plan` with graph inputs `inputs` (in order) on the reference interpreter and on the
/// JIT; the caller compares the two (they must agree bit for bit) and checks either.
inline BothEngines runOnBothEngines(const isa::JobPlan &plan, const std::vector<std::vector<float>> &inputs) {
  static auto interp = sim::makeInterpreter();
  static jit::JitEngine jit;
  BothEngines out;
  for (sim::Engine *engine : {interp.get(), static_cast<sim::Engine *>(&jit)}) {
    PlanRunner r(plan, *engine);
    for (size_t i = 0; i < inputs.size(); ++i)
      r.setInput(i, inputs[i]);
    r.run();
    auto &outs = engine == interp.get() ? out.interp : out.jit;
    for (size_t o = 0; o < plan.outputs.size(); ++o)
      outs.push_back(r.output(o));
  }
  return out;
}

} // namespace spyre::test
