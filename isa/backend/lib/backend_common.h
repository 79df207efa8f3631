// Shared machinery of the backend compiler: per-tensor device geometry from a SuperDSC, and a
// small builder for SPMD programs (per-core tables, nested loops that advance several address
// registers, DMA of an arbitrary box of sticks).
#pragma once
#include "spyre/backend/backend.h"
#include "spyre/isa/divisors.h" // divisorsOf
#include <functional>
#include <string>
#include <vector>

namespace spyre::backend {
// The backend speaks the ISA's vocabulary (SuperDsc, Kernel, Instr, Opcode, Format, ...).
using namespace spyre::isa;
} // namespace spyre::backend

namespace spyre::backend::detail {

/// One non-elem device dim of a tensor (outer -> inner), aligned with the op's layout.
struct TensorDim {
  int iterDim = -1;      ///< SuperDsc::dims index
  int64_t extent = 1;    ///< device extent (sticks for the stick dim; 1 if broadcast/reduced)
  int64_t strideBytes = 0;
  bool present = true;   ///< scale_ 1 on this dim
};

struct TensorGeom {
  const SdscTensor *t = nullptr;
  Format fmt = Format::DL16;
  std::vector<TensorDim> dims;  ///< outer -> inner, in the tensor's own layout order
  /// Index into dims of iteration dim d, or -1 if the tensor's layout does not list it.
  int dimOf(int d) const {
    for (size_t k = 0; k < dims.size(); ++k)
      if (dims[k].iterDim == d)
        return static_cast<int>(k);
    return -1;
  }
  /// The tensor steps through iteration dim d (extent > 1).
  bool spans(int d) const {
    int k = dimOf(d);
    return k >= 0 && dims[k].extent > 1;
  }
  bool stickPresent = true;     ///< the stick (elem) dim is not broadcast/reduced
  int segment = 0;              ///< kernel argument index
  int64_t bytes = 0;            ///< whole device extent (of the allocation, for a view)
  /// A view (SdscTensor::maxDimSizes): extents stay the op's, strides are the allocation's;
  /// the view starts viewOffsetBytes into it, plus laneOffset elements into its first stick.
  int64_t viewOffsetBytes = 0;
  int64_t laneOffset = 0;
};

std::string where(const SuperDsc &s);
Format formatOf(const SuperDsc &s, DataFormat f);

/// Device dims of tensor t (outer -> inner) from its own layout class; its stick dim must be
/// `stickDim` (the op's). Dims its layout does not list are broadcast (extent 1).
/// Views of larger allocations (maxDimSizes_/offsets_) are Unsupported unless allowView.
TensorGeom tensorGeom(const SuperDsc &s, const SdscTensor &t, const std::string &stickDim, bool allowView = false);

/// Per-core slice [lo, lo+len) of the op's iteration dim d in device units of that dim.
struct Slice {
  int64_t lo, len;
};
Slice coreSlice(const SuperDsc &s, int core, int iterDim, int64_t deviceExtent);
/// coreSlice for the lowerings that accept uneven splits (docs/superdsc.md §2, our extension):
/// slice i of an extent E split n ways is [i·q, min((i+1)·q, E)) with q = ceil(E / n), so only
/// the last slice may be shorter; a split that leaves a slice empty is an error.
Slice coreSliceUneven(const SuperDsc &s, int core, int iterDim, int64_t deviceExtent);
/// The maximal runs [first, last] of consecutive cores whose slices have equal lengths: one run
/// for an even split; an uneven one gets one program per run (Kernel::programs).
std::vector<std::pair<int, int>> equalSliceRuns(const std::vector<std::vector<Slice>> &slices);

/// Each core's DDR offset of tensor g when core c works on slices[c] of `dims` (the device dims
/// a plan iterates, outer -> inner): base + Σ_j slices[c][j].lo × g's stride along dims[j], for
/// the dims g steps through.
std::vector<int64_t> sliceOffsets(const TensorGeom &g, const std::vector<TensorDim> &dims,
                                  const std::vector<std::vector<Slice>> &slices, int64_t base);

/// Checks the descriptor's start addresses of `g` against segment + per-core offsets.
void checkStartAddresses(const SuperDsc &s, const TensorGeom &g, const std::vector<int64_t> &coreOffsets);

/// An LX-resident operand (memOrg_ lx): each core holds its own slice, densely in the tensor's
/// dim order (outer -> inner, `sliceBytes` in all), at the same 128-byte aligned LX address on
/// every core, inside the kernel's reserved LX (SuperDsc::lxReservedBytes). Returns the address.
int64_t lxResidentAddress(const SuperDsc &s, const TensorGeom &g, int64_t sliceBytes);

/// A kernel for s: sanitised name, all of s's cores, one argument per segment up to the highest
/// one used, named after the tensor in it ("segN" for unused segments).
Kernel newKernel(const SuperDsc &s, const std::vector<const TensorGeom *> &tensors);

// Block-size searches. Extents can be huge (a malformed SuperDSC, or 2^30 rows), so none of
// these walks the candidates one by one.
/// Largest c in [1, hi] with fits(c), for fits monotone (true up to some c); 0 if none.
int64_t largestFitting(int64_t hi, const std::function<bool(int64_t)> &fits);
/// Largest divisor of n with fits(c), fits monotone; 0 if none.
int64_t largestDivisorFitting(int64_t n, const std::function<bool(int64_t)> &fits);
/// The multicast cohort of a load that core c makes from DDR offset off[c] in an SPMD program
/// (every core runs the same instructions, so equal offsets mean equal transfers): the largest
/// k in {8, 4, 2} dividing the core count such that each aligned run of k cores shares one
/// offset; 1 if there is none or opts.multicast is off.
int sharedLoadCohort(const std::vector<int64_t> &off, const BackendOptions &opts);
/// The block length of a double-buffered sweep over n units that now has blocks of `chunk`:
/// a smaller one giving >= `blocks` blocks whose blocks stay bigEnough (monotone), else the
/// smallest smaller one that is bigEnough (the most blocks possible), else `chunk`.
/// divisorsOnly: only divisors of n (uniform blocks).
int64_t pipelineChunk(int64_t n, int64_t chunk, int64_t blocks, const std::function<bool(int64_t)> &bigEnough,
                      bool divisorsOnly);

Instr mk(Opcode op, Format f = Format::None);
Instr addi(int rd, int rs, int64_t imm);
// The vector forms the lowerings emit most (every other field default):
/// `ld.f vd, lx[rBase+off]`
Instr vld(Format f, int vd, int rBase, int64_t off = 0);
/// `st.f lx[rBase+off], vs`
Instr vst(Format f, int vs, int rBase, int64_t off = 0);
/// `bcast.f vd, value`
Instr vbcast(Format f, int vd, float value = 0);
/// An instruction on vector registers only, in operand order (-1: none), e.g. `add.f vd, va, vb`.
Instr vop(Opcode op, Format f, int vd, int va = -1, int vb = -1, int vc = -1);

/// Builds one SPMD program for cores 0..n-1.
class ProgramBuilder {
public:
  std::vector<Instr> *cur;
  std::vector<Instr> top;
  ProgramBuilder() : cur(&top) {}
  void emit(Instr i) { cur->push_back(std::move(i)); }
  /// `loop n { body(); r += step for each (r, step) }` then restore the registers.
  template <typename Fn> void loop(int64_t n, const std::vector<std::pair<int, int64_t>> &adv, Fn body) {
    if (n <= 0)
      return;
    if (n == 1) {
      body();
      return;
    }
    Instr l = mk(Opcode::Loop);
    l.imm = n;
    std::vector<Instr> *saved = cur;
    cur = &l.body;
    body();
    for (auto [r, step] : adv)
      if (step)
        emit(addi(r, r, step));
    cur = saved;
    emit(std::move(l));
    for (auto [r, step] : adv)
      if (step)
        emit(addi(r, r, -n * step));
  }
  /// Copies a box of sticks between DDR (arg + rDdr, strides in bytes) and dense LX at
  /// lx[rLx + lxOff] (row-major over the box). box = (count, ddr stride) outer -> inner.
  /// Uses scratch registers for boxes that need more than a 3-d DMA.
  /// Moves the built program into k as the program of cores first..last (register walks
  /// folded, trailing register restores dropped: they are dead and lengthen listings).
  void finishCores(Kernel &k, int first, int last);
  /// finishCores for all of k's cores: the SPMD program.
  void finishSpmd(Kernel &k) { finishCores(k, 0, k.numCores - 1); }
  void dmaBox(bool toLx, int arg, int rDdr, int64_t ddrOff, int rLx, int64_t lxOff,
              std::vector<std::pair<int64_t, int64_t>> box, int token, int scratchDdr, int scratchLx);
  /// As dmaBox with explicit LX strides: box = (count, ddr stride, lx stride), outer -> inner.
  /// cohort > 1: a load is a multicast shared by the aligned runs of `cohort` cores (dma.mc;
  /// the caller guarantees every member makes the same load, see sharedLoadCohort).
  void dmaBoxStrided(bool toLx, int arg, int rDdr, int64_t ddrOff, int rLx, int64_t lxOff,
                     const std::vector<std::array<int64_t, 3>> &box, int token, int scratchDdr, int scratchLx,
                     bool wait = true, int cohort = 1);
  /// The box moves with one DMA instruction (at most three runs after merging contiguous dims).
  static bool singleDma(const std::vector<std::pair<int64_t, int64_t>> &box);
  /// The DMA instructions a strided box (count, ddr stride, lx stride) takes: 1 for at most
  /// three runs, else the trips of the program loops around the DMA.
  static int64_t dmaCount(const std::vector<std::array<int64_t, 3>> &box);
  /// One DMA of a singleDma box into/out of dense LX, *not* waited: the caller waits `token`
  /// before touching that LX (double-buffered staging).
  void dmaAsync(bool toLx, int arg, int rDdr, int64_t ddrOff, int rLx, int64_t lxOff,
                const std::vector<std::pair<int64_t, int64_t>> &box, int token, int cohort = 1);
  /// `wait t, ...` (nothing for an empty list).
  void waitTokens(std::vector<int> tokens);
  /// A double-buffered sweep of n >= 2 blocks. Registers rCur / rOther hold this block's and
  /// the other block's buffer base (0 and `half`, swapped after every block, with rSwap as
  /// scratch); `adv` advances the DDR registers by one block. Emits: the bases, prologue()
  /// (fetch block 0 into rCur's buffers), block(first, last) for every block with the advance
  /// between blocks (the middle ones as one loop), epilogue() (wait for the last write-back),
  /// then restores the `adv` registers.
  void pipelinedSweep(int64_t n, const std::vector<std::pair<int, int64_t>> &adv, int rCur, int rOther, int rSwap,
                      int64_t half, const std::function<void()> &prologue,
                      const std::function<void(bool first, bool last)> &block, const std::function<void()> &epilogue);
};

// Small emitters shared by the lowerings. Conventions: r5 walks LX rows, v12 holds a lane mask
// (v13 its bound), v15 a DL16 zero.
void emitLi(ProgramBuilder &pb, int r, int64_t v);
/// r = table[core id] (`tbl`): a per-core constant, e.g. each core's DDR offset of a tensor.
void emitTbl(ProgramBuilder &pb, int r, std::vector<int64_t> table);
/// v15 = DL16 zero in every lane.
void emitZero(ProgramBuilder &pb);
/// v12 = 1.0 on lanes below `valid`, 0.0 above (the valid lanes of a partial last stick).
void emitLaneMask(ProgramBuilder &pb, int64_t valid);
/// Stores v15 into rows [valid, per) of each of `tiles` tiles of `per` rows at lx (padding
/// rows that DMA never writes).
void emitZeroPadRows(ProgramBuilder &pb, int64_t lx, int64_t tiles, int64_t per, int64_t valid);
/// pt.tr through the PE array: lx[rBase + dst] (C x R sticked on R) = the transpose of
/// lx[rBase + src] (R x C sticked on C); rBase -1 = absolute addresses.
void emitPtTr(ProgramBuilder &pb, int64_t dst, int64_t src, int64_t R, int64_t C, int rBase = -1);

} // namespace spyre::backend::detail
