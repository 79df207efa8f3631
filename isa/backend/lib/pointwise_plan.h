// Internal to the backend: the plan of the pointwise walk (backend_pointwise.cpp), shared with
// the fused pointwise kernels (backend_fused.cpp), which fill the operand part differently and
// leave the walk (slices, blocking, LX, DMA, emission) to backend_pointwise.cpp.
#pragma once
#include "backend_common.h"

namespace spyre::backend::detail {

/// An operand of a pointwise op: a tensor (possibly broadcast) or a constant.
struct PwInput {
  bool isConst = false;
  float value = 0;
  int arg = -1; ///< a runtime constant: the launch's scalar argument number (value unused)
  TensorGeom g;
};

/// How a pointwise kernel walks its operands, decided before anything is emitted. `tensors`
/// points into `ins` and `out`, so a plan is neither copied nor moved.
struct PointwisePlan {
  // The op and its operands (checkOperands).
  Opcode op = Opcode::Ld;
  bool lnScale = false, lnNorm = false;
  std::string stickDim;
  TensorGeom out;
  std::vector<PwInput> ins;
  Format computeFmt = Format::None;
  int clipMinArg = -1, clipMaxArg = -1; ///< clip bounds that are launch scalar arguments
  /// A fused kernel (SuperDsc::fusedOps): `ins` are its external tensors only, `out` the
  /// first output and `moreOuts` the others; per stick the body (ld / splat / ops / st, LX
  /// bases r10 + tensor index) runs after the constants' registers are set once.
  bool fused = false;
  std::vector<TensorGeom> moreOuts;
  struct Const {
    float value = 0;
    int arg = -1; ///< a launch scalar argument, or -1
    Format fmt = Format::None;
    int reg = -1;
  };
  std::vector<Const> fusedConsts;
  std::vector<Instr> fusedBody;
  /// A row-fused kernel (fusedOps with row reductions, docs/superdsc.md §6.10): the stick dim
  /// (whole in every block) is walked once per pass; per row and pass: the prelude (ops on
  /// row values), the accumulators' init, the stick loop's body (the last, partly filled stick
  /// of a row: lastBody, padded lanes masked out of the reductions), and the finish (the
  /// reductions into row values). rowSetup (masks, identities) runs once with the constants.
  struct RowPass {
    std::vector<Instr> prelude, init, body, lastBody, finish;
  };
  std::vector<RowPass> rowPasses;
  std::vector<Instr> rowSetup;
  /// Row scratch (keepRows: asked before checkRowFusedOperands): stick values of an earlier
  /// pass read in a later one are stored in pass order into one LX row each (r17 walks it,
  /// value i at i * scratchRowBytes) instead of being recomputed; scratchRows of them. The
  /// scratch sits after the blocks (scratchLx, planLx) and is reused by every row.
  bool keepRows = false;
  int scratchRows = 0;
  int64_t scratchRowBytes = 0, scratchLx = 0;
  static constexpr int kScratchReg = 17;
  /// A row-fused kernel's first output as a tensor (its own dim order: its DMA box, its LX
  /// layout when LX-resident); `out.dims` is the walk's order, the stick dim moved innermost.
  TensorGeom outTensor;
  bool rowFused() const { return !rowPasses.empty(); }
  // The walk (planBlocks).
  int numCores = 0;
  std::vector<const TensorGeom *> tensors;  ///< the tensor inputs, then the output
  size_t J = 0;                             ///< device dims of the output
  std::vector<std::vector<Slice>> slices;   ///< per core, per output dim
  std::vector<int64_t> len;                 ///< per-core extent of each output dim
  std::vector<std::vector<int64_t>> canon;  ///< LX-resident operands: LX stride per output dim
  std::vector<int64_t> lxAddr;              ///< LX-resident operands: the slice's LX address
  /// Blocking: dims [0, c0) are walked one index at a time by program loops, dim c0 in chunks
  /// of `chunk`, dims after c0 whole; chosen so every tensor's block fits in LX.
  size_t c0 = 0;
  int64_t chunk = 0, numBlocks = 0;
  bool pipelined = false; ///< double-buffered sweep of >= 2 blocks
  /// LX: [reserved | sweep-constant tensors | half 0: block-varying tensors | half 1].
  std::vector<int64_t> lxBase;
  int64_t half = 0, lxCursor = 0;
  std::vector<std::vector<int64_t>> lxStride; ///< LX stride of each tensor along each output dim
  std::vector<bool> async;                    ///< block-varying tensors moved by one async DMA
  std::vector<int> inTokens;

  PointwisePlan() = default;
  PointwisePlan(const PointwisePlan &) = delete;
  PointwisePlan &operator=(const PointwisePlan &) = delete;

  int nt() const { return static_cast<int>(tensors.size()); }
  int nOut() const { return 1 + static_cast<int>(moreOuts.size()); }
  int nIn() const { return nt() - nOut(); }
  /// Does tensor g step along output device dim j?
  bool spans(const TensorGeom &g, size_t j) const { return g.spans(out.dims[j].iterDim); }
  int64_t strideAlong(const TensorGeom &g, size_t j) const {
    int k = g.dimOf(out.dims[j].iterDim);
    return k >= 0 && g.dims[k].extent > 1 ? g.dims[k].strideBytes : 0;
  }
  /// Each core's DDR offset of tensor g.
  std::vector<int64_t> offsets(const TensorGeom &g) const {
    return sliceOffsets(g, out.dims, slices, g.viewOffsetBytes);
  }
  /// Bytes of tensor g's block: chunk of dim c0, whole dims after it (a dim it spans).
  int64_t tensorBlockBytes(const TensorGeom &g, size_t at, int64_t ch) const {
    int64_t b = kStickBytes;
    if (spans(g, at))
      b *= ch;
    for (size_t j = at + 1; j < J; ++j)
      if (spans(g, j))
        b *= len[j];
    return b;
  }
  /// Tensor g's block at blocking (at, ch) (the chunk ch of output dim at, whole dims after
  /// it), per dim of g's own order (outer -> inner): (count, DDR stride, LX stride). Dense in
  /// g's own order, except in a row-fused kernel: dense in the walk's order (out.dims, the
  /// stick dim innermost), so a row's sticks are contiguous in LX. In the own order (generic
  /// layout: stick tiles outside the rows) they would be a whole row block apart, all in the
  /// same few host L1 sets. Only LX addresses and DMA strides differ (the block's LX bytes are
  /// tensorBlockBytes either way); a tensor keeps its own order where the walk's would take a
  /// different number of DMA instructions.
  std::vector<std::array<int64_t, 3>> lxBox(const TensorGeom &g, size_t at, int64_t ch) const;
  /// The planned block of tensor g (lxBox at the plan's c0 and chunk).
  std::vector<std::array<int64_t, 3>> stagedBox(const TensorGeom &g) const { return lxBox(g, c0, chunk); }
  /// Block length of output dim j for a tensor that spans it.
  int64_t blockLen(size_t j) const { return j < c0 ? 1 : j == c0 ? chunk : len[j]; }
  size_t outDimOf(int iterDim) const {
    for (size_t j = 0; j < J; ++j)
      if (out.dims[j].iterDim == iterDim)
        return j;
    return J;
  }
};

/// Fills the operand part of p for a fused SuperDSC (backend_fused.cpp).
void checkFusedOperands(const SuperDsc &s, PointwisePlan &p);
/// A fused SuperDSC with row reductions among its ops (superdsc.md §6.10).
bool isRowFused(const SuperDsc &s);
/// Fills the operand part and the passes of p for a row-fused SuperDSC (backend_row_fused.cpp).
void checkRowFusedOperands(const SuperDsc &s, PointwisePlan &p);

// The plan steps (backend_pointwise_plan.cpp), in the order compilePointwise runs them.
/// constantInfo_ entry `name` (dflt when absent; an error naming it when required).
double constant(const SuperDsc &s, const std::string &name, double dflt, bool required);
/// The launch scalar argument behind constant `name`, or -1 for a compile-time value.
int constantArg(const SuperDsc &s, const std::string &name);
/// Checks a single pointwise op against its row of opfuncs.def; fills the op and operand part.
void checkOperands(const SuperDsc &s, PointwisePlan &p);
/// An operand view starting inside a stick: the op is a lane-moving copy (backend_data.cpp).
bool movesLanes(const SuperDsc &s, const PointwisePlan &p);
/// Per-core slices (the walk covers core `rep`'s lengths), start-address checks, LX-resident strides.
void planSlices(const SuperDsc &s, PointwisePlan &p, int rep = 0);
/// The blocking of the sweep (c0, chunk, double buffering) within the staging LX.
void planBlocking(const SuperDsc &s, const BackendOptions &opts, PointwisePlan &p);
/// The LX layout of the blocks, their LX strides and which of them move asynchronously.
void planLx(const SuperDsc &s, PointwisePlan &p);

} // namespace spyre::backend::detail
