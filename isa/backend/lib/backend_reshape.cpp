// reshape (our SuperDSC op for a restickify that moves elements between lanes): a row-major
// tensor viewed as [R, L] in the generic stick layout (stick (t, r) at (t * R + r) * 128, lanes
// = elements t*eps .. of row r) rewritten as [R', L'] with R * L = R' * L'. Changing the row
// length moves elements between lanes, which only ldu / stu (element-aligned partial loads and
// stores) can do.
//
// Descriptor: N_ is the common refinement of both shapes, three dims [p, k, q]; each tensor's
// layout lists its row dims then its stick dims, and its stickDimOrder_ names all dims of its
// row (one dim or two): R' = p*k, L' = q for [R, L] = [p, k*q], and the other way round. Dim 0
// (p) is split over cores first, so a core owns whole rows of both tensors; dim 1 (k) may be
// split too, in slices whose other side starts and ends on a stick.
//
// Per core and per block of rows that fits LX (whole row groups, or chunks of a group's k
// rows): DMA the input rows in (all tiles), pack them into a dense element stream with stu (row
// r at element r*L), unpack the stream into output sticks with ldu (row r' from element r'*L';
// the last stick of a row zero-filled past L'), DMA the output rows out. Addresses are affine
// in the row and tile, so loops, not unrolled code.
#include "lowerings.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <array>
#include <climits>
#include <numeric>

namespace spyre::backend::detail {


namespace {

/// The unlaid geometries of a copy's input and output (tensor, format, segment); the caller
/// fills in their dims.
std::pair<TensorGeom, TensorGeom> copyGeoms(const SdscTensor &xT, const SdscTensor &yT, Format fmt) {
  TensorGeom gx, gy;
  gx.t = &xT;
  gy.t = &yT;
  gx.fmt = gy.fmt = fmt;
  gx.segment = xT.ldsIdx;
  gy.segment = yT.ldsIdx;
  return {gx, gy};
}

/// A tensor of the reshape as [rows, len] with its row dims and stick dims.
struct RowShape {
  int64_t rows = 1, len = 1;
};

RowShape rowShape(const SuperDsc &s, const SdscTensor &t) {
  const SdscLayout &l = s.primaryDsInfo.at(t.dsType);
  const std::string what = where(s) + ": " + t.dsName + " (layout " + t.dsType + ")";
  // The stick dims are the trailing dims of N_ in host order; the layout lists the row dims
  // inner -> outer and then the stick dims inner -> outer (the generic layout of [rows, len]).
  const size_t r = s.dims.size(), ns = l.stickDimOrder.size();
  if (ns < 1 || ns >= r)
    throw Error(what + ": a reshape tensor needs 1.." + std::to_string(r - 1) + " stick dims, has " +
                std::to_string(ns));
  std::vector<std::string> expectOrder;
  for (size_t d = r - ns; d-- > 0;)
    expectOrder.push_back(s.dims[d]);
  for (size_t d = r; d-- > r - ns;)
    expectOrder.push_back(s.dims[d]);
  for (size_t j = 0; j < ns; ++j)
    if (l.stickDimOrder[j] != s.dims[r - ns + j])
      throw Error(what + ": stickDimOrder_ must be the trailing dims of N_ in order");
  if (l.layoutDimOrder != expectOrder)
    throw Error(what + ": layoutDimOrder_ must list the row dims then the stick dims, inner to outer");
  RowShape rs;
  for (size_t d = 0; d < r; ++d)
    (d < r - ns ? rs.rows : rs.len) *= s.N[d];
  if (t.inLx || t.isView())
    throw Unsupported("LX-resident or view operands of a reshape (" + what + ")");
  for (int sc : t.scale)
    if (sc != 1)
      throw Error(what + ": every scale_ of a reshape tensor must be 1");
  return rs;
}

int64_t roundUp(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

/// One block of the kernel: nIn input rows of inSeg elements each, packed, unpacked into nOut
/// output rows of outSeg elements. LX: input sticks [tiles][nIn], the dense stream, output
/// sticks [tiles][nOut].
struct Block {
  int64_t nIn, inSeg, nOut, outSeg;
  int64_t inTiles(int64_t e) const { return (inSeg + e - 1) / e; }
  int64_t outTiles(int64_t e) const { return (outSeg + e - 1) / e; }
  std::array<int64_t, 3> bytes(int64_t e, int64_t es) const {
    return {inTiles(e) * nIn * kStickBytes, roundUp(nIn * inSeg * es, kStickBytes), outTiles(e) * nOut * kStickBytes};
  }
  int64_t totalBytes(int64_t e, int64_t es) const {
    const auto b = bytes(e, es);
    return b[0] + b[1] + b[2];
  }
};

/// When one group of rows (v input, u output per dim-0 index) does not fit, or k is divided over
/// cores, the rows go in chunks of kc of the k rows on the split side; kc a multiple of m so that
/// every chunk but the last starts and ends on a stick of the other side.
struct Chunking {
  bool rowsSplit; ///< [R, k*L'] -> [R*k, L']: an input row splits into k output rows
  int64_t k, m;
  Block chunk(const RowShape &in, const RowShape &out, int64_t kc) const {
    return rowsSplit ? Block{1, kc * out.len, kc, out.len} : Block{kc, in.len, 1, kc * in.len};
  }
};

Chunking chunking(const RowShape &in, const RowShape &out, int64_t p, int64_t eps) {
  const int64_t v = in.rows / p, u = out.rows / p;
  Chunking c;
  c.rowsSplit = v == 1;
  c.k = c.rowsSplit ? u : v;
  const int64_t g = c.rowsSplit ? out.len : in.len;
  c.m = eps / std::gcd(g, eps);
  return c;
}


/// rotatehalf (our extension, docs/superdsc.md §6.12): x and y [d0, mid, L] in the generic
/// stick layout (stick (j, i, t) at ((i * T + t) * d0 + j) * 128; L a multiple of the stick,
/// h = L/2), y[j, i] = cat(-x[j, i, h:], x[j, i, :h]). Dims 0 and 1 split over the cores, dim 2
/// stays whole. Per block of rows that fits LX (nm of the core's mid indices by pc of its dim-0
/// indices, all tiles): DMA x's sticks in, per row move each piece (a run of lanes inside one
/// source and one destination stick) with ld / ldu, neg for the first half, st / stu, DMA y's
/// sticks out.
struct RotateHalfGeom {
  int64_t d0 = 0, mid = 0, L = 0, T = 0;
};

RotateHalfGeom rotateHalfGeom(const SuperDsc &s) {
  if (s.inputs.size() != 1 || s.outputs.size() != 1 || s.inputs[0] < 0)
    throw Error(where(s) + ": rotatehalf takes one input tensor and one output");
  if (s.dims.size() != 3)
    throw Error(where(s) + ": rotatehalf iterates over 3 dims [d0, mid, L], not " + std::to_string(s.dims.size()));
  RotateHalfGeom g;
  g.d0 = s.N[0];
  g.mid = s.N[1];
  g.L = s.N[2];
  for (int i : {s.inputs[0], s.outputs[0]}) {
    const SdscTensor &t = s.tensor(i);
    if (t.dataFormat != DataFormat::SEN169_FP16)
      throw Unsupported("rotatehalf of " + std::string(dataFormatName(t.dataFormat)) + " tensors in " + s.name);
    if (t.inLx || t.isView())
      throw Unsupported("LX-resident or view operands of rotatehalf (" + s.name + ")");
  }
  constexpr int64_t eps = kStickBytes / 2;
  if (g.d0 < 1 || g.mid < 1 || g.L < 1 || g.L % eps != 0)
    throw Unsupported("rotatehalf with a last dim of " + std::to_string(g.L) + " in " + s.name +
                      " (a multiple of " + std::to_string(eps) + " elements)");
  g.T = g.L / eps;
  return g;
}

Kernel compileRotateHalf(const SuperDsc &s, const BackendOptions &opts) {
  const RotateHalfGeom rg = rotateHalfGeom(s);
  const SdscTensor &xT = s.tensor(s.inputs[0]), &yT = s.tensor(s.outputs[0]);
  const Format fmt = Format::DL16;
  constexpr int64_t es = 2, eps = kStickBytes / es;
  const int cores = s.numCoresUsed;
  const int64_t sj = s.numWkSlicesPerDim.at(0), si = s.numWkSlicesPerDim.at(1);
  if (s.numWkSlicesPerDim.at(2) != 1)
    throw Unsupported("rotatehalf split over dim " + s.dims[2] + " in " + s.name);
  if (sj * si != cores || rg.d0 % sj != 0 || rg.mid % si != 0)
    throw Error(where(s) + ": dims " + s.dims[0] + " and " + s.dims[1] + " must split evenly into the " +
                std::to_string(cores) + " cores");
  const int64_t pd = rg.d0 / sj, pm = rg.mid / si, T = rg.T, h = rg.L / 2, d0 = rg.d0;
  auto [gx, gy] = copyGeoms(xT, yT, fmt);
  std::vector<int64_t> off;
  for (int c = 0; c < cores; ++c) {
    const int64_t j0 = s.coreIdToWkSlice.at(c).at(0) * pd, i0 = s.coreIdToWkSlice.at(c).at(1) * pm;
    off.push_back((i0 * T * d0 + j0) * kStickBytes);
  }
  checkStartAddresses(s, gx, off);
  checkStartAddresses(s, gy, off);

  // Block: nm mid indices by pc dim-0 indices (whole pd when one mid index fits, then as many
  // mid indices as fit; else chunks of pd), in and out staged in LX.
  const int64_t base = s.lxReservedBytes, budget = opts.lxBytes - base;
  auto bytes = [&](int64_t rows) { return 2 * T * rows * kStickBytes; };
  int64_t pc = pd, nm = 0;
  if (bytes(pd) <= budget)
    nm = largestDivisorFitting(pm, [&](int64_t c) { return bytes(c * pd) <= budget; });
  else {
    nm = 1;
    pc = largestDivisorFitting(pd, [&](int64_t c) { return bytes(c) <= budget; });
  }
  if (nm == 0 || pc == 0)
    throw Unsupported("rotatehalf in " + s.name + ": one row needs " + std::to_string(bytes(1)) +
                      " bytes of LX, more than the " + std::to_string(budget) + " available");
  // The pieces of a row: destination [0, h) from source [h, L) negated, [h, L) from [0, h), cut
  // where either side crosses a stick.
  struct Piece {
    int64_t src, dst, n;
    bool neg;
  };
  std::vector<Piece> pieces;
  for (int half = 0; half < 2; ++half) {
    int64_t src = half == 0 ? h : 0, dst = half == 0 ? 0 : h, left = h;
    while (left > 0) {
      const int64_t n = std::min({left, eps - src % eps, eps - dst % eps});
      pieces.push_back({src, dst, n, half == 0});
      src += n;
      dst += n;
      left -= n;
    }
  }

  Kernel k = newKernel(s, {&gx, &gy});
  ProgramBuilder pb;
  constexpr int rX = 1, rY = 2, rA = 3, rB = 4, rS1 = 5, rS2 = 6;
  emitTbl(pb, rX, off);
  emitTbl(pb, rY, off);
  const int64_t IN = base, OUT = base + T * nm * pc * kStickBytes;
  // LX holds a block as sticks [nm][T][pc]: element e of row (ii, jj) in tile e / eps at
  // ((ii * T + e / eps) * pc + jj) * 128, lane e % eps.
  auto lxOff = [&](int64_t e) { return e / eps * pc * kStickBytes + e % eps * es; };
  const std::vector<std::pair<int64_t, int64_t>> box = {
      {nm, T * d0 * kStickBytes}, {T, d0 * kStickBytes}, {pc, kStickBytes}};
  auto row = [&] {
    for (const Piece &p : pieces) {
      const bool whole = p.n == eps; // then both sides start on a stick
      Instr l = mk(whole ? Opcode::Ld : Opcode::Ldu, fmt);
      l.v = {0, -1, -1};
      l.lx = {rA, lxOff(p.src)};
      if (!whole)
        l.imm = p.n;
      pb.emit(l);
      if (p.neg)
        pb.emit(vop(Opcode::Neg, fmt, 0, 0));
      Instr st = mk(whole ? Opcode::St : Opcode::Stu, fmt);
      st.v = {0, -1, -1};
      st.lx = {rB, lxOff(p.dst)};
      if (!whole)
        st.imm = p.n;
      pb.emit(st);
    }
  };
  auto block = [&] {
    pb.dmaBox(true, gx.segment, rX, 0, -1, IN, box, 0, rS1, rS2);
    emitLi(pb, rA, IN);
    emitLi(pb, rB, OUT);
    pb.loop(nm, {{rA, T * pc * kStickBytes}, {rB, T * pc * kStickBytes}},
            [&] { pb.loop(pc, {{rA, kStickBytes}, {rB, kStickBytes}}, row); });
    pb.dmaBox(false, gy.segment, rY, 0, -1, OUT, box, 1, rS1, rS2);
  };
  pb.loop(pm / nm, {{rX, nm * T * d0 * kStickBytes}, {rY, nm * T * d0 * kStickBytes}},
          [&] { pb.loop(pd / pc, {{rX, pc * kStickBytes}, {rY, pc * kStickBytes}}, block); });
  pb.finishSpmd(k);
  return k;
}

} // namespace

int64_t laneReshapeMinStagingBytes(const SuperDsc &s) {
  if (s.opFuncName == "rotatehalf") {
    try {
      return 2 * rotateHalfGeom(s).T * kStickBytes;
    } catch (const Error &) {
      return INT64_MAX;
    }
  }
  if (s.inputs.size() != 1 || s.outputs.size() != 1 || s.inputs[0] < 0 || s.dims.size() != 3 || s.N[0] < 1)
    return INT64_MAX; // malformed: compileLaneReshape says why
  try {
    const SdscTensor &xT = s.tensor(s.inputs[0]);
    const int64_t es = xT.dataFormat == DataFormat::IEEE_FP32 || xT.dataFormat == DataFormat::IEEE_INT32 ? 4 : 2,
                  eps = kStickBytes / es;
    const RowShape in = rowShape(s, xT), out = rowShape(s, s.tensor(s.outputs[0]));
    const Chunking ch = chunking(in, out, s.N[0], eps);
    return ch.chunk(in, out, std::min(ch.m, ch.k)).totalBytes(eps, es); // the smallest block
  } catch (const Error &) {
    return INT64_MAX; // a capability query: compileLaneReshape reports what is wrong
  }
}

Kernel compileLaneReshape(const SuperDsc &s, const BackendOptions &opts) {
  if (s.opFuncName == "rotatehalf")
    return compileRotateHalf(s, opts);
  if (s.inputs.size() != 1 || s.outputs.size() != 1 || s.inputs[0] < 0)
    throw Error(where(s) + ": reshape takes one input tensor and one output");
  if (s.dims.size() != 3)
    throw Error(where(s) + ": reshape iterates over 3 dims (the common refinement [p, k, q]), not " +
                std::to_string(s.dims.size()));
  const SdscTensor &xT = s.tensor(s.inputs[0]), &yT = s.tensor(s.outputs[0]);
  if (xT.dataFormat != yT.dataFormat)
    throw Error(where(s) + ": reshape keeps the data format (" + std::string(dataFormatName(xT.dataFormat)) + " -> " +
                std::string(dataFormatName(yT.dataFormat)) + ")");
  // int32 moves as f32: the reshape only loads and stores whole 4-byte lanes (ld/st/ldu/stu of
  // f32 keep every bit pattern; no arithmetic touches them).
  const Format fmt = formatOf(s, xT.dataFormat) == Format::I32 ? Format::F32 : formatOf(s, xT.dataFormat);
  if (fmt != Format::DL16 && fmt != Format::F32)
    throw Unsupported("reshape of " + std::string(dataFormatName(xT.dataFormat)) + " tensors in " + s.name);
  const RowShape in = rowShape(s, xT), out = rowShape(s, yT);
  if (s.numWkSlicesPerDim.at(2) != 1)
    throw Unsupported("reshape split over dim " + s.dims[2] + " (only " + s.dims[0] + " and " + s.dims[1] +
                      " are divided) in " + s.name);
  const int cores = s.numCoresUsed;
  const int64_t s0 = s.numWkSlicesPerDim.at(0), ks = s.numWkSlicesPerDim.at(1);
  if (s0 * ks != cores || s.N[0] % s0 != 0 || s.N[1] % ks != 0)
    throw Error(where(s) + ": dims " + s.dims[0] + " = " + std::to_string(s.N[0]) + " and " + s.dims[1] + " = " +
                std::to_string(s.N[1]) + " must split evenly into the " + std::to_string(cores) + " cores");

  const int64_t es = fmt == Format::DL16 ? 2 : 4, eps = kStickBytes / es;
  const int64_t v = in.rows / s.N[0], u = out.rows / s.N[0]; // rows per dim-0 index
  const int64_t per = s.N[0] / s0;                              // dim-0 indices per core
  const Chunking ch = chunking(in, out, s.N[0], eps);
  // A core's slice of k: whole when k is not divided, else kPer rows whose other side starts
  // and ends on a stick.
  const int64_t kPer = s.N[1] / ks;
  if (ks > 1 && (kPer % ch.m != 0 || ch.k != s.N[1]))
    throw Error(where(s) + ": a slice of " + std::to_string(kPer) + " of dim " + s.dims[1] +
                " must be a multiple of " + std::to_string(ch.m) + " rows (whole sticks on the other side)");

  auto [gx, gy] = copyGeoms(xT, yT, fmt);
  // A core starts at dim-0 index p0 and k row k0: on the split side row p0*k + k0, on the other
  // side row p0 from element k0*q (stick tile k0*q/eps, tiles a row count apart).
  std::vector<int64_t> offX, offY;
  for (int c = 0; c < cores; ++c) {
    const int64_t p0 = s.coreIdToWkSlice.at(c).at(0) * per, k0 = s.coreIdToWkSlice.at(c).at(1) * kPer;
    const int64_t split = (p0 * s.N[1] + k0) * kStickBytes;
    auto whole = [&](int64_t rows) { return (k0 * s.N[2] / eps * rows + p0) * kStickBytes; };
    offX.push_back(ch.rowsSplit ? whole(in.rows) : split);
    offY.push_back(ch.rowsSplit ? split : whole(out.rows));
  }
  checkStartAddresses(s, gx, offX);
  checkStartAddresses(s, gy, offY);

  // Staging above the graph's LX-resident tensors (lxReservedBytes_ is a multiple of 128).
  const int64_t base = s.lxReservedBytes, budget = opts.lxBytes - base;
  auto fits = [&](const Block &bl) { return bl.totalBytes(eps, es) <= budget; };
  // Whole groups of rows per block (c dim-0 indices: c*v input rows, c*u output rows) ...
  const int64_t c =
      ks > 1 ? 0 : largestDivisorFitting(per, [&](int64_t cand) { return fits({cand * v, in.len, cand * u, out.len}); });
  // ... or, when one group does not fit or k is divided, the core's kPer rows in chunks.
  auto chunk = [&](int64_t kc) { return ch.chunk(in, out, kc); };
  int64_t kc = 0;
  if (c == 0)
    kc = largestFitting(kPer / ch.m, [&](int64_t q) { return fits(chunk(q * ch.m)); }) * ch.m;
  if (c == 0 && kc == 0) {
    const int64_t smallest = std::min(ch.m, kPer);
    throw Unsupported("reshape [" + std::to_string(in.rows) + ", " + std::to_string(in.len) + "] -> [" +
                      std::to_string(out.rows) + ", " + std::to_string(out.len) + "] in " + s.name + ": a block of " +
                      std::to_string(smallest) + " rows needs " + std::to_string(chunk(smallest).totalBytes(eps, es)) +
                      " bytes of LX, more than the " + std::to_string(budget) + " available");
  }

  Kernel k = newKernel(s, {&gx, &gy});
  ProgramBuilder pb;
  constexpr int rX = 1, rY = 2, rA = 3, rB = 4, rS1 = 5, rS2 = 6;
  emitTbl(pb, rX, offX);
  emitTbl(pb, rY, offY);
  auto ldst = [&](Opcode op, int vr, int rBase, int64_t off, int64_t n) {
    Instr i = mk(op, fmt);
    i.v = {vr, -1, -1};
    i.lx = {rBase, off};
    if (op == Opcode::Ldu || op == Opcode::Stu)
      i.imm = n;
    pb.emit(i);
  };
  auto block = [&](const Block &bl, int64_t inOff, int64_t outOff) {
    const auto b = bl.bytes(eps, es);
    const int64_t IN = base, DENSE = base + b[0], OUT = base + b[0] + b[1];
    const int64_t Ti = bl.inTiles(eps), To = bl.outTiles(eps);
    pb.dmaBox(true, gx.segment, rX, inOff, -1, IN, {{Ti, in.rows * kStickBytes}, {bl.nIn, kStickBytes}}, 0, rS1, rS2);
    // Pack: row r's tiles to elements r*inSeg.. of the stream (the last tile partly filled).
    emitLi(pb, rA, IN);
    emitLi(pb, rB, DENSE);
    pb.loop(bl.nIn, {{rA, kStickBytes}, {rB, bl.inSeg * es}}, [&] {
      pb.loop(Ti - 1, {{rA, bl.nIn * kStickBytes}, {rB, eps * es}}, [&] {
        ldst(Opcode::Ld, 0, rA, 0, 0);
        ldst(Opcode::Stu, 0, rB, 0, eps);
      });
      ldst(Opcode::Ld, 0, rA, (Ti - 1) * bl.nIn * kStickBytes, 0);
      ldst(Opcode::Stu, 0, rB, (Ti - 1) * eps * es, bl.inSeg - (Ti - 1) * eps);
    });
    // Unpack: output row r' from element r'*outSeg; ldu zero-fills the padding lanes.
    emitLi(pb, rA, DENSE);
    emitLi(pb, rB, OUT);
    pb.loop(bl.nOut, {{rA, bl.outSeg * es}, {rB, kStickBytes}}, [&] {
      pb.loop(To - 1, {{rA, eps * es}, {rB, bl.nOut * kStickBytes}}, [&] {
        ldst(Opcode::Ldu, 0, rA, 0, eps);
        ldst(Opcode::St, 0, rB, 0, 0);
      });
      ldst(Opcode::Ldu, 0, rA, (To - 1) * eps * es, bl.outSeg - (To - 1) * eps);
      ldst(Opcode::St, 0, rB, (To - 1) * bl.nOut * kStickBytes, 0);
    });
    pb.dmaBox(false, gy.segment, rY, outOff, -1, OUT, {{To, out.rows * kStickBytes}, {bl.nOut, kStickBytes}}, 1, rS1,
              rS2);
  };
  if (c > 0) {
    pb.loop(per / c, {{rX, c * v * kStickBytes}, {rY, c * u * kStickBytes}},
            [&] { block({c * v, in.len, c * u, out.len}, 0, 0); });
  } else {
    // A chunk advances the split side by kc rows and the other side by kc*g elements (whole
    // sticks, their tiles R or R' rows apart).
    const int64_t inStep = ch.rowsSplit ? kc * out.len / eps * in.rows * kStickBytes : kc * kStickBytes;
    const int64_t outStep = ch.rowsSplit ? kc * kStickBytes : kc * in.len / eps * out.rows * kStickBytes;
    const int64_t full = kPer / kc, tail = kPer - full * kc;
    pb.loop(per, {{rX, v * kStickBytes}, {rY, u * kStickBytes}}, [&] {
      pb.loop(full, {{rX, inStep}, {rY, outStep}}, [&] { block(chunk(kc), 0, 0); });
      if (tail > 0)
        block(chunk(tail), full * inStep, full * outStep);
    });
  }
  pb.finishSpmd(k);
  return k;
}

} // namespace spyre::backend::detail
