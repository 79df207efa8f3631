// Machine state shared by every engine. The layout of CoreState is part of the JIT ABI
// (jit/ reads and writes its fields by offset): change it only together with kAbiVersion.
#pragma once
#include "spyre/isa/program.h"
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace spyre::sim {

constexpr uint32_t kAbiVersion = 1;
constexpr int64_t kLxBytes = 2 << 20;           ///< physical LX per core
constexpr int64_t kLxUsableBytes = 1677721;     ///< what the compiler may use (20 % reserved)

struct CoreState {
  int64_t r[isa::kNumSRegs];                      ///< r0 = core id
  alignas(64) float v[isa::kNumVRegs][isa::kLanes];
  uint8_t *lx;                                    ///< kLxBytes, 128-B aligned
};
static_assert(offsetof(CoreState, r) == 0);
static_assert(offsetof(CoreState, v) == 256);
static_assert(offsetof(CoreState, lx) == 256 + isa::kNumVRegs * isa::kLanes * 4);

/// The cores' private state (LX lazily backed: untouched LX costs no host memory).
class Cores {
public:
  explicit Cores(int n = 32);
  ~Cores();
  Cores(const Cores &) = delete;
  Cores &operator=(const Cores &) = delete;
  int size() const { return static_cast<int>(cores_.size()); }
  CoreState &operator[](int i) { return cores_[i]; }
  const CoreState &operator[](int i) const { return cores_[i]; }
  /// Zero registers (r0 = core id) before a kernel; LX keeps its contents (torch-spyre relies
  /// on LX persisting across bundles).
  void resetRegisters();

private:
  std::vector<CoreState> cores_;
  uint8_t *lxBase_ = nullptr;
};

/// One kernel launch: where the DDR is and what each argument is bound to.
struct LaunchArgs {
  uint8_t *ddr = nullptr;          ///< host base of the simulated DDR
  uint64_t ddrSize = 0;
  std::vector<uint64_t> base;      ///< DDR address of each kernel argument
  std::vector<uint64_t> size;      ///< bytes of each argument (for bounds checks)
};

} // namespace spyre::sim
