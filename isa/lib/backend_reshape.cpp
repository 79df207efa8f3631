// reshape (our SuperDSC op for a restickify that moves elements between lanes): a row-major
// tensor viewed as [R, L] in the generic stick layout (stick (t, r) at (t * R + r) * 128, lanes
// = elements t*eps .. of row r) rewritten as [R', L'] with R * L = R' * L'. Changing the row
// length moves elements between lanes, which only ldu / stu (element-aligned partial loads and
// stores) can do.
//
// Descriptor: N_ is the common refinement of both shapes, three dims [p, k, q]; each tensor's
// layout lists its row dims then its stick dims, and its stickDimOrder_ names all dims of its
// row (one dim or two): R' = p*k, L' = q for [R, L] = [p, k*q], and the other way round. Only
// dim 0 (p) is split over cores, so every core owns whole rows of both tensors and the same
// flat element range of each.
//
// Per core and per block of rows that fits LX: DMA the input rows in (all tiles), pack them
// into a dense element stream with stu (row r at element r*L), unpack the stream into output
// sticks with ldu (row r' from element r'*L'; the last stick of a row zero-filled past L'), DMA
// the output rows out. Addresses are affine in the row and tile, so loops, not unrolled code.
#include "backend_common.h"
#include "spyre/isa/error.h"
#include <climits>
#include <numeric>

namespace spyre::isa::detail {

bool isLaneReshapeOp(const std::string &op) { return op == "reshape"; }

namespace {

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

} // namespace

/// LX one block of `c` dim-0 indices needs: input sticks, the packed stream, output sticks.
std::array<int64_t, 3> laneReshapeBlockBytes(const RowShape &in, const RowShape &out, int64_t p, int64_t es,
                                             int64_t c) {
  const int64_t eps = kStickBytes / es, v = in.rows / p, u = out.rows / p;
  const int64_t T = (in.len + eps - 1) / eps, To = (out.len + eps - 1) / eps;
  return {c * v * T * kStickBytes, roundUp(c * v * in.len * es, kStickBytes), c * u * To * kStickBytes};
}

int64_t laneReshapeMinStagingBytes(const SuperDsc &s) {
  if (s.inputs.size() != 1 || s.outputs.size() != 1 || s.inputs[0] < 0 || s.dims.size() != 3 || s.N[0] < 1)
    return INT64_MAX; // malformed: compileLaneReshape says why
  try {
    const SdscTensor &xT = s.tensor(s.inputs[0]);
    const int64_t es = xT.dataFormat == DataFormat::IEEE_FP32 ? 4 : 2;
    auto b = laneReshapeBlockBytes(rowShape(s, xT), rowShape(s, s.tensor(s.outputs[0])), s.N[0], es, 1);
    return b[0] + b[1] + b[2];
  } catch (const Error &) {
    return INT64_MAX; // a capability query: compileLaneReshape reports what is wrong
  }
}

Kernel compileLaneReshape(const SuperDsc &s, const BackendOptions &opts) {
  if (s.inputs.size() != 1 || s.outputs.size() != 1 || s.inputs[0] < 0)
    throw Error(where(s) + ": reshape takes one input tensor and one output");
  if (s.dims.size() != 3)
    throw Error(where(s) + ": reshape iterates over 3 dims (the common refinement [p, k, q]), not " +
                std::to_string(s.dims.size()));
  const SdscTensor &xT = s.tensor(s.inputs[0]), &yT = s.tensor(s.outputs[0]);
  if (xT.dataFormat != yT.dataFormat)
    throw Error(where(s) + ": reshape keeps the data format (" + std::string(dataFormatName(xT.dataFormat)) + " -> " +
                std::string(dataFormatName(yT.dataFormat)) + ")");
  const Format fmt = formatOf(s, xT.dataFormat);
  if (fmt != Format::DL16 && fmt != Format::F32)
    throw Unsupported("reshape of " + std::string(dataFormatName(xT.dataFormat)) + " tensors in " + s.name);
  const RowShape in = rowShape(s, xT), out = rowShape(s, yT);
  for (size_t d = 1; d < s.dims.size(); ++d)
    if (s.numWkSlicesPerDim.at(d) != 1)
      throw Unsupported("reshape split over dim " + s.dims[d] + " (only " + s.dims[0] + " is divided) in " + s.name);
  const int cores = s.numCoresUsed;
  if (s.numWkSlicesPerDim.at(0) != cores || s.N[0] % cores != 0)
    throw Error(where(s) + ": dim " + s.dims[0] + " = " + std::to_string(s.N[0]) + " must split evenly over the " +
                std::to_string(cores) + " cores");

  const int64_t es = fmt == Format::DL16 ? 2 : 4, eps = kStickBytes / es;
  const int64_t T = (in.len + eps - 1) / eps, To = (out.len + eps - 1) / eps;
  const int64_t v = in.rows / s.N[0], u = out.rows / s.N[0]; // rows per dim-0 index
  const int64_t per = s.N[0] / cores;                           // dim-0 indices per core

  TensorGeom gx, gy;
  gx.t = &xT;
  gy.t = &yT;
  gx.fmt = gy.fmt = fmt;
  gx.segment = xT.ldsIdx;
  gy.segment = yT.ldsIdx;
  std::vector<int64_t> offX, offY;
  for (int c = 0; c < cores; ++c) {
    const int64_t slice = s.coreIdToWkSlice.at(c).at(0);
    offX.push_back(slice * per * v * kStickBytes);
    offY.push_back(slice * per * u * kStickBytes);
  }
  checkStartAddresses(s, gx, offX);
  checkStartAddresses(s, gy, offY);

  // LX: input sticks [T][c*v], the dense stream, output sticks [To][c*u] for c dim-0 indices.
  auto layoutFor = [&](int64_t c) { return laneReshapeBlockBytes(in, out, s.N[0], es, c); };
  const int64_t base = roundUp(s.lxReservedBytes, kStickBytes), budget = opts.lxBytes - base;
  const int64_t c = largestDivisorFitting(per, [&](int64_t cand) {
    auto b = layoutFor(cand);
    return b[0] + b[1] + b[2] <= budget;
  });
  if (c == 0) {
    auto b = layoutFor(1);
    throw Unsupported("reshape [" + std::to_string(in.rows) + ", " + std::to_string(in.len) + "] -> [" +
                      std::to_string(out.rows) + ", " + std::to_string(out.len) + "] in " + s.name + ": one group of " +
                      std::to_string(v) + " input rows needs " + std::to_string(b[0] + b[1] + b[2]) +
                      " bytes of LX, more than the " + std::to_string(budget) + " available");
  }
  const auto b = layoutFor(c);
  const int64_t IN = base, DENSE = base + b[0], OUT = base + b[0] + b[1];
  const int64_t cv = c * v, cu = c * u;

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
  pb.loop(per / c, {{rX, cv * kStickBytes}, {rY, cu * kStickBytes}}, [&] {
    pb.dmaBox(true, gx.segment, rX, 0, -1, IN, {{T, in.rows * kStickBytes}, {cv, kStickBytes}}, 0, rS1, rS2);
    // Pack: row r's tiles to elements r*L.. of the stream (the last tile holds L - (T-1)*eps).
    emitLi(pb, rA, IN);
    emitLi(pb, rB, DENSE);
    pb.loop(cv, {{rA, kStickBytes}, {rB, in.len * es}}, [&] {
      pb.loop(T - 1, {{rA, cv * kStickBytes}, {rB, eps * es}}, [&] {
        ldst(Opcode::Ld, 0, rA, 0, 0);
        ldst(Opcode::Stu, 0, rB, 0, eps);
      });
      ldst(Opcode::Ld, 0, rA, (T - 1) * cv * kStickBytes, 0);
      ldst(Opcode::Stu, 0, rB, (T - 1) * eps * es, in.len - (T - 1) * eps);
    });
    // Unpack: output row r' from element r'*L'; ldu zero-fills the padding lanes of its last stick.
    emitLi(pb, rA, DENSE);
    emitLi(pb, rB, OUT);
    pb.loop(cu, {{rA, out.len * es}, {rB, kStickBytes}}, [&] {
      pb.loop(To - 1, {{rA, eps * es}, {rB, cu * kStickBytes}}, [&] {
        ldst(Opcode::Ldu, 0, rA, 0, eps);
        ldst(Opcode::St, 0, rB, 0, 0);
      });
      ldst(Opcode::Ldu, 0, rA, (To - 1) * eps * es, out.len - (To - 1) * eps);
      ldst(Opcode::St, 0, rB, (To - 1) * cu * kStickBytes, 0);
    });
    pb.dmaBox(false, gy.segment, rY, 0, -1, OUT, {{To, out.rows * kStickBytes}, {cu, kStickBytes}}, 1, rS1, rS2);
  });
  pb.finishSpmd(k);
  return k;
}

} // namespace spyre::isa::detail
