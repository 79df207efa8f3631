// The SFP vector ops as vector IR: the same fp32 operations as isa::sfpApply (isa/lib/sfp.cpp),
// so results are bit-identical; log, sin, cos, tan and softplus call the shared implementation
// (they use the host libm).
#include "function_lowering.h"
#include "lowering.h"
#include "unary_tables.h"
#include "spyre/isa/semantics.h"
#include <cmath>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/TargetParser/Host.h>

namespace spyre::jit {

using namespace llvm;
using isa::Format;
using isa::Instr;
using isa::Opcode;

void FunctionLowering::lowerBcast(const Instr &in) { writeV(in.v[0], fsplat(isa::roundTo(in.fmt, in.fimm))); }

void FunctionLowering::lowerSplat(const Instr &in) {
  SmallVector<int, 64> mask(kLanes, static_cast<int>(in.imm & (kLanes - 1)));
  writeV(in.v[0], b_.CreateShuffleVector(readV(in.v[1]), mask));
}

void FunctionLowering::lowerIota(const Instr &in) {
  std::vector<Constant *> lanes;
  for (unsigned i = 0; i < kLanes; ++i)
    lanes.push_back(in.fmt == Format::I32 ? ConstantInt::get(i32_, i) : ConstantFP::get(f32_, static_cast<float>(i)));
  Value *v = ConstantVector::get(lanes);
  writeV(in.v[0], in.fmt == Format::I32 ? asFloat(v) : v);
}

// scan: a sequential lane-order prefix sum; the shared implementation (bit-identical).
void FunctionLowering::lowerScan(const Instr &in) { callSfp(in, in.v[0], -1, in.v[1], in.v[2], in.v[3]); }

void FunctionLowering::lowerWiden(const Instr &in) {
  Value *a = readV(in.v[2]);
  SmallVector<int, 64> even, odd;
  for (unsigned i = 0; i < kLanes; ++i) {
    even.push_back(i < kLanes / 2 ? 2 * i : kLanes);
    odd.push_back(i < kLanes / 2 ? 2 * i + 1 : kLanes);
  }
  Value *zero = Constant::getNullValue(vf_);
  Value *e = b_.CreateShuffleVector(a, zero, even), *o = b_.CreateShuffleVector(a, zero, odd);
  writeV(in.v[0], e);
  writeV(in.v[1], o);
}

void FunctionLowering::lowerUnpack(const Instr &in) {
  Value *a = readV(in.v[2]), *zero = Constant::getNullValue(vf_);
  SmallVector<int, 64> lo, hi;
  for (unsigned i = 0; i < kLanes; ++i) {
    lo.push_back(i < kLanes / 2 ? i : kLanes);
    hi.push_back(i < kLanes / 2 ? kLanes / 2 + i : kLanes);
  }
  Value *l = b_.CreateShuffleVector(a, zero, lo), *h = b_.CreateShuffleVector(a, zero, hi);
  writeV(in.v[0], l);
  writeV(in.v[1], h);
}

void FunctionLowering::lowerPack(const Instr &in) {
  auto V = [&](int i) { return readV(in.v[i]); };
  Value *ra = roundTo(Format::DL16, V(1)), *rb = roundTo(Format::DL16, V(2));
  SmallVector<int, 64> mask;
  for (unsigned i = 0; i < kLanes; ++i)
    mask.push_back(i < kLanes / 2 ? i : kLanes + i - kLanes / 2);
  writeV(in.v[0], b_.CreateShuffleVector(ra, rb, mask));
}

void FunctionLowering::lowerNarrow(const Instr &in) {
  auto V = [&](int i) { return readV(in.v[i]); };
  Value *ra = roundTo(Format::DL16, V(1)), *rb = roundTo(Format::DL16, V(2));
  SmallVector<int, 64> mask;
  for (unsigned i = 0; i < kLanes / 2; ++i) {
    mask.push_back(i);
    mask.push_back(kLanes + i);
  }
  writeV(in.v[0], b_.CreateShuffleVector(ra, rb, mask));
}

void FunctionLowering::lowerCvt(const Instr &in) {
  auto V = [&](int i) { return readV(in.v[i]); };
  if (in.fmt == Format::I32)
    writeV(in.v[0], asFloat(intrinsic(Intrinsic::fptosi_sat, {V(1)}, {vi32_, vf_})));
  else
    writeV(in.v[0], b_.CreateSIToFP(asInt(V(1)), vf_));
}

void FunctionLowering::lowerSel(const Instr &in) {
  auto V = [&](int i) { return readV(in.v[i]); };
  Value *m = V(1);
  Value *cond = in.fmt == Format::I32 ? b_.CreateICmpNE(asInt(m), splat(0)) : b_.CreateFCmpUNE(m, fsplat(0.0f));
  writeV(in.v[0], b_.CreateSelect(cond, V(2), V(3)));
}

void FunctionLowering::lowerFma(const Instr &in) {
  auto V = [&](int i) { return readNaNBlind(in.v[i]); };
  writeV(in.v[0], roundTo(in.fmt, intrinsic(Intrinsic::fma, {V(1), V(2), V(3)}, {vf_})));
}

// Compares: 1.0 where the IEEE predicate holds, else 0.0; i32: signed, int32 1 / 0.
void FunctionLowering::lowerCompare(const Instr &in, CmpInst::Predicate fp, CmpInst::Predicate ip) {
  Value *a = readV(in.v[1]), *b = readV(in.v[2]);
  if (in.fmt == Format::I32)
    writeV(in.v[0], asFloat(b_.CreateSelect(b_.CreateICmp(ip, asInt(a), asInt(b)), splat(1), splat(0))));
  else
    writeV(in.v[0], select01(b_.CreateFCmp(fp, a, b)));
}
void FunctionLowering::lowerEq(const Instr &in) { lowerCompare(in, CmpInst::FCMP_OEQ, CmpInst::ICMP_EQ); }
void FunctionLowering::lowerNe(const Instr &in) { lowerCompare(in, CmpInst::FCMP_UNE, CmpInst::ICMP_NE); }
void FunctionLowering::lowerLt(const Instr &in) { lowerCompare(in, CmpInst::FCMP_OLT, CmpInst::ICMP_SLT); }
void FunctionLowering::lowerLe(const Instr &in) { lowerCompare(in, CmpInst::FCMP_OLE, CmpInst::ICMP_SLE); }
void FunctionLowering::lowerGt(const Instr &in) { lowerCompare(in, CmpInst::FCMP_OGT, CmpInst::ICMP_SGT); }
void FunctionLowering::lowerGe(const Instr &in) { lowerCompare(in, CmpInst::FCMP_OGE, CmpInst::ICMP_SGE); }

// The binary arithmetic ops share one lowering (i32 lanes wrap; fp results are rounded).
void FunctionLowering::lowerAdd(const Instr &in) { lowerSfpBinary(in); }
void FunctionLowering::lowerSub(const Instr &in) { lowerSfpBinary(in); }
void FunctionLowering::lowerMul(const Instr &in) { lowerSfpBinary(in); }
void FunctionLowering::lowerDiv(const Instr &in) { lowerSfpBinary(in); }
void FunctionLowering::lowerMax(const Instr &in) { lowerSfpBinary(in); }
void FunctionLowering::lowerMin(const Instr &in) { lowerSfpBinary(in); }
void FunctionLowering::lowerAnd(const Instr &in) { lowerSfpBinary(in); }
void FunctionLowering::lowerOr(const Instr &in) { lowerSfpBinary(in); }
void FunctionLowering::lowerXor(const Instr &in) { lowerSfpBinary(in); }

void FunctionLowering::lowerSfpBinary(const Instr &in) {
  auto V = [&](int i) { return readV(in.v[i]); };
  if (in.fmt == Format::I32 && in.op != Opcode::Div) {
    Value *a = asInt(V(1)), *b = asInt(V(2)), *r;
    switch (in.op) {
    case Opcode::Add: r = b_.CreateAdd(a, b); break;
    case Opcode::Sub: r = b_.CreateSub(a, b); break;
    case Opcode::Mul: r = b_.CreateMul(a, b); break;
    case Opcode::Max: r = b_.CreateSelect(b_.CreateICmpSGT(a, b), a, b); break;
    case Opcode::And: r = b_.CreateAnd(a, b); break;
    case Opcode::Or: r = b_.CreateOr(a, b); break;
    case Opcode::Xor: r = b_.CreateXor(a, b); break;
    default: r = b_.CreateSelect(b_.CreateICmpSLT(a, b), a, b); break;
    }
    writeV(in.v[0], asFloat(r));
    return;
  }
  // Rounded to the format below: a NaN operand's payload does not matter.
  Value *a = readNaNBlind(in.v[1]), *b = readNaNBlind(in.v[2]), *r;
  switch (in.op) {
  case Opcode::Add: r = b_.CreateFAdd(a, b); break;
  case Opcode::Sub: r = b_.CreateFSub(a, b); break;
  case Opcode::Mul: r = b_.CreateFMul(a, b); break;
  case Opcode::Div:
    // DL16 / DL16 rounded to DL16 equals DL16 · fl(1/DL16) rounded to DL16 for every pair of
    // DL16 values (Dl16Codec.QuotientOfDl16ValuesIsTheProductWithTheReciprocal: the rounding
    // depends on the 10-bit significands only, all 512 x 512 pairs and every special value
    // checked), and a loop-invariant divisor's reciprocal is hoisted: softmax's row division.
    r = in.fmt == Format::DL16 && dl16Operand(in, 1, a) && dl16Operand(in, 2, b)
            ? b_.CreateFMul(a, b_.CreateFDiv(fsplat(1.0f), b))
            : b_.CreateFDiv(a, b);
    break;
  case Opcode::Max: r = nanMaxMin(a, b, true); break;
  default: r = nanMaxMin(a, b, false); break;
  }
  writeV(in.v[0], roundTo(in.fmt, r));
}

void FunctionLowering::lowerNeg(const Instr &in) {
  if (in.fmt == Format::I32)
    writeV(in.v[0], asFloat(b_.CreateSub(splat(0), asInt(readV(in.v[1])))));
  else
    writeV(in.v[0], roundTo(in.fmt, b_.CreateFNeg(readNaNBlind(in.v[1]))));
}
void FunctionLowering::lowerAbs(const Instr &in) {
  if (in.fmt == Format::I32) {
    Value *a = asInt(readV(in.v[1]));
    writeV(in.v[0], asFloat(b_.CreateSelect(b_.CreateICmpSLT(a, splat(0)), b_.CreateSub(splat(0), a), a)));
    return;
  }
  writeV(in.v[0], roundTo(in.fmt, asFloat(b_.CreateAnd(asInt(readNaNBlind(in.v[1])), splat(0x7FFFFFFF)))));
}
void FunctionLowering::lowerRelu(const Instr &in) {
  Value *a = readNaNBlind(in.v[1]), *zero = Constant::getNullValue(vf_);
  // Unordered-or-greater: NaN lanes keep their NaN (torch's relu), as sfp.cpp.
  writeV(in.v[0], roundTo(in.fmt, b_.CreateSelect(b_.CreateFCmpUGT(a, zero), a, zero)));
}
void FunctionLowering::lowerFloor(const Instr &in) {
  writeV(in.v[0], roundTo(in.fmt, intrinsic(Intrinsic::floor, {readV(in.v[1])}, {vf_})));
}
void FunctionLowering::lowerSqrt(const Instr &in) {
  writeV(in.v[0], roundTo(in.fmt, intrinsic(Intrinsic::sqrt, {readNaNBlind(in.v[1])}, {vf_})));
}
void FunctionLowering::lowerRsqrt(const Instr &in) {
  writeV(in.v[0],
         roundTo(in.fmt, b_.CreateFDiv(fsplat(1.0f), intrinsic(Intrinsic::sqrt, {readNaNBlind(in.v[1])}, {vf_}))));
}
void FunctionLowering::lowerRecip(const Instr &in) {
  writeV(in.v[0], roundTo(in.fmt, b_.CreateFDiv(fsplat(1.0f), readNaNBlind(in.v[1]))));
}
void FunctionLowering::lowerClip(const Instr &in) {
  Value *r = nanMaxMin(nanMaxMin(readV(in.v[1]), fsplat(in.fimm), true), fsplat(in.fimm2), false);
  writeV(in.v[0], roundTo(in.fmt, r));
}
// exp, sigmoid, silu of a DL16 value into DL16 (the common case: softmax's exp(x - max) of a
// rounded difference) are one table lookup (unaryByTable); otherwise the fp32 computation.
void FunctionLowering::lowerExp(const Instr &in) {
  Value *a = readV(in.v[1]);
  if (in.fmt == Format::DL16 && dl16Operand(in, 1, a))
    return writeV(in.v[0], unaryByTable(Opcode::Exp, a));
  writeV(in.v[0], roundTo(in.fmt, expApprox(a)));
}
void FunctionLowering::lowerSigmoid(const Instr &in) {
  Value *a = readV(in.v[1]);
  if (in.fmt == Format::DL16 && dl16Operand(in, 1, a))
    return writeV(in.v[0], unaryByTable(Opcode::Sigmoid, a));
  Value *e = expApprox(b_.CreateFNeg(a));
  writeV(in.v[0], roundTo(in.fmt, b_.CreateFDiv(fsplat(1.0f), b_.CreateFAdd(fsplat(1.0f), e))));
}
void FunctionLowering::lowerSilu(const Instr &in) {
  Value *a = readV(in.v[1]);
  if (in.fmt == Format::DL16 && dl16Operand(in, 1, a))
    return writeV(in.v[0], unaryByTable(Opcode::Silu, a));
  Value *e = expApprox(b_.CreateFNeg(a));
  writeV(in.v[0], roundTo(in.fmt, b_.CreateFDiv(a, b_.CreateFAdd(fsplat(1.0f), e))));
}

/// The unary table of `op` (unary_tables.h) at the 64 DL16 values `x`: a DL16 value has
/// 65,536 possible inputs, so the op rounded to DL16 is a lookup of what isa::sfpApply gives
/// (bit-identical by construction). The index is the fp32 bits >> 14 (sign, exponent, 9
/// fraction bits). AVX2 hosts without AVX-512 gather with vgatherdps explicitly (LLVM would
/// scalarise a generic gather there: no "fast gather" on AMD); others use llvm.masked.gather.
Value *FunctionLowering::unaryByTable(Opcode op, Value *x) {
  static const bool avx2Gather = [] {
    auto f = sys::getHostCPUFeatures();
    return f.lookup("avx2") && !f.lookup("avx512f");
  }();
  auto *tableTy = ArrayType::get(f32_, 1u << kUnaryTableBits);
  std::string name = unaryTableSymbol(unaryTableRowOf(op));
  GlobalVariable *base = m_.getNamedGlobal(name);
  if (!base)
    base = new GlobalVariable(m_, tableTy, /*isConstant=*/true, GlobalValue::ExternalLinkage, nullptr, name);
  Value *idx = b_.CreateLShr(asInt(x), splat(14));
  Value *y;
  if (avx2Gather) {
    Function *g = Intrinsic::getDeclaration(&m_, Intrinsic::x86_avx2_gather_d_ps_256);
    auto *v8f = FixedVectorType::get(f32_, 8);
    // vgatherdps loads the lanes whose mask sign bit is set: all of them.
    Value *all = ConstantExpr::getBitCast(ConstantVector::getSplat(ElementCount::getFixed(8), b_.getInt32(~0u)), v8f);
    SmallVector<Value *, 8> parts;
    for (unsigned c = 0; c < kLanes / 8; ++c) {
      SmallVector<int, 8> mask;
      for (unsigned k = 0; k < 8; ++k)
        mask.push_back(static_cast<int>(8 * c + k));
      parts.push_back(b_.CreateCall(g, {PoisonValue::get(v8f), base, b_.CreateShuffleVector(idx, mask), all,
                                        b_.getInt8(4)}));
    }
    while (parts.size() > 1) {
      unsigned w = static_cast<unsigned>(cast<FixedVectorType>(parts[0]->getType())->getNumElements());
      SmallVector<int, 64> mask;
      for (unsigned k = 0; k < 2 * w; ++k)
        mask.push_back(static_cast<int>(k));
      SmallVector<Value *, 8> next;
      for (size_t k = 0; k + 1 < parts.size(); k += 2)
        next.push_back(b_.CreateShuffleVector(parts[k], parts[k + 1], mask));
      parts = std::move(next);
    }
    y = parts[0];
  } else {
    Value *ptrs = b_.CreateInBoundsGEP(f32_, base, idx);
    Value *allTrue = ConstantVector::getSplat(ElementCount::getFixed(kLanes), b_.getTrue());
    y = b_.CreateMaskedGather(vf_, ptrs, Align(4), allTrue, PoisonValue::get(vf_));
  }
  exact_[y] = true;
  return y;
}
// i32 stick reductions (wrapping adds, signed max / min) call the shared implementation.
void FunctionLowering::lowerRsum(const Instr &in) {
  in.fmt == Format::I32 ? callSfp(in, in.v[0], -1, in.v[1], in.v[2], in.v[3])
                        : writeV(in.v[0], reduceStick(in.op, in.fmt, readV(in.v[1])));
}
void FunctionLowering::lowerRmax(const Instr &in) {
  in.fmt == Format::I32 ? callSfp(in, in.v[0], -1, in.v[1], in.v[2], in.v[3])
                        : writeV(in.v[0], reduceStick(in.op, in.fmt, readV(in.v[1])));
}
void FunctionLowering::lowerRmin(const Instr &in) {
  in.fmt == Format::I32 ? callSfp(in, in.v[0], -1, in.v[1], in.v[2], in.v[3])
                        : writeV(in.v[0], reduceStick(in.op, in.fmt, readV(in.v[1])));
}

// tanh, erf and the gelus: isa/lib/sfp.cpp's tanhApprox / erfApprox inlined (below); tanh,
// gelu and gelu.erf of DL16 values in DL16 are table lookups (unaryByTable).
void FunctionLowering::lowerTanh(const Instr &in) {
  Value *a = readV(in.v[1]);
  if (in.fmt == Format::DL16 && !outOfLine_ && dl16Operand(in, 1, a))
    return writeV(in.v[0], unaryByTable(Opcode::Tanh, a));
  writeV(in.v[0], roundTo(in.fmt, tanhApprox(a)));
}
void FunctionLowering::lowerErf(const Instr &in) { writeV(in.v[0], roundTo(in.fmt, erfApprox(readV(in.v[1])))); }
// 0.5 x (1 + tanh(0.79788456 (x + 0.044715 x x x))), the operations in isa::sfpApply's order.
void FunctionLowering::lowerGelu(const Instr &in) {
  Value *x = readV(in.v[1]);
  if (in.fmt == Format::DL16 && !outOfLine_ && dl16Operand(in, 1, x))
    return writeV(in.v[0], unaryByTable(Opcode::Gelu, x));
  Value *cube = b_.CreateFMul(b_.CreateFMul(b_.CreateFMul(fsplat(0.044715f), x), x), x);
  Value *t = tanhApprox(b_.CreateFMul(fsplat(0.7978845608028654f), b_.CreateFAdd(x, cube)));
  writeV(in.v[0], roundTo(in.fmt, b_.CreateFMul(b_.CreateFMul(fsplat(0.5f), x), b_.CreateFAdd(fsplat(1.0f), t))));
}
// 0.5 x (1 + erf(x / sqrt 2)).
void FunctionLowering::lowerGeluErf(const Instr &in) {
  Value *x = readV(in.v[1]);
  if (in.fmt == Format::DL16 && !outOfLine_ && dl16Operand(in, 1, x))
    return writeV(in.v[0], unaryByTable(Opcode::GeluErf, x));
  Value *e = erfApprox(b_.CreateFMul(x, fsplat(0.7071067811865476f)));
  writeV(in.v[0], roundTo(in.fmt, b_.CreateFMul(b_.CreateFMul(fsplat(0.5f), x), b_.CreateFAdd(fsplat(1.0f), e))));
}
// log, sin, cos, tan, softplus use the host libm: the shared implementation.
void FunctionLowering::lowerLog(const Instr &in) { callSfp(in, in.v[0], -1, in.v[1], in.v[2], in.v[3]); }
void FunctionLowering::lowerSin(const Instr &in) { callSfp(in, in.v[0], -1, in.v[1], in.v[2], in.v[3]); }
void FunctionLowering::lowerCos(const Instr &in) { callSfp(in, in.v[0], -1, in.v[1], in.v[2], in.v[3]); }
void FunctionLowering::lowerTan(const Instr &in) { callSfp(in, in.v[0], -1, in.v[1], in.v[2], in.v[3]); }
void FunctionLowering::lowerSoftplus(const Instr &in) { callSfp(in, in.v[0], -1, in.v[1], in.v[2], in.v[3]); }

/// An i32 constant shaped like the float value `like`.
Constant *FunctionLowering::ic(Value *like, uint32_t x) {
  Type *t = like->getType();
  if (auto *vt = dyn_cast<FixedVectorType>(t))
    return ConstantInt::get(FixedVectorType::get(i32_, vt->getNumElements()), x);
  return ConstantInt::get(i32_, x);
}

Value *FunctionLowering::nanMaxMin(Value *a, Value *b, bool isMax) {
  Value *uno = b_.CreateFCmpUNO(a, b);
  Value *pick = isMax ? b_.CreateFCmpOGT(a, b) : b_.CreateFCmpOLT(a, b);
  Value *r = b_.CreateSelect(pick, a, b);
  return b_.CreateSelect(uno, b_.CreateBitCast(ic(a, isa::kCanonicalNaN), a->getType()), r);
}

/// isa::sfpExp (expApprox in isa/lib/sfp.cpp) as vector IR: the same fp32 operations in the
/// same order (separate multiplies and adds: the C++ is compiled without FMA contraction), so
/// the results are bit-identical. The Dl16Codec/differential tests compare it with the
/// interpreter.
Value *FunctionLowering::expApprox(Value *x) {
  const float hi = 88.72283f, lo = -87.33654f;
  Value *xc = b_.CreateSelect(b_.CreateFCmpOGT(x, fc(x, hi)), fc(x, hi),
                              b_.CreateSelect(b_.CreateFCmpOLT(x, fc(x, lo)), fc(x, lo), x));
  Value *t = b_.CreateFMul(xc, fc(x, 1.44269504f));
  Value *n = b_.CreateFSub(b_.CreateFAdd(t, fc(x, 12582912.0f)), fc(x, 12582912.0f));
  Value *r = b_.CreateFSub(xc, b_.CreateFMul(n, fc(x, 0.693359375f)));
  r = b_.CreateFAdd(r, b_.CreateFMul(n, fc(x, 2.12194440e-4f)));
  Value *p = fc(x, 1.0f / 720.0f);
  for (float c : {1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f})
    p = b_.CreateFAdd(b_.CreateFMul(p, r), fc(x, c));
  // fptosi of a NaN n is poison, but every NaN lane is replaced by the canonical NaN below.
  Value *e = b_.CreateAdd(b_.CreateFPToSI(n, ic(x, 0)->getType()), ic(x, 127));
  e = b_.CreateSelect(b_.CreateICmpSLT(e, ic(x, 1)), ic(x, 1), e);
  Value *scale = b_.CreateBitCast(b_.CreateShl(e, ic(x, 23)), x->getType());
  Value *y = b_.CreateFMul(p, scale);
  y = b_.CreateSelect(b_.CreateFCmpOGT(x, fc(x, hi)), fc(x, INFINITY), y);
  y = b_.CreateSelect(b_.CreateFCmpOLT(x, fc(x, lo)), fc(x, 0.0f), y);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), b_.CreateBitCast(ic(x, isa::kCanonicalNaN), x->getType()), y);
}

/// c[0] + x (c[1] + x (..)) evaluated from the last coefficient as `p = p * x + c` (sfp.cpp's order).
Value *FunctionLowering::horner(Value *x, std::initializer_list<float> coeffs) {
  auto it = coeffs.end();
  Value *p = fc(x, *--it);
  while (it != coeffs.begin())
    p = b_.CreateFAdd(b_.CreateFMul(p, x), fc(x, *--it));
  return p;
}

/// m's magnitude with x's sign (bit operations, as sfp.cpp's copySign).
Value *FunctionLowering::copySign(Value *m, Value *x) {
  Value *mi = b_.CreateAnd(b_.CreateBitCast(m, ic(m, 0)->getType()), ic(m, 0x7FFFFFFFu));
  Value *si = b_.CreateAnd(b_.CreateBitCast(x, ic(x, 0)->getType()), ic(x, 0x80000000u));
  return b_.CreateBitCast(b_.CreateOr(mi, si), x->getType());
}

/// isa/lib/sfp.cpp's tanhApprox as vector IR: the same fp32 operations in the same order.
Value *FunctionLowering::tanhApprox(Value *x) {
  Value *ax = copySign(x, fc(x, 1.0f)), *z = b_.CreateFMul(x, x);
  Value *p = horner(z, {-0.333333283662796f, 0.13332779705524445f, -0.05385182052850723f, 0.021000126376748085f,
                        -0.006099896039813757f});
  Value *small = b_.CreateFAdd(x, b_.CreateFMul(b_.CreateFMul(x, z), p));
  Value *e = expApprox(b_.CreateFAdd(ax, ax));
  Value *big = b_.CreateFSub(fc(x, 1.0f), b_.CreateFDiv(fc(x, 2.0f), b_.CreateFAdd(e, fc(x, 1.0f))));
  Value *r = copySign(b_.CreateSelect(b_.CreateFCmpOLT(ax, fc(x, 0.625f)), small, big), x);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), b_.CreateBitCast(ic(x, isa::kCanonicalNaN), x->getType()), r);
}

/// isa/lib/sfp.cpp's erfApprox as vector IR: the same fp32 operations in the same order.
Value *FunctionLowering::erfApprox(Value *x) {
  Value *ax = copySign(x, fc(x, 1.0f)), *z = b_.CreateFMul(x, x);
  Value *p = horner(z, {1.1283791065216064f, -0.3761262595653534f, 0.1128358393907547f, -0.026853764429688454f,
                        0.0051882402040064335f, -0.0008009445737116039f, 7.851449481677264e-05f});
  Value *small = b_.CreateFMul(x, p);
  Value *u = b_.CreateFSub(b_.CreateSelect(b_.CreateFCmpOLT(ax, fc(x, 3.92f)), ax, fc(x, 3.92f)), fc(x, 2.5f));
  Value *q = horner(u, {-7.806815147399902f, -5.352680683135986f, -0.9438936710357666f, -0.010858423076570034f,
                        0.0021652213763445616f, -0.0004202467098366469f, 7.733519305475056e-05f,
                        -1.3278356163937133e-05f, 1.6313521200572723e-06f});
  Value *tail = b_.CreateSelect(b_.CreateFCmpOGE(ax, fc(x, 3.92f)), fc(x, 1.0f),
                                b_.CreateFSub(fc(x, 1.0f), expApprox(q)));
  Value *r = b_.CreateSelect(b_.CreateFCmpOLT(ax, fc(x, 1.0f)), small, copySign(tail, x));
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), b_.CreateBitCast(ic(x, isa::kCanonicalNaN), x->getType()), r);
}

/// rsum/rmax/rmin: the pairwise halving tree of isa::sfpApply (x[i] op= x[i + s] for s = n/2
/// .. 1) as vector ops on the halves, then the rounded lane 0 in lanes 0..n-1 and 0 above.
Value *FunctionLowering::reduceStick(Opcode op, Format f, Value *a) {
  unsigned n = f == Format::DL16 ? kLanes : kLanes / 2;
  Value *x = a;
  for (unsigned s = n / 2; s >= 1; s /= 2) {
    SmallVector<int, 64> lo, hi;
    for (unsigned i = 0; i < s; ++i) {
      lo.push_back(static_cast<int>(i));
      hi.push_back(static_cast<int>(i + s));
    }
    Value *l = b_.CreateShuffleVector(x, lo), *h = b_.CreateShuffleVector(x, hi);
    x = op == Opcode::Rsum ? b_.CreateFAdd(l, h) : nanMaxMin(l, h, op == Opcode::Rmax);
  }
  Value *r = b_.CreateExtractElement(x, uint64_t{0});
  // isa::roundTo on the scalar: DL16 rounding through the 64-lane path keeps one codec.
  Value *rv = roundTo(f, b_.CreateVectorSplat(kLanes, r));
  SmallVector<Constant *, 64> keep;
  for (unsigned l = 0; l < kLanes; ++l)
    keep.push_back(b_.getInt1(l < n));
  return b_.CreateSelect(ConstantVector::get(keep), rv, Constant::getNullValue(vf_));
}

/// Calls the shared reference implementation (isa/lib/sfp.cpp) through temporaries.
void FunctionLowering::callSfp(const Instr &in, int d, int d2, int a, int b, int c) {
  FunctionCallee fn = m_.getOrInsertFunction(
      "spyre_sfp_apply", FunctionType::get(b_.getVoidTy(), {i32_, i32_, ptr_, ptr_, ptr_, ptr_, ptr_, f32_, f32_}, false));
  IRBuilder<> eb(&f_->getEntryBlock(), f_->getEntryBlock().begin());
  auto tmp = [&](int r) -> Value * {
    if (r < 0)
      return ConstantPointerNull::get(PointerType::getUnqual(ctx_));
    AllocaInst *t = eb.CreateAlloca(vf_);
    t->setAlignment(Align(64));
    b_.CreateStore(readV(r), t);
    return t;
  };
  Value *pa = tmp(a), *pb = tmp(b), *pc = tmp(c);
  AllocaInst *pd = eb.CreateAlloca(vf_), *pd2 = eb.CreateAlloca(vf_);
  pd->setAlignment(Align(64));
  pd2->setAlignment(Align(64));
  b_.CreateCall(fn, {b_.getInt32(static_cast<uint32_t>(in.op)), b_.getInt32(static_cast<uint32_t>(in.fmt)), pd, pd2,
                     pa, pb, pc, ConstantFP::get(f32_, in.fimm), ConstantFP::get(f32_, in.fimm2)});
  writeV(d, b_.CreateLoad(vf_, pd));
  if (d2 >= 0)
    writeV(d2, b_.CreateLoad(vf_, pd2));
}

} // namespace spyre::jit
