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
// The lowering plans first (backend_pointwise_plan.cpp: operand geometry, per-core slices, the
// blocking of the sweep and the LX layout, all plain data in a PointwisePlan), then emits
// (PointwiseEmitter, here).
#include "lowerings.h"
#include "pointwise_plan.h"
#include <memory>

namespace spyre::backend::detail {
namespace {

/// Emits the planned kernel. Registers: r1.. DDR offset per tensor, r10.. LX offset per tensor
/// in the compute loop, r20/r21 DMA scratch, r22/r23 this block's / the other block's buffer
/// half (0 or H), r24 swap scratch, r17 the row scratch (row-fused). Vector registers: v0..v2
/// inputs, v4 result, v8.. constants.
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
  void rowPasses(size_t jj);
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
  for (const Instr &in : p_.rowSetup)
    pb_.emit(in);
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

/// A row-fused kernel's row (the stick dim jj = J - 1, whole in the block): each pass is a
/// loop over its sticks between the pass's prelude / init and finish; the last stick of a row
/// that is partly filled runs the masked body when the pass reduces.
void PointwiseEmitter::rowPasses(size_t jj) {
  const int64_t n = jj == p_.c0 ? p_.chunk : p_.len[jj];
  auto emitAll = [&](const std::vector<Instr> &v) {
    for (const Instr &in : v)
      pb_.emit(in);
  };
  for (const PointwisePlan::RowPass &rp : p_.rowPasses) {
    // Only the tensors this pass loads or stores step along the row.
    std::vector<std::pair<int, int64_t>> adv;
    for (int i = 0; i < p_.nt(); ++i) {
      bool used = false;
      for (const auto *v : {&rp.body, &rp.lastBody})
        for (const Instr &in : *v)
          used = used || in.lx.base == 10 + i;
      if (used)
        adv.push_back({10 + i, p_.lxStride[i][jj]});
    }
    // The row scratch (kept stick values), walked like the row's blocks.
    bool scratch = false;
    for (const auto *v : {&rp.body, &rp.lastBody})
      for (const Instr &in : *v)
        scratch = scratch || in.lx.base == PointwisePlan::kScratchReg;
    if (scratch) {
      emitLi(pb_, PointwisePlan::kScratchReg, p_.scratchLx);
      adv.push_back({PointwisePlan::kScratchReg, kStickBytes});
    }
    emitAll(rp.prelude);
    emitAll(rp.init);
    if (rp.lastBody.empty()) {
      pb_.loop(n, adv, [&] { emitAll(rp.body); });
    } else {
      pb_.loop(n - 1, adv, [&] { emitAll(rp.body); });
      for (auto [r, step] : adv)
        if (step && n > 1)
          pb_.emit(addi(r, r, (n - 1) * step));
      emitAll(rp.lastBody);
      for (auto [r, step] : adv)
        if (step && n > 1)
          pb_.emit(addi(r, r, -(n - 1) * step));
    }
    emitAll(rp.finish);
  }
}

void PointwiseEmitter::innerLoops(size_t jj) {
  if (p_.rowFused() && jj + 1 == p_.J) {
    rowPasses(jj);
    return;
  }
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
        pb_.dmaBoxStrided(true, tensors[i]->segment, 1 + i, p_.chunk * p_.strideAlong(*tensors[i], p_.c0), rOther,
                          p_.lxBase[i], p_.stagedBox(*tensors[i]), i, -1, -1, /*wait=*/false);
  }
  for (int i = 0; i < p_.nIn(); ++i)
    if (!tensors[i]->t->inLx && p_.spans(*tensors[i], p_.c0) && !p_.async[i])
      pb_.dmaBoxStrided(true, tensors[i]->segment, 1 + i, 0, p_.pipelined ? rCur : -1, p_.lxBase[i],
                        p_.stagedBox(*tensors[i]), i, 20, 21);
  computeBlock();
  for (int i = p_.nIn(); i < nt; ++i) { // the output(s)
    const TensorGeom &o = *tensors[i];
    const int tok = outToken(i - p_.nIn());
    if (o.t->inLx)
      continue;
    if (p_.async[i]) {
      if (!first)
        pb_.waitTokens({tok});
      pb_.dmaBoxStrided(false, o.segment, 1 + i, 0, rCur, p_.lxBase[i], p_.stagedBox(o), tok, -1, -1, /*wait=*/false);
    } else {
      pb_.dmaBoxStrided(false, o.segment, 1 + i, 0, p_.pipelined ? rCur : -1, p_.lxBase[i], p_.stagedBox(o), tok, 20,
                        21);
    }
  }
}

void PointwiseEmitter::sweep() {
  const int nt = p_.nt();
  const auto &tensors = p_.tensors;
  // Tensors constant over the sweep (they do not span c0): staged once.
  for (int i = 0; i < p_.nIn(); ++i)
    if (!tensors[i]->t->inLx && !p_.spans(*tensors[i], p_.c0))
      pb_.dmaBoxStrided(true, tensors[i]->segment, 1 + i, 0, -1, p_.lxBase[i], p_.stagedBox(*tensors[i]), i, 20, 21);
  if (!p_.pipelined) {
    pb_.loop(p_.numBlocks, ddrAdv(p_.c0, p_.chunk), [&] { block(true, true); });
    return;
  }
  pb_.pipelinedSweep(
      p_.numBlocks, ddrAdv(p_.c0, p_.chunk), rCur, rOther, rSwap, p_.half,
      [&] {
        for (int i : p_.inTokens)
          pb_.dmaBoxStrided(true, tensors[i]->segment, 1 + i, 0, rCur, p_.lxBase[i], p_.stagedBox(*tensors[i]), i, -1,
                            -1, /*wait=*/false);
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
  const bool rowFused = fused && isRowFused(s);
  auto check = [&](PointwisePlan &q) {
    if (rowFused)
      checkRowFusedOperands(s, q);
    else if (fused)
      checkFusedOperands(s, q);
    else
      checkOperands(s, q);
  };
  if (!fused) {
    PointwisePlan p;
    checkOperands(s, p);
    if (movesLanes(s, p)) {
      if (!s.constantArgs.empty())
        throw Unsupported("runtime scalar constants in the lane-moving copy " + s.name);
      return compileLaneShift(s, opts);
    }
  }
  // A row-fused kernel keeps the stick values a later pass reads in a row scratch when that
  // fits in LX (PointwisePlan::keepRows), else recomputes them: bit-identical either way.
  auto plan = [&](int rep, bool keep) {
    auto q = std::make_unique<PointwisePlan>();
    q->keepRows = keep;
    check(*q);
    planSlices(s, *q, rep);
    planBlocking(s, opts, *q);
    planLx(s, *q);
    return q;
  };
  bool keep = rowFused;
  std::unique_ptr<PointwisePlan> p;
  try {
    p = plan(0, keep);
  } catch (const Unsupported &) {
    if (!keep)
      throw;
    keep = false;
    p = plan(0, keep);
  }
  const auto runs = equalSliceRuns(p->slices);
  Kernel k = PointwiseEmitter(s, *p).emit(runs[0].second);
  // An uneven split: every further run of cores with equal slices gets its own plan and program.
  for (size_t r = 1; r < runs.size(); ++r)
    PointwiseEmitter(s, *plan(runs[r].first, keep)).emitCores(k, runs[r].first, runs[r].second);
  if (runs.size() > 1)
    k.comment += ", uneven split: " + std::to_string(runs.size()) + " programs";
  return k;
}

} // namespace spyre::backend::detail
