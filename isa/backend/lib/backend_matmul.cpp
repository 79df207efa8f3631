// batchmatmul on the PT: per core a block of output rows (M) x column tiles (N) for each of its
// batch indices; B tiles are staged with K padded to a stick multiple (zero rows), the padded
// lanes of A's last K tile are zeroed, pt.mm accumulates in fp32 and pt.out rounds to DL16.
// B may also arrive sticked on K (the KERNEL tensor is then y^T as stored, [.., N, K]: a
// linear layer's weight, attention's K): its rows are staged as they are and turned into B
// tiles through the PE array (pt.tr), which saves the restickify kernel before the matmul.
#include "lowerings.h"
#include <cmath>
#include <functional>

namespace spyre::backend::detail {


namespace {

/// The smallest staging of the plain lowering: one B tile (y sticked on K: and its rows as
/// staged), C, A and D of one row, single-buffered. A K split stages from LX 0.
int64_t minStagingBytes(const SuperDsc &s, bool transB) {
  const int dK = s.dimIndex("in");
  if (dK < 0 || s.numWkSlicesPerDim[dK] > 1)
    return INT64_MAX;
  const int64_t KT = (s.N[dK] + 63) / 64;
  return (transB ? 2 : 1) * KT * 64 * 128 + 2 * 128 + KT * 128 + 128;
}

/// Per-core extent of iteration dim d in device units (N and K in sticks).
int64_t perCoreLen(const SuperDsc &s, int d) {
  const bool tiled = s.dims[d] == "out" || s.dims[d] == "in";
  return coreSlice(s, 0, d, tiled ? (s.N[d] + 63) / 64 : s.N[d]).len;
}

/// LX strides of an LX-resident operand per iteration dim: the core's slice dense in the
/// tensor's own dim order (as backend_pointwise.cpp and backend_reduce.cpp walk it); 0 for a
/// dim it does not span or of extent 1. Second: the slice's bytes.
std::pair<std::vector<int64_t>, int64_t> residentStrides(const SuperDsc &s, const TensorGeom &g) {
  std::vector<int64_t> st(s.dims.size(), 0);
  int64_t b = kStickBytes;
  for (size_t k = g.dims.size(); k-- > 0;) {
    if (g.dims[k].extent <= 1)
      continue;
    const int64_t len = perCoreLen(s, g.dims[k].iterDim);
    st[g.dims[k].iterDim] = len > 1 ? b : 0;
    b *= len;
  }
  return {st, b};
}

bool stickedOnK(const SuperDsc &s, const SdscTensor &t) { return s.primaryDsInfo.at(t.dsType).stickDimOrder[0] == "in"; }

} // namespace

int64_t matmulMinStagingBytes(const SuperDsc &s) {
  if (s.inputs.size() != 2 || s.inputs[1] < 0)
    return INT64_MAX;
  return minStagingBytes(s, stickedOnK(s, s.tensor(s.inputs[1])));
}

bool matmulLxResidentOk(const SuperDsc &s, int ldsIdx) {
  if (s.inputs.size() != 2 || s.outputs.size() != 1)
    return false;
  // x: any per-core slice (copied into the A blocks when it is not already one). y: every core
  // of an M split reads the same B blocks, so no core-matching slice exists. The output: pt.out
  // writes a tile's rows as consecutive sticks, so its rows must be innermost in the slice.
  if (ldsIdx == s.inputs[0])
    return true;
  if (ldsIdx != s.outputs[0])
    return false;
  const SdscTensor &oT = s.tensor(ldsIdx);
  TensorGeom o = tensorGeom(s, oT, "out");
  const int dM = s.dimIndex("mb");
  return dM >= 0 && (perCoreLen(s, dM) == 1 || residentStrides(s, o).first[dM] == kStickBytes);
}

namespace {

// Builder steps shared by the plain and the K-split lowerings (see also backend_common.h).
/// Zeroes the lanes outside mask v12 of `rows` consecutive sticks at lx[rBase + lx] (A's last
/// K tile; rBase -1 = absolute).
void emitMaskSticks(ProgramBuilder &pb, int64_t lx, int64_t rows, int rBase = -1) {
  if (rBase >= 0)
    pb.emit(addi(5, rBase, lx));
  else
    emitLi(pb, 5, lx);
  pb.loop(rows, {{5, 128}}, [&] {
    Instr ld = mk(Opcode::Ld, Format::DL16);
    ld.v = {0, -1, -1, -1};
    ld.lx = {5, 0};
    pb.emit(ld);
    Instr sel = mk(Opcode::Sel, Format::DL16);
    sel.v = {0, 12, 0, 15};
    pb.emit(sel);
    Instr st = mk(Opcode::St, Format::DL16);
    st.v = {0, -1, -1, -1};
    st.lx = {5, 0};
    pb.emit(st);
  });
}

void emitPtMm(ProgramBuilder &pb, int64_t lxC, int64_t lxA, int64_t lxB, int64_t M, int64_t N, int64_t K,
              int rA = -1) {
  Instr mm = mk(Opcode::PtMm);
  mm.lx = {-1, lxC};
  mm.lx2 = {rA, lxA};
  mm.lx3 = {-1, lxB};
  mm.imm = M;
  mm.imms = {N, K, 0};
  pb.emit(mm);
}

void emitPtOut(ProgramBuilder &pb, int64_t lxD, int64_t lxC, int64_t M, int64_t N, int rD = -1) {
  Instr out = mk(Opcode::PtOut);
  out.lx = {rD, lxD};
  out.lx2 = {-1, lxC};
  out.imm = M;
  out.imms = {N, 0, 0};
  pb.emit(out);
}

/// K-split: cores c = g*ks + j (K fastest) compute partial C over their K tiles; the partial
/// sums travel clockwise along the chain j = 0 -> ks-1 on the reduce-sum ring, one hop per
/// phase, and the last core of each chain rounds and stores the tile.
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
  const int64_t lxB = 0, lxA = nCore * Kc * 128, lxC = lxA + KTc * mCore * 128, lxD = lxC + cSticks * 128;
  if (lxD + nCore * mCore * 128 > opts.lxBytes)
    throw Unsupported("K-split matmul whose per-core block (" + std::to_string(mCore) + " rows x " +
                      std::to_string(nCore * 64) + " columns x " + std::to_string(Kc) + " K) does not fit in LX in " +
                      s.name);
  Kernel k = newKernel(s, {&x, &y, &o});
  for (int c = 0; c < k.numCores; ++c) {
    const int64_t j = s.coreIdToWkSlice[c][dK];
    const bool lastSlice = j == ks - 1;
    const int64_t rows = lastSlice ? K - (ks - 1) * Kc : Kc; // valid K rows of this slice
    ProgramBuilder pb;
    emitLi(pb, 1, xOff[c]);
    emitLi(pb, 2, yOff[c]);
    emitLi(pb, 3, oOff[c]);
    // Phase 0: partial product over this core's K tiles.
    pb.dmaBoxStrided(true, y.segment, 2, 0, -1, lxB,
                     {{nCore, strideOf(y, dN), Kc * 128}, {rows, strideOf(y, dK) ? strideOf(y, dK) : 128, 128}}, 0, 20, 21);
    if (rows < Kc) {
      emitZero(pb);
      emitZeroPadRows(pb, lxB, nCore, Kc, rows);
    }
    pb.dmaBoxStrided(true, x.segment, 1, 0, -1, lxA,
                     {{KTc, strideOf(x, dK), mCore * 128}, {mCore, strideOf(x, dM) ? strideOf(x, dM) : 128, 128}}, 1, 20, 21);
    if (lastSlice && K % 64) {
      emitLaneMask(pb, K % 64);
      emitZero(pb);
      emitMaskSticks(pb, lxA + (KTc - 1) * mCore * 128, mCore);
    }
    emitPtMm(pb, lxC, lxA, lxB, mCore, nCore * 64, Kc);
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
} // namespace

Kernel compileMatmul(const SuperDsc &s, const BackendOptions &opts) {
  if (s.exUnit != "pt")
    throw Error(where(s) + ": computeOp_ exUnit must be 'pt' for " + s.opFuncName + ", got '" + s.exUnit + "'");
  if (s.inputs.size() != 2 || s.outputs.size() != 1 || s.inputs[0] < 0 || s.inputs[1] < 0)
    throw Error(where(s) + ": expected two input tensors and one output");
  const int dM = s.dimIndex("mb"), dN = s.dimIndex("out"), dK = s.dimIndex("in");
  if (dM < 0 || dN < 0 || dK < 0)
    throw Error(where(s) + ": a matmul needs dims mb (M), out (N) and in (K) in N_");
  const int64_t ks = s.numWkSlicesPerDim[dK];
  const SdscTensor &xT = s.tensor(s.inputs[0]), &yT = s.tensor(s.inputs[1]), &oT = s.tensor(s.outputs[0]);
  auto stickOf = [&](const SdscTensor &t) { return s.primaryDsInfo.at(t.dsType).stickDimOrder[0]; };
  const bool transB = stickOf(yT) == "in";
  if (stickOf(xT) != "in" || (stickOf(yT) != "out" && !transB) || stickOf(oT) != "out")
    throw Unsupported("matmul operands sticked other than x on K, y on N or K and output on N in " + s.name +
                      "; restickify first");
  TensorGeom x = tensorGeom(s, xT, "in"), y = tensorGeom(s, yT, transB ? "in" : "out"), o = tensorGeom(s, oT, "out");
  for (const TensorGeom *g : {&x, &y, &o})
    if (g->fmt != Format::DL16)
      throw Unsupported(std::string(formatName(g->fmt)) + " matmul (DL16 operands only) in " + s.name);
  if (yT.inLx || ((xT.inLx || oT.inLx) && ks > 1))
    throw Unsupported("LX-resident " + std::string(yT.inLx ? "y" : "operands of a K-split matmul") +
                      " (memOrg_ lx) in " + s.name);
  const int64_t M = s.N[dM], N = s.N[dN], K = s.N[dK];
  const int64_t KT = (K + 63) / 64, Kpad = KT * 64, NT = (N + 63) / 64;
  std::vector<int> batch;
  for (size_t d = 0; d < s.dims.size(); ++d)
    if (static_cast<int>(d) != dM && static_cast<int>(d) != dN && static_cast<int>(d) != dK)
      batch.push_back(static_cast<int>(d));

  auto strideOf = [](const TensorGeom &g, int d) {
    int k = g.dimOf(d);
    return k >= 0 && g.dims[k].extent > 1 ? g.dims[k].strideBytes : 0;
  };
  // Per-core slices (device units: rows, N tiles, batch indices).
  auto sliceOf = [&](int c, int d) {
    int64_t extent = d == dN ? NT : s.N[d];
    return coreSlice(s, c, d, extent);
  };
  // K is split on stick boundaries: core slices are whole K tiles; y holds K as rows.
  auto kTileLo = [&](int c) { return s.coreIdToWkSlice[c][dK] * (KT / ks); };
  auto offsets = [&](const TensorGeom &g) {
    std::vector<int64_t> off(s.numCoresUsed, 0);
    for (int c = 0; c < s.numCoresUsed; ++c)
      for (size_t d = 0; d < s.dims.size(); ++d) {
        if (static_cast<int>(d) == dK) {
          if (ks > 1)
            off[c] += kTileLo(c) * (&g == &y ? 64 : 1) * strideOf(g, dK);
          continue;
        }
        // N is split in tiles; y sticked on K holds N as rows (64 per tile).
        const int64_t unit = transB && &g == &y && static_cast<int>(d) == dN ? 64 : 1;
        off[c] += sliceOf(c, static_cast<int>(d)).lo * unit * strideOf(g, static_cast<int>(d));
      }
    return off;
  };
  if (!xT.inLx)
    checkStartAddresses(s, x, offsets(x));
  checkStartAddresses(s, y, offsets(y));
  if (!oT.inLx)
    checkStartAddresses(s, o, offsets(o));
  if (x.segment == y.segment || x.segment == o.segment || y.segment == o.segment)
    throw Unsupported("matmul operands sharing a segment in " + s.name);
  const int64_t mCore = sliceOf(0, dM).len, nCore = sliceOf(0, dN).len;
  if (ks > 1) {
    if (KT % ks != 0)
      throw Error(where(s) + ": numWkSlicesPerDim_.in = " + std::to_string(ks) + " does not divide the " +
                  std::to_string(KT) + " K sticks");
    for (int d : batch)
      if (sliceOf(0, d).len != 1)
        throw Unsupported("K-split matmul with several batch indices per core in " + s.name);
    if (transB)
      throw Unsupported("K-split matmul with y sticked on K in " + s.name + "; restickify y first");
    return compileMatmulKSplit(s, x, y, o, offsets(x), offsets(y), offsets(o), opts);
  }

  // y sticked on K: an N block is nc*64 whole rows (a partial last tile would read past y).
  if (transB && N % 64 != 0)
    throw Unsupported("matmul with y sticked on K and N = " + std::to_string(N) +
                      " not a multiple of 64 in " + s.name + "; restickify y first");
  // LX-resident x / output (memOrg_ lx): the core's slice dense in the tensor's own dim order
  // (residentStrides); everything else is staged above the graph's LX-resident tensors.
  const auto [xCanon, xSlice] = residentStrides(s, x);
  const auto [oCanon, oSlice] = residentStrides(s, o);
  const int64_t xLx = xT.inLx ? lxResidentAddress(s, x, xSlice) : -1;
  const int64_t oLx = oT.inLx ? lxResidentAddress(s, o, oSlice) : -1;
  if (oT.inLx && mCore > 1 && oCanon[dM] != kStickBytes)
    throw Unsupported("an LX-resident matmul output whose rows are not innermost in its slice in " + s.name);
  const int64_t lxStage = s.lxReservedBytes, stageBytes = opts.lxBytes - lxStage;
  const bool resident = xT.inLx || oT.inLx;
  // Block sizes: nc tiles of B (Kpad rows each) resident (y sticked on K: plus its rows as
  // staged, as many bytes again), mc rows of A, C (fp32) and D. Double buffered, A and D get
  // two copies: A block i+1 is fetched and D block i-1 written back while block i is on the PT.
  // directA: x is LX-resident as [K tiles][rows] and the block is all the core's rows, so pt.mm
  // reads A in place (else A is copied out of the resident slice block by block).
  bool directA = false;
  auto bytes = [&](int64_t nc, int64_t mc, bool dbl) {
    return (transB ? 2 : 1) * nc * Kpad * 128 + 2 * nc * mc * 128 +
           (dbl ? 2 : 1) * ((directA ? 0 : KT * mc * 128) + nc * mc * 128);
  };
  auto largestDivisor = [](int64_t n, const std::function<bool(int64_t)> &fits) { return largestDivisorFitting(n, fits); };
  auto aBox = [&](int64_t mc) {
    return std::vector<std::pair<int64_t, int64_t>>{{KT, strideOf(x, dK)}, {mc, strideOf(x, dM) ? strideOf(x, dM) : 128}};
  };
  auto dBox = [&](int64_t nc, int64_t mc) {
    return std::vector<std::pair<int64_t, int64_t>>{{nc, strideOf(o, dN)}, {mc, strideOf(o, dM) ? strideOf(o, dM) : 128}};
  };
  const int64_t validK = K % 64;
  bool pipelined = !resident; // an LX-resident operand has no DMA to overlap on its side
  int64_t nc = 0, mc = 0;
  if (xT.inLx && validK == 0 && (mCore == 1 || xCanon[dM] == kStickBytes) && (KT == 1 || xCanon[dK] == mCore * 128)) {
    directA = true;
    nc = largestDivisor(nCore, [&](int64_t c) { return bytes(c, mCore, false) <= stageBytes; });
    mc = mCore;
    directA = nc > 0;
  }
  if (pipelined) {
    nc = largestDivisor(nCore, [&](int64_t c) { return bytes(c, 1, true) <= stageBytes; });
    mc = nc ? largestDivisor(mCore, [&](int64_t c) { return bytes(nc, c, true) <= stageBytes; }) : 0;
  }
  // Something to overlap: at least opts.pipelineBlocks row blocks (BackendOptions; the timing
  // model picks the count) while an A block keeps a few sticks.
  const int64_t kPipeBlocks = std::max(1, opts.pipelineBlocks);
  if (pipelined && mc > 0)
    mc = pipelineChunk(mCore, mc, kPipeBlocks, [&](int64_t c) { return KT * c >= 8; }, /*divisorsOnly=*/true);
  if (!directA &&
      (!pipelined || nc == 0 || mCore / mc < 2 || !ProgramBuilder::singleDma(aBox(mc)) || !ProgramBuilder::singleDma(dBox(nc, mc)))) {
    pipelined = false;
    nc = largestDivisor(nCore, [&](int64_t c) { return bytes(c, 1, false) <= stageBytes; });
    if (nc == 0)
      throw Unsupported("K = " + std::to_string(K) + " too large for one B tile in LX (K-split needed) in " + s.name);
    mc = largestDivisor(mCore, [&](int64_t c) { return bytes(nc, c, false) <= stageBytes; });
  }
  // LX: [reserved | B | (y rows as staged) | C | A, D (| A, D of the other block when
  // double-buffered)].
  const int64_t lxB = lxStage, lxS = lxStage + nc * Kpad * 128, lxC = lxStage + (transB ? 2 : 1) * nc * Kpad * 128,
                lxA = lxC + 2 * nc * mc * 128, lxD = lxA + (directA ? 0 : KT * mc * 128);
  const int64_t half = KT * mc * 128 + nc * mc * 128;

  Kernel k = newKernel(s, {&x, &y, &o});
  // Under an M split the cores of one N slice load the same B blocks, under an N split (M not
  // split) every core loads the same A rows: one multicast per cohort.
  const int bCohort = sharedLoadCohort(offsets(y), opts);
  const int aCohort = xT.inLx ? 1 : sharedLoadCohort(offsets(x), opts);
  // Register steps of x and the output along dim d: DDR strides, or resident LX strides.
  auto xStride = [&](int d) { return xT.inLx ? xCanon[d] : strideOf(x, d); };
  auto oStride = [&](int d) { return oT.inLx ? oCanon[d] : strideOf(o, d); };

  // Registers: r1 x, r2 y, r3 out DDR offsets (LX addresses when resident); r20/r21 DMA
  // scratch; r5 row walker; r6/r7 the A copy's walkers, r8/r9 the per-tile pt.out's; r22/r23
  // this block's / the other block's A and D (0 or `half`), r24 swap scratch.
  constexpr int rCur = 22, rOther = 23, rSwap = 24, tokA = 1, tokD = 2;
  ProgramBuilder pb;
  xT.inLx ? emitLi(pb, 1, xLx) : emitTbl(pb, 1, offsets(x));
  emitTbl(pb, 2, offsets(y));
  oT.inLx ? emitLi(pb, 3, oLx) : emitTbl(pb, 3, offsets(o));
  emitZero(pb);
  // Zero the K padding rows of every B tile once: DMA never writes them.
  if (Kpad > K && !transB)
    emitZeroPadRows(pb, lxB, nc, Kpad, K);
  if (validK)
    emitLaneMask(pb, validK);
  const int64_t aStep = mc * xStride(dM), oStep = mc * oStride(dM), numBlocks = mCore / mc;
  auto aDma = [&](int rBuf, int64_t ddrOff) {
    std::vector<std::pair<int64_t, int64_t>> box = aBox(mc);
    pb.dmaAsync(true, x.segment, 1, ddrOff, rBuf, lxA, box, tokA, aCohort);
  };
  // The A block out of the resident x slice: KT tiles x mc rows, (kt, i) order, by the SFP.
  auto copyA = [&] {
    pb.emit(addi(6, 1, 0));
    emitLi(pb, 7, lxA);
    pb.loop(KT, {{6, xCanon[dK]}, {7, mc * 128}}, [&] {
      pb.loop(mc, {{6, xCanon[dM]}, {7, 128}}, [&] {
        Instr ld = mk(Opcode::Ld, Format::DL16);
        ld.v = {0, -1, -1, -1};
        ld.lx = {6, 0};
        pb.emit(ld);
        Instr st = mk(Opcode::St, Format::DL16);
        st.v = {0, -1, -1, -1};
        st.lx = {7, 0};
        pb.emit(st);
      });
    });
  };
  // D of the block (fp32 C rounded) straight into the resident output: per N tile its mc rows
  // are consecutive sticks there (one pt.out when the tiles are consecutive too).
  auto ptOutResident = [&] {
    if (nc == 1 || oCanon[dN] == mc * 128) {
      emitPtOut(pb, 0, lxC, mc, nc * 64, 3);
      return;
    }
    pb.emit(addi(8, 3, 0));
    emitLi(pb, 9, lxC);
    pb.loop(nc, {{8, oCanon[dN]}, {9, 2 * mc * 128}}, [&] {
      Instr out = mk(Opcode::PtOut);
      out.lx = {8, 0};
      out.lx2 = {9, 0};
      out.imm = mc;
      out.imms = {64, 0, 0};
      pb.emit(out);
    });
  };
  // One row block: A (already fetched into rCur's half) through PT into D, D written back.
  auto block = [&](bool first, bool last) {
    pb.waitTokens({tokA});
    if (!last)
      aDma(rOther, aStep);
    if (validK)
      emitMaskSticks(pb, lxA + (KT - 1) * mc * 128, mc, rCur);
    emitPtMm(pb, lxC, lxA, lxB, mc, nc * 64, Kpad, rCur);
    emitPtOut(pb, lxD, lxC, mc, nc * 64, rCur);
    if (!first)
      pb.waitTokens({tokD});
    pb.dmaAsync(false, o.segment, 3, 0, rCur, lxD, dBox(nc, mc), tokD);
  };
  std::function<void(size_t)> batchLoops = [&](size_t bi) {
    if (bi < batch.size()) {
      int d = batch[bi];
      pb.loop(sliceOf(0, d).len, {{1, xStride(d)}, {2, strideOf(y, d)}, {3, oStride(d)}}, [&] { batchLoops(bi + 1); });
      return;
    }
    pb.loop(nCore / nc, {{2, nc * (transB ? 64 : 1) * strideOf(y, dN)}, {3, nc * oStride(dN)}}, [&] {
      if (transB) {
        // B block from y sticked on K: nc*64 rows x KT sticks (row-major per K tile, as pt.tr
        // reads its source), transposed into the tiles; the transpose also writes the K
        // padding rows (y's padded lanes), so they are zeroed again.
        pb.dmaBoxStrided(true, y.segment, 2, 0, -1, lxS,
                         {{KT, strideOf(y, dK), nc * 64 * 128}, {nc * 64, strideOf(y, dN) ? strideOf(y, dN) : 128, 128}},
                         0, 20, 21, /*wait=*/true, bCohort);
        emitPtTr(pb, lxB, lxS, nc * 64, Kpad);
        if (Kpad > K)
          emitZeroPadRows(pb, lxB, nc, Kpad, K);
      } else {
        // B block: nc tiles x K rows into tiles of Kpad rows.
        pb.dmaBoxStrided(true, y.segment, 2, 0, -1, lxB,
                         {{nc, strideOf(y, dN), Kpad * 128}, {K, strideOf(y, dK) ? strideOf(y, dK) : 128, 128}}, 0, 20,
                         21, /*wait=*/true, bCohort);
      }
      if (pipelined) {
        pb.pipelinedSweep(
            numBlocks, {{1, aStep}, {3, oStep}}, rCur, rOther, rSwap, half, [&] { aDma(rCur, 0); }, block,
            [&] { pb.waitTokens({tokD}); });
        return;
      }
      pb.loop(numBlocks, {{1, aStep}, {3, oStep}}, [&] {
        // A block: KT tiles x mc rows, (kt, i) order.
        if (directA) {
          emitPtMm(pb, lxC, 0, lxB, mc, nc * 64, Kpad, 1);
        } else {
          if (xT.inLx)
            copyA();
          else
            pb.dmaBoxStrided(true, x.segment, 1, 0, -1, lxA,
                             {{KT, strideOf(x, dK), mc * 128}, {mc, strideOf(x, dM) ? strideOf(x, dM) : 128, 128}}, tokA,
                             20, 21, /*wait=*/true, aCohort);
          if (validK)
            emitMaskSticks(pb, lxA + (KT - 1) * mc * 128, mc);
          emitPtMm(pb, lxC, lxA, lxB, mc, nc * 64, Kpad);
        }
        if (oT.inLx) {
          ptOutResident();
          return;
        }
        emitPtOut(pb, lxD, lxC, mc, nc * 64);
        pb.dmaBoxStrided(false, o.segment, 3, 0, -1, lxD,
                         {{nc, strideOf(o, dN), mc * 128}, {mc, strideOf(o, dM) ? strideOf(o, dM) : 128, 128}}, tokD, 20,
                         21);
      });
    });
  };
  batchLoops(0);
  pb.finishSpmd(k);
  k.comment = "op=" + s.opFuncName + " M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" +
              std::to_string(K) + " cores=" + std::to_string(k.numCores) + " block " + std::to_string(mc) + "x" +
              std::to_string(nc * 64) + (pipelined ? ", double-buffered" : "") + (transB ? ", y sticked on K" : "") +
              (bCohort > 1 ? ", B multicast to " + std::to_string(bCohort) + " cores" : "") +
              (aCohort > 1 ? ", A multicast to " + std::to_string(aCohort) + " cores" : "") +
              (xT.inLx ? (directA ? ", x read in LX" : ", x copied from LX") : "") + (oT.inLx ? ", output to LX" : "");
  return k;
}

} // namespace spyre::backend::detail
