// matmul with K split over cores (numWkSlicesPerDim_.in > 1): each core's partial product over
// its K tiles, the partials summed along a chain on the reduce-sum ring (matmul_pt.h).
#include "matmul_pt.h"
#include <algorithm>

namespace spyre::backend::detail {

Kernel compileMatmulKSplit(const SuperDsc &s, const TensorGeom &x, const TensorGeom &y, const TensorGeom &o,
                           const std::vector<int64_t> &xOff, const std::vector<int64_t> &yOff,
                           const std::vector<int64_t> &oOff, const BackendOptions &opts) {
  const int dM = s.dimIndex("mb"), dN = s.dimIndex("out"), dK = s.dimIndex("in");
  const int64_t K = s.N[dK], KT = (K + 63) / 64, ks = s.numWkSlicesPerDim[dK], KTc = KT / ks;
  const int64_t NT = (s.N[dN] + 63) / 64;
  const int64_t mCore = coreSlice(s, 0, dM, s.N[dM]).len, nCore = coreSlice(s, 0, dN, NT).len;
  auto strideOf = [](const TensorGeom &g, int d) {
    int k = g.dimOf(d);
    return k >= 0 && g.dims[k].extent > 1 ? g.dims[k].strideBytes : 0;
  };
  const int64_t Kc = KTc * 64;
  const int64_t cSticks = 2 * nCore * mCore;
  // The core's K tiles go through LX in chunks of KTch tiles (all of them when they fit): per
  // tile nCore B sticks x 64 rows and mCore A sticks, plus the fp32 C and DL16 D tiles.
  const int64_t fixed = cSticks * 128 + nCore * mCore * 128, perTile = (nCore * 64 + mCore) * 128;
  const int64_t KTch = std::min(KTc, (opts.lxBytes - fixed) / perTile);
  if (KTch < 1)
    throw Unsupported("K-split matmul whose per-core block (" + std::to_string(mCore) + " rows x " +
                      std::to_string(nCore * 64) + " columns) does not fit in LX with one K tile in " + s.name);
  const int64_t Kch = KTch * 64, chunks = (KTc + KTch - 1) / KTch;
  const int64_t lxB = 0, lxA = nCore * Kch * 128, lxC = lxA + KTch * mCore * 128, lxD = lxC + cSticks * 128;
  Kernel k = newKernel(s, {&x, &y, &o});
  const int64_t yK = strideOf(y, dK) ? strideOf(y, dK) : 128, xK = strideOf(x, dK);
  for (int c = 0; c < k.numCores; ++c) {
    const int64_t j = s.coreIdToWkSlice[c][dK];
    const bool lastSlice = j == ks - 1;
    const int64_t rows = lastSlice ? K - (ks - 1) * Kc : Kc; // valid K rows of this slice
    ProgramBuilder pb;
    emitLi(pb, 1, xOff[c]);
    emitLi(pb, 2, yOff[c]);
    emitLi(pb, 3, oOff[c]);
    // Phase 0: partial product over this core's K tiles, chunk by chunk (acc after the first).
    for (int64_t ch = 0; ch < chunks; ++ch) {
      const int64_t t0 = ch * KTch, tiles = std::min(KTch, KTc - t0), chRows = tiles * 64;
      const int64_t valid = std::clamp<int64_t>(rows - t0 * 64, 0, chRows);
      const bool lastChunk = ch == chunks - 1;
      if (valid > 0)
        pb.dmaBoxStrided(true, y.segment, 2, t0 * 64 * yK, -1, lxB,
                         {{nCore, strideOf(y, dN), chRows * 128}, {valid, yK, 128}}, 0, 20, 21);
      if (valid < chRows) {
        emitZero(pb);
        emitZeroPadRows(pb, lxB, nCore, chRows, valid);
      }
      pb.dmaBoxStrided(true, x.segment, 1, t0 * xK, -1, lxA,
                       {{tiles, xK, mCore * 128}, {mCore, strideOf(x, dM) ? strideOf(x, dM) : 128, 128}}, 1, 20, 21);
      if (lastSlice && lastChunk && K % 64) {
        emitLaneMask(pb, K % 64);
        emitZero(pb);
        emitMaskSticks(pb, lxA + (tiles - 1) * mCore * 128, mCore);
      }
      emitPtMm(pb, lxC, lxA, lxB, mCore, nCore * 64, chRows);
      pb.cur->back().imms[2] = ch > 0 ? 1 : 0; // accumulate onto the earlier chunks
    }
    auto send = [&] {
      Instr sd = mk(Opcode::RingSend);
      sd.lx = {-1, lxC};
      sd.imm = cSticks;
      sd.imms = {0, 0, 0};
      pb.emit(sd);
    };
    if (j == 0)
      send();
    // Phases 1..ks-1: slice t adds the chain's running sum and passes it on.
    for (int64_t t = 1; t < ks; ++t) {
      pb.emit(mk(Opcode::Bar));
      if (j != t)
        continue;
      Instr ps = mk(Opcode::RingPsum, Format::F32);
      ps.lx = {-1, lxC};
      ps.imm = cSticks;
      ps.imms = {0, 0, 0};
      pb.emit(ps);
      if (t < ks - 1)
        send();
    }
    if (lastSlice) {
      emitPtOut(pb, lxD, lxC, mCore, nCore * 64);
      pb.dmaBoxStrided(false, o.segment, 3, 0, -1, lxD,
                       {{nCore, strideOf(o, dN), mCore * 128}, {mCore, strideOf(o, dM) ? strideOf(o, dM) : 128, 128}}, 2,
                       20, 21);
    }
    pb.finishCores(k, c, c);
  }
  k.comment = "op=" + s.opFuncName + " K-split " + std::to_string(ks) + " over the ring, M=" +
              std::to_string(s.N[dM]) + " N=" + std::to_string(s.N[dN]) + " K=" + std::to_string(K) +
              " cores=" + std::to_string(k.numCores);
  return k;
}


} // namespace spyre::backend::detail
