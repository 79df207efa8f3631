// index_copy (our SuperDSC extension, docs/superdsc.md 6.7): out = self with the rows of source
// written at int32 positions, out[x, idx[k], :] = src[x, k, :] (a static KV cache's update at
// cache positions), with dma.scatter. Dims [x, [y,]] mb, in, out: self and the output span the
// leading dims x, y, and in and out, the index mb, the source x, y, mb and out (self, source and
// output sticked on out). Cores split x and y only, so each core owns whole slabs of the output
// and no two cores write the same rows. Per core and per x: self's slab to the output through LX (skipped when the output is
// self: an in-place update), then per block of entries the source rows into a dense staging
// block and one dma.scatter of the block to the output rows the indices name. A repeated index:
// the last entry wins (dma.scatter's order).
#include "lowerings.h"
#include <algorithm>

namespace spyre::backend::detail {

namespace {

int64_t strideOf(const TensorGeom &g, int d) {
  const int k = g.dimOf(d);
  return k >= 0 && g.dims[k].extent > 1 ? g.dims[k].strideBytes : 0;
}

void expectScale(const SuperDsc &s, const SdscTensor &t, const std::vector<int> &present) {
  for (size_t d = 0; d < s.dims.size(); ++d) {
    const bool want = std::find(present.begin(), present.end(), static_cast<int>(d)) != present.end();
    if ((t.scale[d] == 1) != want)
      throw Error(where(s) + ": " + t.dsName + " must have scale_ " + (want ? "1" : "-1") + " on " + s.dims[d]);
  }
}

} // namespace

Kernel compileIndexCopy(const SuperDsc &s, const BackendOptions &opts) {
  if (s.inputs.size() != 3 || s.outputs.size() != 1 || s.inputs[0] < 0 || s.inputs[1] < 0 || s.inputs[2] < 0)
    throw Error(where(s) + ": " + s.opFuncName + " takes three input tensors (self, indices, source) and one output");
  const int dIn = s.dimIndex("in"), dOut = s.dimIndex("out"), dMb = s.dimIndex("mb"), dX = s.dimIndex("x"),
            dY = s.dimIndex("y");
  if (dIn < 0 || dOut < 0 || dMb < 0 || (dY >= 0 && dX < 0))
    throw Error(where(s) + ": " + s.opFuncName + " needs the dims mb, in and out (and optionally x, or x and y)");
  for (size_t d = 0; d < s.dims.size(); ++d)
    if (static_cast<int>(d) != dIn && static_cast<int>(d) != dOut && static_cast<int>(d) != dMb &&
        static_cast<int>(d) != dX && static_cast<int>(d) != dY)
      throw Error(where(s) + ": " + s.opFuncName + " has an unexpected dim " + s.dims[d]);
  const SdscTensor &selfT = s.tensor(s.inputs[0]), &iT = s.tensor(s.inputs[1]), &srcT = s.tensor(s.inputs[2]),
                   &oT = s.tensor(s.outputs[0]);
  std::vector<int> slab{dIn, dOut}, rows{dMb, dOut};
  for (int d : {dY, dX})
    if (d >= 0) {
      slab.insert(slab.begin(), d);
      rows.insert(rows.begin(), d);
    }
  expectScale(s, selfT, slab);
  expectScale(s, iT, {dMb});
  expectScale(s, srcT, rows);
  expectScale(s, oT, slab);
  TensorGeom self = tensorGeom(s, selfT, "out"), idx = tensorGeom(s, iT, "mb"), src = tensorGeom(s, srcT, "out"),
             out = tensorGeom(s, oT, "out");
  if (idx.fmt != Format::I32)
    throw Unsupported("index_copy indices in " + std::string(dataFormatName(iT.dataFormat)) + " in " + s.name +
                      " (int32 only)");
  if (self.fmt != out.fmt || src.fmt != out.fmt)
    throw Error(where(s) + ": self, source and output must have one format (" +
                std::string(dataFormatName(selfT.dataFormat)) + ", " + std::string(dataFormatName(srcT.dataFormat)) +
                ", " + std::string(dataFormatName(oT.dataFormat)) + ")");
  for (int d : {dIn, dOut, dMb})
    if (s.numWkSlicesPerDim[d] != 1)
      throw Unsupported("splitting the " + s.dims[d] + " dim of an index_copy over cores in " + s.name);
  const int64_t eps = elemsPerStick(oT.dataFormat);
  const int64_t V = s.N[dIn], DT = (s.N[dOut] + eps - 1) / eps, K = s.N[dMb];
  const int64_t B = dX >= 0 ? s.N[dX] : 1, H = dY >= 0 ? s.N[dY] : 1;
  const int64_t KT = (K + 31) / 32; // index sticks
  auto lead = [&](const TensorGeom &g, int d) { return d >= 0 ? strideOf(g, d) : 0; };
  const int64_t sIn = strideOf(self, dIn), sTile = strideOf(self, dOut), sX = lead(self, dX), sY = lead(self, dY);
  const int64_t oIn = strideOf(out, dIn), oTile = strideOf(out, dOut), oX = lead(out, dX), oY = lead(out, dY);
  const int64_t rMb = strideOf(src, dMb), rTile = strideOf(src, dOut), rX = lead(src, dX), rY = lead(src, dY);
  const int64_t iMb = strideOf(idx, dMb);
  const bool inPlace = self.segment == out.segment && self.viewOffsetBytes == out.viewOffsetBytes && sIn == oIn &&
                       sTile == oTile && sX == oX && sY == oY;
  // LX: the index sticks at lxIdx, the staging buffer above them.
  const int64_t lxIdx = (s.lxReservedBytes + 127) / 128 * 128, lxBuf = lxIdx + KT * 128;
  const int64_t room = opts.lxBytes - lxBuf, entryBytes = DT * 128;
  if (room < entryBytes)
    throw Unsupported("index_copy rows of " + std::to_string(entryBytes) + " bytes do not fit in LX in " + s.name);
  const int64_t rowBlock = std::min(V, room / entryBytes), entryBlock = std::min(K, room / entryBytes);
  Kernel k = newKernel(s, {&self, &idx, &src, &out});
  std::vector<Slice> xs, ys;
  std::vector<int64_t> selfOff, srcOff, outOff, zero(k.numCores, 0);
  for (int c = 0; c < k.numCores; ++c) {
    xs.push_back(dX >= 0 ? coreSlice(s, c, dX, B) : Slice{0, 1});
    ys.push_back(dY >= 0 ? coreSlice(s, c, dY, H) : Slice{0, 1});
    selfOff.push_back(xs.back().lo * sX + ys.back().lo * sY);
    srcOff.push_back(xs.back().lo * rX + ys.back().lo * rY);
    outOff.push_back(xs.back().lo * oX + ys.back().lo * oY);
  }
  checkStartAddresses(s, self, selfOff);
  checkStartAddresses(s, idx, zero);
  checkStartAddresses(s, src, srcOff);
  checkStartAddresses(s, out, outOff);
  constexpr int rSelf = 1, rOut = 2, rSrc = 3, rIdxWalk = 4, rOutW = 6, tok = 0;
  for (int c = 0; c < k.numCores; ++c) {
    ProgramBuilder pb;
    emitLi(pb, rSelf, selfOff[c]);
    emitLi(pb, rOut, outOff[c]);
    emitLi(pb, rSrc, srcOff[c]);
    pb.dmaBoxStrided(true, idx.segment, -1, 0, -1, lxIdx, {{KT, iMb ? iMb : 128, 128}}, tok, 20, 21);
    // Rows [r, r + n) of self's slab through LX to the output (rOutW walks the output rows).
    auto copyRows = [&](int64_t n) {
      pb.dmaBoxStrided(true, self.segment, rSelf, 0, -1, lxBuf, {{DT, sTile, n * 128}, {n, sIn, 128}}, tok, 20, 21);
      pb.dmaBoxStrided(false, out.segment, rOutW, 0, -1, lxBuf, {{DT, oTile, n * 128}, {n, oIn, 128}}, tok, 20, 21);
    };
    // Entries [e, e + n): their source rows into the staging block, one scatter to the output.
    auto scatterBlock = [&](int64_t n) {
      pb.dmaBoxStrided(true, src.segment, rSrc, 0, -1, lxBuf, {{n, rMb, entryBytes}, {DT, rTile, 128}}, tok, 20, 21);
      Instr d = mk(Opcode::DmaScatter);
      d.ddr = {out.segment, rOut, 0};
      d.lx = {-1, lxBuf};
      d.dma.n = {1, DT, 1};
      d.dma.ddrStride = {DT * oTile, oTile};
      d.dma.lxStride = {DT * 128, 128};
      if (DT == 1)
        d.dma.ddrStride = d.dma.lxStride = DmaShape::dense(d.dma.n);
      d.lx2 = {rIdxWalk, 0};
      d.imm = n;
      d.imms = {V, oIn, entryBytes};
      d.outToken = tok;
      pb.emit(d);
      pb.waitTokens({tok});
    };
    auto slab = [&] {
      if (!inPlace) {
        pb.emit(addi(rOutW, rOut, 0));
        const int64_t full = V / rowBlock, rem = V % rowBlock;
        pb.loop(full, {{rSelf, rowBlock * sIn}, {rOutW, rowBlock * oIn}}, [&] { copyRows(rowBlock); });
        if (rem) {
          pb.emit(addi(rSelf, rSelf, full * rowBlock * sIn));
          pb.emit(addi(rOutW, rOutW, full * rowBlock * oIn));
          copyRows(rem);
          pb.emit(addi(rSelf, rSelf, -full * rowBlock * sIn));
        }
      }
      emitLi(pb, rIdxWalk, lxIdx);
      const int64_t full = K / entryBlock, rem = K % entryBlock;
      pb.loop(full, {{rIdxWalk, 4 * entryBlock}, {rSrc, entryBlock * rMb}}, [&] { scatterBlock(entryBlock); });
      if (rem) {
        pb.emit(addi(rIdxWalk, rIdxWalk, full * 4 * entryBlock));
        pb.emit(addi(rSrc, rSrc, full * entryBlock * rMb));
        scatterBlock(rem);
        pb.emit(addi(rSrc, rSrc, -full * entryBlock * rMb));
      }
    };
    pb.loop(ys[c].len, {{rSelf, sY}, {rOut, oY}, {rSrc, rY}},
            [&] { pb.loop(xs[c].len, {{rSelf, sX}, {rOut, oX}, {rSrc, rX}}, slab); });
    pb.finishCores(k, c, c);
  }
  k.comment = "op=" + s.opFuncName + " rows=" + std::to_string(V) + " sticks/row=" + std::to_string(DT) +
              " entries=" + std::to_string(K) + " slabs=" + std::to_string(B * H) + (inPlace ? " in-place" : "") +
              " cores=" + std::to_string(k.numCores);
  return k;
}

} // namespace spyre::backend::detail
