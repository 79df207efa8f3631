// embedding (our SuperDSC extension, docs/superdsc.md): rows of a DDR table chosen by int32
// indices, out[b, s, :] = table[idx[b, s], :], with dma.gather. Dims [x,] mb, in, out: the index
// tensor spans x and mb (sticked on mb), the table in and out, the output x, mb and out (both
// sticked on out). Cores split x and mb (mb in whole index sticks). Per core and per index row
// b: the row's index sticks into LX, then per block of entries one gather of every entry's out
// sticks into a dense staging block and one DMA of the block to the output. The gather is a
// byte copy of sticks: any table format (DL16, fp32, int32) works, the output's must match.
#include "lowerings.h"
#include <algorithm>

namespace spyre::backend::detail {

namespace {

int64_t strideOf(const TensorGeom &g, int d) {
  const int k = g.dimOf(d);
  return k >= 0 && g.dims[k].extent > 1 ? g.dims[k].strideBytes : 0;
}

} // namespace

Kernel compileGather(const SuperDsc &s, const BackendOptions &opts) {
  if (s.opFuncName == "index_copy")
    return compileIndexCopy(s, opts); // the scatter side (backend_scatter.cpp)
  if (s.inputs.size() != 2 || s.outputs.size() != 1 || s.inputs[0] < 0 || s.inputs[1] < 0)
    throw Error(where(s) + ": " + s.opFuncName + " takes two input tensors (table, indices) and one output");
  const int dIn = s.dimIndex("in"), dOut = s.dimIndex("out"), dMb = s.dimIndex("mb"), dX = s.dimIndex("x");
  if (dIn < 0 || dOut < 0 || dMb < 0)
    throw Error(where(s) + ": " + s.opFuncName + " needs the dims mb, in and out (and optionally x)");
  for (size_t d = 0; d < s.dims.size(); ++d)
    if (static_cast<int>(d) != dIn && static_cast<int>(d) != dOut && static_cast<int>(d) != dMb &&
        static_cast<int>(d) != dX)
      throw Error(where(s) + ": " + s.opFuncName + " has an unexpected dim " + s.dims[d]);
  const SdscTensor &tT = s.tensor(s.inputs[0]), &iT = s.tensor(s.inputs[1]), &oT = s.tensor(s.outputs[0]);
  // Which dims each tensor spans: the table (in, out), the indices (x, mb), the output (x, mb, out).
  auto expectScale = [&](const SdscTensor &t, std::initializer_list<int> present) {
    for (size_t d = 0; d < s.dims.size(); ++d) {
      const bool want = std::find(present.begin(), present.end(), static_cast<int>(d)) != present.end();
      if ((t.scale[d] == 1) != want)
        throw Error(where(s) + ": " + t.dsName + " must have scale_ " + (want ? "1" : "-1") + " on " + s.dims[d]);
    }
  };
  expectScale(tT, {dIn, dOut});
  expectScale(iT, dX >= 0 ? std::initializer_list<int>{dX, dMb} : std::initializer_list<int>{dMb});
  expectScale(oT, dX >= 0 ? std::initializer_list<int>{dX, dMb, dOut} : std::initializer_list<int>{dMb, dOut});
  TensorGeom table = tensorGeom(s, tT, "out"), idx = tensorGeom(s, iT, "mb"), out = tensorGeom(s, oT, "out");
  if (idx.fmt != Format::I32)
    throw Unsupported("embedding indices in " + std::string(dataFormatName(iT.dataFormat)) + " in " + s.name +
                      " (int32 only)");
  if (table.fmt != out.fmt)
    throw Error(where(s) + ": the table is " + std::string(dataFormatName(tT.dataFormat)) + " but the output " +
                std::string(dataFormatName(oT.dataFormat)));
  for (int d : {dIn, dOut})
    if (s.numWkSlicesPerDim[d] != 1)
      throw Unsupported("splitting the " + s.dims[d] + " dim of an embedding over cores in " + s.name);
  const int64_t eps = elemsPerStick(tT.dataFormat);
  const int64_t V = s.N[dIn], DT = (s.N[dOut] + eps - 1) / eps, S = s.N[dMb], B = dX >= 0 ? s.N[dX] : 1;
  const int64_t ST = (S + 31) / 32; // index sticks per row
  // Table: row j at j * rowStride, out stick t at t * tileStride; output: entry (b, s) at
  // b * oX + s * oMb, its sticks oTile apart; index row b at b * iX, its sticks iMb apart.
  const int64_t rowStride = strideOf(table, dIn), tileStride = strideOf(table, dOut);
  const int64_t oX = dX >= 0 ? strideOf(out, dX) : 0, oMb = strideOf(out, dMb), oTile = strideOf(out, dOut);
  const int64_t iX = dX >= 0 ? strideOf(idx, dX) : 0, iMb = strideOf(idx, dMb);
  // LX: the index sticks of one row at lxIdx, the staged block above them.
  const int64_t lxIdx = (s.lxReservedBytes + 127) / 128 * 128;
  Kernel k = newKernel(s, {&table, &idx, &out});
  std::vector<int64_t> idxOff(k.numCores), outOff(k.numCores), zero(k.numCores, 0);
  struct CorePlan {
    Slice b, st;
    int64_t s0, ns;
  };
  std::vector<CorePlan> plans;
  for (int c = 0; c < k.numCores; ++c) {
    CorePlan p{dX >= 0 ? coreSlice(s, c, dX, B) : Slice{0, 1}, coreSlice(s, c, dMb, ST), 0, 0};
    p.s0 = p.st.lo * 32;
    p.ns = std::min(p.st.len * 32, S - p.s0);
    idxOff[c] = p.b.lo * iX + p.st.lo * iMb;
    outOff[c] = p.b.lo * oX + p.s0 * oMb;
    plans.push_back(p);
  }
  checkStartAddresses(s, table, zero);
  checkStartAddresses(s, idx, idxOff);
  checkStartAddresses(s, out, outOff);
  const int64_t idxBytes = plans[0].st.len * 128, entryBytes = DT * 128;
  const int64_t lxBlock = lxIdx + idxBytes, room = opts.lxBytes - lxBlock;
  if (plans[0].ns < 1)
    throw Error(where(s) + ": a core has no index entries (numWkSlicesPerDim_.mb too large)");
  if (room < entryBytes)
    throw Unsupported("embedding rows of " + std::to_string(entryBytes) + " bytes do not fit in LX in " + s.name);
  const int64_t block = std::min(plans[0].ns, room / entryBytes);
  constexpr int rIdx = 1, rOut = 2, rIdxWalk = 3, tok = 0;
  for (int c = 0; c < k.numCores; ++c) {
    const CorePlan &p = plans[c];
    ProgramBuilder pb;
    emitLi(pb, rIdx, idxOff[c]);
    emitLi(pb, rOut, outOff[c]);
    // One gather of `n` entries into the block, then the block to the output at r2.
    auto gatherBlock = [&](int64_t n) {
      Instr g = mk(Opcode::DmaGather);
      g.lx = {-1, lxBlock};
      g.ddr = {table.segment, -1, 0};
      g.dma.n = {1, DT, 1};
      g.dma.ddrStride = {DT * tileStride, tileStride};
      g.dma.lxStride = {DT * 128, 128};
      if (DT == 1)
        g.dma.ddrStride = g.dma.lxStride = DmaShape::dense(g.dma.n);
      g.lx2 = {rIdxWalk, 0};
      g.imm = n;
      g.imms = {V, rowStride, entryBytes};
      g.outToken = tok;
      pb.emit(g);
      pb.waitTokens({tok});
      pb.dmaBoxStrided(false, out.segment, rOut, 0, -1, lxBlock, {{n, oMb, entryBytes}, {DT, oTile, 128}}, tok, 20,
                       21);
    };
    auto row = [&] {
      pb.dmaBoxStrided(true, idx.segment, rIdx, 0, -1, lxIdx, {{p.st.len, iMb ? iMb : 128, 128}}, tok, 20, 21);
      emitLi(pb, rIdxWalk, lxIdx);
      const int64_t full = p.ns / block, rem = p.ns % block;
      pb.loop(full, {{rIdxWalk, 4 * block}, {rOut, block * oMb}}, [&] { gatherBlock(block); });
      if (rem) {
        pb.emit(addi(rIdxWalk, rIdxWalk, full * 4 * block));
        pb.emit(addi(rOut, rOut, full * block * oMb));
        gatherBlock(rem);
        pb.emit(addi(rOut, rOut, -full * block * oMb));
      }
    };
    pb.loop(p.b.len, {{rIdx, iX}, {rOut, oX}}, row);
    pb.finishCores(k, c, c);
  }
  k.comment = "op=" + s.opFuncName + " rows=" + std::to_string(V) + " sticks/row=" + std::to_string(DT) +
              " entries=" + std::to_string(B * S) + " block=" + std::to_string(block) + " cores=" +
              std::to_string(k.numCores);
  return k;
}

} // namespace spyre::backend::detail
