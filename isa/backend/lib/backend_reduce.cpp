// Reductions on the SFP: sum, mean, max, min over any set of dims, in stick form (the stick dim
// is reduced: scale_ -2, one value per output stick, lane-masked last tile) and in nonstick form
// (elementwise accumulation across sticks). Accumulation is in fp32 registers; the result is
// rounded once when stored (DL16) — mean scales the fp32 accumulator by 1/count first.
//
// exx2 (layer norm statistics) is the same walk over a stick-reduced row with two fp32
// accumulators (x and x*x); its output is one fp32 stick per row in the EXX2 arrangement:
// lane 0 = E[x], every other lane = E[x^2] (nothing rounded below fp32).
//
// The lowering plans first (checkReduction, planReduction: what is reduced, per-core slices,
// the blocking and LX layout, all plain data in a ReductionPlan), then emits (ReductionEmitter).
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

namespace {

/// How a reduction walks its input, decided before anything is emitted.
struct ReductionPlan {
  // What is reduced (checkReduction).
  std::string base; ///< the op without "nonstick": sum, mean, max, min or exx2
  bool exx2 = false;
  const SdscTensor *inT = nullptr, *outT = nullptr;
  TensorGeom in, out;
  int sd = -1;                ///< the stick dim
  std::vector<bool> reduced;  ///< per iteration dim
  bool stickReduced = false;
  int64_t count = 1;          ///< elements reduced into one output lane
  Format fmt = Format::None;
  // The walk (planReduction).
  size_t J = 0; ///< device dims of the input
  std::vector<std::vector<Slice>> slices;
  std::vector<int64_t> len;
  std::vector<int64_t> inCanon, outCanon; ///< LX-resident operands: LX strides (input order)
  int64_t inLxAddr = -1, outLxAddr = -1;
  /// Blocking: reduced dims are always whole in a block (no accumulation across blocks); kept
  /// dims before c0 are walked one index at a time, kept dim c0 in chunks, later dims whole.
  /// c0 == J means every kept dim is walked one index at a time (one output stick per block).
  size_t c0 = 0;
  int64_t chunk = 1;
  bool dbl = false;       ///< staged blocks double-buffered
  bool lxOperand = false; ///< an operand is LX-resident
  int64_t lxIn = 0, lxOut = 0, half = 0;
  Opcode combine = Opcode::Add;
  float identity = 0;
  int64_t validLanes = 0; ///< valid lanes of the last stick of a reduced row (0: all)
  bool mask = false;

  bool isRed(size_t j) const { return reduced[in.dims[j].iterDim]; }
  bool outSpans(size_t j) const { return out.spans(in.dims[j].iterDim); }
  int64_t lenIn(size_t j, size_t at, int64_t ch) const {
    if (isRed(j))
      return len[j];
    return j < at ? 1 : j == at ? ch : len[j];
  }
  /// Double buffering (dbl): the staged input and output blocks get two copies each, so block
  /// i+1 is fetched and block i-1 written back while block i is reduced.
  int64_t blockBytes(size_t at, int64_t ch, bool twice) const {
    int64_t bi = kStickBytes, bo = kStickBytes;
    for (size_t j = 0; j < J; ++j) {
      int64_t l = lenIn(j, at, ch);
      bi *= l;
      if (outSpans(j))
        bo *= l;
    }
    return ((inT->inLx ? 0 : bi) + (outT->inLx ? 0 : bo)) * (twice ? 2 : 1);
  }
  std::vector<int64_t> offsets(const TensorGeom &g) const { return sliceOffsets(g, in.dims, slices, 0); }
};

/// Checks the descriptor and fills what the reduction reduces.
void checkReduction(const SuperDsc &s, ReductionPlan &p) {
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
  p.in = tensorGeom(s, inT, stickDim);
  p.out = tensorGeom(s, outT, stickDim);
  const bool exx2 = base == "exx2";
  if (exx2 && p.out.fmt != Format::F32)
    throw Error(where(s) + ": the exx2 output must be IEEE_FP32 (EXX2 arrangement: lane 0 = E[x], lane 1 = E[x^2])");
  if (!exx2 && p.in.fmt != p.out.fmt)
    throw Unsupported("reductions that change the data format in " + s.name);
  if (p.in.fmt == Format::I32 && (exx2 || base == "mean"))
    throw Unsupported("int32 " + base + " in " + s.name);
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
  // Nothing reduced (count == 1, no stick reduction, not mean) is a copy: the same walk.
  p.base = base;
  p.exx2 = exx2;
  p.inT = &inT;
  p.outT = &outT;
  p.sd = sd;
  p.reduced = reduced;
  p.stickReduced = stickReduced;
  p.count = count;
  p.fmt = p.in.fmt;
}

/// Per-core slices, start addresses, LX-resident strides, the blocking and the LX layout. The
/// walk covers core `rep`'s slice lengths (an uneven split: one plan per run of equal slices).
void planReduction(const SuperDsc &s, const BackendOptions &opts, ReductionPlan &p, int rep = 0) {
  const SdscTensor &inT = *p.inT, &outT = *p.outT;
  const size_t J = p.in.dims.size();
  p.J = J;
  p.slices.assign(s.numCoresUsed, std::vector<Slice>(J));
  for (int c = 0; c < s.numCoresUsed; ++c)
    for (size_t j = 0; j < J; ++j)
      p.slices[c][j] = p.reduced[p.in.dims[j].iterDim] ? Slice{0, p.in.dims[j].extent}
                                                       : coreSliceUneven(s, c, p.in.dims[j].iterDim, p.in.dims[j].extent);
  if (!inT.inLx)
    checkStartAddresses(s, p.in, p.offsets(p.in));
  if (!outT.inLx)
    checkStartAddresses(s, p.out, p.offsets(p.out));
  if (p.in.segment == p.out.segment)
    throw Unsupported("input and output in one segment in " + s.name);
  p.len.resize(J);
  for (size_t j = 0; j < J; ++j)
    p.len[j] = p.slices[rep][j].len;

  // An LX-resident operand (memOrg_ lx) holds the core's whole slice densely in LX: it is
  // walked in place with these strides (input order) instead of being staged by DMA.
  p.inCanon.assign(J, 0);
  p.outCanon.assign(J, 0);
  int64_t inSlice = kStickBytes, outSlice = kStickBytes;
  for (size_t j = J; j-- > 0;) {
    p.inCanon[j] = p.len[j] > 1 ? inSlice : 0;
    inSlice *= p.len[j];
    if (p.outSpans(j)) {
      p.outCanon[j] = p.len[j] > 1 ? outSlice : 0;
      outSlice *= p.len[j];
    }
  }
  p.inLxAddr = inT.inLx ? lxResidentAddress(s, p.in, inSlice) : -1;
  p.outLxAddr = outT.inLx ? lxResidentAddress(s, p.out, outSlice) : -1;
  const int64_t lxStage = s.lxReservedBytes; // staging above the graph's LX-resident tensors

  const int64_t stageBytes = opts.lxBytes - lxStage;
  p.lxOperand = inT.inLx || outT.inLx;
  auto choose = [&](bool dbl) {
    for (p.c0 = 0; p.c0 <= J; ++p.c0) {
      if (p.c0 < J && p.isRed(p.c0))
        continue;
      if (p.c0 == J) {
        p.chunk = 1;
        return p.blockBytes(J, 1, dbl) <= stageBytes;
      }
      // The largest chunk that fits; a chunk that does not divide the dim leaves one shorter
      // last block (LX-resident operands keep whole chunks: their walk is laid out per chunk).
      auto fits = [&](int64_t c) { return p.blockBytes(p.c0, c, dbl) <= stageBytes; };
      p.chunk = p.lxOperand ? largestDivisorFitting(p.len[p.c0], fits) : largestFitting(p.len[p.c0], fits);
      if (p.chunk > 0)
        return true;
    }
    return false;
  };
  p.dbl = !inT.inLx && choose(true);
  if (!p.dbl && !choose(false))
    throw Unsupported("a reduction row of " + s.name + " that does not fit in LX (" +
                      std::to_string(p.blockBytes(J, 1, false)) + " bytes)");
  // Something to overlap: at least opts.pipelineBlocks blocks (BackendOptions; the timing
  // model picks the count) while an input block keeps a few sticks.
  const int64_t kPipeBlocks = std::max(1, opts.pipelineBlocks), kMinPipeSticks = 8;
  if (p.dbl && p.c0 < J) {
    auto inSticks = [&](int64_t ch) { return p.blockBytes(p.c0, ch, false) / kStickBytes; };
    p.chunk = pipelineChunk(
        p.len[p.c0], p.chunk, kPipeBlocks, [&](int64_t c) { return inSticks(c) >= kMinPipeSticks; }, p.lxOperand);
  }
  int64_t inBlock = kStickBytes, outBlock = kStickBytes;
  // Every dim of the block (reduced dims before c0 are whole in it; kept ones are 1 there).
  for (size_t j = 0; j < J; ++j) {
    inBlock *= p.lenIn(j, p.c0, p.chunk);
    if (p.outSpans(j))
      outBlock *= p.lenIn(j, p.c0, p.chunk);
  }
  p.lxIn = lxStage;
  p.lxOut = lxStage + (inT.inLx ? 0 : inBlock);
  // The other copy of both blocks when double-buffered.
  p.half = (inT.inLx ? 0 : inBlock) + (outT.inLx ? 0 : outBlock);
  p.combine = p.base == "max" ? Opcode::Max : p.base == "min" ? Opcode::Min : Opcode::Add;
  p.identity = p.base == "max" ? -INFINITY : p.base == "min" ? INFINITY : 0.0f;
  if (p.in.fmt == Format::I32) // cvt.i32 saturates these to INT32_MIN / INT32_MAX
    p.identity = p.base == "max" ? -2147483648.0f : p.base == "min" ? 2147483648.0f : 0.0f;
  p.validLanes = s.N[p.sd] % elemsPerStick(inT.dataFormat);
  p.mask = p.stickReduced && p.validLanes != 0;
}

/// Emits the planned reduction. Registers: r1/r2 DDR offsets of input/output, r10/r11 LX
/// offsets, r12 the reduced-box walker, r20/r21 DMA scratch, r22/r23 this block's / the other
/// block's copy (0 or `half`), r24 swap scratch. Vectors: v0 loaded stick, v1 accumulator (v3
/// the exx2 square sum), v14 scale.
class ReductionEmitter {
public:
  ReductionEmitter(const SuperDsc &s, const ReductionPlan &p) : s_(s), p_(p), chunk_(p.chunk) {}
  /// The kernel with the plan's program for cores 0..last (-1: all of them).
  Kernel emit(int last = -1);
  /// The plan's program for cores first..last (whose slices have the plan's lengths) into k.
  void emitCores(Kernel &k, int first, int last);

private:
  static constexpr int rCur = 22, rOther = 23, rSwap = 24;
  int64_t blockLen(size_t j) const { return p_.lenIn(j, p_.c0, chunk_); }
  std::vector<std::pair<int, int64_t>> ddrAdv(size_t j, int64_t units) const;
  void lxStrides();
  std::vector<std::pair<int64_t, int64_t>> inBox() const;
  std::vector<std::pair<int64_t, int64_t>> outBox() const;
  void emitConstants();
  void accumulate(bool masked);
  void reducedNest(const std::vector<size_t> &red, size_t r);
  void finishStick();
  void keptNest(const std::vector<size_t> &kept, const std::vector<size_t> &red, size_t i);
  void block(bool pipe, bool first, bool last);
  void sweep();
  void outer(size_t j);

  const SuperDsc &s_;
  const ReductionPlan &p_;
  ProgramBuilder pb_;
  int64_t chunk_;                    ///< the planned chunk, or the shorter last block's
  std::vector<int64_t> inLx_, outLx_; ///< dense LX strides of the current block
  bool pipelined_ = false;           ///< some sweep is double-buffered
};

std::vector<std::pair<int, int64_t>> ReductionEmitter::ddrAdv(size_t j, int64_t units) const {
  int ko = p_.out.dimOf(p_.in.dims[j].iterDim);
  int64_t os = ko >= 0 && p_.out.dims[ko].extent > 1 ? p_.out.dims[ko].strideBytes : 0;
  return {{1, units * (p_.inT->inLx ? p_.inCanon[j] : p_.in.dims[j].strideBytes)},
          {2, units * (p_.outT->inLx ? p_.outCanon[j] : os)}};
}

/// Dense LX strides of the input block (input order) and output block; recomputed for the
/// shorter last block (they depend on the chunk length of dims inside the chunked one).
void ReductionEmitter::lxStrides() {
  inLx_.assign(p_.J, 0);
  outLx_.assign(p_.J, 0);
  int64_t st = kStickBytes, so = kStickBytes;
  for (size_t j = p_.J; j-- > 0;) {
    inLx_[j] = blockLen(j) > 1 ? st : 0;
    st *= blockLen(j);
    outLx_[j] = p_.outSpans(j) && blockLen(j) > 1 ? so : 0;
    if (p_.outSpans(j))
      so *= blockLen(j);
  }
  if (p_.inT->inLx)
    inLx_ = p_.inCanon;
  if (p_.outT->inLx)
    outLx_ = p_.outCanon;
}

/// The DMA boxes of the current block (input order; the output in its own dim order).
std::vector<std::pair<int64_t, int64_t>> ReductionEmitter::inBox() const {
  std::vector<std::pair<int64_t, int64_t>> box;
  for (size_t jj = 0; jj < p_.J; ++jj)
    box.push_back({blockLen(jj), p_.in.dims[jj].strideBytes});
  return box;
}

std::vector<std::pair<int64_t, int64_t>> ReductionEmitter::outBox() const {
  std::vector<std::pair<int64_t, int64_t>> box;
  for (const auto &td : p_.out.dims) {
    size_t jj = 0;
    while (jj < p_.J && p_.in.dims[jj].iterDim != td.iterDim)
      ++jj;
    box.push_back({td.extent > 1 && jj < p_.J ? blockLen(jj) : 1, td.strideBytes});
  }
  return box;
}

void ReductionEmitter::emitConstants() {
  // r1 / r2: the block's DDR offset, or for an LX-resident operand its LX address.
  p_.inT->inLx ? emitLi(pb_, 1, p_.inLxAddr) : emitTbl(pb_, 1, p_.offsets(p_.in));
  p_.outT->inLx ? emitLi(pb_, 2, p_.outLxAddr) : emitTbl(pb_, 2, p_.offsets(p_.out));
  if (p_.exx2) {
    // v9 = 1.0 on lane 0 only: selects E[x] into lane 0 of the EXX2 stick.
    pb_.emit(vop(Opcode::Iota, Format::F32, 9));
    pb_.emit(vbcast(Format::F32, 10));
    pb_.emit(vop(Opcode::Eq, Format::F32, 9, 9, 10));
  }
  if (p_.base == "mean" || p_.exx2) {
    pb_.emit(vbcast(Format::F32, 14, 1.0f / static_cast<float>(p_.count)));
  }
  if (p_.fmt == Format::I32 && p_.mask) {
    // int32 (no ld.pad.i32): v5 = lane < validLanes, v6 = the identity, for a sel after ld.
    pb_.emit(vop(Opcode::Iota, Format::I32, 5));
    pb_.emit(vbcast(Format::F32, 6, static_cast<float>(p_.validLanes)));
    pb_.emit(vop(Opcode::Cvt, Format::I32, 6, 6));
    pb_.emit(vop(Opcode::Lt, Format::I32, 5, 5, 6));
    pb_.emit(vbcast(Format::F32, 6, p_.identity));
    pb_.emit(vop(Opcode::Cvt, Format::I32, 6, 6));
  }
}

/// One input stick into the accumulator(s). The last, partly filled stick of a reduced row
/// (masked): ld.pad puts the reduction's identity into the padded lanes.
void ReductionEmitter::accumulate(bool masked) {
  const bool ints = p_.fmt == Format::I32;
  Instr ld = mk(masked && !ints ? Opcode::LdPad : Opcode::Ld, p_.fmt);
  ld.v = {0, -1, -1, -1};
  ld.lx = {12, 0};
  if (masked && !ints) {
    ld.imm = p_.validLanes;
    ld.fimm = p_.identity;
  }
  pb_.emit(ld);
  if (masked && ints)
    pb_.emit(vop(Opcode::Sel, Format::I32, 0, 5, 0, 6));
  Instr c = mk(p_.combine, ints ? Format::I32 : Format::F32);
  c.v = {1, 1, 0, -1};
  pb_.emit(c);
  if (p_.exx2) {
    pb_.emit(vop(Opcode::Fma, Format::F32, 3, 0, 0, 3));
  }
}

void ReductionEmitter::reducedNest(const std::vector<size_t> &red, size_t r) {
  if (r == red.size()) {
    accumulate(false);
    return;
  }
  size_t jj = red[r];
  bool isStick = p_.in.dims[jj].iterDim == p_.sd;
  if (isStick && p_.mask) {
    // All tiles but the last unmasked, then the last with padded lanes masked.
    pb_.loop(blockLen(jj) - 1, {{12, inLx_[jj]}}, [&] { reducedNest(red, r + 1); });
    if (blockLen(jj) > 1)
      pb_.emit(addi(12, 12, (blockLen(jj) - 1) * inLx_[jj]));
    accumulate(true);
    if (blockLen(jj) > 1)
      pb_.emit(addi(12, 12, -(blockLen(jj) - 1) * inLx_[jj]));
    return;
  }
  pb_.loop(blockLen(jj), {{12, inLx_[jj]}}, [&] { reducedNest(red, r + 1); });
}

/// The accumulators of one output stick into its value(s), stored at r11.
void ReductionEmitter::finishStick() {
  if (p_.exx2) {
    // Scale both sums, fold the 64 DL16 lanes into 32 fp32 lanes, reduce in fp32, and put
    // E[x] in lane 0 of the E[x^2] stick.
    for (int acc : {1, 3}) {
      pb_.emit(vop(Opcode::Mul, Format::F32, acc, acc, 14));
      if (p_.fmt == Format::DL16) {
        pb_.emit(vop(Opcode::Unpack, Format::None, 5, 6, acc));
        pb_.emit(vop(Opcode::Add, Format::F32, acc, 5, 6));
      }
      pb_.emit(vop(Opcode::Rsum, Format::F32, acc == 1 ? 2 : 7, acc));
    }
    pb_.emit(vop(Opcode::Sel, Format::F32, 2, 9, 2, 7));
    pb_.emit(vst(Format::F32, 2, 11));
    return;
  }
  if (p_.base == "mean") {
    pb_.emit(vop(Opcode::Mul, Format::F32, 1, 1, 14));
  }
  int result = 1;
  if (p_.stickReduced) {
    Instr r = mk(p_.base == "max" ? Opcode::Rmax : p_.base == "min" ? Opcode::Rmin : Opcode::Rsum, p_.fmt);
    r.v = {2, 1, -1, -1};
    pb_.emit(r);
    result = 2;
  }
  pb_.emit(vst(p_.fmt, result, 11));
}

void ReductionEmitter::keptNest(const std::vector<size_t> &kept, const std::vector<size_t> &red, size_t i) {
  if (i < kept.size()) {
    size_t jj = kept[i];
    pb_.loop(blockLen(jj), {{10, inLx_[jj]}, {11, outLx_[jj]}}, [&] { keptNest(kept, red, i + 1); });
    return;
  }
  // One output stick: acc = identity; accumulate every input stick of the reduced box.
  pb_.emit(vbcast(Format::F32, 1, p_.identity));
  if (p_.fmt == Format::I32)
    pb_.emit(vop(Opcode::Cvt, Format::I32, 1, 1));
  if (p_.exx2)
    pb_.emit(vbcast(Format::F32, 3, p_.identity));
  // r12 walks the reduced box from this output stick's first input stick.
  pb_.emit(addi(12, 10, 0));
  reducedNest(red, 0);
  finishStick();
}

/// One block (file comment of backend_pointwise.cpp): pipelined (pipe), wait for this block's
/// input, fetch the next one into the other copy, reduce, write back once the previous block's
/// write-back is done.
void ReductionEmitter::block(bool pipe, bool first, bool last) {
  const auto in = inBox(), out = outBox();
  if (p_.inT->inLx) {
    pb_.emit(addi(10, 1, 0));
  } else if (pipe) {
    pb_.waitTokens({0});
    if (!last)
      pb_.dmaAsync(true, p_.in.segment, 1, chunk_ * p_.in.dims[p_.c0].strideBytes, rOther, p_.lxIn, in, 0);
    pb_.emit(addi(10, rCur, p_.lxIn));
  } else {
    pb_.dmaBox(true, p_.in.segment, 1, 0, -1, p_.lxIn, in, 0, 20, 21);
    emitLi(pb_, 10, p_.lxIn);
  }
  if (p_.outT->inLx)
    pb_.emit(addi(11, 2, 0));
  else if (pipe)
    pb_.emit(addi(11, rCur, p_.lxOut));
  else
    emitLi(pb_, 11, p_.lxOut);
  // Loop nest: kept dims of the block, then reduced dims with the stick tile innermost.
  std::vector<size_t> kept, red;
  for (size_t jj = 0; jj < p_.J; ++jj) {
    if (p_.isRed(jj))
      red.push_back(jj);
    else if (jj >= p_.c0)
      kept.push_back(jj);
  }
  int stickJ = -1;
  for (size_t i = 0; i < red.size(); ++i)
    if (p_.in.dims[red[i]].iterDim == p_.sd)
      stickJ = static_cast<int>(i);
  if (stickJ >= 0) {
    size_t sj = red[stickJ];
    red.erase(red.begin() + stickJ);
    red.push_back(sj);
  }
  keptNest(kept, red, 0);
  if (p_.outT->inLx)
    return;
  if (pipe) {
    if (!first)
      pb_.waitTokens({1});
    pb_.dmaAsync(false, p_.out.segment, 2, 0, rCur, p_.lxOut, out, 1);
  } else {
    pb_.dmaBox(false, p_.out.segment, 2, 0, -1, p_.lxOut, out, 1, 20, 21);
  }
}

/// The blocks along dim c0: the full chunks (pipelined when there are blocks to overlap and
/// each staged block moves with one DMA), then the shorter last block.
void ReductionEmitter::sweep() {
  if (p_.c0 == p_.J) {
    block(false, true, true);
    return;
  }
  const int64_t full = p_.len[p_.c0] / chunk_, rem = p_.len[p_.c0] % chunk_;
  bool pipe = p_.dbl && full >= 2;
  if (pipe)
    pipe = ProgramBuilder::singleDma(inBox()) && (p_.outT->inLx || ProgramBuilder::singleDma(outBox()));
  pipelined_ = pipelined_ || pipe;
  if (pipe) {
    pb_.pipelinedSweep(
        full, ddrAdv(p_.c0, chunk_), rCur, rOther, rSwap, p_.half,
        [&] { pb_.dmaAsync(true, p_.in.segment, 1, 0, rCur, p_.lxIn, inBox(), 0); },
        [&](bool first, bool last) { block(true, first, last); },
        [&] {
          if (!p_.outT->inLx)
            pb_.waitTokens({1});
        });
  } else {
    pb_.loop(full, ddrAdv(p_.c0, chunk_), [&] { block(false, true, true); });
  }
  if (rem) {
    // The shorter last block: advance past the full chunks, run it with chunk = rem, restore.
    auto adv = ddrAdv(p_.c0, full * chunk_);
    for (auto [r, step] : adv)
      if (step)
        pb_.emit(addi(r, r, step));
    const int64_t saved = chunk_;
    chunk_ = rem;
    lxStrides();
    block(false, true, true);
    chunk_ = saved;
    lxStrides();
    for (auto [r, step] : adv)
      if (step)
        pb_.emit(addi(r, r, -step));
  }
}

void ReductionEmitter::outer(size_t j) {
  if (j < p_.c0 && j < p_.J) {
    if (p_.isRed(j))
      outer(j + 1); // whole in every block
    else
      pb_.loop(p_.len[j], ddrAdv(j, 1), [&] { outer(j + 1); });
    return;
  }
  sweep();
}

void ReductionEmitter::emitCores(Kernel &k, int first, int last) {
  emitConstants();
  lxStrides();
  outer(0);
  pb_.finishCores(k, first, last);
}

Kernel ReductionEmitter::emit(int last) {
  Kernel k = newKernel(s_, {&p_.in, &p_.out});
  emitCores(k, 0, last < 0 ? k.numCores - 1 : last);
  k.comment = "op=" + s_.opFuncName + " fmt=" + std::string(formatName(p_.fmt)) + " cores=" +
              std::to_string(k.numCores) + " reduce " + std::to_string(p_.count) + " elements per output lane" +
              (pipelined_ ? ", double-buffered" : "");
  return k;
}

} // namespace

Kernel compileReduction(const SuperDsc &s, const BackendOptions &opts) {
  // The stick dim split over cores: partials summed over the ring (exx2, sum, mean).
  if (isStickSplitReduction(s))
    return compileStickSplitReduction(s, opts);
  ReductionPlan p;
  checkReduction(s, p);
  planReduction(s, opts, p);
  const auto runs = equalSliceRuns(p.slices);
  Kernel k = ReductionEmitter(s, p).emit(runs[0].second);
  // An uneven split: every further run of cores with equal slices gets its own plan and program.
  for (size_t r = 1; r < runs.size(); ++r) {
    ReductionPlan q;
    checkReduction(s, q);
    planReduction(s, opts, q, runs[r].first);
    ReductionEmitter(s, q).emitCores(k, runs[r].first, runs[r].second);
  }
  if (runs.size() > 1)
    k.comment += ", uneven split: " + std::to_string(runs.size()) + " programs";
  return k;
}

} // namespace spyre::backend::detail
