// ld, ld.pad, st (aligned sticks) and ldu, stu (element-aligned partial sticks).
#include "function_lowering.h"
#include "spyre/isa/semantics.h"

namespace spyre::jit {

using namespace llvm;
using isa::Format;
using isa::Instr;
using isa::Opcode;

void FunctionLowering::lowerLd(const Instr &in) {
  Value *p = lxAddr(in.lx);
  if (in.fmt == Format::DL16) {
    writeV(in.v[0], decode(b_.CreateAlignedLoad(vi16_, p, Align(2))));
  } else {
    writeV(in.v[0], widenF32(b_.CreateAlignedLoad(FixedVectorType::get(f32_, 32), p, Align(4))));
  }
}

void FunctionLowering::lowerSt(const Instr &in) {
  Value *p = lxAddr(in.lx);
  if (in.fmt == Format::DL16) { // every NaN encodes to the same code
    b_.CreateAlignedStore(encode(readNaNBlind(in.v[0])), p, Align(2));
  } else {
    b_.CreateAlignedStore(lowF32(readV(in.v[0])), p, Align(4));
  }
}

/// ld.pad: the plain load, then the lanes from n on (up to the format's stick width) take
/// the fill immediate rounded to the format — a select against a constant lane mask.
void FunctionLowering::lowerLdPad(const Instr &in) {
  lowerLd(in); // as `ld` (which writes no LX: nothing to invalidate)
  unsigned width = in.fmt == Format::DL16 ? kLanes : kLanes / 2;
  SmallVector<Constant *, 64> keep;
  for (unsigned l = 0; l < kLanes; ++l)
    keep.push_back(b_.getInt1(l < static_cast<uint64_t>(in.imm) || l >= width));
  Value *fill = ConstantVector::getSplat(ElementCount::getFixed(kLanes),
                                         ConstantFP::get(f32_, isa::roundTo(in.fmt, in.fimm)));
  writeV(in.v[0], b_.CreateSelect(ConstantVector::get(keep), readV(in.v[0]), fill));
}

void FunctionLowering::lowerLdu(const Instr &in) { lowerUnaligned(in); }
void FunctionLowering::lowerStu(const Instr &in) { lowerUnaligned(in); }

/// ldu / stu at every tier: a masked vector load / store of the first n elements at an
/// element-aligned address (the masked-off lanes of a load read as 0, which decodes to +0).
void FunctionLowering::lowerUnaligned(const Instr &in) {
  const bool dl16 = in.fmt == Format::DL16;
  auto *ty = dl16 ? vi16_ : FixedVectorType::get(f32_, 32);
  const unsigned width = dl16 ? kLanes : kLanes / 2;
  SmallVector<Constant *, 64> lanes;
  for (unsigned l = 0; l < width; ++l)
    lanes.push_back(b_.getInt1(l < static_cast<uint64_t>(in.imm)));
  Value *mask = ConstantVector::get(lanes), *p = lxAddr(in.lx);
  const Align align(dl16 ? 2 : 4);
  if (in.op == Opcode::Ldu) {
    Value *x = b_.CreateMaskedLoad(ty, p, align, mask, Constant::getNullValue(ty));
    writeV(in.v[0], dl16 ? decode(x) : widenF32(x));
    return;
  }
  Value *v = readV(in.v[0]);
  b_.CreateMaskedStore(dl16 ? encode(v) : lowF32(v), p, align, mask);
}

/// An fp32 stick (<32 x float>) in a register's lanes 0..31, lanes 32..63 zero; and back.
Value *FunctionLowering::widenF32(Value *stick) {
  SmallVector<int, 64> lanes;
  for (unsigned i = 0; i < kLanes; ++i)
    lanes.push_back(static_cast<int>(i));
  return b_.CreateShuffleVector(stick, Constant::getNullValue(stick->getType()), lanes);
}
Value *FunctionLowering::lowF32(Value *reg) {
  SmallVector<int, 32> lanes;
  for (unsigned i = 0; i < kLanes / 2; ++i)
    lanes.push_back(static_cast<int>(i));
  return b_.CreateShuffleVector(reg, lanes);
}

} // namespace spyre::jit
