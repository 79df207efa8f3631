#include "spyre/sim/machine.h"
#include "spyre/isa/error.h"
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

void Cores::resetRegisters() {
  for (size_t i = 0; i < cores_.size(); ++i) {
    std::memset(cores_[i].r, 0, sizeof cores_[i].r);
    std::memset(cores_[i].v, 0, sizeof cores_[i].v);
    cores_[i].r[0] = static_cast<int64_t>(i);
  }
}

} // namespace spyre::sim
