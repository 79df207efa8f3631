// The O0 tier: ld/st/ld.pad, SFP, DMA and PT instructions call the shared implementations
// (runtime_helpers.cpp, spyre_sfp_apply), vector registers stay in CoreState.
#include "function_lowering.h"
#include "spyre/isa/semantics.h"

namespace spyre::jit {

using namespace llvm;
using isa::Format;
using isa::Instr;
using isa::Opcode;

bool FunctionLowering::lowerOutOfLineOp(const Instr &in) {
  if (lowerCall(in))
    return true;
  if (in.op == Opcode::Ld || in.op == Opcode::St || isa::isSfp(in.op)) {
    lowerOutOfLine(in);
    return true;
  }
  return false;
}

Value *FunctionLowering::vregArg(int v) {
  return v < 0 ? static_cast<Value *>(ConstantPointerNull::get(PointerType::getUnqual(ctx_))) : vregPtr(b_, v);
}
/// Out-of-line ld/st/SFP: the calls the interpreter makes, on the registers in CoreState.
void FunctionLowering::lowerOutOfLine(const Instr &in) {
  if (in.op == Opcode::Ld || in.op == Opcode::St) {
    FunctionCallee fn = m_.getOrInsertFunction(in.op == Opcode::Ld ? "spyre_jit_ld" : "spyre_jit_st",
                                               FunctionType::get(b_.getVoidTy(), {i32_, ptr_, ptr_}, false));
    b_.CreateCall(fn, {b_.getInt32(static_cast<uint32_t>(in.fmt)), vregArg(in.v[0]), lxAddr(in.lx)});
    return;
  }
  FunctionCallee fn = m_.getOrInsertFunction(
      "spyre_sfp_apply", FunctionType::get(b_.getVoidTy(), {i32_, i32_, ptr_, ptr_, ptr_, ptr_, ptr_, f32_, f32_}, false));
  Value *nul = vregArg(-1);
  std::vector<Value *> args{b_.getInt32(static_cast<uint32_t>(in.op)), b_.getInt32(static_cast<uint32_t>(in.fmt))};
  if (in.op == Opcode::Widen || in.op == Opcode::Unpack) {
    args.insert(args.end(), {vregArg(in.v[0]), vregArg(in.v[1]), vregArg(in.v[2]), nul, nul});
    args.insert(args.end(), {ConstantFP::get(f32_, 0.0f), ConstantFP::get(f32_, 0.0f)});
  } else {
    // An integer operand (a lane number) travels in the first float immediate.
    bool intImm = isa::opInfo(in.op).operands.find('I') != std::string_view::npos;
    float i0 = intImm ? static_cast<float>(in.imm) : in.fimm;
    args.insert(args.end(), {vregArg(in.v[0]), nul, vregArg(in.v[1]), vregArg(in.v[2]), vregArg(in.v[3])});
    args.insert(args.end(), {ConstantFP::get(f32_, i0), ConstantFP::get(f32_, in.fimm2)});
  }
  b_.CreateCall(fn, args);
}

FunctionCallee FunctionLowering::helper(const char *name, std::vector<Type *> args) {
  return m_.getOrInsertFunction(name, FunctionType::get(b_.getVoidTy(), args, false));
}
/// The O0 tier's one-call lowerings of ld.pad, pt.mm and pt.out (runtime_helpers.cpp; DMA and
/// pt.tr are such calls at every tier, lowerDma and lowerPtTr).
bool FunctionLowering::lowerCall(const Instr &in) {
  auto i64c = [&](int64_t v) { return b_.getInt64(static_cast<uint64_t>(v)); };
  switch (in.op) {
  case Opcode::LdPad:
    b_.CreateCall(helper("spyre_jit_ld_pad", {i32_, ptr_, ptr_, i64_, f32_}),
                  {b_.getInt32(static_cast<uint32_t>(in.fmt)), vregPtr(b_, in.v[0]), lxAddr(in.lx), i64c(in.imm),
                   ConstantFP::get(f32_, isa::roundTo(in.fmt, in.fimm))});
    return true;
  case Opcode::PtMm:
    b_.CreateCall(helper("spyre_jit_pt_mm", {ptr_, ptr_, ptr_, i64_, i64_, i64_, i32_}),
                  {lxAddr(in.lx), lxAddr(in.lx2), lxAddr(in.lx3), i64c(in.imm), i64c(in.imms[0]), i64c(in.imms[1]),
                   b_.getInt32(in.imms[2] != 0 ? 1 : 0)});
    return true;
  case Opcode::PtOut:
    b_.CreateCall(helper("spyre_jit_pt_out", {ptr_, ptr_, i64_, i64_}),
                  {lxAddr(in.lx), lxAddr(in.lx2), i64c(in.imm), i64c(in.imms[0])});
    return true;
  default: return false;
  }
}

} // namespace spyre::jit
