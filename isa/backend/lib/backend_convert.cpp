// dtype ops on the SFP: dl16tofp32 (each DL16 stick becomes two fp32 sticks, standard element
// order) and fp32todl16 (two fp32 sticks become one DL16 stick); dl16toint32 / int32todl16 are
// the same walks with a cvt on the 32-lane side (fp32 -> int32 toward zero, saturating; int32 ->
// fp32 nearest even, then DL16 rounding). The stick dim is never split over cores; the per-core
// rows are blocked to fit LX.
#include "lowerings.h"
#include <functional>

namespace spyre::backend::detail {


namespace {

/// A dtype op's geometry: per core, the dims before the tile dim are walked one index at a
/// time; the tile dim is whole (T16 DL16 / T32 fp32 sticks); `rows` (the dim after it) is
/// chunked; the dims after that (`inner` sticks) are whole.
struct ConvertShape {
  TensorGeom in, out;
  size_t J = 0, tileJ = 0, rowJ = 0;
  std::vector<int64_t> len;
  int64_t T16 = 0, T32 = 0, rows = 1, inner = 1;
};

/// dl16toint32 / int32todl16: the 32-lane side holds int32.
bool intSide(const SuperDsc &s) { return s.opFuncName == "dl16toint32" || s.opFuncName == "int32todl16"; }
bool widens(const SuperDsc &s) { return s.opFuncName == "dl16tofp32" || s.opFuncName == "dl16toint32"; }

ConvertShape convertShape(const SuperDsc &s) {
  const bool widen = widens(s);
  const DataFormat wide = intSide(s) ? DataFormat::IEEE_INT32 : DataFormat::IEEE_FP32;
  if (s.exUnit != "sfp")
    throw Error(where(s) + ": computeOp_ exUnit must be 'sfp' for " + s.opFuncName);
  if (s.inputs.size() != 1 || s.outputs.size() != 1 || s.inputs[0] < 0)
    throw Error(where(s) + ": expected one input tensor and one output");
  const SdscTensor &inT = s.tensor(s.inputs[0]), &outT = s.tensor(s.outputs[0]);
  const DataFormat want = widen ? DataFormat::SEN169_FP16 : wide;
  const DataFormat got = widen ? wide : DataFormat::SEN169_FP16;
  if (inT.dataFormat != want || outT.dataFormat != got)
    throw Error(where(s) + ": " + s.opFuncName + " converts " + std::string(dataFormatName(want)) + " to " +
                std::string(dataFormatName(got)));
  const std::string stickDim = s.primaryDsInfo.at(outT.dsType).stickDimOrder[0];
  ConvertShape c;
  c.in = tensorGeom(s, inT, stickDim);
  c.out = tensorGeom(s, outT, stickDim);
  for (const SdscTensor *t : {&inT, &outT})
    for (int sc : t->scale)
      if (sc != 1)
        throw Unsupported("broadcast in " + s.name);
  const int sd = s.dimIndex(stickDim);
  if (s.numWkSlicesPerDim[sd] != 1)
    throw Unsupported("splitting the stick dim of a dtype op over cores in " + s.name);
  if (c.in.dims.size() != c.out.dims.size())
    throw Error(where(s) + ": input and output layouts differ in rank");
  c.J = c.in.dims.size();
  c.tileJ = c.J;
  for (size_t j = 0; j < c.J; ++j)
    if (c.in.dims[j].iterDim == sd)
      c.tileJ = j;
  if (c.tileJ == c.J || c.out.dims[c.tileJ].iterDim != sd)
    throw Error(where(s) + ": layouts must list the stick dim at the same position");
  c.len.resize(c.J);
  for (size_t j = 0; j < c.J; ++j)
    c.len[j] = j == c.tileJ ? 0 : coreSlice(s, 0, c.in.dims[j].iterDim, c.in.dims[j].extent).len;
  c.T16 = widen ? c.in.dims[c.tileJ].extent : c.out.dims[c.tileJ].extent;
  c.T32 = widen ? c.out.dims[c.tileJ].extent : c.in.dims[c.tileJ].extent;
  for (size_t j = c.tileJ + 2; j < c.J; ++j)
    c.inner *= c.len[j];
  c.rowJ = c.tileJ + 1;
  c.rows = c.rowJ < c.J ? c.len[c.rowJ] : 1;
  return c;
}

/// One block of a conversion: `rowSticks` sticks per tile, T32 fp32 tiles (two per DL16 tile),
/// staged at lxIn / lxOut; a resident side is walked where it lives (r1 input, r2 output).
struct ConvertBlock {
  bool widen, ints;
  int64_t rowSticks, T32, lxIn, lxOut;
  bool inLx, outLx;
};

/// One DL16 tile <-> its fp32 tile(s): r10 walks DL16 sticks, r11 / r12 the fp32 halves
/// (hasHigh: the second half exists).
/// ints: the fp32 side is int32 (cvt after unpack / before pack).
void emitConvertTile(ProgramBuilder &pb, bool widen, bool ints, int64_t rowSticks, bool hasHigh) {
  const Format wide = ints ? Format::I32 : Format::F32;
  pb.loop(rowSticks, {{10, kStickBytes}, {11, kStickBytes}, {12, kStickBytes}}, [&] {
    if (widen) {
      pb.emit(vld(Format::DL16, 0, 10));
      pb.emit(vop(Opcode::Unpack, Format::None, 1, 2, 0));
      if (ints)
        pb.emit(vop(Opcode::Cvt, Format::I32, 1, 1));
      pb.emit(vst(wide, 1, 11));
      if (hasHigh) {
        if (ints)
          pb.emit(vop(Opcode::Cvt, Format::I32, 2, 2));
        pb.emit(vst(wide, 2, 12));
      }
    } else {
      pb.emit(vld(wide, 1, 11));
      if (ints)
        pb.emit(vop(Opcode::Cvt, Format::F32, 1, 1));
      if (hasHigh) {
        pb.emit(vld(wide, 2, 12));
        if (ints)
          pb.emit(vop(Opcode::Cvt, Format::F32, 2, 2));
      } else {
        pb.emit(vbcast(Format::F32, 2));
      }
      pb.emit(vop(Opcode::Pack, Format::None, 0, 1, 2));
      pb.emit(vst(Format::DL16, 0, 10));
    }
  });
}

/// The conversion of one block staged at rBase + lxIn into rBase + lxOut (rBase -1: at 0).
/// r10 walks DL16 sticks (tile t), r11 the fp32 stick 2t, r12 the fp32 stick 2t+1.
void emitConvertBlock(ProgramBuilder &pb, const ConvertBlock &b, int rBase) {
  const int64_t s16 = b.rowSticks * kStickBytes, s32 = b.rowSticks * kStickBytes;
  const int64_t base16 = b.widen ? b.lxIn : b.lxOut, base32 = b.widen ? b.lxOut : b.lxIn;
  auto base = [&](int r, int64_t v) { rBase >= 0 ? pb.emit(addi(r, rBase, v)) : emitLi(pb, r, v); };
  // A resident side is walked where it lives (r1 input, r2 output: its block's address).
  const int r16 = (b.widen ? b.inLx : b.outLx) ? (b.widen ? 1 : 2) : -1;
  const int r32 = (b.widen ? b.outLx : b.inLx) ? (b.widen ? 2 : 1) : -1;
  r16 >= 0 ? pb.emit(addi(10, r16, 0)) : base(10, base16);
  r32 >= 0 ? pb.emit(addi(11, r32, 0)) : base(11, base32);
  r32 >= 0 ? pb.emit(addi(12, r32, s32)) : base(12, base32 + s32);
  int64_t full = b.T32 / 2; // DL16 tiles whose both fp32 halves exist
  pb.loop(full, {{10, s16}, {11, 2 * s32}, {12, 2 * s32}}, [&] { emitConvertTile(pb, b.widen, b.ints, b.rowSticks, true); });
  if (b.T32 % 2) {
    pb.emit(addi(10, 10, full * s16));
    pb.emit(addi(11, 11, full * 2 * s32));
    pb.emit(addi(12, 12, full * 2 * s32));
    emitConvertTile(pb, b.widen, b.ints, b.rowSticks, false);
  }
}

} // namespace

int64_t convertMinStagingBytes(const SuperDsc &s, int residentIdx) {
  ConvertShape c;
  try {
    c = convertShape(s);
  } catch (const Error &) {
    return INT64_MAX; // compileConvert reports it
  }
  if (residentIdx < 0)
    return (c.T16 + c.T32) * c.inner * kStickBytes; // one row of each, single-buffered
  // An LX-resident operand is walked unblocked: the other one's whole rows are staged.
  const bool residentIs16 = (residentIdx == s.inputs[0]) == widens(s);
  return (residentIs16 ? c.T32 : c.T16) * c.rows * c.inner * kStickBytes;
}

Kernel compileConvert(const SuperDsc &s, const BackendOptions &opts) {
  const bool widen = widens(s), ints = intSide(s);
  const SdscTensor &inT = s.tensor(s.inputs.at(0)), &outT = s.tensor(s.outputs.at(0));
  ConvertShape c = convertShape(s);
  TensorGeom &in = c.in, &out = c.out;
  const size_t J = c.J, tileJ = c.tileJ, rowJ = c.rowJ;
  const std::vector<int64_t> &len = c.len;
  const int64_t T16 = c.T16, T32 = c.T32, rows = c.rows, inner = c.inner;
  auto offsets = [&](const TensorGeom &g) {
    std::vector<int64_t> off(s.numCoresUsed, 0);
    for (int core = 0; core < s.numCoresUsed; ++core)
      for (size_t j = 0; j < J; ++j)
        if (j != tileJ)
          off[core] += coreSlice(s, core, g.dims[j].iterDim, g.dims[j].extent).lo * g.dims[j].strideBytes;
    return off;
  };
  if (!inT.inLx)
    checkStartAddresses(s, in, offsets(in));
  if (!outT.inLx)
    checkStartAddresses(s, out, offsets(out));
  // An LX-resident operand (memOrg_ lx) holds the core's slice densely in its own dim order:
  // for one index of the outer dims, exactly the (tile, rows, inner) block with chunk = rows.
  // canon[j]: its LX stride along dim j; everything else is staged above the reserved LX.
  auto canonOf = [&](const TensorGeom &g) {
    std::vector<int64_t> st(J, 0);
    int64_t b = kStickBytes;
    for (size_t j = J; j-- > 0;) {
      const int64_t l = j == tileJ ? g.dims[j].extent : len[j];
      st[j] = b;
      b *= l;
    }
    return std::make_pair(st, b);
  };
  const auto [inCanon, inSlice] = canonOf(in);
  const auto [outCanon, outSlice] = canonOf(out);
  const int64_t inLxAddr = inT.inLx ? lxResidentAddress(s, in, inSlice) : -1;
  const int64_t outLxAddr = outT.inLx ? lxResidentAddress(s, out, outSlice) : -1;
  const bool resident = inT.inLx || outT.inLx;
  const int64_t lxStage = s.lxReservedBytes, stageBytes = opts.lxBytes - lxStage;
  // Staged bytes of a block (an LX-resident operand is not staged).
  auto blockBytes = [&](int64_t chunk) {
    return ((widen ? inT.inLx : outT.inLx) ? 0 : T16) * chunk * inner * kStickBytes +
           ((widen ? outT.inLx : inT.inLx) ? 0 : T32) * chunk * inner * kStickBytes;
  };
  // Double buffering: input and output blocks twice, block i+1 fetched and block i-1 written
  // back while block i converts (as in backend_pointwise.cpp). With an LX-resident operand one
  // block covers all the core's rows (the resident slice is laid out per whole row range).
  int64_t chunk = resident ? 0 : largestDivisorFitting(rows, [&](int64_t ch) { return 2 * blockBytes(ch) <= stageBytes; });
  bool dbl = chunk > 0;
  if (resident)
    chunk = blockBytes(rows) <= stageBytes ? rows : 0;
  else if (!dbl)
    chunk = largestDivisorFitting(rows, [&](int64_t ch) { return blockBytes(ch) <= stageBytes; });
  if (chunk == 0)
    throw Unsupported("a dtype-op block that does not fit in LX in " + s.name);
  if (dbl)
    chunk = pipelineChunk(
        rows, chunk, std::max(1, opts.pipelineBlocks), [&](int64_t ch) { return (T16 + T32) * ch * inner >= 8; },
        /*divisorsOnly=*/true);
  const int64_t rowSticks = chunk * inner; // sticks per tile in a block
  Kernel k = newKernel(s, {&in, &out});
  ProgramBuilder pb;
  inT.inLx ? emitLi(pb, 1, inLxAddr) : emitTbl(pb, 1, offsets(in));
  outT.inLx ? emitLi(pb, 2, outLxAddr) : emitTbl(pb, 2, offsets(out));
  // LX: [reserved | input block | output block]; a resident operand is used where it lives.
  const int64_t lxIn = lxStage, lxOut = lxStage + (inT.inLx ? 0 : (widen ? T16 : T32) * rowSticks * kStickBytes);
  auto box = [&](const TensorGeom &g) {
    std::vector<std::pair<int64_t, int64_t>> b;
    for (size_t j = tileJ; j < J; ++j)
      b.push_back({j == tileJ ? g.dims[j].extent : j == rowJ ? chunk : len[j], g.dims[j].strideBytes});
    return b;
  };
  const int64_t numBlocks = rows / chunk;
  const bool pipelined = dbl && numBlocks >= 2 && ProgramBuilder::singleDma(box(in)) && ProgramBuilder::singleDma(box(out));
  const int64_t half = blockBytes(chunk);
  constexpr int rCur = 22, rOther = 23, rSwap = 24;
  // Register steps along dim j: DDR strides, or a resident operand's LX strides.
  auto inStep = [&](size_t j) { return inT.inLx ? inCanon[j] : in.dims[j].strideBytes; };
  auto outStep = [&](size_t j) { return outT.inLx ? outCanon[j] : out.dims[j].strideBytes; };
  const int64_t rowStrideIn = rowJ < J ? inStep(rowJ) : 0, rowStrideOut = rowJ < J ? outStep(rowJ) : 0;
  // The conversion of one block staged at rBase + lxIn into rBase + lxOut (rBase -1: at 0).
  std::function<void(int)> convertBlock;
  // pipe: one block of the double-buffered sweep; else the synchronous dma / convert / dma.
  auto block = [&](bool pipe, bool first, bool last) {
    if (!pipe) {
      if (!inT.inLx)
        pb.dmaBox(true, in.segment, 1, 0, -1, lxIn, box(in), 0, 20, 21);
      convertBlock(-1);
      if (!outT.inLx)
        pb.dmaBox(false, out.segment, 2, 0, -1, lxOut, box(out), 1, 20, 21);
      return;
    }
    pb.waitTokens({0});
    if (!last)
      pb.dmaAsync(true, in.segment, 1, chunk * rowStrideIn, rOther, lxIn, box(in), 0);
    convertBlock(rCur);
    if (!first)
      pb.waitTokens({1});
    pb.dmaAsync(false, out.segment, 2, 0, rCur, lxOut, box(out), 1);
  };
  std::function<void(size_t)> outer = [&](size_t j) {
    if (j < tileJ) {
      pb.loop(len[j], {{1, inStep(j)}, {2, outStep(j)}}, [&] { outer(j + 1); });
      return;
    }
    if (!pipelined) {
      pb.loop(numBlocks, {{1, chunk * rowStrideIn}, {2, chunk * rowStrideOut}}, [&] { block(false, true, true); });
      return;
    }
    pb.pipelinedSweep(
        numBlocks, {{1, chunk * rowStrideIn}, {2, chunk * rowStrideOut}}, rCur, rOther, rSwap, half,
        [&] { pb.dmaAsync(true, in.segment, 1, 0, rCur, lxIn, box(in), 0); },
        [&](bool first, bool last) { block(true, first, last); }, [&] { pb.waitTokens({1}); });
  };
  convertBlock = [&](int rBase) {
    emitConvertBlock(pb, {widen, ints, rowSticks, T32, lxIn, lxOut, inT.inLx, outT.inLx}, rBase);
  };
  outer(0);
  pb.finishSpmd(k);
  k.comment = "op=" + s.opFuncName + " cores=" + std::to_string(k.numCores) +
              (pipelined ? ", " + std::to_string(numBlocks) + " double-buffered blocks per sweep" : "");
  return k;
}

} // namespace spyre::backend::detail
