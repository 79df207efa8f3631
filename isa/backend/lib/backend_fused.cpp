// Fused pointwise kernels (our SuperDSC extension, docs/superdsc.md §6.9): computeOp_ lists
// several pointwise ops over one iteration space; the kernel is the pointwise walk of
// backend_pointwise.cpp with one body per output stick that loads each external input once,
// applies the ops in registers and stores each output. Every SFP result is already rounded to
// its format (semantics.h roundTo), which is exactly what a store and a reload would give, so
// the fused kernel computes the unfused chain's values bit for bit.
//
// FusedOps (fused_body.h) holds the steps of a body, shared with the row-fused walk
// (backend_row_fused.cpp): the tensors, the operands, an op's format, constants, instruction
// and stores.
#include "fused_body.h"
#include "lowerings.h"

namespace spyre::backend::detail {
namespace {

bool isCompare(Opcode op) {
  return op == Opcode::Eq || op == Opcode::Ne || op == Opcode::Lt || op == Opcode::Le || op == Opcode::Gt ||
         op == Opcode::Ge;
}

double fusedConstant(const SuperDsc &s, size_t k, const std::string &name, double dflt) {
  auto it = s.constants.find("op" + std::to_string(k) + "_" + name);
  return it == s.constants.end() ? dflt : it->second;
}

/// The walk's tensors: outputs over the full iteration space in the first output's layout
/// (p.out, p.moreOuts), then the external inputs (p.ins). Returns ldsIdx -> walk tensor index
/// (inputs first, then outputs: r10 + index in the body).
std::map<int, int> planFusedTensors(const SuperDsc &s, PointwisePlan &p) {
  const std::string w = where(s);
  if (s.exUnit != "sfp")
    throw Error(w + ": a fused kernel runs on the sfp, got exUnit '" + s.exUnit + "'");
  if (s.outputs.empty() || s.inputs.size() + s.outputs.size() > static_cast<size_t>(isa::kMaxSegments))
    throw Error(w + ": a fused kernel needs 1..7 tensors with at least one output");
  p.fused = true;
  const SdscTensor &outT = s.tensor(s.outputs[0]);
  const SdscLayout &layout = s.primaryDsInfo.at(outT.dsType);
  if (layout.layoutDimOrder.size() != s.dims.size())
    throw Error(w + ": the output layout must list every iteration dim");
  p.stickDim = layout.stickDimOrder[0];
  const int64_t eps = elemsPerStick(outT.dataFormat);
  for (size_t o = 0; o < s.outputs.size(); ++o) {
    const SdscTensor &t = s.tensor(s.outputs[o]);
    for (int sc : t.scale)
      if (sc != 1)
        throw Error(w + ": the outputs of a fused kernel span every iteration dim (" + t.dsName + ")");
    if (s.primaryDsInfo.at(t.dsType).layoutDimOrder != layout.layoutDimOrder ||
        elemsPerStick(t.dataFormat) != eps)
      throw Unsupported("fused outputs in different layouts or stick geometries in " + s.name);
    TensorGeom g = tensorGeom(s, t, p.stickDim, /*allowView=*/true);
    if (o == 0)
      p.out = g;
    else
      p.moreOuts.push_back(g);
  }
  std::map<int, int> tensorIndex;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    const SdscTensor &t = s.tensor(s.inputs[i]);
    if (elemsPerStick(t.dataFormat) != eps)
      throw Unsupported("operands with different stick geometry in " + s.name + " (" + t.dsName + ")");
    PwInput in;
    in.g = tensorGeom(s, t, p.stickDim, /*allowView=*/true);
    p.ins.push_back(in);
    tensorIndex[s.inputs[i]] = static_cast<int>(i);
  }
  for (size_t o = 0; o < s.outputs.size(); ++o)
    tensorIndex[s.outputs[o]] = static_cast<int>(s.inputs.size() + o);
  for (const auto &in : p.ins)
    if (in.g.laneOffset != 0)
      throw Unsupported("a view whose stick dim starts inside a stick in the fused kernel " + s.name);
  if (p.out.laneOffset != 0)
    throw Unsupported("a view whose stick dim starts inside a stick in the fused kernel " + s.name);
  return tensorIndex;
}

} // namespace

int VectorRegisters::take() {
  for (int r = 0; r < 16; ++r)
    if (users_[r] == 0) {
      users_[r] = 1;
      return r;
    }
  throw Unsupported("fused kernel " + s_.name + " needs more than 16 vector registers");
}

FusedOps::FusedOps(const SuperDsc &s, PointwisePlan &p) : regs(s), s_(s), p_(p), w_(where(s)) {
  tensorIndex_ = planFusedTensors(s, p);
  // Constants hold their register for the whole kernel (set once, before the walk).
  for (size_t k = 0; k < s.fusedOps.size(); ++k)
    for (size_t i = 0; i < s.fusedOps[k].inputs.size(); ++i)
      if (s.fusedOps[k].inputs[i] == -1)
        constReg_[{k, i}] = regs.take();
  splatStick_ = s.N[s.dimIndex(p.stickDim)] > 1;
}

std::string FusedOps::opWhere(size_t k) const {
  return s_.name + " (computeOp_ " + std::to_string(k) + ", " + s_.fusedOps[k].opFuncName + ")";
}

const TensorGeom &FusedOps::geomOf(int i) const {
  const int nIn = static_cast<int>(s_.inputs.size());
  return i < nIn ? p_.ins[i].g : i == nIn ? p_.out : p_.moreOuts[i - nIn - 1];
}

Opcode FusedOps::opcode(size_t k) const {
  const SdscComputeOp &op = s_.fusedOps[k];
  const isa::OpFuncInfo *f = isa::findOpFunc(op.opFuncName);
  if (!f || f->cls != isa::OpClass::Pointwise || !f->sfpOp || op.opFuncName == "layernormscale" ||
      op.opFuncName == "layernormnorm" || op.opFuncName == "ReStickifyOpHBM")
    throw Unsupported("op '" + op.opFuncName + "' in the fused kernel " + opWhere(k));
  if (static_cast<int>(op.inputs.size()) != f->arity)
    throw Error(w_ + ": computeOp_ " + std::to_string(k) + " (" + op.opFuncName + ") expects " +
                std::to_string(f->arity) + " input(s), got " + std::to_string(op.inputs.size()));
  return *f->sfpOp;
}

FusedValue FusedOps::operand(size_t k, size_t i, FusedBodyState &st, std::vector<Instr> &body) {
  const int ref = s_.fusedOps[k].inputs[i];
  if (ref <= -2 && fusedResultIndex(ref) >= static_cast<int>(k))
    throw Error(w_ + ": computeOp_ " + std::to_string(k) + " reads the result of a later op");
  if (st.live.count(ref))
    return st.live[ref];
  if (auto r = st.scratch.find(ref); r != st.scratch.end()) {
    FusedValue v{regs.take(), r->second.second};
    body.push_back(vld(v.fmt, v.reg, PointwisePlan::kScratchReg, r->second.first));
    return st.live[ref] = v;
  }
  if (auto r = st.reloadFrom.find(ref); r != st.reloadFrom.end()) {
    const TensorGeom &g = geomOf(r->second);
    FusedValue v{regs.take(), g.fmt};
    body.push_back(vld(g.fmt, v.reg, 10 + r->second));
    return st.live[ref] = v;
  }
  const int ti = ref <= -2 ? -1 : tensorIndex(ref);
  if (ti < 0 || ti >= static_cast<int>(s_.inputs.size()))
    throw Error(w_ + ": computeOp_ " + std::to_string(k) + " reads an operand that is not an input");
  const PwInput &in = p_.ins[ti];
  FusedValue v{regs.take(), in.g.fmt};
  body.push_back(vld(in.g.fmt, v.reg, 10 + ti));
  if (!in.g.stickPresent && splatStick_)
    body.push_back(vop(Opcode::Splat, in.g.fmt, v.reg, v.reg));
  return st.live[ref] = v;
}

Format FusedOps::computeFormat(size_t k, Opcode code, const std::vector<FusedValue> &src) const {
  Format fmt = Format::None;
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i].reg < 0 || (code == Opcode::Sel && i == 0))
      continue;
    if (fmt != Format::None && fmt != src[i].fmt)
      throw Unsupported("mixed data formats in " + opWhere(k));
    fmt = src[i].fmt;
  }
  if (fmt == Format::None)
    fmt = p_.out.fmt;
  const std::string &name = s_.fusedOps[k].opFuncName;
  if (fmt == Format::I32 && code != Opcode::Ld && !(isa::opInfo(code).formats & isa::FMT_I32))
    throw Unsupported("int32 " + name + " (no " + std::string(isa::opInfo(code).mnemonic) +
                      ".i32) in the fused kernel " + opWhere(k));
  if (code == Opcode::Sel && fmt != Format::DL16 && src[0].reg >= 0 && src[0].fmt != fmt)
    throw Unsupported("a where3 condition in another format than its values in " + opWhere(k));
  for (const char *param : {"clipMin", "clipMax", "softplusBeta", "softplusThresh", "geluTanh"})
    if (s_.constantArgs.count("op" + std::to_string(k) + "_" + param))
      throw Unsupported("constant '" + std::string(param) + "' as a runtime scalar argument in " + opWhere(k));
  return fmt;
}

void FusedOps::constants(size_t k, Format fmt, std::vector<FusedValue> &src) {
  const SdscComputeOp &op = s_.fusedOps[k];
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (op.inputs[i] != -1)
      continue;
    const int reg = constReg_.at({k, i});
    src[i] = {reg, fmt};
    if (!constSet_.insert({k, i}).second)
      continue;
    const std::string &name = op.inputConsts.at(i);
    PointwisePlan::Const c;
    c.value = static_cast<float>(s_.constants.at(name));
    auto a = s_.constantArgs.find(name);
    c.arg = a == s_.constantArgs.end() ? -1 : a->second;
    c.fmt = fmt;
    c.reg = reg;
    p_.fusedConsts.push_back(c);
  }
}

void FusedOps::retire(size_t k, FusedBodyState &st) {
  for (int ref : s_.fusedOps[k].inputs) {
    auto lu = st.lastUse.find(ref);
    if (ref != -1 && lu != st.lastUse.end() && lu->second == k && st.live.count(ref)) {
      regs.release(st.live[ref].reg);
      st.live.erase(ref);
    }
  }
}

FusedValue FusedOps::apply(size_t k, Opcode code, Format fmt, const std::vector<FusedValue> &src,
                           FusedBodyState &st, std::vector<Instr> &body) {
  // An identity (clone, expand) is its operand: no instruction, the same register.
  FusedValue result;
  if (code == Opcode::Ld) {
    result = src[0];
    regs.share(result.reg);
  }
  // Free the operands used for the last time (the result may reuse a source register).
  retire(k, st);
  if (code == Opcode::Ld)
    return result;
  result = {regs.take(), fmt};
  Instr in = vop(code, fmt, result.reg, src[0].reg, src.size() > 1 ? src[1].reg : -1,
                 src.size() > 2 ? src[2].reg : -1);
  if (code == Opcode::Softplus) {
    in.fimm = static_cast<float>(fusedConstant(s_, k, "softplusBeta", 1.0));
    in.fimm2 = static_cast<float>(fusedConstant(s_, k, "softplusThresh", 20.0));
  } else if (code == Opcode::Clip) {
    in.fimm = static_cast<float>(fusedConstant(s_, k, "clipMin", -INFINITY));
    in.fimm2 = static_cast<float>(fusedConstant(s_, k, "clipMax", INFINITY));
  } else if (code == Opcode::Gelu && fusedConstant(s_, k, "geluTanh", 0.0) == 0.0) {
    in.op = Opcode::GeluErf;
  }
  body.push_back(in);
  return result;
}

void FusedOps::store(size_t k, Opcode code, FusedValue result, std::vector<Instr> &body) const {
  const int64_t eps = elemsPerStick(p_.out.t->dataFormat);
  for (int o : s_.fusedOps[k].outputs) {
    const int ti = tensorIndex(o);
    if (ti < static_cast<int>(s_.inputs.size()))
      throw Error(w_ + ": computeOp_ " + std::to_string(k) + " writes a tensor that is not an output");
    const TensorGeom &g = geomOf(ti);
    if (g.fmt != result.fmt && !(isCompare(code) && elemsPerStick(g.t->dataFormat) == eps))
      throw Unsupported("fused result " + std::string(formatName(result.fmt)) + " stored as " +
                        std::string(formatName(g.fmt)) + " in " + opWhere(k));
    body.push_back(vst(g.fmt, result.reg, 10 + ti));
  }
}

void FusedOps::emitPointwise(size_t k, FusedBodyState &st, std::vector<Instr> &body, bool stores) {
  const Opcode code = opcode(k);
  const SdscComputeOp &op = s_.fusedOps[k];
  std::vector<FusedValue> src(op.inputs.size());
  for (size_t i = 0; i < op.inputs.size(); ++i)
    if (op.inputs[i] != -1)
      src[i] = operand(k, i, st, body);
  Format fmt = computeFormat(k, code, src);
  if (code == Opcode::Cvt) { // fp32toint32 / int32tofp32: cvt.<the result's format>, one geometry
    const bool toInt = op.opFuncName == "fp32toint32";
    const Format from = toInt ? Format::F32 : Format::I32;
    if (fmt != from)
      throw Error(w_ + ": " + opWhere(k) + " reads " + std::string(formatName(from)) + ", got " +
                  std::string(formatName(fmt)));
    fmt = toInt ? Format::I32 : Format::F32;
  }
  constants(k, fmt, src);
  const FusedValue result = apply(k, code, fmt, src, st, body);
  if (stores)
    store(k, code, result, body);
  const int ref = fusedResultRef(static_cast<int>(k));
  if (auto sc = st.scratchStore.find(ref); sc != st.scratchStore.end()) {
    if (result.fmt != p_.out.fmt) // one stick of the walk's format per stick of the row
      throw Unsupported("a " + std::string(formatName(result.fmt)) + " value kept in the row scratch of " + opWhere(k));
    body.push_back(vst(result.fmt, result.reg, PointwisePlan::kScratchReg, sc->second));
    st.scratch[ref] = {sc->second, result.fmt};
  }
  if (st.lastUse.count(ref))
    st.live[ref] = result;
  else
    regs.release(result.reg);
}

void checkFusedOperands(const SuperDsc &s, PointwisePlan &p) {
  FusedOps ops(s, p);
  // Last use of every value: an external input (by ldsIdx) and every op's result (by -2 - k).
  FusedBodyState st;
  for (size_t k = 0; k < s.fusedOps.size(); ++k)
    for (int in : s.fusedOps[k].inputs)
      if (in != -1)
        st.lastUse[in] = k;
  for (size_t k = 0; k < s.fusedOps.size(); ++k)
    ops.emitPointwise(k, st, p.fusedBody);
  p.computeFmt = p.out.fmt;
}

} // namespace spyre::backend::detail
