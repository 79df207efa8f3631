// dma.in, dma.mc and dma.out: the affine row copies between DDR and LX as memcpy loops.
#include "function_lowering.h"

namespace spyre::jit {

using namespace llvm;
using isa::Format;
using isa::Instr;
using isa::Opcode;

void FunctionLowering::lowerDmaIn(const Instr &in) { lowerDma(in, true); }
// Every cohort member copies (the verifier checks that they copy the same).
void FunctionLowering::lowerDmaMc(const Instr &in) { lowerDma(in, true); }
void FunctionLowering::lowerDmaOut(const Instr &in) { lowerDma(in, false); }

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
