// The in-memory form of a Spyre kernel: per-core programs of structured instructions.
#pragma once
#include "spyre/isa/error.h"
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace spyre::isa {

enum class Opcode : uint8_t {
#define INST(E, M, U, O, F, T, S) E,
#include "spyre/isa/instructions.def"
#undef INST
};

enum class Unit : uint8_t { Scalar, Dma, Lsu, Sfp, Pt, Ring, Sync };
enum class TimingClass : uint8_t { Scalar, Dma, Lsu, Sfp, SfpTrans, Pt, PtOut, Ring, Sync, Barrier };
enum class Format : uint8_t { None, DL16, F32, I32 };

enum : uint8_t { FMT_NONE = 0, FMT_DL16 = 1, FMT_F32 = 2, FMT_I32 = 4 };

struct OpInfo {
  Opcode op;
  std::string_view mnemonic;
  Unit unit;
  std::string_view operands;
  uint8_t formats;
  TimingClass timing;
  std::string_view semantics;
};

const OpInfo &opInfo(Opcode op);
const std::vector<OpInfo> &allOps();
std::string_view formatName(Format f);
std::string_view unitName(Unit u);

/// DMAs that fill LX from DDR (dma.in, its multicast form dma.mc and the indexed dma.gather).
constexpr bool isDmaToLx(Opcode op) { return op == Opcode::DmaIn || op == Opcode::DmaMc || op == Opcode::DmaGather; }
constexpr bool isDma(Opcode op) { return isDmaToLx(op) || op == Opcode::DmaOut || op == Opcode::DmaScatter; }
/// The indexed DMAs: n boxes, one per int32 index in LX (imms: rows, rowstride, lxstep).
constexpr bool isIndexedDma(Opcode op) { return op == Opcode::DmaGather || op == Opcode::DmaScatter; }
/// A multicast cohort: at most 8 cores share one DDR read (torch-spyre's _COHORT_LIMIT).
constexpr int kMaxCohort = 8;
/// The first core of `core`'s cohort of size k (cohorts are aligned runs of k core ids).
constexpr int cohortLeader(int core, int k) { return core - core % k; }

constexpr int kNumSRegs = 32;  // r0 = core id (read-only)
constexpr int kNumVRegs = 16;
constexpr int kNumTokens = 16;
constexpr int kLanes = 64;     // vector register: 64 fp32 lanes (a DL16 stick widened)

/// lx[rBase + offset]; rBase = -1 for an absolute address.
struct LxAddr {
  int base = -1;
  int64_t offset = 0;
};
/// ddr[arg + rBase + offset]
struct DdrAddr {
  int arg = 0;
  int base = -1;
  int64_t offset = 0;
};
/// Copy shape (n2, n1, n0) in sticks; strides in bytes for dims 2 and 1.
struct DmaShape {
  std::array<int64_t, 3> n{1, 1, 1};
  std::array<int64_t, 2> ddrStride{0, 0};
  std::array<int64_t, 2> lxStride{0, 0};
  /// Contiguous strides for shape n: stride1 = n0*128, stride2 = n1*stride1.
  static std::array<int64_t, 2> dense(const std::array<int64_t, 3> &n) {
    return {n[1] * n[2] * 128, n[2] * 128};
  }
  int64_t sticks() const { return n[0] * n[1] * n[2]; }
};

struct Instr;

/// A loop body. A std::vector<Instr> in every way but its destructor, which is iterative: the
/// implicit one would recurse once per nesting level and overflow the stack on a kernel built in
/// memory tens of thousands of loops deep (the limits bound parsed kernels, not built ones).
/// Copying still recurses: parsed kernels are at most KernelLimits::maxLoopDepth (64) deep.
struct InstrBody : std::vector<Instr> {
  using std::vector<Instr>::vector;
  using std::vector<Instr>::operator=;
  InstrBody() = default;
  InstrBody(const std::vector<Instr> &v);
  InstrBody(std::vector<Instr> &&v) noexcept;
  InstrBody(const InstrBody &) = default;
  InstrBody(InstrBody &&) noexcept = default;
  InstrBody &operator=(const InstrBody &) = default;
  InstrBody &operator=(InstrBody &&) noexcept = default;
  ~InstrBody();
};

struct Instr {
  Opcode op = Opcode::Bar;
  Format fmt = Format::None;
  std::array<int, 4> v{-1, -1, -1, -1}; ///< vector registers in operand order
  std::array<int, 2> r{-1, -1};      ///< scalar registers in operand order
  int64_t imm = 0;                   ///< first I operand / loop count
  std::array<int64_t, 3> imms{0, 0, 0}; ///< further I operands (2nd..4th)
  float fimm = 0;                    ///< first F operand
  float fimm2 = 0;                   ///< second F operand
  LxAddr lx;                         ///< first L operand
  LxAddr lx2, lx3;                   ///< second and third L operands
  DdrAddr ddr;
  DmaShape dma;
  int outToken = -1;                 ///< O operand
  std::vector<int> tokens;           ///< T operand
  std::vector<int64_t> table;        ///< X operand
  InstrBody body;                    ///< loop body
  int line = 0;                      ///< source line in a parsed listing (0 if generated)
};

inline InstrBody::InstrBody(const std::vector<Instr> &v) : std::vector<Instr>(v) {}
inline InstrBody::InstrBody(std::vector<Instr> &&v) noexcept : std::vector<Instr>(std::move(v)) {}

namespace detail {
template <typename T> void appendBytes(std::string &out, const T &v) {
  static_assert(std::is_trivially_copyable_v<T>);
  out.append(reinterpret_cast<const char *>(&v), sizeof v);
}
template <typename T> void appendVector(std::string &out, const std::vector<T> &v) {
  appendBytes(out, v.size());
  if (!v.empty())
    out.append(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(T));
}
inline void appendLx(std::string &out, const LxAddr &a) {
  appendBytes(out, a.base);
  appendBytes(out, a.offset);
}
/// The identity of `in` itself, ending with its body's length (appendInstrIdentity adds the body).
inline void appendOwnIdentity(std::string &out, const Instr &in, bool skipLiImm) {
  // A new field in Instr must be added here (or excluded like `line`), or equal-looking
  // instructions compare equal and the code cache may return stale code: this check fails first.
  static_assert(sizeof(Instr) == 280, "isa::Instr changed: update appendOwnIdentity");
  appendBytes(out, in.op);
  appendBytes(out, in.fmt);
  appendBytes(out, in.v);
  appendBytes(out, in.r);
  appendBytes(out, skipLiImm && in.op == Opcode::Li ? int64_t{0} : in.imm);
  appendBytes(out, in.imms);
  appendBytes(out, in.fimm);
  appendBytes(out, in.fimm2);
  appendLx(out, in.lx);
  appendLx(out, in.lx2);
  appendLx(out, in.lx3);
  appendBytes(out, in.ddr.arg);
  appendBytes(out, in.ddr.base);
  appendBytes(out, in.ddr.offset);
  appendBytes(out, in.dma.n);
  appendBytes(out, in.dma.ddrStride);
  appendBytes(out, in.dma.lxStride);
  appendBytes(out, in.outToken);
  appendVector(out, in.tokens);
  appendVector(out, in.table);
  appendBytes(out, in.body.size());
}
} // namespace detail

/// The identity of an instruction, the one definition of "the same instruction": every field
/// except `line` (a source position, not code), in a fixed order, floats by bit pattern (NaN
/// payloads count), vectors with their length, then the loop body's instructions in pre-order.
/// `operator==`, `hashInstr` and the JIT's code-cache key are all this byte string; `skipLiImm`
/// leaves out the immediate of every `li` (the JIT compiles phases equal up to those once).
/// Iterative (an explicit stack), like forEachNested: any depth.
inline void appendInstrIdentity(std::string &out, const Instr &in, bool skipLiImm = false) {
  detail::appendOwnIdentity(out, in, skipLiImm);
  struct Frame {
    const std::vector<Instr> *body;
    size_t next;
  };
  std::vector<Frame> stack{{&in.body, 0}};
  while (!stack.empty()) {
    Frame &f = stack.back();
    if (f.next == f.body->size()) {
      stack.pop_back();
      continue;
    }
    const Instr &b = (*f.body)[f.next++];
    detail::appendOwnIdentity(out, b, skipLiImm);
    if (!b.body.empty())
      stack.push_back({&b.body, 0}); // invalidates f
  }
}
inline std::string instrIdentity(const Instr &in, bool skipLiImm = false) {
  std::string s;
  appendInstrIdentity(s, in, skipLiImm);
  return s;
}
/// Same identity (appendInstrIdentity): every field but `line`.
inline bool operator==(const Instr &a, const Instr &b) { return instrIdentity(a) == instrIdentity(b); }
/// A hash consistent with ==.
inline size_t hashInstr(const Instr &in) { return std::hash<std::string>{}(instrIdentity(in)); }

/// DDR bytes one execution of a DMA charges its core. A multicast (dma.mc) reads DDR once for
/// its cohort of k = imm cores, so each member is charged 1/k of the transfer (sticks are 128
/// bytes and k <= 8 divides 128: exact).
/// A gather or scatter (dma.gather, dma.scatter) moves its box once per index: n = imm boxes.
inline int64_t dmaDdrBytes(const Instr &in) {
  const int64_t bytes = in.dma.sticks() * 128;
  if (isIndexedDma(in.op))
    return in.imm > 0 ? bytes * in.imm : 0;
  return in.op == Opcode::DmaMc && in.imm > 1 ? bytes / in.imm : bytes;
}

/// The LX bytes a DMA's rows cover, as [first, second) relative to its `lx` operand: the box
/// (lx.stride may be negative), and for dma.gather / dma.scatter its n boxes lxstep apart.
inline std::pair<int64_t, int64_t> dmaLxExtent(const Instr &in) {
  int64_t lo = 0, hi = 0;
  for (int j = 0; j < 2; ++j) {
    const int64_t span = (in.dma.n[j] - 1) * in.dma.lxStride[j];
    lo += span < 0 ? span : 0;
    hi += span > 0 ? span : 0;
  }
  if (isIndexedDma(in.op) && in.imm > 1) {
    const int64_t span = (in.imm - 1) * in.imms[2];
    lo += span < 0 ? span : 0;
    hi += span > 0 ? span : 0;
  }
  return {lo, hi + in.dma.n[2] * 128};
}

/// The program run by the cores firstCore..lastCore (SPMD: r0 and tbl make it per-core).
struct CoreProgram {
  int firstCore = 0;
  int lastCore = 0;
  std::vector<Instr> body;
};

/// The launch's scalar arguments (numbers that are not compile-time constants: eager ops' Python
/// scalars). Slot i of a kernel is the stick at kScalarArgLxBase + 128 i of every core's LX, in
/// the reserved part above the usable LX: the runtime writes it before phase 0, the value
/// rounded to the slot's format in every lane (dl16: 64 lanes, f32: lanes 0..31), so that one
/// `ld.<fmt>` gives what `bcast.<fmt> value` would. Kernels only read it, with `ld` (verifier).
constexpr int kMaxScalarArgs = 16;
constexpr int64_t kScalarArgLxBase = (int64_t{2} << 20) - kMaxScalarArgs * 128;
struct ScalarArg {
  int index = 0;              ///< the launch's scalar number ($index in graph IR, argIdx_ in SuperDSC)
  Format fmt = Format::F32;   ///< DL16 or F32: how the runtime encodes it
  bool operator==(const ScalarArg &) const = default;
};

struct Kernel {
  std::string name = "kernel";
  int numCores = 1;
  std::vector<std::string> args;     ///< argument names; DDR bases bound at launch
  std::vector<ScalarArg> scalarArgs; ///< slot i: LX kScalarArgLxBase + 128 i (listing `.scalars`)
  std::vector<CoreProgram> programs; ///< disjoint core ranges covering 0..numCores-1
  /// Free-form attributes printed in the header comment (op, format); not semantic.
  std::string comment;

  const CoreProgram *programFor(int core) const;
  /// Number of phases: the most phases of any core's program (split at top-level `bar`s).
  int numPhases() const;
};

/// Top-level instruction ranges of each phase of a program (split at `bar`).
std::vector<std::pair<size_t, size_t>> phaseRanges(const CoreProgram &p);

/// Visits every instruction of `body` in program order, a loop before its body, with an
/// explicit stack (never recursion: a kernel built in memory may be arbitrarily deep).
/// `visit(in, weight, depth, inner)` sees each instruction with the weight of its enclosing
/// body (`root` at the top, depth 0); for a loop it returns whether to walk the body, which
/// then carries the weight it stored in `inner`.
template <class Weight, class Visit>
void forEachNested(const std::vector<Instr> &body, Weight root, Visit &&visit) {
  struct Frame {
    const std::vector<Instr> *body;
    size_t next;
    Weight weight;
  };
  std::vector<Frame> stack{{&body, 0, root}};
  while (!stack.empty()) {
    Frame &f = stack.back();
    if (f.next == f.body->size()) {
      stack.pop_back();
      continue;
    }
    const Instr &in = (*f.body)[f.next++];
    Weight inner{};
    if (visit(in, f.weight, static_cast<int>(stack.size()) - 1, inner) && in.op == Opcode::Loop)
      stack.push_back({&in.body, 0, inner}); // invalidates f
  }
}

} // namespace spyre::isa

template <> struct std::hash<spyre::isa::Instr> {
  size_t operator()(const spyre::isa::Instr &in) const { return spyre::isa::hashInstr(in); }
};
