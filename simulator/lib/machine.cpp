#include "spyre/sim/machine.h"
#include "spyre/sim/engine.h"
#include "spyre/isa/dl16.h"
#include "spyre/isa/error.h"
#include "spyre/isa/semantics.h"
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <sys/mman.h>

namespace spyre::sim {

Cores::Cores(int n) : cores_(n) {
  size_t bytes = static_cast<size_t>(n) * kLxBytes;
  void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED)
    throw Error("cannot reserve host memory for " + std::to_string(n) + " LX scratchpads");
  lxBase_ = static_cast<uint8_t *>(p);
  for (int i = 0; i < n; ++i) {
    std::memset(&cores_[i], 0, sizeof(CoreState));
    cores_[i].lx = lxBase_ + static_cast<size_t>(i) * kLxBytes;
    cores_[i].r[0] = i;
  }
}

Cores::~Cores() { munmap(lxBase_, cores_.size() * kLxBytes); }

void Cores::resetRegisters(int n, uint32_t vregs) {
  const size_t count = n < 0 ? cores_.size() : std::min(cores_.size(), static_cast<size_t>(n));
  // One memset per core over the scalar registers and the vector registers up to the highest
  // one in `vregs` (r and v are contiguous; zeroing an unused register in between is harmless):
  // a 256-byte memset per register was a `rep stos` each, whose start-up cost made this a third
  // of a 4,096-element add's host time.
  const uint32_t mask = vregs & ((isa::kNumVRegs >= 32 ? 0u : 1u << isa::kNumVRegs) - 1u);
  const int top = mask ? 32 - __builtin_clz(mask) : 0; // vector registers [0, top) are zeroed
  const size_t bytes = offsetof(CoreState, v) + static_cast<size_t>(top) * sizeof(CoreState::v[0]);
  for (size_t i = 0; i < count; ++i) {
    std::memset(&cores_[i], 0, bytes);
    cores_[i].r[0] = static_cast<int64_t>(i);
  }
}

uint32_t usedVectorRegisters(const isa::Kernel &k) {
  uint32_t mask = 0;
  for (const auto &p : k.programs)
    isa::forEachNested(p.body, 0, [&](const isa::Instr &in, int, int, int &) {
      for (int v : in.v)
        if (v >= 0 && v < isa::kNumVRegs)
          mask |= 1u << v;
      return true;
    });
  return mask;
}

void writeScalarArgs(const isa::Kernel &k, const std::vector<double> &scalars, uint8_t *lx) {
  for (size_t i = 0; i < k.scalarArgs.size(); ++i) {
    const isa::ScalarArg &a = k.scalarArgs[i];
    if (a.index < 0 || static_cast<size_t>(a.index) >= scalars.size())
      throw Error("kernel " + k.name + " reads scalar argument $" + std::to_string(a.index) + ", but the launch passes " +
                  std::to_string(scalars.size()));
    uint8_t *stick = lx + isa::kScalarArgLxBase + 128 * static_cast<int64_t>(i);
    const float x = isa::roundTo(a.fmt, static_cast<float>(scalars[static_cast<size_t>(a.index)]));
    if (a.fmt == isa::Format::DL16) {
      const uint16_t code = dl16::fromFloat(x);
      for (int l = 0; l < 64; ++l)
        std::memcpy(stick + 2 * l, &code, 2);
    } else {
      for (int l = 0; l < 32; ++l)
        std::memcpy(stick + 4 * l, &x, 4);
    }
  }
}

} // namespace spyre::sim
