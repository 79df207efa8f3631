// The plan half of the pointwise lowering (backend_pointwise.cpp emits it): the operand check
// of a single pointwise op (checkOperands), the lane-moving test, the per-core slices, the
// blocking of the sweep and the LX layout, all plain data in a PointwisePlan (pointwise_plan.h).
#include "lowerings.h"
#include "pointwise_plan.h"

namespace spyre::backend::detail {

double constant(const SuperDsc &s, const std::string &name, double dflt, bool required) {
  auto it = s.constants.find(name);
  if (it == s.constants.end()) {
    if (required)
      throw Error(where(s) + ": constantInfo_ has no '" + name + "' constant");
    return dflt;
  }
  return it->second;
}

/// The launch scalar argument behind constant `name`, or -1 for a compile-time value.
int constantArg(const SuperDsc &s, const std::string &name) {
  auto it = s.constantArgs.find(name);
  return it == s.constantArgs.end() ? -1 : it->second;
}

/// Checks the descriptor against the op's row of opfuncs.def and fills the op and operand part
/// of the plan.
void checkOperands(const SuperDsc &s, PointwisePlan &p) {
  const isa::OpFuncInfo &f = *isa::findOpFunc(s.opFuncName);
  const Opcode op = *f.sfpOp;
  if (s.exUnit != "sfp")
    throw Error(where(s) + ": computeOp_ exUnit must be 'sfp' for a pointwise op, got '" + s.exUnit + "'");
  if (static_cast<int>(s.inputs.size()) != f.arity || s.outputs.size() != 1)
    throw Error(where(s) + ": expected " + std::to_string(f.arity) + " input(s) and 1 output, got " +
                std::to_string(s.inputs.size()) + " and " + std::to_string(s.outputs.size()));
  const SdscTensor &outT = s.tensor(s.outputs[0]);
  const SdscLayout &layout = s.primaryDsInfo.at(outT.dsType);
  if (layout.layoutDimOrder.size() != s.dims.size())
    throw Error(where(s) + ": the output layout must list every iteration dim");
  const std::string &stickDim = layout.stickDimOrder[0];
  p.op = op;
  p.stickDim = stickDim;
  p.out = tensorGeom(s, outT, stickDim, /*allowView=*/true);
  const bool lnScale = s.opFuncName == "layernormscale", lnNorm = s.opFuncName == "layernormnorm";
  p.lnScale = lnScale;
  p.lnNorm = lnNorm;
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
  Format computeFmt = Format::None;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    PwInput in;
    if (s.inputs[i] < 0) {
      in.isConst = true;
      in.value = static_cast<float>(s.constants.at(s.inputConsts[i]));
      in.arg = constantArg(s, s.inputConsts[i]);
    } else {
      const SdscTensor &t = s.tensor(s.inputs[i]);
      in.g = tensorGeom(s, t, stickDim, /*allowView=*/true);
      // The layer-norm statistics: one fp32 stick per row (scale_ -2 on the stick dim).
      const bool stats = (lnNorm && (i == 1 || i == 2)) || lnScale;
      if (stats) {
        if (t.scale[sdIdx] != -2 || t.dataFormat != DataFormat::IEEE_FP32)
          throw Error(where(s) + ": " + t.dsName + " (a layer-norm statistic) must be IEEE_FP32 with scale_ -2 on " +
                      stickDim);
        p.ins.push_back(in);
        continue;
      }
      if (lnNorm && t.scale[sdIdx] != 1)
        throw Error(where(s) + ": " + t.dsName + " of layernormnorm must span the normalised dim " + stickDim);
      // where3's condition may be bool (DL16) next to f32 values only if sticks line up.
      if (elemsPerStick(t.dataFormat) != elemsPerStick(outT.dataFormat))
        throw Unsupported("operands with different stick geometry in " + s.name + " (" + t.dsName + " is " +
                          std::string(dataFormatName(t.dataFormat)) + ", output is " +
                          std::string(dataFormatName(outT.dataFormat)) + ")");
      bool isCond = op == Opcode::Sel && i == 0;
      if (!isCond) {
        if (computeFmt != Format::None && computeFmt != in.g.fmt)
          throw Unsupported("mixed data formats in " + s.name);
        computeFmt = in.g.fmt;
      }
    }
    p.ins.push_back(in);
  }
  if (computeFmt == Format::None)
    computeFmt = p.out.fmt;
  if (lnScale)
    computeFmt = Format::F32;
  bool isCompare = op == Opcode::Eq || op == Opcode::Ne || op == Opcode::Lt || op == Opcode::Le || op == Opcode::Gt ||
                   op == Opcode::Ge;
  // fp32toint32 / int32tofp32: one cvt whose format is the output's (cvt.i32 reads fp32).
  if (op == Opcode::Cvt) {
    const Format want = p.out.fmt == Format::I32 ? Format::F32 : Format::I32;
    if (computeFmt != want)
      throw Error(where(s) + ": " + s.opFuncName + " reads " + std::string(formatName(want)) + ", got " +
                  std::string(formatName(computeFmt)));
    computeFmt = p.out.fmt;
  }
  if (!isCompare && computeFmt != p.out.fmt)
    throw Unsupported("pointwise " + s.opFuncName + " from " + std::string(formatName(computeFmt)) + " to " +
                      std::string(formatName(p.out.fmt)) + " in " + s.name);
  if (computeFmt != Format::I32 && isa::opInfo(op).formats == isa::FMT_I32)
    throw Unsupported(std::string(formatName(computeFmt)) + " " + s.opFuncName + " (" +
                      std::string(isa::opInfo(op).mnemonic) + " is int32 only) in " + s.name);
  if (computeFmt == Format::I32 && op != Opcode::Ld && !(isa::opInfo(op).formats & isa::FMT_I32))
    throw Unsupported("int32 " + s.opFuncName + " (no " + std::string(isa::opInfo(op).mnemonic) + ".i32) in " + s.name);
  // where3 on 32-lane values: the condition has the values' format (0 / 1 of it).
  if (op == Opcode::Sel && computeFmt != Format::DL16 && !p.ins[0].isConst && p.ins[0].g.fmt != computeFmt)
    throw Unsupported("a where3 condition in " + std::string(formatName(p.ins[0].g.fmt)) + " with " +
                      std::string(formatName(computeFmt)) + " values in " + s.name + " (convert it first)");
  p.computeFmt = computeFmt;
  // Runtime constants (launch scalar arguments): the operands and clip's bounds; every other
  // op parameter is compiled in.
  for (const auto &[name, arg] : s.constantArgs) {
    (void)arg;
    const bool operand = std::find(s.inputConsts.begin(), s.inputConsts.end(), name) != s.inputConsts.end();
    const bool clipBound = op == Opcode::Clip && (name == "clipMin" || name == "clipMax");
    if (!(operand || clipBound) || lnScale || lnNorm)
      throw Unsupported("constant '" + name + "' of " + s.opFuncName + " as a runtime scalar argument in " + s.name);
  }
  if (op == Opcode::Clip) {
    p.clipMinArg = constantArg(s, "clipMin");
    p.clipMaxArg = constantArg(s, "clipMax");
  }
}

/// A view starting inside a stick (slice of the stick dim at an offset that is not a stick
/// multiple) moves lanes: a copy through the PE array (backend_data.cpp), identity / slice only.
bool movesLanes(const SuperDsc &s, const PointwisePlan &p) {
  bool laneShift = p.out.laneOffset != 0;
  for (const auto &in : p.ins)
    laneShift |= !in.isConst && in.g.laneOffset != 0;
  if (!laneShift)
    return false;
  bool lxOperand = p.out.t->inLx;
  for (const auto &in : p.ins)
    lxOperand |= !in.isConst && in.g.t->inLx;
  if (lxOperand)
    throw Unsupported("LX-resident tensors (memOrg_ lx) in a lane-moving copy " + s.name);
  if (p.op != Opcode::Ld)
    throw Unsupported("a view whose stick dim starts inside a stick as an operand of " + s.opFuncName + " in " +
                      s.name + " (only identity / slice copies move lanes)");
  return true;
}

/// Per-core slices, start-address checks and the LX-resident operands' strides. The walk
/// covers core `rep`'s slice lengths (an uneven split: one plan per run of equal slices).
void planSlices(const SuperDsc &s, PointwisePlan &p, int rep) {
  const TensorGeom &out = p.out;
  const size_t J = out.dims.size();
  p.numCores = s.numCoresUsed;
  p.J = J;
  p.slices.assign(s.numCoresUsed, std::vector<Slice>(J));
  for (int c = 0; c < s.numCoresUsed; ++c)
    for (size_t j = 0; j < J; ++j)
      p.slices[c][j] = coreSliceUneven(s, c, out.dims[j].iterDim, out.dims[j].extent);
  for (auto &in : p.ins)
    if (!in.isConst)
      p.tensors.push_back(&in.g);
  p.tensors.push_back(p.rowFused() ? &p.outTensor : &p.out);
  for (const TensorGeom &g : p.moreOuts)
    p.tensors.push_back(&g);
  for (const TensorGeom *g : p.tensors) {
    if (!g->t->inLx)
      checkStartAddresses(s, *g, p.offsets(*g));
    for (const TensorGeom *h : p.tensors)
      if (h != g && h->segment == g->segment && h->t->ldsIdx != g->t->ldsIdx)
        throw Unsupported("two tensors in one segment in " + s.name);
  }
  p.len.resize(J);
  for (size_t j = 0; j < J; ++j)
    p.len[j] = p.slices[rep][j].len;
  // An LX-resident operand (memOrg_ lx) holds the core's whole slice densely in its own dim
  // order (outer -> inner) and is walked in place: canon[i][j] is its LX stride along output
  // dim j. Everything else is staged by DMA above the graph's LX-resident tensors.
  const int nt = p.nt();
  p.canon.assign(nt, std::vector<int64_t>(J, 0));
  p.lxAddr.assign(nt, -1);
  for (int i = 0; i < nt; ++i) {
    const TensorGeom &g = *p.tensors[i];
    if (!g.t->inLx)
      continue;
    int64_t st = kStickBytes;
    for (size_t k = g.dims.size(); k-- > 0;) {
      for (size_t j = 0; j < J; ++j)
        if (out.dims[j].iterDim == g.dims[k].iterDim && g.dims[k].extent > 1) {
          p.canon[i][j] = p.len[j] > 1 ? st : 0;
          st *= p.len[j];
        }
    }
    p.lxAddr[i] = lxResidentAddress(s, g, st);
  }
}

std::vector<std::array<int64_t, 3>> PointwisePlan::lxBox(const TensorGeom &g, size_t at, int64_t ch) const {
  const size_t n = g.dims.size();
  std::vector<std::array<int64_t, 3>> box(n);
  std::vector<size_t> jOf(n);
  for (size_t k = 0; k < n; ++k) {
    const size_t j = outDimOf(g.dims[k].iterDim);
    jOf[k] = j;
    const int64_t count = g.dims[k].extent > 1 && j < J ? (j < at ? 1 : j == at ? ch : len[j]) : 1;
    box[k] = {count, g.dims[k].strideBytes, 0};
  }
  int64_t st = kStickBytes;
  for (size_t k = n; k-- > 0;) { // dense in g's own order
    box[k][2] = st;
    st *= box[k][0];
  }
  if (!rowFused())
    return box;
  // Row-fused: dense in the walk's order (out.dims, the stick dim last; PointwisePlan).
  std::vector<std::array<int64_t, 3>> alt = box;
  st = kStickBytes;
  for (size_t j = J; j-- > 0;)
    for (size_t k = 0; k < n; ++k)
      if (jOf[k] == j && alt[k][0] > 1) {
        alt[k][2] = st;
        st *= alt[k][0];
      }
  return ProgramBuilder::dmaCount(alt) == ProgramBuilder::dmaCount(box) ? alt : box;
}

/// The blocking of the sweep (c0, chunk, double buffering) within the staging LX.
void planBlocking(const SuperDsc &s, const BackendOptions &opts, PointwisePlan &p) {
  // A row-fused kernel's row scratch (pointwise_plan.h) comes off the staging LX first.
  const int64_t stageBytes = opts.lxBytes - s.lxReservedBytes - p.scratchRows * p.scratchRowBytes;
  // Double buffering: tensors that change from block to block (they span c0) get two buffers,
  // block i+1 is fetched while block i is computed and block i's result written back while
  // block i+1 is computed. Tensors constant over the sweep are staged once per sweep.
  auto blockBytes = [&](size_t c0, int64_t chunk, bool dbl) {
    int64_t total = 0;
    for (const TensorGeom *g : p.tensors)
      if (!g->t->inLx)
        total += p.tensorBlockBytes(*g, c0, chunk) * (dbl && p.spans(*g, c0) ? 2 : 1);
    return total;
  };
  p.c0 = 0;
  p.chunk = p.len[0];
  // A row-fused kernel walks whole rows: its stick dim (the last) is never chunked.
  auto choose = [&](bool dbl) {
    for (p.c0 = 0; p.c0 < p.J; ++p.c0) {
      auto fits = [&](int64_t c) { return blockBytes(p.c0, c, dbl) <= stageBytes; };
      if (p.rowFused() && p.c0 + 1 == p.J)
        p.chunk = fits(p.len[p.c0]) ? p.len[p.c0] : 0;
      else
        p.chunk = largestDivisorFitting(p.len[p.c0], fits);
      if (p.chunk > 0)
        return true;
    }
    return false;
  };
  bool dbl = choose(true);
  if (!dbl && !choose(false))
    throw Unsupported(p.rowFused() ? "a row of the row-fused kernel " + s.name + " does not fit in LX"
                                   : "a single stick per operand does not fit in LX in " + s.name);
  if (p.rowFused() && p.c0 + 1 == p.J)
    dbl = false; // one row per block: nothing to split into pipelined blocks
  // A sweep of one block overlaps nothing: split it into opts.pipelineBlocks blocks or more
  // (BackendOptions; the timing model picks the count) while staged blocks keep a few sticks.
  const int64_t kPipeBlocks = std::max(1, opts.pipelineBlocks), kMinPipeSticks = 8;
  if (dbl) {
    auto largest = [&](int64_t ch) {
      int64_t m = 0;
      for (const TensorGeom *g : p.tensors)
        if (!g->t->inLx && p.spans(*g, p.c0))
          m = std::max(m, p.tensorBlockBytes(*g, p.c0, ch) / kStickBytes);
      return m;
    };
    p.chunk = pipelineChunk(
        p.len[p.c0], p.chunk, kPipeBlocks, [&](int64_t c) { return largest(c) >= kMinPipeSticks; },
        /*divisorsOnly=*/true);
  }
  p.numBlocks = p.len[p.c0] / p.chunk;
  p.pipelined = dbl && p.numBlocks >= 2;
}

/// The LX layout of the blocks, their LX strides and which of them move asynchronously.
void planLx(const SuperDsc &s, PointwisePlan &p) {
  const int nt = p.nt();
  const int64_t lxStage = s.lxReservedBytes;
  p.lxBase.assign(nt, 0);
  int64_t lxCursor = lxStage;
  for (int pass = 0; pass < 2; ++pass) // sweep-constant tensors first, then one half
    for (int i = 0; i < nt; ++i) {
      if (p.tensors[i]->t->inLx || p.spans(*p.tensors[i], p.c0) != (pass == 1))
        continue;
      p.lxBase[i] = lxCursor;
      lxCursor += p.tensorBlockBytes(*p.tensors[i], p.c0, p.chunk);
    }
  if (p.pipelined) {
    int64_t halfStart = lxStage;
    for (int i = 0; i < nt; ++i)
      if (!p.tensors[i]->t->inLx && !p.spans(*p.tensors[i], p.c0))
        halfStart += p.tensorBlockBytes(*p.tensors[i], p.c0, p.chunk);
    p.half = lxCursor - halfStart;
    lxCursor += p.half;
  }
  p.scratchLx = lxCursor;
  lxCursor += p.scratchRows * p.scratchRowBytes;
  p.lxCursor = lxCursor;
  // LX stride of each tensor along each output dim: its staged box's (PointwisePlan::lxBox).
  p.lxStride.assign(nt, std::vector<int64_t>(p.J, 0));
  for (int i = 0; i < nt; ++i) {
    if (p.tensors[i]->t->inLx) {
      p.lxStride[i] = p.canon[i];
      continue;
    }
    const auto box = p.stagedBox(*p.tensors[i]);
    for (size_t kk = box.size(); kk-- > 0;) {
      size_t j = p.outDimOf(p.tensors[i]->dims[kk].iterDim);
      if (j < p.J && j >= p.c0 && box[kk][0] > 1)
        p.lxStride[i][j] = box[kk][2];
    }
  }
  // Which block-varying tensors move with one (asynchronous) DMA; the others are staged
  // synchronously in their block (a box needing a loop of DMAs cannot share one token).
  p.async.assign(nt, false);
  for (int i = 0; i < nt; ++i)
    p.async[i] = p.pipelined && !p.tensors[i]->t->inLx && p.spans(*p.tensors[i], p.c0) &&
                 ProgramBuilder::dmaCount(p.stagedBox(*p.tensors[i])) == 1;
  for (int i = 0; i < p.nIn(); ++i)
    if (p.async[i])
      p.inTokens.push_back(i);
}

} // namespace spyre::backend::detail
