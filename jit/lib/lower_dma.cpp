// dma.in, dma.mc and dma.out: the affine row copies between DDR and LX as memcpy loops.
#include "function_lowering.h"
#include "spyre/sim/machine.h"
#include <array>

namespace spyre::jit {

using namespace llvm;
using isa::Format;
using isa::Instr;
using isa::Opcode;

void FunctionLowering::lowerDmaIn(const Instr &in) { lowerDma(in, true); }
// Every cohort member copies (the verifier checks that they copy the same).
void FunctionLowering::lowerDmaMc(const Instr &in) { lowerDma(in, true); }
void FunctionLowering::lowerDmaOut(const Instr &in) { lowerDma(in, false); }

// dma.gather and dma.scatter call the simulator's shared semantics at every tier
// (simulator/lib/ring.cpp): the index values are data, so each is bounds-checked at run time and
// a bad one is a device fault reported through the core's port. The shape is a constant global
// (sim::GatherShape).
void FunctionLowering::lowerIndexedDma(const Instr &in, const char *fnName) {
  static_assert(sizeof(sim::GatherShape) == 11 * sizeof(int64_t));
  const auto &d = in.dma;
  const std::array<int64_t, 11> shape{in.imm,       in.imms[0],      in.imms[1],      in.imms[2],
                                      d.n[0],       d.n[1],          d.n[2] * 128,    d.lxStride[0],
                                      d.lxStride[1], d.ddrStride[0], d.ddrStride[1]};
  std::vector<Constant *> elems;
  for (int64_t v : shape)
    elems.push_back(b_.getInt64(static_cast<uint64_t>(v)));
  auto *ty = ArrayType::get(i64_, shape.size());
  auto *g = new GlobalVariable(m_, ty, true, GlobalValue::PrivateLinkage, ConstantArray::get(ty, elems),
                               "gather.shape");
  Value *port = b_.CreateLoad(ptr_, b_.CreateConstInBoundsGEP1_64(i8_, core_, offsetof(sim::CoreState, ring)));
  Value *argBase = b_.CreateLoad(i64_, b_.CreateConstInBoundsGEP1_64(i64_, argBase_, in.ddr.arg));
  Value *table = b_.CreateGEP(i8_, ddr_, b_.CreateAdd(b_.CreateAdd(argBase, readS(in.ddr.base)),
                                                      b_.getInt64(static_cast<uint64_t>(in.ddr.offset))));
  FunctionCallee fn =
      m_.getOrInsertFunction(fnName, FunctionType::get(b_.getVoidTy(), {ptr_, ptr_, ptr_, ptr_, ptr_}, false));
  if (in.op == isa::Opcode::DmaGather)
    b_.CreateCall(fn, {port, lxAddr(in.lx), lxAddr(in.lx2), table, g});
  else
    b_.CreateCall(fn, {port, table, lxAddr(in.lx), lxAddr(in.lx2), g});
}
void FunctionLowering::lowerDmaGather(const Instr &in) { lowerIndexedDma(in, "spyre_dma_gather"); }
void FunctionLowering::lowerDmaScatter(const Instr &in) { lowerIndexedDma(in, "spyre_dma_scatter"); }

void FunctionLowering::lowerDma(const Instr &in, bool toLx) {
  const auto &d = in.dma;
  Value *argBase = b_.CreateLoad(i64_, b_.CreateConstInBoundsGEP1_64(i64_, argBase_, in.ddr.arg));
  Value *ddrOff = b_.CreateAdd(b_.CreateAdd(argBase, readS(in.ddr.base)), b_.getInt64(in.ddr.offset));
  uint64_t run = d.n[2] * 128;
  countedLoop(d.n[0], "dma2", [&](Value *i2) {
    countedLoop(d.n[1], "dma1", [&](Value *i1) {
      Value *lo = b_.CreateAdd(b_.CreateMul(i2, b_.getInt64(d.lxStride[0])),
                               b_.CreateMul(i1, b_.getInt64(d.lxStride[1])));
      Value *dd = b_.CreateAdd(ddrOff, b_.CreateAdd(b_.CreateMul(i2, b_.getInt64(d.ddrStride[0])),
                                                    b_.CreateMul(i1, b_.getInt64(d.ddrStride[1]))));
      Value *lxp = lxAddr(in.lx, lo);
      Value *ddrp = b_.CreateGEP(i8_, ddr_, dd);
      // LX rows are 128-byte aligned (verified); DDR rows may start anywhere.
      if (toLx)
        b_.CreateMemCpy(lxp, Align(128), ddrp, Align(1), run);
      else
        b_.CreateMemCpy(ddrp, Align(1), lxp, Align(128), run);
    });
  });
}

} // namespace spyre::jit
