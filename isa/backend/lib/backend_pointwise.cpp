// Pointwise SuperDSCs on the SFP: every output stick of a core's slice is computed from the
// matching sticks of the inputs; broadcast inputs (scale_ -1) are read once per slice and
// revisited with a zero stride, a broadcast stick dim is splatted from lane 0; constant
// operands are broadcast into registers once.
//
// Two layer-norm ops share this walk (torch-spyre's layernormscale / layernormnorm):
// - layernormscale: one fp32 EXX2 stick per row in (lane 0 = E[x], lane 1 = E[x^2]; scale_ -2
//   on the stick dim), one fp32 stick per row out, every lane = rsqrt(max(E[x^2] - E[x]^2, 0)
//   + eps), eps from constantInfo_ `eps`;
// - layernormnorm(x, mean, rstd, w, b): (x - mean) * rstd * w + b in fp32, rounded once at the
//   store; mean is lane 0 of an exx2 output, rstd lane 0 of a layernormscale output (both
//   scale_ -2 on the stick), w and b are per-column (scale_ -1 on every other dim) tensors or
//   constants (1 and 0 for a missing weight or bias).
#include "lowerings.h"

namespace spyre::backend::detail {
namespace {

double constant(const SuperDsc &s, const std::string &name, double dflt, bool required) {
  auto it = s.constants.find(name);
  if (it == s.constants.end()) {
    if (required)
      throw Error(where(s) + ": constantInfo_ has no '" + name + "' constant");
    return dflt;
  }
  return it->second;
}

} // namespace

Kernel compilePointwise(const SuperDsc &s, const BackendOptions &opts) {
  // The op's row of opfuncs.def: the SFP instruction of the walk and the operand count.
  const isa::OpFuncInfo &f = *isa::findOpFunc(s.opFuncName);
  const struct {
    Opcode op;
    int arity;
  } pw{*f.sfpOp, f.arity};
  // ReStickifyOpHBM: a copy between layouts. Keeping the stick dim it moves whole sticks (this
  // walk, each tensor in its own layout order); changing it goes through the PE array.
  if (s.opFuncName == "ReStickifyOpHBM" && s.inputs.size() == 1 && s.inputs[0] >= 0 && s.outputs.size() == 1 &&
      s.primaryDsInfo.at(s.tensor(s.inputs[0]).dsType).stickDimOrder != s.primaryDsInfo.at(s.tensor(s.outputs[0]).dsType).stickDimOrder)
    return compileTranspose(s, opts);
  if (s.exUnit != "sfp")
    throw Error(where(s) + ": computeOp_ exUnit must be 'sfp' for a pointwise op, got '" + s.exUnit + "'");
  if (static_cast<int>(s.inputs.size()) != pw.arity || s.outputs.size() != 1)
    throw Error(where(s) + ": expected " + std::to_string(pw.arity) + " input(s) and 1 output, got " +
                std::to_string(s.inputs.size()) + " and " + std::to_string(s.outputs.size()));
  const SdscTensor &outT = s.tensor(s.outputs[0]);
  const SdscLayout &layout = s.primaryDsInfo.at(outT.dsType);
  if (layout.layoutDimOrder.size() != s.dims.size())
    throw Error(where(s) + ": the output layout must list every iteration dim");
  const std::string &stickDim = layout.stickDimOrder[0];
  TensorGeom out = tensorGeom(s, outT, stickDim, /*allowView=*/true);
  const bool lnScale = s.opFuncName == "layernormscale", lnNorm = s.opFuncName == "layernormnorm";
  // layernormscale maps one sparse stick per row to one sparse stick per row.
  const int sdIdx = s.dimIndex(stickDim);
  for (size_t d = 0; d < outT.scale.size(); ++d) {
    int want = lnScale && static_cast<int>(d) == sdIdx ? -2 : 1;
    if (outT.scale[d] != want)
      throw Error(where(s) + ": the output of " + s.opFuncName + " must have scale_ " + std::to_string(want) + " on " +
                  s.dims[d]);
  }
  if (lnScale && outT.dataFormat != DataFormat::IEEE_FP32)
    throw Error(where(s) + ": the layernormscale output must be IEEE_FP32");

  // Inputs: tensors (possibly broadcast) or constants.
  struct Input {
    bool isConst = false;
    float value = 0;
    TensorGeom g;
  };
  std::vector<Input> ins;
  Format computeFmt = Format::None;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    Input in;
    if (s.inputs[i] < 0) {
      in.isConst = true;
      in.value = static_cast<float>(s.constants.at(s.inputConsts[i]));
    } else {
      const SdscTensor &t = s.tensor(s.inputs[i]);
      in.g = tensorGeom(s, t, stickDim, /*allowView=*/true);
      // The layer-norm statistics: one fp32 stick per row (scale_ -2 on the stick dim).
      const bool stats = (lnNorm && (i == 1 || i == 2)) || lnScale;
      if (stats) {
        if (t.scale[sdIdx] != -2 || t.dataFormat != DataFormat::IEEE_FP32)
          throw Error(where(s) + ": " + t.dsName + " (a layer-norm statistic) must be IEEE_FP32 with scale_ -2 on " +
                      stickDim);
        ins.push_back(in);
        continue;
      }
      if (lnNorm && t.scale[sdIdx] != 1)
        throw Error(where(s) + ": " + t.dsName + " of layernormnorm must span the normalised dim " + stickDim);
      // where3's condition may be bool (DL16) next to f32 values only if sticks line up.
      if (elemsPerStick(t.dataFormat) != elemsPerStick(outT.dataFormat))
        throw Unsupported("operands with different stick geometry in " + s.name + " (" + t.dsName + " is " +
                          std::string(dataFormatName(t.dataFormat)) + ", output is " +
                          std::string(dataFormatName(outT.dataFormat)) + ")");
      bool isCond = pw.op == Opcode::Sel && i == 0;
      if (!isCond) {
        if (computeFmt != Format::None && computeFmt != in.g.fmt)
          throw Unsupported("mixed data formats in " + s.name);
        computeFmt = in.g.fmt;
      }
    }
    ins.push_back(in);
  }
  if (computeFmt == Format::None)
    computeFmt = out.fmt;
  if (lnScale)
    computeFmt = Format::F32;
  bool isCompare = pw.op == Opcode::Eq || pw.op == Opcode::Ne || pw.op == Opcode::Lt || pw.op == Opcode::Le ||
                   pw.op == Opcode::Gt || pw.op == Opcode::Ge;
  if (!isCompare && computeFmt != out.fmt)
    throw Unsupported("pointwise " + s.opFuncName + " from " + std::string(formatName(computeFmt)) + " to " +
                      std::string(formatName(out.fmt)) + " in " + s.name);
  if (computeFmt == Format::I32)
    throw Unsupported("int32 pointwise ops in " + s.name);

  // A view starting inside a stick (slice of the stick dim at an offset that is not a stick
  // multiple) moves lanes: a copy through the PE array (backend_data.cpp).
  bool laneShift = out.laneOffset != 0;
  for (const auto &in : ins)
    laneShift |= !in.isConst && in.g.laneOffset != 0;
  if (laneShift) {
    bool lxOperand = outT.inLx;
    for (const auto &in : ins)
      lxOperand |= !in.isConst && in.g.t->inLx;
    if (lxOperand)
      throw Unsupported("LX-resident tensors (memOrg_ lx) in a lane-moving copy " + s.name);
    if (pw.op != Opcode::Ld)
      throw Unsupported("a view whose stick dim starts inside a stick as an operand of " + s.opFuncName + " in " +
                        s.name + " (only identity / slice copies move lanes)");
    return compileLaneShift(s, opts);
  }
  // Per-core slice of the output (device units), offsets of every tensor.
  const size_t J = out.dims.size();
  std::vector<std::vector<Slice>> slices(s.numCoresUsed, std::vector<Slice>(J));
  for (int c = 0; c < s.numCoresUsed; ++c)
    for (size_t j = 0; j < J; ++j)
      slices[c][j] = coreSlice(s, c, out.dims[j].iterDim, out.dims[j].extent);
  auto offsets = [&](const TensorGeom &g) {
    std::vector<int64_t> off(s.numCoresUsed, g.viewOffsetBytes);
    for (int c = 0; c < s.numCoresUsed; ++c)
      for (size_t j = 0; j < J; ++j) {
        int k = g.dimOf(out.dims[j].iterDim);
        if (k >= 0 && g.dims[k].extent > 1)
          off[c] += slices[c][j].lo * g.dims[k].strideBytes;
      }
    return off;
  };
  std::vector<const TensorGeom *> tensors;
  for (auto &in : ins)
    if (!in.isConst)
      tensors.push_back(&in.g);
  tensors.push_back(&out);
  for (const TensorGeom *g : tensors) {
    if (!g->t->inLx)
      checkStartAddresses(s, *g, offsets(*g));
    for (const TensorGeom *h : tensors)
      if (h != g && h->segment == g->segment && h->t->ldsIdx != g->t->ldsIdx)
        throw Unsupported("two tensors in one segment in " + s.name);
  }
  std::vector<int64_t> len(J);
  for (size_t j = 0; j < J; ++j)
    len[j] = slices[0][j].len;

  // Blocking: dims [0, c0) are walked one index at a time by program loops, dim c0 in chunks
  // of `chunk`, dims after c0 whole; chosen so every tensor's block fits in LX.
  // Does tensor g step along output device dim j?
  auto spans = [&](const TensorGeom &g, size_t j) { return g.spans(out.dims[j].iterDim); };
  auto strideAlong = [&](const TensorGeom &g, size_t j) {
    int k = g.dimOf(out.dims[j].iterDim);
    return k >= 0 && g.dims[k].extent > 1 ? g.dims[k].strideBytes : 0;
  };
  // An LX-resident operand (memOrg_ lx) holds the core's whole slice densely in its own dim
  // order (outer -> inner) and is walked in place: canon[i][j] is its LX stride along output
  // dim j. Everything else is staged by DMA above the graph's LX-resident tensors.
  const int nt = static_cast<int>(tensors.size());
  std::vector<std::vector<int64_t>> canon(nt, std::vector<int64_t>(J, 0));
  std::vector<int64_t> lxAddr(nt, -1);
  for (int i = 0; i < nt; ++i) {
    const TensorGeom &g = *tensors[i];
    if (!g.t->inLx)
      continue;
    int64_t st = kStickBytes;
    for (size_t k = g.dims.size(); k-- > 0;) {
      for (size_t j = 0; j < J; ++j)
        if (out.dims[j].iterDim == g.dims[k].iterDim && g.dims[k].extent > 1) {
          canon[i][j] = len[j] > 1 ? st : 0;
          st *= len[j];
        }
    }
    lxAddr[i] = lxResidentAddress(s, g, st);
  }
  const int64_t lxStage = s.lxReservedBytes, stageBytes = opts.lxBytes - lxStage;
  // Bytes of tensor g's block: chunk of dim c0, whole dims after it (a dim it spans).
  auto tensorBlockBytes = [&](const TensorGeom &g, size_t c0, int64_t chunk) {
    int64_t b = kStickBytes;
    if (spans(g, c0))
      b *= chunk;
    for (size_t j = c0 + 1; j < J; ++j)
      if (spans(g, j))
        b *= len[j];
    return b;
  };
  // Double buffering: tensors that change from block to block (they span c0) get two buffers,
  // block i+1 is fetched while block i is computed and block i's result written back while
  // block i+1 is computed. Tensors constant over the sweep are staged once per sweep.
  auto blockBytes = [&](size_t c0, int64_t chunk, bool dbl) {
    int64_t total = 0;
    for (const TensorGeom *g : tensors)
      if (!g->t->inLx)
        total += tensorBlockBytes(*g, c0, chunk) * (dbl && spans(*g, c0) ? 2 : 1);
    return total;
  };
  size_t c0 = 0;
  int64_t chunk = len[0];
  auto choose = [&](bool dbl) {
    for (c0 = 0; c0 < J; ++c0) {
      chunk = largestDivisorFitting(len[c0], [&](int64_t c) { return blockBytes(c0, c, dbl) <= stageBytes; });
      if (chunk > 0)
        return true;
    }
    return false;
  };
  bool dbl = choose(true);
  if (!dbl && !choose(false))
    throw Unsupported("a single stick per operand does not fit in LX in " + s.name);
  // A sweep of one block overlaps nothing: split it into opts.pipelineBlocks blocks or more
  // (BackendOptions; the timing model picks the count) while staged blocks keep a few sticks.
  const int64_t kPipeBlocks = std::max(1, opts.pipelineBlocks), kMinPipeSticks = 8;
  if (dbl) {
    auto largest = [&](int64_t ch) {
      int64_t m = 0;
      for (const TensorGeom *g : tensors)
        if (!g->t->inLx && spans(*g, c0))
          m = std::max(m, tensorBlockBytes(*g, c0, ch) / kStickBytes);
      return m;
    };
    chunk = pipelineChunk(
        len[c0], chunk, kPipeBlocks, [&](int64_t c) { return largest(c) >= kMinPipeSticks; }, /*divisorsOnly=*/true);
  }
  const int64_t numBlocks = len[c0] / chunk;
  const bool pipelined = dbl && numBlocks >= 2;

  Kernel k = newKernel(s, tensors);

  // Registers: r1.. DDR offset per tensor, r10.. LX offset per tensor in the compute loop,
  // r20/r21 DMA scratch, r22/r23 this block's / the other block's buffer half (0 or H), r24
  // swap scratch. Vector registers: v0..v2 inputs, v4 result, v8.. constants.
  // LX: [reserved | sweep-constant tensors | half 0: block-varying tensors | half 1].
  constexpr int rCur = 22, rOther = 23, rSwap = 24;
  ProgramBuilder pb;
  std::vector<int64_t> lxBase(nt);
  int64_t lxCursor = lxStage;
  for (int pass = 0; pass < 2; ++pass) // sweep-constant tensors first, then one half
    for (int i = 0; i < nt; ++i) {
      if (tensors[i]->t->inLx || spans(*tensors[i], c0) != (pass == 1))
        continue;
      lxBase[i] = lxCursor;
      lxCursor += tensorBlockBytes(*tensors[i], c0, chunk);
    }
  int64_t half = 0;
  if (pipelined) {
    int64_t halfStart = lxStage;
    for (int i = 0; i < nt; ++i)
      if (!tensors[i]->t->inLx && !spans(*tensors[i], c0))
        halfStart += tensorBlockBytes(*tensors[i], c0, chunk);
    half = lxCursor - halfStart;
    lxCursor += half;
  }
  // r(1+i): each core's DDR offset, or for an LX-resident operand the block's LX address.
  for (int i = 0; i < nt; ++i)
    tensors[i]->t->inLx ? emitLi(pb, 1 + i, lxAddr[i]) : emitTbl(pb, 1 + i, offsets(*tensors[i]));
  if (lnScale) {
    Instr e = mk(Opcode::Bcast, Format::F32);
    e.v = {7, -1, -1, -1};
    e.fimm = static_cast<float>(constant(s, "eps", 0.0, true));
    pb.emit(e);
  }
  std::vector<int> constReg(ins.size(), -1);
  for (size_t i = 0; i < ins.size(); ++i)
    if (ins[i].isConst) {
      Instr b = mk(Opcode::Bcast, computeFmt);
      constReg[i] = 8 + static_cast<int>(i);
      b.v = {constReg[i], -1, -1, -1};
      b.fimm = ins[i].value;
      pb.emit(b);
    }
  auto ddrAdv = [&](size_t j, int64_t units) {
    std::vector<std::pair<int, int64_t>> adv;
    for (int i = 0; i < nt; ++i)
      adv.push_back({1 + i, units * (tensors[i]->t->inLx ? canon[i][j] : strideAlong(*tensors[i], j))});
    return adv;
  };
  // Block length of output dim j for a tensor that spans it.
  auto blockLen = [&](size_t j) -> int64_t { return j < c0 ? 1 : j == c0 ? chunk : len[j]; };
  auto outDimOf = [&](int iterDim) {
    for (size_t j = 0; j < J; ++j)
      if (out.dims[j].iterDim == iterDim)
        return j;
    return J;
  };
  // The block of a tensor in its own dim order (outer -> inner), stored densely in LX.
  auto boxOf = [&](const TensorGeom &g) {
    std::vector<std::pair<int64_t, int64_t>> box;
    for (const auto &td : g.dims) {
      size_t j = outDimOf(td.iterDim);
      box.push_back({td.extent > 1 && j < J ? blockLen(j) : 1, td.strideBytes});
    }
    return box;
  };
  // LX stride of each tensor along each output dim: dense over its own box.
  std::vector<std::vector<int64_t>> lxStride(nt, std::vector<int64_t>(J, 0));
  for (int i = 0; i < nt; ++i) {
    if (tensors[i]->t->inLx) {
      lxStride[i] = canon[i];
      continue;
    }
    auto box = boxOf(*tensors[i]);
    int64_t st = kStickBytes;
    for (size_t kk = box.size(); kk-- > 0;) {
      size_t j = outDimOf(tensors[i]->dims[kk].iterDim);
      if (j < J && j >= c0 && box[kk].first > 1)
        lxStride[i][j] = st;
      st *= box[kk].first;
    }
  }
  // Which block-varying tensors move with one (asynchronous) DMA; the others are staged
  // synchronously in their block (a box needing a loop of DMAs cannot share one token).
  const int outTok = 15;
  std::vector<bool> async(nt, false);
  for (int i = 0; i < nt; ++i)
    async[i] = pipelined && !tensors[i]->t->inLx && spans(*tensors[i], c0) && ProgramBuilder::singleDma(boxOf(*tensors[i]));
  std::vector<int> inTokens;
  for (int i = 0; i + 1 < nt; ++i)
    if (async[i])
      inTokens.push_back(i);

  // Compute of one block: walk the output block, every tensor's LX offset register advancing
  // densely.
  auto computeBlock = [&] {
    for (int i = 0; i < nt; ++i) {
      if (tensors[i]->t->inLx) {
        pb.emit(addi(10 + i, 1 + i, 0));
      } else if (pipelined && spans(*tensors[i], c0)) {
        pb.emit(addi(10 + i, rCur, lxBase[i]));
      } else {
        emitLi(pb, 10 + i, lxBase[i]);
      }
    }
    std::function<void(size_t)> inner = [&](size_t jj) {
      if (jj < J) {
        std::vector<std::pair<int, int64_t>> adv;
        for (int i = 0; i < nt; ++i)
          adv.push_back({10 + i, lxStride[i][jj]});
        pb.loop(jj == c0 ? chunk : len[jj], adv, [&] { inner(jj + 1); });
        return;
      }
      std::vector<int> src;
      int ti = 0;
      for (size_t i = 0; i < ins.size(); ++i) {
        if (ins[i].isConst) {
          src.push_back(constReg[i]);
          continue;
        }
        Instr ld = mk(Opcode::Ld, ins[i].g.fmt);
        int v = static_cast<int>(i);
        ld.v = {v, -1, -1, -1};
        ld.lx = {10 + ti, 0};
        pb.emit(ld);
        if (!ins[i].g.stickPresent && s.N[s.dimIndex(stickDim)] > 1 && !lnScale) {
          Instr sp = mk(Opcode::Splat, ins[i].g.fmt);
          sp.v = {v, v, -1, -1};
          sp.imm = 0;
          pb.emit(sp);
        }
        src.push_back(v);
        ++ti;
      }
      int result = src[0];
      auto emit3 = [&](Opcode o, int d, int a, int b, int c = -1) {
        Instr x = mk(o, Format::F32);
        x.v = {d, a, b, c};
        pb.emit(x);
      };
      if (lnScale) {
        // v5 = E[x] (lane 0), v6 = E[x^2] (lane 1); v4 = rsqrt(relu(v6 - v5^2) + eps).
        Instr sp = mk(Opcode::Splat, Format::F32);
        sp.v = {5, src[0], -1, -1};
        pb.emit(sp);
        sp.v = {6, src[0], -1, -1};
        sp.imm = 1;
        pb.emit(sp);
        emit3(Opcode::Mul, 5, 5, 5);
        emit3(Opcode::Sub, 6, 6, 5);
        emit3(Opcode::Relu, 6, 6, -1);
        emit3(Opcode::Add, 6, 6, 7);
        emit3(Opcode::Rsqrt, 4, 6, -1);
        result = 4;
      } else if (lnNorm) {
        // v5 = (x - mean) * rstd * w + b, all fp32; rounded once by the store.
        emit3(Opcode::Sub, 5, src[0], src[1]);
        emit3(Opcode::Mul, 5, 5, src[2]);
        emit3(Opcode::Fma, 5, 5, src[3], src[4]);
        result = 5;
      } else if (pw.op != Opcode::Ld) {
        Instr op = mk(pw.op, computeFmt);
        result = 4;
        op.v = {4, src[0], src.size() > 1 ? src[1] : -1, src.size() > 2 ? src[2] : -1};
        if (pw.op == Opcode::Softplus) {
          op.fimm = static_cast<float>(constant(s, "softplusBeta", 1.0, false));
          op.fimm2 = static_cast<float>(constant(s, "softplusThresh", 20.0, false));
        } else if (pw.op == Opcode::Clip) {
          op.fimm = static_cast<float>(constant(s, "clipMin", -INFINITY, false));
          op.fimm2 = static_cast<float>(constant(s, "clipMax", INFINITY, false));
        } else if (pw.op == Opcode::Gelu && constant(s, "geluTanh", 0.0, false) == 0.0) {
          op.op = Opcode::GeluErf;
        }
        pb.emit(op);
      }
      Instr st = mk(Opcode::St, out.fmt);
      st.v = {result, -1, -1, -1};
      st.lx = {10 + nt - 1, 0};
      pb.emit(st);
    };
    inner(c0);
  };

  // One block of the sweep over dim c0. Pipelined: wait for this block's inputs, start
  // fetching the next block's into the other half, compute, then write the result back once
  // the previous block's write-back (same token) is done.
  auto block = [&](bool first, bool last) {
    if (pipelined) {
      pb.waitTokens(inTokens);
      if (!last)
        for (int i : inTokens)
          pb.dmaAsync(true, tensors[i]->segment, 1 + i, chunk * strideAlong(*tensors[i], c0), rOther, lxBase[i],
                      boxOf(*tensors[i]), i);
    }
    for (int i = 0; i + 1 < nt; ++i)
      if (!tensors[i]->t->inLx && spans(*tensors[i], c0) && !async[i])
        pb.dmaBox(true, tensors[i]->segment, 1 + i, 0, pipelined ? rCur : -1, lxBase[i], boxOf(*tensors[i]), i, 20,
                  21);
    computeBlock();
    if (outT.inLx)
      return;
    if (async[nt - 1]) {
      if (!first)
        pb.waitTokens({outTok});
      pb.dmaAsync(false, out.segment, nt, 0, rCur, lxBase[nt - 1], boxOf(out), outTok);
    } else {
      pb.dmaBox(false, out.segment, nt, 0, pipelined ? rCur : -1, lxBase[nt - 1], boxOf(out), outTok, 20, 21);
    }
  };
  auto sweep = [&] {
    // Tensors constant over the sweep (they do not span c0): staged once.
    for (int i = 0; i + 1 < nt; ++i)
      if (!tensors[i]->t->inLx && !spans(*tensors[i], c0))
        pb.dmaBox(true, tensors[i]->segment, 1 + i, 0, -1, lxBase[i], boxOf(*tensors[i]), i, 20, 21);
    if (!pipelined) {
      pb.loop(numBlocks, ddrAdv(c0, chunk), [&] { block(true, true); });
      return;
    }
    pb.pipelinedSweep(
        numBlocks, ddrAdv(c0, chunk), rCur, rOther, rSwap, half,
        [&] {
          for (int i : inTokens)
            pb.dmaAsync(true, tensors[i]->segment, 1 + i, 0, rCur, lxBase[i], boxOf(*tensors[i]), i);
        },
        block,
        [&] {
          if (async[nt - 1])
            pb.waitTokens({outTok});
        });
  };
  std::function<void(size_t)> outerLoops = [&](size_t j) {
    if (j < c0) {
      pb.loop(len[j], ddrAdv(j, 1), [&] { outerLoops(j + 1); });
      return;
    }
    sweep();
  };
  outerLoops(0);
  pb.finishSpmd(k);
  k.comment = "op=" + s.opFuncName + " fmt=" + std::string(formatName(computeFmt)) + " cores=" +
              std::to_string(k.numCores) + " lx=" + std::to_string(lxCursor) + " B, " + std::to_string(numBlocks) +
              (pipelined ? " double-buffered" : "") + " block(s) per sweep";
  return k;
}

} // namespace spyre::backend::detail
