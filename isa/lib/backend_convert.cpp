// dtype ops on the SFP: dl16tofp32 (each DL16 stick becomes two fp32 sticks, standard element
// order) and fp32todl16 (two fp32 sticks become one DL16 stick). The stick dim is never split
// over cores; the per-core rows are blocked to fit LX.
#include "backend_common.h"
#include <functional>

namespace spyre::isa::detail {

bool isConvertOp(const std::string &op) { return op == "dl16tofp32" || op == "fp32todl16"; }

Kernel compileConvert(const SuperDsc &s, const BackendOptions &opts) {
  const bool widen = s.opFuncName == "dl16tofp32";
  if (s.exUnit != "sfp")
    throw Error(where(s) + ": computeOp_ exUnit must be 'sfp' for " + s.opFuncName);
  if (s.inputs.size() != 1 || s.outputs.size() != 1 || s.inputs[0] < 0)
    throw Error(where(s) + ": expected one input tensor and one output");
  const SdscTensor &inT = s.tensor(s.inputs[0]), &outT = s.tensor(s.outputs[0]);
  const DataFormat want = widen ? DataFormat::SEN169_FP16 : DataFormat::IEEE_FP32;
  const DataFormat got = widen ? DataFormat::IEEE_FP32 : DataFormat::SEN169_FP16;
  if (inT.dataFormat != want || outT.dataFormat != got)
    throw Error(where(s) + ": " + s.opFuncName + " converts " + std::string(dataFormatName(want)) + " to " +
                std::string(dataFormatName(got)));
  const std::string stickDim = s.primaryDsInfo.at(outT.dsType).stickDimOrder[0];
  TensorGeom in = tensorGeom(s, inT, stickDim), out = tensorGeom(s, outT, stickDim);
  for (const SdscTensor *t : {&inT, &outT})
    for (int sc : t->scale)
      if (sc != 1)
        throw Unsupported("broadcast in " + s.name);
  const int sd = s.dimIndex(stickDim);
  if (s.numWkSlicesPerDim[sd] != 1)
    throw Unsupported("splitting the stick dim of a dtype op over cores in " + s.name);
  if (in.dims.size() != out.dims.size())
    throw Error(where(s) + ": input and output layouts differ in rank");
  const size_t J = in.dims.size();
  size_t tileJ = J;
  for (size_t j = 0; j < J; ++j)
    if (in.dims[j].iterDim == sd)
      tileJ = j;
  if (tileJ == J || out.dims[tileJ].iterDim != sd)
    throw Error(where(s) + ": layouts must list the stick dim at the same position");
  auto offsets = [&](const TensorGeom &g) {
    std::vector<int64_t> off(s.numCoresUsed, 0);
    for (int c = 0; c < s.numCoresUsed; ++c)
      for (size_t j = 0; j < J; ++j)
        if (j != tileJ)
          off[c] += coreSlice(s, c, g.dims[j].iterDim, g.dims[j].extent).lo * g.dims[j].strideBytes;
    return off;
  };
  checkStartAddresses(s, in, offsets(in));
  checkStartAddresses(s, out, offsets(out));
  std::vector<int64_t> len(J);
  for (size_t j = 0; j < J; ++j)
    len[j] = j == tileJ ? 0 : coreSlice(s, 0, in.dims[j].iterDim, in.dims[j].extent).len;
  const int64_t T16 = widen ? in.dims[tileJ].extent : out.dims[tileJ].extent;
  const int64_t T32 = widen ? out.dims[tileJ].extent : in.dims[tileJ].extent;
  // Block: dims before the tile one index at a time; the tile dim whole; dims after it (rows)
  // whole except the first, chunked to fit.
  int64_t inner = 1;
  for (size_t j = tileJ + 2; j < J; ++j)
    inner *= len[j];
  const size_t rowJ = tileJ + 1;
  int64_t rows = rowJ < J ? len[rowJ] : 1;
  auto blockBytes = [&](int64_t chunk) { return (T16 + T32) * chunk * inner * kStickBytes; };
  // Double buffering: input and output blocks twice, block i+1 fetched and block i-1 written
  // back while block i converts (as in backend_pointwise.cpp).
  int64_t chunk = largestDivisorFitting(rows, [&](int64_t c) { return 2 * blockBytes(c) <= opts.lxBytes; });
  bool dbl = chunk > 0;
  if (!dbl)
    chunk = largestDivisorFitting(rows, [&](int64_t c) { return blockBytes(c) <= opts.lxBytes; });
  if (chunk == 0)
    throw Unsupported("a dtype-op block that does not fit in LX in " + s.name);
  if (dbl)
    chunk = pipelineChunk(
        rows, chunk, std::max(1, opts.pipelineBlocks), [&](int64_t c) { return (T16 + T32) * c * inner >= 8; },
        /*divisorsOnly=*/true);
  const int64_t rowSticks = chunk * inner; // sticks per tile in a block
  Kernel k = newKernel(s, {&in, &out});
  ProgramBuilder pb;
  emitTbl(pb, 1, offsets(in));
  emitTbl(pb, 2, offsets(out));
  const int64_t lxIn = 0, lxOut = (widen ? T16 : T32) * rowSticks * kStickBytes;
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
  const int64_t rowStrideIn = rowJ < J ? in.dims[rowJ].strideBytes : 0,
                rowStrideOut = rowJ < J ? out.dims[rowJ].strideBytes : 0;
  // The conversion of one block staged at rBase + lxIn into rBase + lxOut (rBase -1: at 0).
  std::function<void(int)> convertBlock;
  // pipe: one block of the double-buffered sweep; else the synchronous dma / convert / dma.
  auto block = [&](bool pipe, bool first, bool last) {
    if (!pipe) {
      pb.dmaBox(true, in.segment, 1, 0, -1, lxIn, box(in), 0, 20, 21);
      convertBlock(-1);
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
      pb.loop(len[j], {{1, in.dims[j].strideBytes}, {2, out.dims[j].strideBytes}}, [&] { outer(j + 1); });
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
    {
      // r10 walks DL16 sticks (tile t), r11 the fp32 stick 2t, r12 the fp32 stick 2t+1.
      const int64_t s16 = rowSticks * kStickBytes, s32 = rowSticks * kStickBytes;
      const int64_t base16 = widen ? lxIn : lxOut, base32 = widen ? lxOut : lxIn;
      auto convertTile = [&](bool hasHigh) {
        pb.loop(rowSticks, {{10, kStickBytes}, {11, kStickBytes}, {12, kStickBytes}}, [&] {
          if (widen) {
            Instr ld = mk(Opcode::Ld, Format::DL16);
            ld.v = {0, -1, -1, -1};
            ld.lx = {10, 0};
            pb.emit(ld);
            Instr up = mk(Opcode::Unpack);
            up.v = {1, 2, 0, -1};
            pb.emit(up);
            Instr st = mk(Opcode::St, Format::F32);
            st.v = {1, -1, -1, -1};
            st.lx = {11, 0};
            pb.emit(st);
            if (hasHigh) {
              Instr st2 = mk(Opcode::St, Format::F32);
              st2.v = {2, -1, -1, -1};
              st2.lx = {12, 0};
              pb.emit(st2);
            }
          } else {
            Instr ld = mk(Opcode::Ld, Format::F32);
            ld.v = {1, -1, -1, -1};
            ld.lx = {11, 0};
            pb.emit(ld);
            if (hasHigh) {
              Instr ld2 = mk(Opcode::Ld, Format::F32);
              ld2.v = {2, -1, -1, -1};
              ld2.lx = {12, 0};
              pb.emit(ld2);
            } else {
              Instr z = mk(Opcode::Bcast, Format::F32);
              z.v = {2, -1, -1, -1};
              pb.emit(z);
            }
            Instr pk = mk(Opcode::Pack);
            pk.v = {0, 1, 2, -1};
            pb.emit(pk);
            Instr st = mk(Opcode::St, Format::DL16);
            st.v = {0, -1, -1, -1};
            st.lx = {10, 0};
            pb.emit(st);
          }
        });
      };
      auto base = [&](int r, int64_t v) { rBase >= 0 ? pb.emit(addi(r, rBase, v)) : emitLi(pb, r, v); };
      base(10, base16);
      base(11, base32);
      base(12, base32 + s32);
      int64_t full = T32 / 2; // DL16 tiles whose both fp32 halves exist
      pb.loop(full, {{10, s16}, {11, 2 * s32}, {12, 2 * s32}}, [&] { convertTile(true); });
      if (T32 % 2) {
        pb.emit(addi(10, 10, full * s16));
        pb.emit(addi(11, 11, full * 2 * s32));
        pb.emit(addi(12, 12, full * 2 * s32));
        convertTile(false);
      }
    }
  };
  outer(0);
  pb.finishSpmd(k);
  k.comment = "op=" + s.opFuncName + " cores=" + std::to_string(k.numCores) +
              (pipelined ? ", " + std::to_string(numBlocks) + " double-buffered blocks per sweep" : "");
  return k;
}

} // namespace spyre::isa::detail
