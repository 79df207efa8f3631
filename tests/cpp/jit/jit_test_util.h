// Shared helpers for the JIT tests: run a kernel on an engine and capture DDR, LX and registers.
#pragma once
#include "spyre/isa/dl16.h"
#include "spyre/sim/device_memory.h"
#include "spyre/sim/engine.h"
#include "spyre/sim/runtime.h"
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace spyre::testing {

inline std::string readFile(const std::string &p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct RunResult {
  std::vector<uint8_t> ddr;  ///< every argument buffer, concatenated
  std::vector<uint8_t> lx;   ///< the first lxBytes of each core's LX
  std::vector<uint8_t> regs; ///< CoreState registers of every core
  std::string error;         ///< the launch's device fault (dma.gather index, ring pairing), or ""
};

/// Runs the prepared kernel with fresh memory and cores; LX starts zeroed.
inline RunResult runPrepared(const sim::PreparedKernel &pk, const std::vector<std::vector<uint8_t>> &args,
                             int threads = 1, size_t lxBytes = 4096, const std::vector<double> &scalars = {}) {
  const isa::Kernel &k = pk.kernel();
  uint64_t total = 1 << 20;
  for (const auto &a : args)
    total += (a.size() + 4095) / 4096 * 4096 + 4096;
  sim::DeviceMemory mem(total);
  sim::Runtime rt(threads, k.numCores);
  sim::LaunchArgs la;
  la.ddr = mem.base();
  la.ddrSize = mem.capacity();
  la.scalars = scalars;
  for (const auto &a : args) {
    uint64_t addr = mem.allocate(a.size());
    std::memcpy(mem.at(addr, a.size()), a.data(), a.size());
    la.base.push_back(addr);
    la.size.push_back(a.size());
  }
  rt.launch(pk, la);
  RunResult r;
  for (size_t i = 0; i < args.size(); ++i) {
    uint8_t *p = mem.at(la.base[i], la.size[i]);
    r.ddr.insert(r.ddr.end(), p, p + la.size[i]);
  }
  for (int c = 0; c < k.numCores; ++c) {
    const auto &cs = rt.cores()[c];
    r.lx.insert(r.lx.end(), cs.lx, cs.lx + lxBytes);
    auto *b = reinterpret_cast<const uint8_t *>(&cs);
    r.regs.insert(r.regs.end(), b, b + offsetof(sim::CoreState, lx));
  }
  return r;
}

inline std::vector<uint8_t> randomDl16(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0, 2);
  std::vector<uint8_t> out(n * 2);
  for (size_t i = 0; i < n; ++i) {
    uint16_t h = dl16::fromFloat(d(g));
    std::memcpy(&out[2 * i], &h, 2);
  }
  return out;
}

} // namespace spyre::testing
