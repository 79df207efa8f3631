// Reductions on the SFP: sum, mean, max, min over any set of dims, in stick form (the stick dim
// is reduced: scale_ -2, one value per output stick, lane-masked last tile) and in nonstick form
// (elementwise accumulation across sticks). Accumulation is in fp32 registers; the result is
// rounded once when stored (DL16) — mean scales the fp32 accumulator by 1/count first.
//
// exx2 (layer norm statistics) is the same walk over a stick-reduced row with two fp32
// accumulators (x and x*x); its output is one fp32 stick per row in the EXX2 arrangement:
// lane 0 = E[x], every other lane = E[x^2] (nothing rounded below fp32).
#include "lowerings.h"
#include <cmath>
#include <functional>

namespace spyre::backend::detail {

bool isStickSplitReduction(const SuperDsc &s) {
  // The reductions of the stick form (exx2, sum, mean, max, min): not the nonstick ones.
  const std::string &op = s.opFuncName;
  const isa::OpFuncInfo *f = isa::findOpFunc(op);
  const bool nonstick = op.size() > 8 && op.compare(op.size() - 8, 8, "nonstick") == 0;
  if (!f || f->cls != isa::OpClass::Reduction || nonstick || s.primaryDsInfo.empty() || s.labeledDs.empty())
    return false;
  const int sd = s.dimIndex(s.primaryDsInfo.at(s.labeledDs[0].dsType).stickDimOrder.at(0));
  return sd >= 0 && s.numWkSlicesPerDim[sd] > 1;
}

Kernel compileReduction(const SuperDsc &s, const BackendOptions &opts) {
  // The stick dim split over cores: partials summed over the ring (exx2, sum, mean).
  if (isStickSplitReduction(s))
    return compileStickSplitReduction(s, opts);
  std::string base = s.opFuncName;
  bool nonstickName = base.size() > 8 && base.compare(base.size() - 8, 8, "nonstick") == 0;
  if (nonstickName)
    base.resize(base.size() - 8);
  if (s.exUnit != "sfp")
    throw Error(where(s) + ": computeOp_ exUnit must be 'sfp' for a reduction, got '" + s.exUnit + "'");
  if (s.outputs.size() != 1 || s.inputs.empty())
    throw Error(where(s) + ": expected an input and one output");
  // torch-spyre lists the output among the inputs of a reduction (it accumulates into it).
  int inIdx = -1;
  for (int i : s.inputs)
    if (i >= 0 && i != s.outputs[0])
      inIdx = inIdx < 0 ? i : throw Error(where(s) + ": a reduction takes exactly one input tensor");
  if (inIdx < 0)
    throw Error(where(s) + ": no input tensor");
  const SdscTensor &inT = s.tensor(inIdx), &outT = s.tensor(s.outputs[0]);
  const SdscLayout &layout = s.primaryDsInfo.at(inT.dsType);
  if (layout.layoutDimOrder.size() != s.dims.size())
    throw Error(where(s) + ": the input layout must list every iteration dim");
  const std::string &stickDim = layout.stickDimOrder[0];
  const int sd = s.dimIndex(stickDim);
  TensorGeom in = tensorGeom(s, inT, stickDim), out = tensorGeom(s, outT, stickDim);
  const bool exx2 = base == "exx2";
  if (exx2 && out.fmt != Format::F32)
    throw Error(where(s) + ": the exx2 output must be IEEE_FP32 (EXX2 arrangement: lane 0 = E[x], lane 1 = E[x^2])");
  if (!exx2 && in.fmt != out.fmt)
    throw Unsupported("reductions that change the data format in " + s.name);
  if (in.fmt == Format::I32)
    throw Unsupported("int32 reductions in " + s.name);
  for (int sc : inT.scale)
    if (sc != 1)
      throw Error(where(s) + ": the input of a reduction must have scale_ 1 on every dim");
  std::vector<bool> reduced(s.dims.size(), false);
  bool stickReduced = false;
  int64_t count = 1;
  for (size_t d = 0; d < s.dims.size(); ++d) {
    int sc = outT.scale[d];
    if (sc == -2 && static_cast<int>(d) != sd)
      throw Error(where(s) + ": scale_ -2 on " + s.dims[d] + ", which is not the stick dim");
    if (sc == -1 && static_cast<int>(d) == sd)
      throw Error(where(s) + ": the stick dim reduced must have scale_ -2, not -1");
    reduced[d] = sc != 1;
    if (reduced[d]) {
      count *= s.N[d];
      if (s.numWkSlicesPerDim[d] != 1)
        throw Unsupported("splitting reduced dim " + s.dims[d] + " over cores in " + s.name);
    }
    stickReduced |= sc == -2;
  }
  if (exx2)
    for (size_t d = 0; d < s.dims.size(); ++d)
      if (reduced[d] != (static_cast<int>(d) == sd))
        throw Error(where(s) + ": exx2 reduces exactly the stick dim " + stickDim + " (output scale_ -2 there, 1 elsewhere)");
  if (nonstickName == stickReduced && !exx2)
    throw Error(where(s) + ": opFuncName '" + s.opFuncName + "' " +
                (stickReduced ? "reduces the stick dim (expected '" + base + "')"
                              : "does not reduce the stick dim (expected '" + base + "nonstick')"));
  if (count == 1 && !stickReduced && base != "mean") {
    // Nothing reduced: a copy; handled by the general code below all the same.
  }
  const Format fmt = in.fmt;
  const int64_t eps = elemsPerStick(inT.dataFormat);

  const size_t J = in.dims.size();
  std::vector<std::vector<Slice>> slices(s.numCoresUsed, std::vector<Slice>(J));
  for (int c = 0; c < s.numCoresUsed; ++c)
    for (size_t j = 0; j < J; ++j)
      slices[c][j] = reduced[in.dims[j].iterDim] ? Slice{0, in.dims[j].extent}
                                                 : coreSlice(s, c, in.dims[j].iterDim, in.dims[j].extent);
  auto offsets = [&](const TensorGeom &g) {
    std::vector<int64_t> off(s.numCoresUsed, 0);
    for (int c = 0; c < s.numCoresUsed; ++c)
      for (size_t j = 0; j < J; ++j) {
        int k = g.dimOf(in.dims[j].iterDim);
        if (k >= 0 && g.dims[k].extent > 1)
          off[c] += slices[c][j].lo * g.dims[k].strideBytes;
      }
    return off;
  };
  if (!inT.inLx)
    checkStartAddresses(s, in, offsets(in));
  if (!outT.inLx)
    checkStartAddresses(s, out, offsets(out));
  if (in.segment == out.segment)
    throw Unsupported("input and output in one segment in " + s.name);
  std::vector<int64_t> len(J);
  for (size_t j = 0; j < J; ++j)
    len[j] = slices[0][j].len;
  auto isRed = [&](size_t j) { return reduced[in.dims[j].iterDim]; };
  auto outSpans = [&](size_t j) { return out.spans(in.dims[j].iterDim); };

  // An LX-resident operand (memOrg_ lx) holds the core's whole slice densely in LX: it is
  // walked in place with these strides (input order) instead of being staged by DMA.
  std::vector<int64_t> inCanon(J, 0), outCanon(J, 0);
  int64_t inSlice = kStickBytes, outSlice = kStickBytes;
  for (size_t j = J; j-- > 0;) {
    inCanon[j] = len[j] > 1 ? inSlice : 0;
    inSlice *= len[j];
    if (outSpans(j)) {
      outCanon[j] = len[j] > 1 ? outSlice : 0;
      outSlice *= len[j];
    }
  }
  const int64_t inLxAddr = inT.inLx ? lxResidentAddress(s, in, inSlice) : -1;
  const int64_t outLxAddr = outT.inLx ? lxResidentAddress(s, out, outSlice) : -1;
  const int64_t lxStage = s.lxReservedBytes; // staging above the graph's LX-resident tensors

  // Blocking: reduced dims are always whole in a block (no accumulation across blocks); kept
  // dims before c0 are walked one index at a time, kept dim c0 in chunks, later dims whole.
  // c0 == J means every kept dim is walked one index at a time (one output stick per block).
  auto lenIn = [&](size_t j, size_t c0, int64_t chunk) -> int64_t {
    if (isRed(j))
      return len[j];
    return j < c0 ? 1 : j == c0 ? chunk : len[j];
  };
  // Double buffering (dbl): the staged input and output blocks get two copies each, so block
  // i+1 is fetched and block i-1 written back while block i is reduced.
  auto blockBytes = [&](size_t c0, int64_t chunk, bool dbl) {
    int64_t bi = kStickBytes, bo = kStickBytes;
    for (size_t j = 0; j < J; ++j) {
      int64_t l = lenIn(j, c0, chunk);
      bi *= l;
      if (outSpans(j))
        bo *= l;
    }
    return ((inT.inLx ? 0 : bi) + (outT.inLx ? 0 : bo)) * (dbl ? 2 : 1);
  };
  const int64_t stageBytes = opts.lxBytes - lxStage;
  const bool lxOperand = inT.inLx || outT.inLx;
  size_t c0 = 0;
  int64_t chunk = 1;
  auto choose = [&](bool dbl) {
    for (c0 = 0; c0 <= J; ++c0) {
      if (c0 < J && isRed(c0))
        continue;
      if (c0 == J) {
        chunk = 1;
        return blockBytes(J, 1, dbl) <= stageBytes;
      }
      // The largest chunk that fits; a chunk that does not divide the dim leaves one shorter
      // last block (LX-resident operands keep whole chunks: their walk is laid out per chunk).
      auto fits = [&](int64_t c) { return blockBytes(c0, c, dbl) <= stageBytes; };
      chunk = lxOperand ? largestDivisorFitting(len[c0], fits) : largestFitting(len[c0], fits);
      if (chunk > 0)
        return true;
    }
    return false;
  };
  bool dbl = !inT.inLx && choose(true);
  if (!dbl && !choose(false))
    throw Unsupported("a reduction row of " + s.name + " that does not fit in LX (" +
                      std::to_string(blockBytes(J, 1, false)) + " bytes)");
  // Something to overlap: at least opts.pipelineBlocks blocks (BackendOptions; the timing
  // model picks the count) while an input block keeps a few sticks.
  const int64_t kPipeBlocks = std::max(1, opts.pipelineBlocks), kMinPipeSticks = 8;
  if (dbl && c0 < J) {
    auto inSticks = [&](int64_t ch) { return blockBytes(c0, ch, false) / kStickBytes; };
    chunk = pipelineChunk(
        len[c0], chunk, kPipeBlocks, [&](int64_t c) { return inSticks(c) >= kMinPipeSticks; }, lxOperand);
  }
  auto blockLen = [&](size_t j) -> int64_t { return lenIn(j, c0, chunk); };

  Kernel k = newKernel(s, {&in, &out});

  bool pipelined = false; // some sweep is double-buffered
  // Registers: r1/r2 DDR offsets of input/output, r10/r11 LX offsets, r20/r21 DMA scratch.
  // Vectors: v0 loaded stick, v1 accumulator, v14 scale.
  ProgramBuilder pb;
  int64_t inBlock = kStickBytes, outBlock = kStickBytes;
  // Every dim of the block (reduced dims before c0 are whole in it; kept ones are 1 there).
  for (size_t j = 0; j < J; ++j) {
    inBlock *= blockLen(j);
    if (outSpans(j))
      outBlock *= blockLen(j);
  }
  const int64_t lxIn = lxStage, lxOut = lxStage + (inT.inLx ? 0 : inBlock);
  // The other copy of both blocks when double-buffered; r22/r23 = this block's / the other
  // block's copy (0 or `half`), r24 swap scratch.
  const int64_t half = (inT.inLx ? 0 : inBlock) + (outT.inLx ? 0 : outBlock);
  constexpr int rCur = 22, rOther = 23, rSwap = 24;
  // r1 / r2: the block's DDR offset, or for an LX-resident operand its LX address.
  inT.inLx ? emitLi(pb, 1, inLxAddr) : emitTbl(pb, 1, offsets(in));
  outT.inLx ? emitLi(pb, 2, outLxAddr) : emitTbl(pb, 2, offsets(out));
  const Opcode combine = base == "max" ? Opcode::Max : base == "min" ? Opcode::Min : Opcode::Add;
  const float identity = base == "max" ? -INFINITY : base == "min" ? INFINITY : 0.0f;
  if (exx2) {
    // v9 = 1.0 on lane 0 only: selects E[x] into lane 0 of the EXX2 stick.
    Instr io = mk(Opcode::Iota, Format::F32);
    io.v = {9, -1, -1, -1};
    pb.emit(io);
    Instr z = mk(Opcode::Bcast, Format::F32);
    z.v = {10, -1, -1, -1};
    pb.emit(z);
    Instr eq = mk(Opcode::Eq, Format::F32);
    eq.v = {9, 9, 10, -1};
    pb.emit(eq);
  }
  const int64_t validLanes = s.N[sd] % eps;
  const bool mask = stickReduced && validLanes != 0;
  if (base == "mean" || exx2) {
    Instr sc = mk(Opcode::Bcast, Format::F32);
    sc.v = {14, -1, -1, -1};
    sc.fimm = 1.0f / static_cast<float>(count);
    pb.emit(sc);
  }
  auto ddrAdv = [&](size_t j, int64_t units) {
    int ko = out.dimOf(in.dims[j].iterDim);
    int64_t os = ko >= 0 && out.dims[ko].extent > 1 ? out.dims[ko].strideBytes : 0;
    return std::vector<std::pair<int, int64_t>>{{1, units * (inT.inLx ? inCanon[j] : in.dims[j].strideBytes)},
                                                {2, units * (outT.inLx ? outCanon[j] : os)}};
  };
  // Dense LX strides of the input block (input order) and output block; recomputed for the
  // shorter last block (they depend on the chunk length of dims inside the chunked one).
  std::vector<int64_t> inLx(J, 0), outLx(J, 0);
  auto lxStrides = [&] {
    int64_t st = kStickBytes, so = kStickBytes;
    for (size_t j = J; j-- > 0;) {
      inLx[j] = blockLen(j) > 1 ? st : 0;
      st *= blockLen(j);
      outLx[j] = outSpans(j) && blockLen(j) > 1 ? so : 0;
      if (outSpans(j))
        so *= blockLen(j);
    }
    if (inT.inLx)
      inLx = inCanon;
    if (outT.inLx)
      outLx = outCanon;
  };
  lxStrides();
  std::function<void(size_t)> outer = [&](size_t j) {
    if (j < c0 && j < J) {
      if (isRed(j))
        outer(j + 1); // whole in every block
      else
        pb.loop(len[j], ddrAdv(j, 1), [&] { outer(j + 1); });
      return;
    }
    // pipe: one block of the double-buffered sweep (file comment of backend_pointwise.cpp):
    // wait for this block's input, fetch the next one into the other copy, reduce, write back
    // once the previous block's write-back is done.
    // The DMA boxes of the current block (input order; the output in its own dim order).
    auto inBoxOf = [&] {
      std::vector<std::pair<int64_t, int64_t>> box;
      for (size_t jj = 0; jj < J; ++jj)
        box.push_back({blockLen(jj), in.dims[jj].strideBytes});
      return box;
    };
    auto outBoxOf = [&] {
      std::vector<std::pair<int64_t, int64_t>> box;
      for (const auto &td : out.dims) {
        size_t jj = 0;
        while (jj < J && in.dims[jj].iterDim != td.iterDim)
          ++jj;
        box.push_back({td.extent > 1 && jj < J ? blockLen(jj) : 1, td.strideBytes});
      }
      return box;
    };
    std::function<void(bool, bool, bool)> block = [&](bool pipe, bool first, bool last) {
      const auto inBox = inBoxOf(), outBox = outBoxOf();
      if (inT.inLx) {
        pb.emit(addi(10, 1, 0));
      } else if (pipe) {
        pb.waitTokens({0});
        if (!last)
          pb.dmaAsync(true, in.segment, 1, chunk * in.dims[c0].strideBytes, rOther, lxIn, inBox, 0);
        pb.emit(addi(10, rCur, lxIn));
      } else {
        pb.dmaBox(true, in.segment, 1, 0, -1, lxIn, inBox, 0, 20, 21);
        emitLi(pb, 10, lxIn);
      }
      if (outT.inLx)
        pb.emit(addi(11, 2, 0));
      else if (pipe)
        pb.emit(addi(11, rCur, lxOut));
      else
        emitLi(pb, 11, lxOut);
      // Loop nest: kept dims of the block, then reduced dims with the stick tile innermost.
      std::vector<size_t> kept, red;
      for (size_t jj = 0; jj < J; ++jj) {
        if (isRed(jj))
          red.push_back(jj);
        else if (jj >= c0)
          kept.push_back(jj);
      }
      int stickJ = -1;
      for (size_t i = 0; i < red.size(); ++i)
        if (in.dims[red[i]].iterDim == sd)
          stickJ = static_cast<int>(i);
      if (stickJ >= 0) {
        size_t sj = red[stickJ];
        red.erase(red.begin() + stickJ);
        red.push_back(sj);
      }
      std::function<void(size_t)> keptNest = [&](size_t i) {
        if (i < kept.size()) {
          size_t jj = kept[i];
          pb.loop(blockLen(jj), {{10, inLx[jj]}, {11, outLx[jj]}}, [&] { keptNest(i + 1); });
          return;
        }
        // One output stick: acc = identity; accumulate every input stick of the reduced box.
        Instr init = mk(Opcode::Bcast, Format::F32);
        init.v = {1, -1, -1, -1};
        init.fimm = identity;
        pb.emit(init);
        if (exx2) {
          init.v = {3, -1, -1, -1};
          pb.emit(init);
        }
        // r12 walks the reduced box from this output stick's first input stick.
        pb.emit(addi(12, 10, 0));
        auto accumulate = [&](bool masked) {
          // The last, partly filled stick of a reduced row: ld.pad puts the reduction's
          // identity into the padded lanes.
          Instr ld = mk(masked ? Opcode::LdPad : Opcode::Ld, fmt);
          ld.v = {0, -1, -1, -1};
          ld.lx = {12, 0};
          if (masked) {
            ld.imm = validLanes;
            ld.fimm = identity;
          }
          pb.emit(ld);
          Instr c = mk(combine, Format::F32);
          c.v = {1, 1, 0, -1};
          pb.emit(c);
          if (exx2) {
            Instr sq = mk(Opcode::Fma, Format::F32);
            sq.v = {3, 0, 0, 3};
            pb.emit(sq);
          }
        };
        std::function<void(size_t)> redNest = [&](size_t r) {
          if (r == red.size()) {
            accumulate(false);
            return;
          }
          size_t jj = red[r];
          bool isStick = in.dims[jj].iterDim == sd;
          if (isStick && mask) {
            // All tiles but the last unmasked, then the last with padded lanes masked.
            pb.loop(blockLen(jj) - 1, {{12, inLx[jj]}}, [&] { redNest(r + 1); });
            if (blockLen(jj) > 1)
              pb.emit(addi(12, 12, (blockLen(jj) - 1) * inLx[jj]));
            accumulate(true);
            if (blockLen(jj) > 1)
              pb.emit(addi(12, 12, -(blockLen(jj) - 1) * inLx[jj]));
            return;
          }
          pb.loop(blockLen(jj), {{12, inLx[jj]}}, [&] { redNest(r + 1); });
        };
        redNest(0);
        if (exx2) {
          // Scale both sums, fold the 64 DL16 lanes into 32 fp32 lanes, reduce in fp32, and
          // put E[x] in lane 0 of the E[x^2] stick.
          for (int acc : {1, 3}) {
            Instr m = mk(Opcode::Mul, Format::F32);
            m.v = {acc, acc, 14, -1};
            pb.emit(m);
            if (fmt == Format::DL16) {
              Instr u = mk(Opcode::Unpack);
              u.v = {5, 6, acc, -1};
              pb.emit(u);
              Instr a = mk(Opcode::Add, Format::F32);
              a.v = {acc, 5, 6, -1};
              pb.emit(a);
            }
            Instr r = mk(Opcode::Rsum, Format::F32);
            r.v = {acc == 1 ? 2 : 7, acc, -1, -1};
            pb.emit(r);
          }
          Instr sel = mk(Opcode::Sel, Format::F32);
          sel.v = {2, 9, 2, 7};
          pb.emit(sel);
          Instr st = mk(Opcode::St, Format::F32);
          st.v = {2, -1, -1, -1};
          st.lx = {11, 0};
          pb.emit(st);
          return;
        }
        if (base == "mean") {
          Instr m = mk(Opcode::Mul, Format::F32);
          m.v = {1, 1, 14, -1};
          pb.emit(m);
        }
        int result = 1;
        if (stickReduced) {
          Instr r = mk(base == "max" ? Opcode::Rmax : base == "min" ? Opcode::Rmin : Opcode::Rsum, fmt);
          r.v = {2, 1, -1, -1};
          pb.emit(r);
          result = 2;
        }
        Instr st = mk(Opcode::St, fmt);
        st.v = {result, -1, -1, -1};
        st.lx = {11, 0};
        pb.emit(st);
      };
      keptNest(0);
      if (outT.inLx)
        return;
      if (pipe) {
        if (!first)
          pb.waitTokens({1});
        pb.dmaAsync(false, out.segment, 2, 0, rCur, lxOut, outBox, 1);
      } else {
        pb.dmaBox(false, out.segment, 2, 0, -1, lxOut, outBox, 1, 20, 21);
      }
    };
    if (c0 == J) {
      block(false, true, true);
      return;
    }
    const int64_t full = len[c0] / chunk, rem = len[c0] % chunk;
    // Pipelined when there are blocks to overlap and each staged block moves with one DMA.
    bool pipe = dbl && full >= 2;
    if (pipe)
      pipe = ProgramBuilder::singleDma(inBoxOf()) && (outT.inLx || ProgramBuilder::singleDma(outBoxOf()));
    pipelined = pipelined || pipe;
    if (pipe) {
      pb.pipelinedSweep(
          full, ddrAdv(c0, chunk), rCur, rOther, rSwap, half,
          [&] { pb.dmaAsync(true, in.segment, 1, 0, rCur, lxIn, inBoxOf(), 0); },
          [&](bool first, bool last) { block(true, first, last); },
          [&] {
            if (!outT.inLx)
              pb.waitTokens({1});
          });
    } else {
      pb.loop(full, ddrAdv(c0, chunk), [&] { block(false, true, true); });
    }
    if (rem) {
      // The shorter last block: advance past the full chunks, run it with chunk = rem, restore.
      auto adv = ddrAdv(c0, full * chunk);
      for (auto [r, step] : adv)
        if (step)
          pb.emit(addi(r, r, step));
      const int64_t saved = chunk;
      chunk = rem;
      lxStrides();
      block(false, true, true);
      chunk = saved;
      lxStrides();
      for (auto [r, step] : adv)
        if (step)
          pb.emit(addi(r, r, -step));
    }
  };
  outer(0);
  pb.finishSpmd(k);
  k.comment = "op=" + s.opFuncName + " fmt=" + std::string(formatName(fmt)) + " cores=" + std::to_string(k.numCores) +
              " reduce " + std::to_string(count) + " elements per output lane" + (pipelined ? ", double-buffered" : "");
  (void)eps;
  return k;
}

} // namespace spyre::backend::detail
