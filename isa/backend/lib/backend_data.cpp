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
#include "lowerings.h"
#include <functional>

namespace spyre::backend::detail {

Kernel compileLaneShift(const SuperDsc &s, const BackendOptions &opts) {
  if (s.inputs.size() != 1 || s.inputs[0] < 0 || s.outputs.size() != 1)
    throw Error(where(s) + ": a lane-moving copy takes one input tensor and one output");
  const SdscTensor &inT = s.tensor(s.inputs[0]), &outT = s.tensor(s.outputs[0]);
  const SdscLayout &layout = s.primaryDsInfo.at(outT.dsType);
  const std::string &stickDim = layout.stickDimOrder[0];
  const int sd = s.dimIndex(stickDim);
  TensorGeom in = tensorGeom(s, inT, stickDim, true), out = tensorGeom(s, outT, stickDim, true);
  if (in.fmt != out.fmt || (in.fmt != Format::DL16 && in.fmt != Format::F32))
    throw Unsupported("a lane-moving copy from " + std::string(formatName(in.fmt)) + " to " +
                      std::string(formatName(out.fmt)) + " in " + s.name + " (DL16 or f32, same on both sides)");
  // pt.tr moves 16-bit words without arithmetic, so an fp32 stick is 64 words: an fp32 element
  // is two adjacent words and every lane count below is in words (u per element).
  const int64_t u = in.fmt == Format::F32 ? 2 : 1;
  for (size_t d = 0; d < s.dims.size(); ++d)
    if (inT.scale[d] != 1)
      throw Unsupported("broadcasting in a lane-moving copy in " + s.name);
  if (s.primaryDsInfo.at(inT.dsType).layoutDimOrder != layout.layoutDimOrder)
    throw Unsupported("a lane-moving copy between different layouts in " + s.name);
  if (s.numWkSlicesPerDim[sd] != 1)
    throw Unsupported("splitting the stick dim of a lane-moving copy over cores in " + s.name);
  const int64_t lane = in.laneOffset * u, laneOut = out.laneOffset * u, N = s.N[sd] * u;
  // Output tiles the view touches (its first starts laneOut lanes in).
  const int64_t outTiles = (laneOut + N + 63) / 64;
  // The row dim: the innermost device dim (layoutDimOrder_[0]) unless it is the stick dim.
  const int rowDim = layout.layoutDimOrder[0] == stickDim ? -1 : s.dimIndex(layout.layoutDimOrder[0]);
  auto strideOf = [](const TensorGeom &g, int d) {
    int k = g.dimOf(d);
    return k >= 0 ? g.dims[k].strideBytes : 0;
  };
  const int64_t inTile = strideOf(in, sd), outTile = strideOf(out, sd);
  const int64_t inRow = rowDim >= 0 ? strideOf(in, rowDim) : 0, outRow = rowDim >= 0 ? strideOf(out, rowDim) : 0;
  // Column groups: G output tiles need G + 1 input tiles; S, D (one spare tile for the shifted
  // read) and D2 must fit in LX.
  const int64_t tileBytes = 64 * kStickBytes;
  // LX: S (G + 1 input tiles), D (G + 2: a spare tile for the shifted read), D2 (G), and for
  // an output lane offset E (G tiles, the merged column sticks).
  const int64_t bufTiles = laneOut ? 1 + 2 + 2 : 1 + 2; // per G: S, D, D2 (+ E); constant extra tiles
  auto fits = [&](int64_t g) { return ((laneOut ? 4 : 3) * g + bufTiles) * tileBytes <= opts.lxBytes; };
  int64_t G = largestFitting(outTiles, fits);
  if (G == 0)
    throw Unsupported("a lane-moving copy does not fit in LX in " + s.name);
  const int64_t lxS = 0, lxD = (G + 1) * tileBytes, lxD2 = lxD + (G + 2) * tileBytes, lxE = lxD2 + G * tileBytes;

  // Per-core offsets: every non-stick dim may be split.
  std::vector<int64_t> inOff(s.numCoresUsed, in.viewOffsetBytes), outOff(s.numCoresUsed, out.viewOffsetBytes);
  std::vector<int> batch;
  for (const auto &td : out.dims)
    if (td.iterDim != sd && td.iterDim != rowDim)
      batch.push_back(td.iterDim);
  for (int c = 0; c < s.numCoresUsed; ++c)
    for (const auto &td : out.dims) {
      if (td.iterDim == sd)
        continue;
      Slice sl = coreSlice(s, c, td.iterDim, td.extent);
      inOff[c] += sl.lo * strideOf(in, td.iterDim);
      outOff[c] += sl.lo * strideOf(out, td.iterDim);
    }
  checkStartAddresses(s, in, inOff);
  checkStartAddresses(s, out, outOff);
  if (in.segment == out.segment)
    throw Unsupported("input and output in one segment in " + s.name);
  const int64_t rows = rowDim >= 0 ? coreSlice(s, 0, rowDim, s.N[rowDim]).len : 1;

  Kernel k = newKernel(s, {&in, &out});
  ProgramBuilder pb;
  emitTbl(pb, 1, inOff);
  emitTbl(pb, 2, outOff);
  auto transpose = [&](int64_t dst, int64_t src, int64_t R, int64_t C) { emitPtTr(pb, dst, src, R, C); };
  // One block: `nr` rows, `gt` output tiles from `it` input tiles at the current r1/r2.
  // One block: `nr` rows, `gt` output tiles from `it` input tiles at the current r1/r2, the
  // view's first column `L` lanes into the first input tile. mergeCols > 0: the output tile
  // starts laneOut lanes in; its first laneOut lanes are kept and mergeCols columns follow.
  auto block = [&](int64_t nr, int64_t gt, int64_t it, int64_t L, int64_t mergeCols) {
    pb.dmaBoxStrided(true, in.segment, 1, 0, -1, lxS, {{it, inTile, tileBytes}, {nr, inRow, kStickBytes}}, 0, 20, 21);
    transpose(lxD, lxS, 64, it * 64);
    if (mergeCols) {
      // E = the output's first tile as column sticks, then the view's columns after its
      // first laneOut ones; transposing E gives the merged output tiles.
      pb.dmaBoxStrided(true, out.segment, 2, 0, -1, lxS, {{nr, outRow, kStickBytes}}, 0, 20, 21);
      transpose(lxE, lxS, 64, 64);
      emitLi(pb, 5, lxD + L * kStickBytes);
      emitLi(pb, 6, lxE + laneOut * kStickBytes);
      pb.loop(mergeCols, {{5, kStickBytes}, {6, kStickBytes}}, [&] {
        // A raw 128-byte move (f32 ld/st copy bits): the column sticks hold 16-bit words.
        Instr ld = mk(Opcode::Ld, Format::F32);
        ld.v = {0, -1, -1, -1};
        ld.lx = {5, 0};
        pb.emit(ld);
        Instr st = mk(Opcode::St, Format::F32);
        st.v = {0, -1, -1, -1};
        st.lx = {6, 0};
        pb.emit(st);
      });
      transpose(lxD2, lxE, gt * 64, 64);
    } else {
      transpose(lxD2, lxD + L * kStickBytes, gt * 64, 64);
    }
    pb.dmaBoxStrided(false, out.segment, 2, 0, -1, lxD2, {{gt, outTile, tileBytes}, {nr, outRow, kStickBytes}}, 1, 20,
                     21);
  };
  // `cols` view columns from lane L of the input's first tile into `outT` whole output tiles.
  auto shifted = [&](int64_t nr, int64_t L, int64_t cols, int64_t outT) {
    const int64_t full = outT / G, rest = outT % G;
    // Full groups except possibly the last group of the row: a group that is not the last
    // always has its G + 1 input tiles inside the allocation.
    int64_t loopGroups = rest ? full : full - 1;
    pb.loop(loopGroups, {{1, G * inTile}, {2, G * outTile}}, [&] { block(nr, G, G + 1, L, 0); });
    int64_t lastTiles = rest ? rest : G, lastCols = cols - (outT - lastTiles) * 64;
    if (loopGroups > 0) {
      pb.emit(addi(1, 1, loopGroups * G * inTile));
      pb.emit(addi(2, 2, loopGroups * G * outTile));
    }
    block(nr, lastTiles, (L + lastCols + 63) / 64, L, 0);
    if (loopGroups > 0) {
      pb.emit(addi(1, 1, -loopGroups * G * inTile));
      pb.emit(addi(2, 2, -loopGroups * G * outTile));
    }
  };
  auto columns = [&](int64_t nr) {
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
      pb.emit(addi(1, 1, inShift * inTile));
      pb.emit(addi(2, 2, G * outTile));
      shifted(nr, Lp, N - g0Cols, outTiles - G);
      pb.emit(addi(1, 1, -inShift * inTile));
      pb.emit(addi(2, 2, -G * outTile));
    }
  };
  std::function<void(size_t)> nest = [&](size_t b) {
    if (b < batch.size()) {
      int d = batch[b];
      pb.loop(coreSlice(s, 0, d, s.N[d]).len, {{1, strideOf(in, d)}, {2, strideOf(out, d)}}, [&] { nest(b + 1); });
      return;
    }
    pb.loop(rows / 64, {{1, 64 * inRow}, {2, 64 * outRow}}, [&] { columns(64); });
    if (rows % 64) {
      int64_t done = rows / 64 * 64;
      if (done) {
        pb.emit(addi(1, 1, done * inRow));
        pb.emit(addi(2, 2, done * outRow));
      }
      columns(rows % 64);
      if (done) {
        pb.emit(addi(1, 1, -done * inRow));
        pb.emit(addi(2, 2, -done * outRow));
      }
    }
  };
  nest(0);
  pb.finishSpmd(k);
  k.comment = "op=" + s.opFuncName + " lane shift " + std::to_string(lane) + " columns=" + std::to_string(N) +
              " rows/core=" + std::to_string(rows) + " groups of " + std::to_string(G) + " tiles";
  return k;
}

} // namespace spyre::backend::detail
