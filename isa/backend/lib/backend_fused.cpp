// Fused pointwise kernels (our SuperDSC extension, docs/superdsc.md §6.9): computeOp_ lists
// several pointwise ops over one iteration space; the kernel is the pointwise walk of
// backend_pointwise.cpp with one body per output stick that loads each external input once,
// applies the ops in registers and stores each output. Every SFP result is already rounded to
// its format (semantics.h roundTo), which is exactly what a store and a reload would give, so
// the fused kernel computes the unfused chain's values bit for bit.
#include "lowerings.h"
#include "pointwise_plan.h"
#include <map>

namespace spyre::backend::detail {
namespace {

bool isCompare(Opcode op) {
  return op == Opcode::Eq || op == Opcode::Ne || op == Opcode::Lt || op == Opcode::Le || op == Opcode::Gt ||
         op == Opcode::Ge;
}

/// Register allocation over v0..v15, reference counted (an identity shares its operand's
/// register): a register is free again after the last use of every value in it.
class Registers {
public:
  explicit Registers(const SuperDsc &s) : s_(s) {}
  int take() {
    for (int r = 0; r < 16; ++r)
      if (users_[r] == 0) {
        users_[r] = 1;
        return r;
      }
    throw Unsupported("fused kernel " + s_.name + " needs more than 16 vector registers");
  }
  void share(int r) { ++users_[r]; }
  void release(int r) { --users_[r]; }

private:
  const SuperDsc &s_;
  int users_[16] = {};
};

/// A value of the body: its register and format.
struct Reg {
  int reg = -1;
  Format fmt = Format::None;
};

double fusedConstant(const SuperDsc &s, size_t k, const std::string &name, double dflt) {
  auto it = s.constants.find("op" + std::to_string(k) + "_" + name);
  return it == s.constants.end() ? dflt : it->second;
}

} // namespace

void checkFusedOperands(const SuperDsc &s, PointwisePlan &p) {
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
  // Outputs: the full iteration space, all in the first output's layout.
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
  std::map<int, int> tensorIndex; // ldsIdx -> index among the walk's tensors (r10 + index)
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

  // Last use of every value: an external input (by ldsIdx) and every op's result (by -2 - k).
  std::map<int, size_t> lastUse;
  for (size_t k = 0; k < s.fusedOps.size(); ++k)
    for (int in : s.fusedOps[k].inputs)
      if (in != -1)
        lastUse[in] = k;
  Registers regs(s);
  // Constants hold their register for the whole kernel (set once, before the walk).
  std::map<std::pair<size_t, size_t>, int> constReg; // (op, operand) -> register
  for (size_t k = 0; k < s.fusedOps.size(); ++k)
    for (size_t i = 0; i < s.fusedOps[k].inputs.size(); ++i)
      if (s.fusedOps[k].inputs[i] == -1)
        constReg[{k, i}] = regs.take();
  std::map<int, Reg> live; // ldsIdx or result ref -> register
  const bool splatStick = s.N[s.dimIndex(p.stickDim)] > 1;
  for (size_t k = 0; k < s.fusedOps.size(); ++k) {
    const SdscComputeOp &op = s.fusedOps[k];
    const std::string opWhere = s.name + " (computeOp_ " + std::to_string(k) + ", " + op.opFuncName + ")";
    const isa::OpFuncInfo *f = isa::findOpFunc(op.opFuncName);
    if (!f || f->cls != isa::OpClass::Pointwise || !f->sfpOp || op.opFuncName == "layernormscale" ||
        op.opFuncName == "layernormnorm" || op.opFuncName == "ReStickifyOpHBM" || *f->sfpOp == Opcode::Cvt)
      throw Unsupported("op '" + op.opFuncName + "' in the fused kernel " + opWhere);
    if (static_cast<int>(op.inputs.size()) != f->arity)
      throw Error(w + ": computeOp_ " + std::to_string(k) + " (" + op.opFuncName + ") expects " +
                  std::to_string(f->arity) + " input(s), got " + std::to_string(op.inputs.size()));
    const Opcode code = *f->sfpOp;
    // Operand values: load an external input on its first use (splatting a broadcast stick).
    std::vector<Reg> src(op.inputs.size());
    Format computeFmt = Format::None;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const int ref = op.inputs[i];
      if (ref == -1)
        continue;
      if (ref <= -2 && fusedResultIndex(ref) >= static_cast<int>(k))
        throw Error(w + ": computeOp_ " + std::to_string(k) + " reads the result of a later op");
      if (!live.count(ref)) {
        if (ref <= -2 || !tensorIndex.count(ref) || tensorIndex[ref] >= static_cast<int>(s.inputs.size()))
          throw Error(w + ": computeOp_ " + std::to_string(k) + " reads an operand that is not an input");
        const PwInput &in = p.ins[tensorIndex[ref]];
        Reg r{regs.take(), in.g.fmt};
        p.fusedBody.push_back(vld(in.g.fmt, r.reg, 10 + tensorIndex[ref]));
        if (!in.g.stickPresent && splatStick)
          p.fusedBody.push_back(vop(Opcode::Splat, in.g.fmt, r.reg, r.reg));
        live[ref] = r;
      }
      src[i] = live[ref];
      if (!(code == Opcode::Sel && i == 0)) {
        if (computeFmt != Format::None && computeFmt != src[i].fmt)
          throw Unsupported("mixed data formats in " + opWhere);
        computeFmt = src[i].fmt;
      }
    }
    if (computeFmt == Format::None)
      computeFmt = p.out.fmt;
    if (computeFmt == Format::I32 && code != Opcode::Ld && !(isa::opInfo(code).formats & isa::FMT_I32))
      throw Unsupported("int32 " + op.opFuncName + " (no " + std::string(isa::opInfo(code).mnemonic) +
                        ".i32) in the fused kernel " + opWhere);
    if (code == Opcode::Sel && computeFmt != Format::DL16 && src[0].reg >= 0 && src[0].fmt != computeFmt)
      throw Unsupported("a where3 condition in another format than its values in " + opWhere);
    // Constants: a register each, set once before the walk.
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (op.inputs[i] != -1)
        continue;
      const std::string &name = op.inputConsts.at(i);
      PointwisePlan::Const c;
      c.value = static_cast<float>(s.constants.at(name));
      auto a = s.constantArgs.find(name);
      c.arg = a == s.constantArgs.end() ? -1 : a->second;
      c.fmt = computeFmt;
      c.reg = constReg.at({k, i});
      p.fusedConsts.push_back(c);
      src[i] = {c.reg, computeFmt};
    }
    for (const char *param : {"clipMin", "clipMax", "softplusBeta", "softplusThresh", "geluTanh"})
      if (s.constantArgs.count("op" + std::to_string(k) + "_" + param))
        throw Unsupported("constant '" + std::string(param) + "' as a runtime scalar argument in " + opWhere);
    // An identity (clone, expand) is its operand: no instruction, the same register.
    Reg result;
    if (code == Opcode::Ld) {
      result = src[0];
      regs.share(result.reg);
    }
    // Free the operands used for the last time (the result may reuse a source register).
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const int ref = op.inputs[i];
      if (ref != -1 && lastUse[ref] == k && live.count(ref)) {
        regs.release(live[ref].reg);
        live.erase(ref);
      }
    }
    if (code != Opcode::Ld) {
      result = {regs.take(), computeFmt};
      Instr in = vop(code, computeFmt, result.reg, src[0].reg, src.size() > 1 ? src[1].reg : -1,
                     src.size() > 2 ? src[2].reg : -1);
      if (code == Opcode::Softplus) {
        in.fimm = static_cast<float>(fusedConstant(s, k, "softplusBeta", 1.0));
        in.fimm2 = static_cast<float>(fusedConstant(s, k, "softplusThresh", 20.0));
      } else if (code == Opcode::Clip) {
        in.fimm = static_cast<float>(fusedConstant(s, k, "clipMin", -INFINITY));
        in.fimm2 = static_cast<float>(fusedConstant(s, k, "clipMax", INFINITY));
      } else if (code == Opcode::Gelu && fusedConstant(s, k, "geluTanh", 0.0) == 0.0) {
        in.op = Opcode::GeluErf;
      }
      p.fusedBody.push_back(in);
    }
    for (int o : op.outputs) {
      if (!tensorIndex.count(o) || tensorIndex[o] < static_cast<int>(s.inputs.size()))
        throw Error(w + ": computeOp_ " + std::to_string(k) + " writes a tensor that is not an output");
      const TensorGeom &g = *(tensorIndex[o] == static_cast<int>(s.inputs.size())
                                  ? &p.out
                                  : &p.moreOuts[tensorIndex[o] - s.inputs.size() - 1]);
      if (g.fmt != result.fmt && !(isCompare(code) && elemsPerStick(g.t->dataFormat) == eps))
        throw Unsupported("fused result " + std::string(formatName(result.fmt)) + " stored as " +
                          std::string(formatName(g.fmt)) + " in " + opWhere);
      p.fusedBody.push_back(vst(g.fmt, result.reg, 10 + tensorIndex[o]));
    }
    const int ref = fusedResultRef(static_cast<int>(k));
    if (lastUse.count(ref))
      live[ref] = result;
    else
      regs.release(result.reg);
  }
  p.computeFmt = p.out.fmt;
}

} // namespace spyre::backend::detail
