// transpose (a ReStickifyOpHBM data op): [.., R, C] sticked on C -> [.., C, R] sticked on R,
// through the PE array (pt.tr). Cores split the C tiles (and batch dims); each core stages one
// C tile x all R rows (R padded to a stick multiple with zero rows), transposes it and writes
// the C-tile's rows of every R tile.
#include "lowerings.h"
#include <functional>

namespace spyre::backend::detail {

// `swap` is torch-spyre's old name of the 2-D transpose (notes §2.8): the same kernel.

Kernel compileTranspose(const SuperDsc &s, const BackendOptions &opts) {
  if (s.inputs.size() != 1 || s.outputs.size() != 1 || s.inputs[0] < 0)
    throw Error(where(s) + ": " + s.opFuncName + " takes one input tensor and one output");
  const SdscTensor &xT = s.tensor(s.inputs[0]), &yT = s.tensor(s.outputs[0]);
  auto stickOf = [&](const SdscTensor &t) { return s.primaryDsInfo.at(t.dsType).stickDimOrder[0]; };
  // Columns: the input's stick dim; rows: the output's (for `transpose`, out and mb).
  const std::string cName = stickOf(xT), rName = stickOf(yT);
  if (s.opFuncName != "ReStickifyOpHBM" && (cName != "out" || rName != "mb"))
    throw Error(where(s) + ": " + s.opFuncName + " input must be sticked on out and the output on mb");
  if (cName == rName)
    throw Error(where(s) + ": a transpose must change the stick dim (both tensors are sticked on " + cName + ")");
  const int dR = s.dimIndex(rName), dC = s.dimIndex(cName);
  for (const SdscTensor *t : {&xT, &yT})
    for (int sc : t->scale)
      if (sc != 1)
        throw Error(where(s) + ": every tensor of a restickify must have scale_ 1 on every dim");
  TensorGeom x = tensorGeom(s, xT, cName), y = tensorGeom(s, yT, rName);
  if (x.fmt != Format::DL16 || y.fmt != Format::DL16)
    throw Unsupported("transpose of " + std::string(formatName(x.fmt)) + " tensors in " + s.name + " (DL16 only)");
  if (s.numWkSlicesPerDim[dR] != 1)
    throw Unsupported("splitting the rows of a transpose over cores in " + s.name);
  const int64_t R = s.N[dR], C = s.N[dC], RT = (R + 63) / 64, CT = (C + 63) / 64, Rpad = RT * 64;
  auto strideOf = [](const TensorGeom &g, int d) {
    int k = g.dimOf(d);
    return k >= 0 && g.dims[k].extent > 1 ? g.dims[k].strideBytes : 0;
  };
  std::vector<int> batch;
  for (size_t d = 0; d < s.dims.size(); ++d)
    if (static_cast<int>(d) != dR && static_cast<int>(d) != dC)
      batch.push_back(static_cast<int>(d));
  // Rows per staged chunk: all of them if a 64-column tile of every row fits twice in LX (source
  // and transposed copy), else the largest multiple of 64 that does (the rows then go in chunks).
  const int64_t Rc = std::min(Rpad, opts.lxBytes / (2 * 128) / 64 * 64);
  if (Rc < 64)
    throw Unsupported("transpose: 64 rows of a 64-column tile do not fit in LX in " + s.name);
  const bool chunked = Rc < Rpad;
  const int64_t lxSrc = 0, lxDst = Rc * 128;
  // Double buffering of whole column tiles (unchunked rows): tile i+1 is fetched and tile i-1
  // written back while tile i goes through the PE array. Source and transposed copy twice.
  const int64_t half = 2 * Rpad * 128;
  const bool canPipeline = !chunked && 2 * half <= opts.lxBytes;
  constexpr int rCur = 22, rOther = 23, rSwap = 24, tokIn = 0, tokOut = 1;
  bool pipelinedAny = false;
  const int64_t xTile = strideOf(x, dC), xRow = strideOf(x, dR) ? strideOf(x, dR) : 128;
  const int64_t yTile = strideOf(y, dR), yRow = strideOf(y, dC) ? strideOf(y, dC) : 128;
  Kernel k = newKernel(s, {&x, &y});
  for (int c = 0; c < k.numCores; ++c) {
    Slice cs = coreSlice(s, c, dC, CT);
    int64_t xOff = cs.lo * xTile, yOff = cs.lo * 64 * yRow;
    for (int d : batch) {
      Slice b = coreSlice(s, c, d, s.N[d]);
      xOff += b.lo * strideOf(x, d);
      yOff += b.lo * strideOf(y, d);
    }
    if (static_cast<uint64_t>(x.segment) * kSegmentBytes + xOff != xT.startAddress[c] ||
        static_cast<uint64_t>(y.segment) * kSegmentBytes + yOff != yT.startAddress[c])
      throw Error(where(s) + ": scheduleTree_ start addresses on core " + std::to_string(c) +
                  " do not match its work slice");
    const bool lastPartial = cs.lo + cs.len == CT && C % 64 != 0;
    const int64_t full = cs.len - (lastPartial ? 1 : 0);
    const bool pipe = canPipeline && full >= 2 && ProgramBuilder::singleDma({{R, xRow}}) &&
                      ProgramBuilder::singleDma({{Rpad / 64, yTile}, {64, yRow}});
    ProgramBuilder pb;
    emitLi(pb, 1, xOff);
    emitLi(pb, 2, yOff);
    if (Rpad > R) { // zero the padding rows of the staged tile(s); DMA never writes them
      emitZero(pb);
      if (!chunked)
        emitZeroPadRows(pb, lxSrc, 1, Rpad, R);
      if (pipe)
        emitZeroPadRows(pb, half + lxSrc, 1, Rpad, R);
    }
    // `rows` rows (padded to `padded`) of one column tile at r1 -> their output tiles at r2.
    auto chunk = [&](int64_t rows, int64_t padded, int64_t cols) {
      pb.dmaBoxStrided(true, x.segment, 1, 0, -1, lxSrc, {{rows, xRow, 128}}, 0, 20, 21);
      emitPtTr(pb, lxDst, lxSrc, padded, 64);
      pb.dmaBoxStrided(false, y.segment, 2, 0, -1, lxDst, {{padded / 64, yTile, 64 * 128}, {cols, yRow, 128}}, 1, 20,
                       21);
    };
    auto tile = [&](int64_t cols) {
      if (!chunked) {
        chunk(R, Rpad, cols);
        return;
      }
      const int64_t full = R / Rc, rem = R % Rc, remPad = (rem + 63) / 64 * 64;
      pb.loop(full, {{1, Rc * xRow}, {2, Rc / 64 * yTile}}, [&] { chunk(Rc, Rc, cols); });
      if (rem) {
        pb.emit(addi(1, 1, full * Rc * xRow));
        pb.emit(addi(2, 2, full * (Rc / 64) * yTile));
        if (remPad > rem) // earlier chunks wrote these staging rows
          emitZeroPadRows(pb, lxSrc, 1, remPad, rem);
        chunk(rem, remPad, cols);
        pb.emit(addi(1, 1, -full * Rc * xRow));
        pb.emit(addi(2, 2, -full * (Rc / 64) * yTile));
      }
    };
    // One full column tile of the double-buffered sweep; its rows are in rCur's half (the
    // prologue fetched tile 0, each tile fetches the next).
    auto pipeTile = [&](bool first, bool last) {
      pb.waitTokens({tokIn});
      if (!last)
        pb.dmaAsync(true, x.segment, 1, xTile, rOther, lxSrc, {{R, xRow}}, tokIn);
      emitPtTr(pb, lxDst, lxSrc, Rpad, 64, rCur);
      if (!first)
        pb.waitTokens({tokOut});
      pb.dmaAsync(false, y.segment, 2, 0, rCur, lxDst, {{Rpad / 64, yTile}, {64, yRow}}, tokOut);
    };
    std::function<void(size_t)> batchLoops = [&](size_t bi) {
      if (bi < batch.size()) {
        int d = batch[bi];
        pb.loop(coreSlice(s, c, d, s.N[d]).len, {{1, strideOf(x, d)}, {2, strideOf(y, d)}}, [&] { batchLoops(bi + 1); });
        return;
      }
      if (pipe) {
        pipelinedAny = true;
        pb.pipelinedSweep(
            full, {{1, xTile}, {2, 64 * yRow}}, rCur, rOther, rSwap, half,
            [&] { pb.dmaAsync(true, x.segment, 1, 0, rCur, lxSrc, {{R, xRow}}, tokIn); }, pipeTile,
            [&] { pb.waitTokens({tokOut}); });
      } else {
        pb.loop(full, {{1, xTile}, {2, 64 * yRow}}, [&] { tile(64); });
      }
      if (lastPartial) {
        pb.emit(addi(1, 1, full * xTile));
        pb.emit(addi(2, 2, full * 64 * yRow));
        tile(C % 64);
        pb.emit(addi(1, 1, -full * xTile));
        pb.emit(addi(2, 2, -full * 64 * yRow));
      }
    };
    batchLoops(0);
    pb.finishCores(k, c, c);
  }
  k.comment = "op=" + s.opFuncName + " R=" + std::to_string(R) + " C=" + std::to_string(C) + " cores=" +
              std::to_string(k.numCores) + (chunked ? " rows in chunks of " + std::to_string(Rc) : "") +
              (pipelinedAny ? ", double-buffered column tiles" : "");
  return k;
}

} // namespace spyre::backend::detail
