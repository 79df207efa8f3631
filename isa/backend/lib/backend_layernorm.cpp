// exx2, sum and mean with their reduced stick dim split over cores (numWkSlicesPerDim_ of the
// stick dim > 1): when the rows cannot occupy the cores (a prime row count), torch-spyre's work
// division may split one reduction dim. Cores c = g*ks + j (the stick dim fastest, like a
// K-split matmul) reduce their rows over their ks-th of the stick tiles into one fp32 partial
// stick per row; exx2's E[x] / E[x^2] and a sum's lanes add up lane by lane. The partials
// travel clockwise along the chain j = 0 -> ks-1 on the reduce-sum ring (ring.psum.f32), one
// hop per phase, and the last core of each chain writes the results (exx2: the statistics
// sticks as they are; sum / mean: the scaled lane total in the input's format, every lane, as
// the unsplit reduction's rsum leaves it).
//
// Per core, phase 0: for each index of the outer row dims, DMA the (tiles x inner rows) block,
// reduce each row into one fp32 stick of a dense LX statistics block (all the core's rows).
#include "lowerings.h"
#include <climits>
#include <functional>

namespace spyre::backend::detail {

namespace {

/// A split stick reduction's rows: its row dims (the input's non-stick dims, outer -> inner;
/// the innermost one is in the DMA block), a core's share of them and of the stick tiles.
struct SplitRows {
  std::vector<int> rowDims, outerDims;
  int inner = -1;
  int64_t KTc = 0, mI = 1, rowsPerCore = 1;
  /// LX it stages: the input block, one partial stick per row, (sum / mean) one result per row.
  int64_t stagingBytes(bool exx2) const { return (KTc * mI + rowsPerCore * (exx2 ? 1 : 2)) * kStickBytes; }
};

SplitRows splitRows(const SuperDsc &s, const TensorGeom &in, int sd) {
  SplitRows r;
  const int64_t eps = elemsPerStick(in.t->dataFormat);
  r.KTc = coreSlice(s, 0, sd, (s.N[sd] + eps - 1) / eps).len;
  for (const auto &td : in.dims)
    if (td.iterDim != sd)
      r.rowDims.push_back(td.iterDim);
  r.inner = r.rowDims.empty() ? -1 : r.rowDims.back();
  r.outerDims.assign(r.rowDims.begin(), r.rowDims.end() - (r.rowDims.empty() ? 0 : 1));
  r.mI = r.inner >= 0 ? coreSlice(s, 0, r.inner, s.N[r.inner]).len : 1;
  r.rowsPerCore = r.mI;
  for (int d : r.outerDims)
    r.rowsPerCore *= coreSlice(s, 0, d, s.N[d]).len;
  return r;
}

} // namespace

int64_t stickSplitStagingBytes(const SuperDsc &s) {
  for (int i : s.inputs)
    if (i >= 0 && i != s.outputs.at(0)) {
      const SdscTensor &t = s.tensor(i);
      const std::string &stick = s.primaryDsInfo.at(t.dsType).stickDimOrder.at(0);
      return splitRows(s, tensorGeom(s, t, stick), s.dimIndex(stick)).stagingBytes(s.opFuncName == "exx2");
    }
  return INT64_MAX;
}

namespace {

/// A split stick reduction as planned: what it reduces, its rows, LX layout and per-core DDR
/// offsets (checked against the descriptor).
struct StickSplitPlan {
  std::string op;
  bool exx2 = false, mean = false;
  TensorGeom in, out;
  int sd = -1;
  int64_t N = 0, ks = 1, validLanes = 0;
  SplitRows rows;
  /// LX, above the graph's LX-resident tensors: the input block, the fp32 partials (one stick
  /// per row), for sum / mean the results.
  int64_t lxA = 0, lxS = 0, lxR = 0;
  std::vector<int64_t> xOff, oOff;
  std::vector<int64_t> statStride; ///< dense LX stride of each outer row dim in the statistics block
};

int64_t strideOf(const TensorGeom &g, int d) {
  int k = g.dimOf(d);
  return k >= 0 ? g.dims[k].strideBytes : 0;
}

Instr f32(ProgramBuilder &pb, Opcode op, int d, int a, int b = -1, int e = -1) {
  Instr x = vop(op, Format::F32, d, a, b, e);
  pb.emit(x);
  return x;
}

StickSplitPlan planStickSplit(const SuperDsc &s, const BackendOptions &opts) {
  StickSplitPlan p;
  const std::string &op = s.opFuncName;
  p.op = op;
  const bool exx2 = op == "exx2", mean = op == "mean";
  p.exx2 = exx2;
  p.mean = mean;
  if (!exx2 && !mean && op != "sum")
    throw Unsupported("splitting the stick dim of a " + op + " over cores (only sum, mean and exx2 add partials) in " +
                      s.name);
  int inIdx = -1;
  for (int i : s.inputs)
    if (i >= 0 && i != s.outputs.at(0))
      inIdx = i;
  if (inIdx < 0)
    throw Error(where(s) + ": no input tensor");
  const SdscTensor &inT = s.tensor(inIdx), &outT = s.tensor(s.outputs[0]);
  const SdscLayout &layout = s.primaryDsInfo.at(inT.dsType);
  const std::string &stickDim = layout.stickDimOrder[0];
  const int sd = s.dimIndex(stickDim);
  p.sd = sd;
  p.in = tensorGeom(s, inT, stickDim);
  p.out = tensorGeom(s, outT, stickDim);
  const TensorGeom &in = p.in, &out = p.out;
  if (exx2 && out.fmt != Format::F32)
    throw Error(where(s) + ": the exx2 output must be IEEE_FP32 (EXX2 arrangement: lane 0 = E[x], lane 1 = E[x^2])");
  if (!exx2 && out.fmt != in.fmt)
    throw Unsupported("reductions that change the data format in " + s.name);
  if (in.fmt == Format::I32)
    throw Unsupported("int32 " + op + " in " + s.name);
  if (inT.inLx || outT.inLx)
    throw Unsupported("LX-resident tensors (memOrg_ lx) in a split " + op + " " + s.name);
  for (size_t d = 0; d < s.dims.size(); ++d) {
    if (inT.scale[d] != 1)
      throw Error(where(s) + ": the input of a reduction must have scale_ 1 on every dim");
    if ((outT.scale[d] != 1) != (static_cast<int>(d) == sd))
      throw Error(where(s) + ": a split " + op + " reduces exactly the stick dim " + stickDim +
                  " (output scale_ -2 there, 1 elsewhere)");
  }
  const int64_t eps = elemsPerStick(inT.dataFormat), N = s.N[sd], KT = (N + eps - 1) / eps;
  const int64_t ks = s.numWkSlicesPerDim[sd];
  p.N = N;
  p.ks = ks;
  for (int c = 0; c < s.numCoresUsed; ++c)
    if (s.coreIdToWkSlice[c][sd] != c % ks)
      throw Unsupported("a split " + op + " whose cores are not in stick-fast order (core " + std::to_string(c) +
                        " has slice " + std::to_string(s.coreIdToWkSlice[c][sd]) + " of " + stickDim + ") in " + s.name +
                        "; ring partners must be neighbours");
  p.rows = splitRows(s, in, sd);
  const SplitRows &rows = p.rows;
  p.lxA = s.lxReservedBytes; // a multiple of 128
  p.lxS = p.lxA + rows.KTc * rows.mI * kStickBytes;
  p.lxR = p.lxS + rows.rowsPerCore * kStickBytes;
  if (p.lxA + rows.stagingBytes(exx2) > opts.lxBytes)
    throw Unsupported("a split " + op + " block of " + std::to_string(rows.KTc) + " sticks x " + std::to_string(rows.mI) +
                      " rows and " + std::to_string(rows.rowsPerCore) + " partial sticks does not fit in LX in " + s.name);
  p.xOff.assign(s.numCoresUsed, 0);
  p.oOff.assign(s.numCoresUsed, 0);
  for (int c = 0; c < s.numCoresUsed; ++c) {
    p.xOff[c] = coreSlice(s, c, sd, KT).lo * strideOf(in, sd);
    for (int d : rows.rowDims) {
      int64_t lo = coreSlice(s, c, d, s.N[d]).lo;
      p.xOff[c] += lo * strideOf(in, d);
      p.oOff[c] += lo * strideOf(out, d);
    }
  }
  checkStartAddresses(s, in, p.xOff);
  checkStartAddresses(s, out, p.oOff);
  if (in.segment == out.segment)
    throw Unsupported("input and output in one segment in " + s.name);
  p.validLanes = N % eps;
  p.statStride.resize(rows.outerDims.size());
  int64_t st = rows.mI * kStickBytes;
  for (size_t i = rows.outerDims.size(); i-- > 0;) {
    p.statStride[i] = st;
    st *= coreSlice(s, 0, rows.outerDims[i], s.N[rows.outerDims[i]]).len;
  }
  return p;
}

/// Phase 0 of one core: every row of its block reduced into one fp32 stick of the statistics
/// block at r3 (mask: the last stick tile has padded lanes, v12 / v13 mask them).
void emitPartials(ProgramBuilder &pb, const SuperDsc &s, const StickSplitPlan &p, bool mask) {
  const TensorGeom &in = p.in;
  const SplitRows &rows = p.rows;
  const int64_t KTc = rows.KTc, mI = rows.mI;
  auto accumulate = [&](bool masked) {
    pb.emit(vld(in.fmt, 0, 12));
    if (masked)
      f32(pb, Opcode::Sel, 0, 12, 0, 13);
    f32(pb, Opcode::Add, 1, 1, 0);
    if (p.exx2)
      f32(pb, Opcode::Fma, 3, 0, 0, 3);
  };
  auto rowBlock = [&] {
    pb.dmaBoxStrided(true, in.segment, 1, 0, -1, p.lxA,
                     {{KTc, strideOf(in, p.sd), mI * kStickBytes},
                      {mI, rows.inner >= 0 ? strideOf(in, rows.inner) : 0, kStickBytes}},
                     0, 20, 21);
    emitLi(pb, 10, p.lxA);
    pb.loop(mI, {{10, kStickBytes}, {3, kStickBytes}}, [&] {
      pb.emit(vbcast(Format::F32, 1));
      if (p.exx2)
        pb.emit(vbcast(Format::F32, 3));
      pb.emit(addi(12, 10, 0));
      const int64_t plain = mask ? KTc - 1 : KTc;
      pb.loop(plain, {{12, mI * kStickBytes}}, [&] { accumulate(false); });
      if (mask) {
        if (plain)
          pb.emit(addi(12, 12, plain * mI * kStickBytes));
        accumulate(true);
      }
      // Fold 64 DL16 lanes into 32 fp32 lanes (an fp32 stick's width).
      auto fold = [&](int acc) {
        if (in.fmt == Format::DL16) {
          pb.emit(vop(Opcode::Unpack, Format::None, 5, 6, acc));
          f32(pb, Opcode::Add, acc, 5, 6);
        }
      };
      if (p.exx2) {
        for (int acc : {1, 3}) {
          f32(pb, Opcode::Mul, acc, acc, 14);
          fold(acc);
          f32(pb, Opcode::Rsum, acc == 1 ? 2 : 7, acc);
        }
        f32(pb, Opcode::Sel, 2, 9, 2, 7);
        pb.emit(vst(Format::F32, 2, 3));
      } else {
        fold(1); // the lane partials; lanes add on the ring, the last core sums them
        pb.emit(vst(Format::F32, 1, 3));
      }
    });
  };
  std::function<void(size_t)> outer = [&](size_t i) {
    if (i == rows.outerDims.size()) {
      rowBlock();
      return;
    }
    int d = rows.outerDims[i];
    pb.loop(coreSlice(s, 0, d, s.N[d]).len, {{1, strideOf(in, d)}, {3, p.statStride[i]}}, [&] { outer(i + 1); });
  };
  outer(0);
}

/// Phases 1..ks-1 of core c (slice j of its chain): slice t adds the chain's running sums and
/// passes them on; the last slice writes the results.
void emitChain(ProgramBuilder &pb, const SuperDsc &s, const StickSplitPlan &p, int c) {
  const int64_t j = c % p.ks, ks = p.ks;
  const bool lastSlice = j == ks - 1;
  const SplitRows &rows = p.rows;
  auto ring = [&](Opcode op) {
    Instr r = mk(op, op == Opcode::RingPsum ? Format::F32 : Format::None);
    r.lx = {-1, p.lxS};
    r.imm = rows.rowsPerCore;
    r.imms = {0, 0, 0};
    pb.emit(r);
  };
  if (j == 0 && ks > 1)
    ring(Opcode::RingSend);
  for (int64_t t = 1; t < ks; ++t) {
    pb.emit(mk(Opcode::Bar));
    if (j != t)
      continue;
    ring(Opcode::RingPsum);
    if (t < ks - 1)
      ring(Opcode::RingSend);
  }
  if (lastSlice && !p.exx2) {
    // The chain's lane partials of each row -> (mean: / N) the lane total, every lane, in the
    // output's format, as the unsplit reduction's rsum leaves it.
    emitLi(pb, 3, p.lxS);
    emitLi(pb, 4, p.lxR);
    pb.loop(rows.rowsPerCore, {{3, kStickBytes}, {4, kStickBytes}}, [&] {
      pb.emit(vld(Format::F32, 1, 3));
      if (p.mean)
        f32(pb, Opcode::Mul, 1, 1, 14);
      f32(pb, Opcode::Rsum, 2, 1);
      pb.emit(vst(p.out.fmt, 2, 4));
    });
  }
  if (lastSlice) {
    emitLi(pb, 2, p.oOff[c]);
    std::vector<std::array<int64_t, 3>> box;
    for (size_t i = 0; i < rows.outerDims.size(); ++i)
      box.push_back({coreSlice(s, 0, rows.outerDims[i], s.N[rows.outerDims[i]]).len, strideOf(p.out, rows.outerDims[i]),
                     p.statStride[i]});
    box.push_back({rows.mI, rows.inner >= 0 ? strideOf(p.out, rows.inner) : 0, kStickBytes});
    pb.dmaBoxStrided(false, p.out.segment, 2, 0, -1, p.exx2 ? p.lxS : p.lxR, box, 1, 20, 21);
  }
}

} // namespace

Kernel compileStickSplitReduction(const SuperDsc &s, const BackendOptions &opts) {
  const StickSplitPlan p = planStickSplit(s, opts);
  Kernel k = newKernel(s, {&p.in, &p.out});
  for (int c = 0; c < k.numCores; ++c) {
    const bool lastSlice = c % p.ks == p.ks - 1;
    ProgramBuilder pb;
    emitLi(pb, 1, p.xOff[c]);
    emitLi(pb, 3, p.lxS);
    // v9: 1.0 on lane 0 only; v14 = 1/N; v12/v13: the valid-lane mask and 0 for a partial last tile.
    if (p.exx2) {
      f32(pb, Opcode::Iota, 9, -1);
      pb.emit(vbcast(Format::F32, 10));
      f32(pb, Opcode::Eq, 9, 9, 10);
    }
    if (p.exx2 || p.mean)
      pb.emit(vbcast(Format::F32, 14, 1.0f / static_cast<float>(p.N)));
    const bool mask = lastSlice && p.validLanes != 0;
    if (mask) {
      emitLaneMask(pb, p.validLanes);
      pb.emit(vbcast(Format::F32, 13));
    }
    emitPartials(pb, s, p, mask);
    emitChain(pb, s, p, c);
    pb.finishCores(k, c, c);
  }
  k.comment = "op=" + p.op + " stick split " + std::to_string(p.ks) + " over the ring, " +
              std::to_string(p.rows.rowsPerCore) + " rows x " + std::to_string(p.rows.KTc) +
              " sticks per core, cores=" + std::to_string(k.numCores);
  return k;
}

} // namespace spyre::backend::detail
