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
//
// The lowering plans first (checkOperands, planBlocks: operand geometry, per-core slices, the
// blocking of the sweep and the LX layout, all plain data in a PointwisePlan), then emits
// (PointwiseEmitter).
#include "lowerings.h"
#include "pointwise_plan.h"

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
void planSlices(const SuperDsc &s, PointwisePlan &p, int rep = 0) {
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
  p.tensors.push_back(&p.out);
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

/// The blocking of the sweep (c0, chunk, double buffering) within the staging LX.
void planBlocking(const SuperDsc &s, const BackendOptions &opts, PointwisePlan &p) {
  const int64_t stageBytes = opts.lxBytes - s.lxReservedBytes;
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
  auto choose = [&](bool dbl) {
    for (p.c0 = 0; p.c0 < p.J; ++p.c0) {
      p.chunk = largestDivisorFitting(p.len[p.c0], [&](int64_t c) { return blockBytes(p.c0, c, dbl) <= stageBytes; });
      if (p.chunk > 0)
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
  p.lxCursor = lxCursor;
  // LX stride of each tensor along each output dim: dense over its own box.
  p.lxStride.assign(nt, std::vector<int64_t>(p.J, 0));
  for (int i = 0; i < nt; ++i) {
    if (p.tensors[i]->t->inLx) {
      p.lxStride[i] = p.canon[i];
      continue;
    }
    auto box = p.boxOf(*p.tensors[i]);
    int64_t st = kStickBytes;
    for (size_t kk = box.size(); kk-- > 0;) {
      size_t j = p.outDimOf(p.tensors[i]->dims[kk].iterDim);
      if (j < p.J && j >= p.c0 && box[kk].first > 1)
        p.lxStride[i][j] = st;
      st *= box[kk].first;
    }
  }
  // Which block-varying tensors move with one (asynchronous) DMA; the others are staged
  // synchronously in their block (a box needing a loop of DMAs cannot share one token).
  p.async.assign(nt, false);
  for (int i = 0; i < nt; ++i)
    p.async[i] = p.pipelined && !p.tensors[i]->t->inLx && p.spans(*p.tensors[i], p.c0) &&
                 ProgramBuilder::singleDma(p.boxOf(*p.tensors[i]));
  for (int i = 0; i < p.nIn(); ++i)
    if (p.async[i])
      p.inTokens.push_back(i);
}

/// Emits the planned kernel. Registers: r1.. DDR offset per tensor, r10.. LX offset per tensor
/// in the compute loop, r20/r21 DMA scratch, r22/r23 this block's / the other block's buffer
/// half (0 or H), r24 swap scratch. Vector registers: v0..v2 inputs, v4 result, v8.. constants.
class PointwiseEmitter {
public:
  PointwiseEmitter(const SuperDsc &s, const PointwisePlan &p) : s_(s), p_(p) {}
  /// The kernel with the plan's program for cores 0..last (-1: all of them).
  Kernel emit(int last = -1);
  /// The plan's program for cores first..last (whose slices have the plan's lengths) into k.
  void emitCores(Kernel &k, int first, int last);

private:
  static constexpr int rCur = 22, rOther = 23, rSwap = 24, outTok = 15;
  std::vector<std::pair<int, int64_t>> ddrAdv(size_t j, int64_t units) const;
  void emitConstants();
  void loadScalarArg(int vd, int index, Format fmt);
  /// Output o's DMA token (inputs use their tensor index).
  static int outToken(int o) { return outTok - o; }
  void emitClip(int x);
  void computeStick();
  void innerLoops(size_t jj);
  void computeBlock();
  void block(bool first, bool last);
  void sweep();
  void outerLoops(size_t j);

  const SuperDsc &s_;
  const PointwisePlan &p_;
  ProgramBuilder pb_;
  std::vector<int> constReg_;
  std::vector<isa::ScalarArg> scalarArgs_; ///< the kernel's scalar-argument slots
  static constexpr int kClipLo = 12, kClipHi = 13; ///< runtime clip bounds
};

std::vector<std::pair<int, int64_t>> PointwiseEmitter::ddrAdv(size_t j, int64_t units) const {
  std::vector<std::pair<int, int64_t>> adv;
  for (int i = 0; i < p_.nt(); ++i)
    adv.push_back({1 + i, units * (p_.tensors[i]->t->inLx ? p_.canon[i][j] : p_.strideAlong(*p_.tensors[i], j))});
  return adv;
}

void PointwiseEmitter::emitConstants() {
  // r(1+i): each core's DDR offset, or for an LX-resident operand the block's LX address.
  for (int i = 0; i < p_.nt(); ++i)
    p_.tensors[i]->t->inLx ? emitLi(pb_, 1 + i, p_.lxAddr[i]) : emitTbl(pb_, 1 + i, p_.offsets(*p_.tensors[i]));
  if (p_.lnScale)
    pb_.emit(vbcast(Format::F32, 7, static_cast<float>(constant(s_, "eps", 0.0, true))));
  constReg_.assign(p_.ins.size(), -1);
  for (size_t i = 0; i < p_.ins.size(); ++i)
    if (p_.ins[i].isConst) {
      constReg_[i] = 8 + static_cast<int>(i);
      if (p_.ins[i].arg >= 0) {
        loadScalarArg(constReg_[i], p_.ins[i].arg, p_.computeFmt);
      } else if (p_.computeFmt == Format::I32) { // bcast has no i32 form: an fp32 constant, converted
        pb_.emit(vbcast(Format::F32, constReg_[i], p_.ins[i].value));
        pb_.emit(vop(Opcode::Cvt, Format::I32, constReg_[i], constReg_[i]));
      } else {
        pb_.emit(vbcast(p_.computeFmt, constReg_[i], p_.ins[i].value));
      }
    }
  if (p_.clipMinArg >= 0)
    loadScalarArg(kClipLo, p_.clipMinArg, p_.computeFmt);
  if (p_.clipMaxArg >= 0)
    loadScalarArg(kClipHi, p_.clipMaxArg, p_.computeFmt);
  // A fused kernel's constants: one register each, set once (an i32 one through fp32, as above).
  for (const PointwisePlan::Const &c : p_.fusedConsts) {
    if (c.arg >= 0) {
      loadScalarArg(c.reg, c.arg, c.fmt);
    } else if (c.fmt == Format::I32) {
      pb_.emit(vbcast(Format::F32, c.reg, c.value));
      pb_.emit(vop(Opcode::Cvt, Format::I32, c.reg, c.reg));
    } else {
      pb_.emit(vbcast(c.fmt, c.reg, c.value));
    }
  }
}

/// vd = launch scalar argument `index` in every lane, rounded to the compute format: one `ld`
/// from its slot of the LX argument block (the runtime wrote it rounded), what `bcast` gives a
/// compile-time constant.
void PointwiseEmitter::loadScalarArg(int vd, int index, Format fmt) {
  const isa::ScalarArg want{index, fmt};
  size_t slot = std::find(scalarArgs_.begin(), scalarArgs_.end(), want) - scalarArgs_.begin();
  if (slot == scalarArgs_.size())
    scalarArgs_.push_back(want);
  pb_.emit(vld(fmt, vd, -1, isa::kScalarArgLxBase + 128 * static_cast<int64_t>(slot)));
}

/// clip of register x into v4. Bounds that are runtime scalars take max / min with the bound's
/// register (rounding is monotonic and x is in the format, so this equals clip with the
/// unrounded bound); compile-time bounds stay clip immediates.
void PointwiseEmitter::emitClip(int x) {
  const float lo = static_cast<float>(constant(s_, "clipMin", -INFINITY, false));
  const float hi = static_cast<float>(constant(s_, "clipMax", INFINITY, false));
  const bool rtLo = p_.clipMinArg >= 0, rtHi = p_.clipMaxArg >= 0;
  int cur = x;
  if (rtLo) {
    pb_.emit(vop(Opcode::Max, p_.computeFmt, 4, cur, kClipLo));
    cur = 4;
  }
  if (rtHi) {
    pb_.emit(vop(Opcode::Min, p_.computeFmt, 4, cur, kClipHi));
    cur = 4;
  }
  if (rtLo && rtHi)
    return;
  Instr op = vop(Opcode::Clip, p_.computeFmt, 4, cur);
  op.fimm = rtLo ? -INFINITY : lo;
  op.fimm2 = rtHi ? INFINITY : hi;
  pb_.emit(op);
}

/// One output stick: load the inputs, apply the op, store.
void PointwiseEmitter::computeStick() {
  if (p_.fused) { // planned per stick by checkFusedOperands
    for (const Instr &in : p_.fusedBody)
      pb_.emit(in);
    return;
  }
  std::vector<int> src;
  int ti = 0;
  for (size_t i = 0; i < p_.ins.size(); ++i) {
    if (p_.ins[i].isConst) {
      src.push_back(constReg_[i]);
      continue;
    }
    const int v = static_cast<int>(i);
    pb_.emit(vld(p_.ins[i].g.fmt, v, 10 + ti));
    if (!p_.ins[i].g.stickPresent && s_.N[s_.dimIndex(p_.stickDim)] > 1 && !p_.lnScale)
      pb_.emit(vop(Opcode::Splat, p_.ins[i].g.fmt, v, v)); // lane 0 to every lane
    src.push_back(v);
    ++ti;
  }
  int result = src[0];
  auto emit3 = [&](Opcode o, int d, int a, int b, int c = -1) { pb_.emit(vop(o, Format::F32, d, a, b, c)); };
  if (p_.lnScale) {
    // v5 = E[x] (lane 0), v6 = E[x^2] (lane 1); v4 = rsqrt(relu(v6 - v5^2) + eps).
    pb_.emit(vop(Opcode::Splat, Format::F32, 5, src[0]));
    Instr lane1 = vop(Opcode::Splat, Format::F32, 6, src[0]);
    lane1.imm = 1;
    pb_.emit(lane1);
    emit3(Opcode::Mul, 5, 5, 5);
    emit3(Opcode::Sub, 6, 6, 5);
    emit3(Opcode::Relu, 6, 6, -1);
    emit3(Opcode::Add, 6, 6, 7);
    emit3(Opcode::Rsqrt, 4, 6, -1);
    result = 4;
  } else if (p_.lnNorm) {
    // v5 = (x - mean) * rstd * w + b, all fp32; rounded once by the store.
    emit3(Opcode::Sub, 5, src[0], src[1]);
    emit3(Opcode::Mul, 5, 5, src[2]);
    emit3(Opcode::Fma, 5, 5, src[3], src[4]);
    result = 5;
  } else if (p_.op == Opcode::Clip && (p_.clipMinArg >= 0 || p_.clipMaxArg >= 0)) {
    result = 4;
    emitClip(src[0]);
  } else if (p_.op != Opcode::Ld) {
    result = 4;
    Instr op = vop(p_.op, p_.computeFmt, 4, src[0], src.size() > 1 ? src[1] : -1, src.size() > 2 ? src[2] : -1);
    if (p_.op == Opcode::Softplus) {
      op.fimm = static_cast<float>(constant(s_, "softplusBeta", 1.0, false));
      op.fimm2 = static_cast<float>(constant(s_, "softplusThresh", 20.0, false));
    } else if (p_.op == Opcode::Clip) {
      op.fimm = static_cast<float>(constant(s_, "clipMin", -INFINITY, false));
      op.fimm2 = static_cast<float>(constant(s_, "clipMax", INFINITY, false));
    } else if (p_.op == Opcode::Gelu && constant(s_, "geluTanh", 0.0, false) == 0.0) {
      op.op = Opcode::GeluErf;
    }
    pb_.emit(op);
  }
  pb_.emit(vst(p_.out.fmt, result, 10 + p_.nt() - 1));
}

void PointwiseEmitter::innerLoops(size_t jj) {
  if (jj == p_.J) {
    computeStick();
    return;
  }
  std::vector<std::pair<int, int64_t>> adv;
  for (int i = 0; i < p_.nt(); ++i)
    adv.push_back({10 + i, p_.lxStride[i][jj]});
  pb_.loop(jj == p_.c0 ? p_.chunk : p_.len[jj], adv, [&] { innerLoops(jj + 1); });
}

/// Compute of one block: walk the output block, every tensor's LX offset register advancing
/// densely.
void PointwiseEmitter::computeBlock() {
  for (int i = 0; i < p_.nt(); ++i) {
    if (p_.tensors[i]->t->inLx) {
      pb_.emit(addi(10 + i, 1 + i, 0));
    } else if (p_.pipelined && p_.spans(*p_.tensors[i], p_.c0)) {
      pb_.emit(addi(10 + i, rCur, p_.lxBase[i]));
    } else {
      emitLi(pb_, 10 + i, p_.lxBase[i]);
    }
  }
  innerLoops(p_.c0);
}

/// One block of the sweep over dim c0. Pipelined: wait for this block's inputs, start fetching
/// the next block's into the other half, compute, then write the result back once the previous
/// block's write-back (same token) is done.
void PointwiseEmitter::block(bool first, bool last) {
  const int nt = p_.nt();
  const auto &tensors = p_.tensors;
  if (p_.pipelined) {
    pb_.waitTokens(p_.inTokens);
    if (!last)
      for (int i : p_.inTokens)
        pb_.dmaAsync(true, tensors[i]->segment, 1 + i, p_.chunk * p_.strideAlong(*tensors[i], p_.c0), rOther,
                     p_.lxBase[i], p_.boxOf(*tensors[i]), i);
  }
  for (int i = 0; i < p_.nIn(); ++i)
    if (!tensors[i]->t->inLx && p_.spans(*tensors[i], p_.c0) && !p_.async[i])
      pb_.dmaBox(true, tensors[i]->segment, 1 + i, 0, p_.pipelined ? rCur : -1, p_.lxBase[i], p_.boxOf(*tensors[i]), i,
                 20, 21);
  computeBlock();
  for (int i = p_.nIn(); i < nt; ++i) { // the output(s)
    const TensorGeom &o = *tensors[i];
    const int tok = outToken(i - p_.nIn());
    if (o.t->inLx)
      continue;
    if (p_.async[i]) {
      if (!first)
        pb_.waitTokens({tok});
      pb_.dmaAsync(false, o.segment, 1 + i, 0, rCur, p_.lxBase[i], p_.boxOf(o), tok);
    } else {
      pb_.dmaBox(false, o.segment, 1 + i, 0, p_.pipelined ? rCur : -1, p_.lxBase[i], p_.boxOf(o), tok, 20, 21);
    }
  }
}

void PointwiseEmitter::sweep() {
  const int nt = p_.nt();
  const auto &tensors = p_.tensors;
  // Tensors constant over the sweep (they do not span c0): staged once.
  for (int i = 0; i < p_.nIn(); ++i)
    if (!tensors[i]->t->inLx && !p_.spans(*tensors[i], p_.c0))
      pb_.dmaBox(true, tensors[i]->segment, 1 + i, 0, -1, p_.lxBase[i], p_.boxOf(*tensors[i]), i, 20, 21);
  if (!p_.pipelined) {
    pb_.loop(p_.numBlocks, ddrAdv(p_.c0, p_.chunk), [&] { block(true, true); });
    return;
  }
  pb_.pipelinedSweep(
      p_.numBlocks, ddrAdv(p_.c0, p_.chunk), rCur, rOther, rSwap, p_.half,
      [&] {
        for (int i : p_.inTokens)
          pb_.dmaAsync(true, tensors[i]->segment, 1 + i, 0, rCur, p_.lxBase[i], p_.boxOf(*tensors[i]), i);
      },
      [&](bool first, bool last) { block(first, last); },
      [&] {
        for (int i = p_.nIn(); i < nt; ++i)
          if (p_.async[i])
            pb_.waitTokens({outToken(i - p_.nIn())});
      });
}

void PointwiseEmitter::outerLoops(size_t j) {
  if (j < p_.c0) {
    pb_.loop(p_.len[j], ddrAdv(j, 1), [&] { outerLoops(j + 1); });
    return;
  }
  sweep();
}

void PointwiseEmitter::emitCores(Kernel &k, int first, int last) {
  emitConstants();
  outerLoops(0);
  pb_.finishCores(k, first, last);
  k.scalarArgs = scalarArgs_;
}

Kernel PointwiseEmitter::emit(int last) {
  Kernel k = newKernel(s_, p_.tensors);
  emitCores(k, 0, last < 0 ? k.numCores - 1 : last);
  std::string op = s_.opFuncName;
  for (size_t i = 0; i < s_.fusedOps.size(); ++i)
    op += (i ? "," : ":") + s_.fusedOps[i].opFuncName;
  k.comment = "op=" + op + " fmt=" + std::string(formatName(p_.computeFmt)) + " cores=" +
              std::to_string(k.numCores) + " lx=" + std::to_string(p_.lxCursor) + " B, " +
              std::to_string(p_.numBlocks) + (p_.pipelined ? " double-buffered" : "") + " block(s) per sweep";
  return k;
}

} // namespace

Kernel compilePointwise(const SuperDsc &s, const BackendOptions &opts) {
  // ReStickifyOpHBM: a copy between layouts. Keeping the stick dim it moves whole sticks (this
  // walk, each tensor in its own layout order); changing it goes through the PE array.
  if (s.opFuncName == "ReStickifyOpHBM" && s.inputs.size() == 1 && s.inputs[0] >= 0 && s.outputs.size() == 1 &&
      s.primaryDsInfo.at(s.tensor(s.inputs[0]).dsType).stickDimOrder != s.primaryDsInfo.at(s.tensor(s.outputs[0]).dsType).stickDimOrder)
    return compileTranspose(s, opts);
  // A fused kernel (superdsc.md §6.9) is one walk of its ops; the plan checks them as a chain.
  const bool fused = s.isFused();
  auto check = [&](PointwisePlan &q) {
    if (fused)
      checkFusedOperands(s, q);
    else
      checkOperands(s, q);
  };
  PointwisePlan p;
  check(p);
  if (!fused && movesLanes(s, p)) {
    if (!s.constantArgs.empty())
      throw Unsupported("runtime scalar constants in the lane-moving copy " + s.name);
    return compileLaneShift(s, opts);
  }
  planSlices(s, p);
  const auto runs = equalSliceRuns(p.slices);
  planBlocking(s, opts, p);
  planLx(s, p);
  Kernel k = PointwiseEmitter(s, p).emit(runs[0].second);
  // An uneven split: every further run of cores with equal slices gets its own plan and program.
  for (size_t r = 1; r < runs.size(); ++r) {
    PointwisePlan q;
    check(q);
    planSlices(s, q, runs[r].first);
    planBlocking(s, opts, q);
    planLx(s, q);
    PointwiseEmitter(s, q).emitCores(k, runs[r].first, runs[r].second);
  }
  if (runs.size() > 1)
    k.comment += ", uneven split: " + std::to_string(runs.size()) + " programs";
  return k;
}

} // namespace spyre::backend::detail
