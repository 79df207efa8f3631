// Machine state shared by every engine. The layout of CoreState is part of the JIT ABI
// (jit/ reads and writes its fields by offset): change it only together with kAbiVersion.
#pragma once
#include "spyre/isa/program.h"
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace spyre::sim {

constexpr uint32_t kAbiVersion = 2;
constexpr int64_t kLxBytes = 2 << 20;           ///< physical LX per core
constexpr int64_t kLxUsableBytes = 1677721;     ///< what the compiler may use (20 % reserved)

struct RingPort;

struct CoreState {
  int64_t r[isa::kNumSRegs];                      ///< r0 = core id
  alignas(64) float v[isa::kNumVRegs][isa::kLanes];
  uint8_t *lx;                                    ///< kLxBytes, 128-B aligned
  RingPort *ring;                                 ///< this core's ring mailboxes (set per launch)
};
static_assert(offsetof(CoreState, r) == 0);
static_assert(offsetof(CoreState, v) == 256);
static_assert(offsetof(CoreState, lx) == 256 + isa::kNumVRegs * isa::kLanes * 4);

/// Ring mailboxes of one kernel launch: per phase parity, per receiving core, per direction of
/// travel, the bytes sent in order. Phase p sends into parity p%2 and receives from (p-1)%2, so
/// senders and receivers of one phase never touch the same mailbox.
struct RingState {
  struct Box {
    std::vector<uint8_t> bytes;
    size_t read = 0;
    void clear() {
      bytes.clear();
      read = 0;
    }
  };
  int numCores = 1;
  int phase = 0;
  std::vector<Box> boxes; ///< [parity][core][dir]
  std::mutex errorMu;
  std::string error;      ///< first failed receive of the launch (engines must not throw)
  /// Before a launch of `cores` cores: empty mailboxes. They keep their capacity, so the
  /// phases and launches of a ring kernel do not allocate and free them again.
  void reset(int cores) {
    numCores = cores;
    phase = 0;
    boxes.resize(static_cast<size_t>(2 * cores * 2));
    for (Box &b : boxes)
      b.clear();
    error.clear();
  }
  /// Before phase p: forget what was sent two phases ago (its parity is reused).
  void beginPhase(int p) {
    phase = p;
    for (int c = 0; c < numCores; ++c)
      for (int d = 0; d < 2; ++d)
        box(p % 2, c, d).clear();
  }
  Box &box(int parity, int core, int dir) { return boxes[(parity * numCores + core) * 2 + dir]; }
};

/// What a core's ring instructions need: the launch's mailboxes and who the core is.
struct RingPort {
  RingState *state = nullptr;
  int core = 0;
};

/// A device fault of the launch (engines must not throw: JIT frames cannot unwind): the first
/// one is kept in the port's RingState and Runtime::launch raises it after the phase, as
/// "kernel <name>: <what>".
void reportFault(RingPort &p, std::string what);

/// The ring operations, shared by both engines. A receive of more data than was sent is a
/// device fault.
void ringSend(RingPort &p, int dir, const uint8_t *src, int64_t bytes);
/// mode: 0 copy, 1 add as f32, 2 add as DL16.
void ringRecv(RingPort &p, int dir, uint8_t *dst, int64_t bytes, int mode);

/// dma.gather (instructions.def), shared by both engines: for i < n, j = the int32 at idx[i];
/// 0 <= j < rows copies the box (n2 x n1 runs of `run` bytes, strides in bytes) at
/// table + j*rowStride to lx + i*lxStep; any other j is a device fault naming the core, i and j, and its box is zero-filled. The verifier proved every row in
/// [0, rows) inside the table's argument and every box inside LX. (No listing line: the JIT's
/// code cache shares code between instructions that differ only in their line.)
struct GatherShape {
  int64_t n, rows, rowStride, lxStep;
  int64_t n2, n1, run, lxS2, lxS1, ddrS2, ddrS1;
};
void dmaGather(RingPort &p, uint8_t *lx, const uint8_t *idx, const uint8_t *table, const GatherShape &g);
/// dma.scatter, shared by both engines: for i = 0 .. n-1 in order, j = the int32 at idx[i];
/// 0 <= j < rows copies the box at lx + i*lxStep to table + j*rowStride (same shape fields as
/// a gather, the strides read the other way); any other j is a device fault naming the core, i
/// and j, and nothing is written for it (never a host access outside the table).
void dmaScatter(RingPort &p, uint8_t *table, const uint8_t *lx, const uint8_t *idx, const GatherShape &g);

} // namespace spyre::sim

extern "C" void spyre_ring_send(spyre::sim::RingPort *p, int32_t dir, const uint8_t *src, int64_t bytes);
extern "C" void spyre_ring_recv(spyre::sim::RingPort *p, int32_t dir, uint8_t *dst, int64_t bytes, int32_t mode);
extern "C" void spyre_dma_gather(spyre::sim::RingPort *p, uint8_t *lx, const uint8_t *idx, const uint8_t *table,
                                 const spyre::sim::GatherShape *g);
extern "C" void spyre_dma_scatter(spyre::sim::RingPort *p, uint8_t *table, const uint8_t *lx, const uint8_t *idx,
                                  const spyre::sim::GatherShape *g);

namespace spyre::sim {

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
  /// Zero the registers of cores [0, n) (r0 = core id) before a kernel of n cores (all cores
  /// when n < 0): every scalar register and the vector registers of `vregs` (bit i: v<i>; the
  /// launch passes the ones its kernel names, the only ones it can observe). LX keeps its
  /// contents (torch-spyre relies on LX persisting across bundles). A launch never runs the
  /// other cores or reads the other registers, so they stay as the last kernel left them (a
  /// vector register below the highest one of `vregs` may be zeroed too: it is one memset).
  void resetRegisters(int n = -1, uint32_t vregs = ~0u);

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
  /// The launch's scalar arguments by number (isa::ScalarArg::index): the runtime writes the
  /// kernel's slots into every core's LX block (isa::kScalarArgLxBase) before phase 0.
  std::vector<double> scalars;
};

/// Writes the kernel's scalar-argument slots into `lx` (one core's LX): slot i at
/// isa::kScalarArgLxBase + 128 i, scalars[index] rounded to the slot's format as `bcast` rounds
/// an immediate (via fp32), in every lane. Throws spyre::Error if a slot's number is not in
/// `scalars`.
void writeScalarArgs(const isa::Kernel &k, const std::vector<double> &scalars, uint8_t *lx);

} // namespace spyre::sim
