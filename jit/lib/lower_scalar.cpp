// li, addi, muli, tbl and loop; a loop nest that occurs more than once compiles to one shared
// function (SharedLoops).
#include "function_lowering.h"

namespace spyre::jit {

using namespace llvm;
using isa::Format;
using isa::Instr;
using isa::Opcode;

void FunctionLowering::lowerLi(const Instr &in) {
  size_t n = liCount_++;
  if (n < liTables_.size() && liTables_[n])
    writeS(in.r[0], perCoreValue(*liTables_[n], ".li"));
  else
    writeS(in.r[0], imm(in.imm));
}
void FunctionLowering::lowerAddi(const Instr &in) { writeS(in.r[0], b_.CreateAdd(readS(in.r[1]), imm(in.imm))); }
void FunctionLowering::lowerMuli(const Instr &in) { writeS(in.r[0], b_.CreateMul(readS(in.r[1]), imm(in.imm))); }
void FunctionLowering::lowerTbl(const Instr &in) { writeS(in.r[0], perCoreValue(in.table, ".tbl")); }

void FunctionLowering::lowerLoop(const Instr &in) {
  if (lowerGenericNest(in) || lowerSharedLoop(in))
    return;
  ++loopDepth_;
  countedLoop(imm(in.imm), "loop", [&](Value *) {
    for (const auto &b : in.body)
      lowerInstr(b);
  });
  --loopDepth_;
}

/// A private constant table indexed by the core id (r0), as `tbl` reads it.
Value *FunctionLowering::perCoreValue(const std::vector<int64_t> &table, const char *what) {
  std::vector<Constant *> vals;
  for (int64_t v : table)
    vals.push_back(b_.getInt64(static_cast<uint64_t>(v)));
  auto *ty = ArrayType::get(i64_, vals.size());
  auto *g = new GlobalVariable(m_, ty, true, GlobalValue::PrivateLinkage, ConstantArray::get(ty, vals),
                               f_->getName() + what + std::to_string(tblCount_++));
  return b_.CreateLoad(i64_, b_.CreateInBoundsGEP(ty, g, {b_.getInt64(0), readS(0)}));
}

/// A top-level loop nest that occurs more than once: a call of its shared function. The
/// registers this function holds go to CoreState before the call and come back after it.
bool FunctionLowering::lowerSharedLoop(const Instr &in) {
  if (!sharedLoops_ || loopDepth_ > 0 || outOfLine_)
    return false;
  auto it = sharedLoops_->fns.find(in);
  if (it == sharedLoops_->fns.end())
    return false;
  if (!it->second) {
    Function *fn = Function::Create(f_->getFunctionType(), Function::InternalLinkage,
                                    f_->getName() + ".loop" + std::to_string(sharedLoops_->fns.size()), &m_);
    fn->addFnAttr(Attribute::NoUnwind);
    fn->addFnAttr(Attribute::NoInline);
    for (unsigned a = 0; a < 3; ++a)
      fn->addParamAttr(a, Attribute::NoAlias);
    static const LiTables noLiTables;
    const LowerOptions opts{.shareDecodedB = shareDecodedB_, .tinyMRows = tinyMRows_};
    FunctionLowering(m_, k_, prog_, fn, opts, noLiTables, nullptr).lower(ArrayRef<Instr>(in));
    it->second = fn;
  }
  storeWrittenRegisters();
  b_.CreateCall(it->second, {core_, ddr_, argBase_});
  reloadRegistersAfterCall();
  return true;
}

/// A top-level loop nest of a phase function that has a generic nest (generic_nests.h): a call
/// of the nest's function (another object, from the code cache or compiled on its own) with a
/// constant table of this use's erased immediates. Registers go through CoreState as for a
/// shared loop; the nest's `li`s count towards this phase's li ordinals.
bool FunctionLowering::lowerGenericNest(const Instr &in) {
  if (!genericNests_ || loopDepth_ > 0 || outOfLine_)
    return false;
  auto it = genericNests_->find(&in);
  if (it == genericNests_->end())
    return false;
  const NestUse &use = it->second;
  std::vector<Constant *> vals;
  for (int64_t v : use.params)
    vals.push_back(b_.getInt64(static_cast<uint64_t>(v)));
  auto *ty = ArrayType::get(i64_, vals.size());
  auto *table = new GlobalVariable(m_, ty, true, GlobalValue::PrivateLinkage, ConstantArray::get(ty, vals),
                                   f_->getName() + ".gn" + std::to_string(tblCount_++));
  auto *fty = FunctionType::get(b_.getVoidTy(), {ptr_, ptr_, ptr_, ptr_}, false);
  FunctionCallee fn = m_.getOrInsertFunction(use.symbol(), fty);
  liCount_ += static_cast<size_t>(use.liCount);
  storeWrittenRegisters();
  b_.CreateCall(fn, {core_, ddr_, argBase_, table});
  reloadRegistersAfterCall();
  return true;
}

void FunctionLowering::reloadRegistersAfterCall() {
  for (int i = 1; i < isa::kNumSRegs; ++i) {
    Value *v = b_.CreateLoad(i64_, sregPtr(b_, i));
    b_.CreateStore(v, sregSlot(i));
    sCur_[i] = {v, b_.GetInsertBlock()};
  }
  for (int i = 0; i < isa::kNumVRegs; ++i) {
    Value *v = b_.CreateAlignedLoad(vf_, vregPtr(b_, i), Align(64));
    setV(i, v, v);
  }
  if (bHi_) // the nest may have written LX
    b_.CreateStore(b_.getInt64(0), bHi_);
}

} // namespace spyre::jit
