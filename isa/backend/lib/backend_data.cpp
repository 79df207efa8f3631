// Lane-moving copies: a slice of the stick dim whose first element is not at a stick boundary
// (an input view with a lane offset). DL16 and fp32 (as pairs of 16-bit words). The SFP has no lane shift, so the copy goes through the PE
// array twice, as a restickify would: per block of 64 rows, the input sticks that cover the
// view are transposed (columns become sticks), the view's columns are then whole sticks starting
// `lane` sticks in, and transposing those back gives the output sticks.
//
//   S  (64 rows x inT tiles, sticked on the column)      DMA in
//   D  = S^T: stick c holds column c of the 64 rows       pt.tr R=64 C=inT*64
//   D2 = (D + lane sticks)^T: output tiles x 64 rows      pt.tr R=outT*64 C=64
//   D2 -> output rows of this block                       DMA out
//
// Columns are processed in groups of G output tiles (G + 1 input tiles) to fit in LX. Padding
// rows of a partial 64-row block are never written back, so their (stale) contents do not
// matter: pt.tr moves DL16 data without arithmetic.
//
// An output view starting inside a stick (cat along the stick dim at an offset that is not a
// stick multiple) keeps the lanes below its offset: the output's first tile is read back and
// transposed into E, the view's column sticks are copied after them (ld/st, exact for DL16),
// and E is transposed back. Lanes past the view's end in its last tile belong to later cat
// operands (written by later kernels) or padding. Later column groups start at output tile
// boundaries and are plain shifts.
//
// The lowering plans first (checkLaneShiftOperands, planLaneShiftLx, planLaneShiftCores: sizes,
// column groups, LX addresses and per-core offsets, all plain data in a LaneShiftPlan), then
// emits (LaneShiftEmitter), as backend_pointwise.cpp does.
#include "lowerings.h"

namespace spyre::backend::detail {
namespace {

int64_t strideOf(const TensorGeom &g, int d) {
  int k = g.dimOf(d);
  return k >= 0 ? g.dims[k].strideBytes : 0;
}

/// How a lane-moving copy walks its operands, decided before anything is emitted. Lane counts
/// are in 16-bit words. Kernels point at `in` and `out`, so a plan is neither copied nor moved.
struct LaneShiftPlan {
  // The operands (checkLaneShiftOperands).
  TensorGeom in, out;
  int sd = -1;     ///< the stick dim
  int rowDim = -1; ///< the innermost device dim unless it is the stick dim (-1)
  int64_t lane = 0, laneOut = 0, N = 0; ///< input / output lane offset, view columns
  int64_t outTiles = 0;                 ///< output tiles the view touches
  // Strides and the LX layout (planLaneShiftLx).
  int64_t inTile = 0, outTile = 0, inRow = 0, outRow = 0;
  int64_t G = 0; ///< output tiles per column group
  int64_t lxS = 0, lxD = 0, lxD2 = 0, lxE = 0;
  // The per-core walk (planLaneShiftCores).
  std::vector<int64_t> inOff, outOff;
  std::vector<int> batch; ///< dims other than the stick and row dims, walked by loops
  int64_t rows = 1;       ///< rows of the row dim per core

  LaneShiftPlan() = default;
  LaneShiftPlan(const LaneShiftPlan &) = delete;
  LaneShiftPlan &operator=(const LaneShiftPlan &) = delete;
};

/// Checks the operands (one tensor in, one out, same format and layout, no broadcast, the
/// stick dim unsplit) and fills the operand part of the plan.
void checkLaneShiftOperands(const SuperDsc &s, LaneShiftPlan &p) {
  if (s.inputs.size() != 1 || s.inputs[0] < 0 || s.outputs.size() != 1)
    throw Error(where(s) + ": a lane-moving copy takes one input tensor and one output");
  const SdscTensor &inT = s.tensor(s.inputs[0]), &outT = s.tensor(s.outputs[0]);
  const SdscLayout &layout = s.primaryDsInfo.at(outT.dsType);
  const std::string &stickDim = layout.stickDimOrder[0];
  p.sd = s.dimIndex(stickDim);
  p.in = tensorGeom(s, inT, stickDim, true);
  p.out = tensorGeom(s, outT, stickDim, true);
  const TensorGeom &in = p.in, &out = p.out;
  if (in.fmt != out.fmt || (in.fmt != Format::DL16 && in.fmt != Format::F32 && in.fmt != Format::I32))
    throw Unsupported("a lane-moving copy from " + std::string(formatName(in.fmt)) + " to " +
                      std::string(formatName(out.fmt)) + " in " + s.name + " (DL16, f32 or i32, same on both sides)");
  // pt.tr moves 16-bit words without arithmetic, so an fp32 or int32 stick is 64 words: a
  // 32-bit element is two adjacent words and every lane count below is in words (u per element).
  const int64_t u = in.fmt == Format::DL16 ? 1 : 2;
  for (size_t d = 0; d < s.dims.size(); ++d)
    if (inT.scale[d] != 1)
      throw Unsupported("broadcasting in a lane-moving copy in " + s.name);
  if (s.primaryDsInfo.at(inT.dsType).layoutDimOrder != layout.layoutDimOrder)
    throw Unsupported("a lane-moving copy between different layouts in " + s.name);
  if (s.numWkSlicesPerDim[p.sd] != 1)
    throw Unsupported("splitting the stick dim of a lane-moving copy over cores in " + s.name);
  p.lane = in.laneOffset * u;
  p.laneOut = out.laneOffset * u;
  p.N = s.N[p.sd] * u;
  // Output tiles the view touches (its first starts laneOut lanes in).
  p.outTiles = (p.laneOut + p.N + 63) / 64;
  // The row dim: the innermost device dim (layoutDimOrder_[0]) unless it is the stick dim.
  p.rowDim = layout.layoutDimOrder[0] == stickDim ? -1 : s.dimIndex(layout.layoutDimOrder[0]);
}

/// The tile and row strides, the column group size G and the LX layout.
void planLaneShiftLx(const SuperDsc &s, const BackendOptions &opts, LaneShiftPlan &p) {
  p.inTile = strideOf(p.in, p.sd);
  p.outTile = strideOf(p.out, p.sd);
  p.inRow = p.rowDim >= 0 ? strideOf(p.in, p.rowDim) : 0;
  p.outRow = p.rowDim >= 0 ? strideOf(p.out, p.rowDim) : 0;
  // Column groups: G output tiles need G + 1 input tiles; S, D (one spare tile for the shifted
  // read) and D2 must fit in LX.
  const int64_t tileBytes = 64 * kStickBytes;
  // LX: S (G + 1 input tiles), D (G + 2: a spare tile for the shifted read), D2 (G), and for
  // an output lane offset E (G tiles, the merged column sticks).
  const int64_t laneOut = p.laneOut;
  const int64_t bufTiles = laneOut ? 1 + 2 + 2 : 1 + 2; // per G: S, D, D2 (+ E); constant extra tiles
  auto fits = [&](int64_t g) { return ((laneOut ? 4 : 3) * g + bufTiles) * tileBytes <= opts.lxBytes; };
  p.G = largestFitting(p.outTiles, fits);
  if (p.G == 0)
    throw Unsupported("a lane-moving copy does not fit in LX in " + s.name);
  p.lxS = 0;
  p.lxD = (p.G + 1) * tileBytes;
  p.lxD2 = p.lxD + (p.G + 2) * tileBytes;
  p.lxE = p.lxD2 + p.G * tileBytes;
}

/// Per-core offsets (every non-stick dim may be split), the batch dims and the rows per core.
void planLaneShiftCores(const SuperDsc &s, LaneShiftPlan &p) {
  const TensorGeom &in = p.in, &out = p.out;
  p.inOff.assign(s.numCoresUsed, in.viewOffsetBytes);
  p.outOff.assign(s.numCoresUsed, out.viewOffsetBytes);
  for (const auto &td : out.dims)
    if (td.iterDim != p.sd && td.iterDim != p.rowDim)
      p.batch.push_back(td.iterDim);
  for (int c = 0; c < s.numCoresUsed; ++c)
    for (const auto &td : out.dims) {
      if (td.iterDim == p.sd)
        continue;
      Slice sl = coreSlice(s, c, td.iterDim, td.extent);
      p.inOff[c] += sl.lo * strideOf(in, td.iterDim);
      p.outOff[c] += sl.lo * strideOf(out, td.iterDim);
    }
  checkStartAddresses(s, in, p.inOff);
  checkStartAddresses(s, out, p.outOff);
  if (in.segment == out.segment)
    throw Unsupported("input and output in one segment in " + s.name);
  p.rows = p.rowDim >= 0 ? coreSlice(s, 0, p.rowDim, s.N[p.rowDim]).len : 1;
}

/// Emits the planned copy. Registers: r1 / r2 the input / output DDR offset, r5 / r6 the merge
/// copy's LX source / destination, r20 / r21 DMA scratch; v0 the merged stick.
class LaneShiftEmitter {
public:
  LaneShiftEmitter(const SuperDsc &s, const LaneShiftPlan &p) : s_(s), p_(p) {}
  Kernel emit();

private:
  void block(int64_t nr, int64_t gt, int64_t it, int64_t L, int64_t mergeCols);
  void shifted(int64_t nr, int64_t L, int64_t cols, int64_t outT);
  void columns(int64_t nr);
  void nest(size_t b);

  const SuperDsc &s_;
  const LaneShiftPlan &p_;
  ProgramBuilder pb_;
};

/// One block: `nr` rows, `gt` output tiles from `it` input tiles at the current r1/r2, the
/// view's first column `L` lanes into the first input tile. mergeCols > 0: the output tile
/// starts laneOut lanes in; its first laneOut lanes are kept and mergeCols columns follow.
void LaneShiftEmitter::block(int64_t nr, int64_t gt, int64_t it, int64_t L, int64_t mergeCols) {
  const int64_t tileBytes = 64 * kStickBytes;
  pb_.dmaBoxStrided(true, p_.in.segment, 1, 0, -1, p_.lxS, {{it, p_.inTile, tileBytes}, {nr, p_.inRow, kStickBytes}},
                    0, 20, 21);
  emitPtTr(pb_, p_.lxD, p_.lxS, 64, it * 64);
  if (mergeCols) {
    // E = the output's first tile as column sticks, then the view's columns after its
    // first laneOut ones; transposing E gives the merged output tiles.
    pb_.dmaBoxStrided(true, p_.out.segment, 2, 0, -1, p_.lxS, {{nr, p_.outRow, kStickBytes}}, 0, 20, 21);
    emitPtTr(pb_, p_.lxE, p_.lxS, 64, 64);
    emitLi(pb_, 5, p_.lxD + L * kStickBytes);
    emitLi(pb_, 6, p_.lxE + p_.laneOut * kStickBytes);
    pb_.loop(mergeCols, {{5, kStickBytes}, {6, kStickBytes}}, [&] {
      // A raw 128-byte move (f32 ld/st copy bits): the column sticks hold 16-bit words.
      pb_.emit(vld(Format::F32, 0, 5));
      pb_.emit(vst(Format::F32, 0, 6));
    });
    emitPtTr(pb_, p_.lxD2, p_.lxE, gt * 64, 64);
  } else {
    emitPtTr(pb_, p_.lxD2, p_.lxD + L * kStickBytes, gt * 64, 64);
  }
  pb_.dmaBoxStrided(false, p_.out.segment, 2, 0, -1, p_.lxD2,
                    {{gt, p_.outTile, tileBytes}, {nr, p_.outRow, kStickBytes}}, 1, 20, 21);
}

/// `cols` view columns from lane L of the input's first tile into `outT` whole output tiles.
void LaneShiftEmitter::shifted(int64_t nr, int64_t L, int64_t cols, int64_t outT) {
  const int64_t G = p_.G, inTile = p_.inTile, outTile = p_.outTile;
  const int64_t full = outT / G, rest = outT % G;
  // Full groups except possibly the last group of the row: a group that is not the last
  // always has its G + 1 input tiles inside the allocation.
  int64_t loopGroups = rest ? full : full - 1;
  pb_.loop(loopGroups, {{1, G * inTile}, {2, G * outTile}}, [&] { block(nr, G, G + 1, L, 0); });
  int64_t lastTiles = rest ? rest : G, lastCols = cols - (outT - lastTiles) * 64;
  if (loopGroups > 0) {
    pb_.emit(addi(1, 1, loopGroups * G * inTile));
    pb_.emit(addi(2, 2, loopGroups * G * outTile));
  }
  block(nr, lastTiles, (L + lastCols + 63) / 64, L, 0);
  if (loopGroups > 0) {
    pb_.emit(addi(1, 1, -loopGroups * G * inTile));
    pb_.emit(addi(2, 2, -loopGroups * G * outTile));
  }
}

/// All column groups of `nr` rows.
void LaneShiftEmitter::columns(int64_t nr) {
  const int64_t G = p_.G, lane = p_.lane, laneOut = p_.laneOut, N = p_.N, outTiles = p_.outTiles;
  if (!laneOut) {
    shifted(nr, lane, N, outTiles);
    return;
  }
  // The first group merges the output's first tile; later groups are plain shifts whose
  // view columns start at output tile boundaries, (lane - laneOut) mod 64 lanes into an input
  // tile.
  const int64_t g0Tiles = std::min(G, outTiles), g0Cols = std::min(N, g0Tiles * 64 - laneOut);
  block(nr, g0Tiles, (lane + g0Cols + 63) / 64, lane, g0Cols);
  if (outTiles > G) {
    const int64_t Lp = ((lane - laneOut) % 64 + 64) % 64, inShift = G + (lane >= laneOut ? 0 : -1);
    pb_.emit(addi(1, 1, inShift * p_.inTile));
    pb_.emit(addi(2, 2, G * p_.outTile));
    shifted(nr, Lp, N - g0Cols, outTiles - G);
    pb_.emit(addi(1, 1, -inShift * p_.inTile));
    pb_.emit(addi(2, 2, -G * p_.outTile));
  }
}

/// Loops over the batch dims from `b` on, then over the rows in blocks of 64.
void LaneShiftEmitter::nest(size_t b) {
  if (b < p_.batch.size()) {
    int d = p_.batch[b];
    pb_.loop(coreSlice(s_, 0, d, s_.N[d]).len, {{1, strideOf(p_.in, d)}, {2, strideOf(p_.out, d)}},
             [&] { nest(b + 1); });
    return;
  }
  const int64_t rows = p_.rows, inRow = p_.inRow, outRow = p_.outRow;
  pb_.loop(rows / 64, {{1, 64 * inRow}, {2, 64 * outRow}}, [&] { columns(64); });
  if (rows % 64) {
    int64_t done = rows / 64 * 64;
    if (done) {
      pb_.emit(addi(1, 1, done * inRow));
      pb_.emit(addi(2, 2, done * outRow));
    }
    columns(rows % 64);
    if (done) {
      pb_.emit(addi(1, 1, -done * inRow));
      pb_.emit(addi(2, 2, -done * outRow));
    }
  }
}

Kernel LaneShiftEmitter::emit() {
  Kernel k = newKernel(s_, {&p_.in, &p_.out});
  emitTbl(pb_, 1, p_.inOff);
  emitTbl(pb_, 2, p_.outOff);
  nest(0);
  pb_.finishSpmd(k);
  k.comment = "op=" + s_.opFuncName + " lane shift " + std::to_string(p_.lane) + " columns=" + std::to_string(p_.N) +
              " rows/core=" + std::to_string(p_.rows) + " groups of " + std::to_string(p_.G) + " tiles";
  return k;
}

} // namespace

Kernel compileLaneShift(const SuperDsc &s, const BackendOptions &opts) {
  LaneShiftPlan p;
  checkLaneShiftOperands(s, p);
  planLaneShiftLx(s, opts, p);
  planLaneShiftCores(s, p);
  return LaneShiftEmitter(s, p).emit();
}

} // namespace spyre::backend::detail
