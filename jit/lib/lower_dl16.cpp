// The DL16 codec as vector IR.
#include "function_lowering.h"
#include "spyre/isa/semantics.h"

namespace spyre::jit {

using namespace llvm;
using isa::Format;
using isa::Instr;
using isa::Opcode;

// The DL16 codec. Same results as dl16::toFloat / dl16::fromFloat for every input (the
// differential tests and DL16 codec tests check all 65536 codes and fp32 specials), but written
// for few vector instructions (AVX-512 has only two ports for 512-bit ALU operations, so the
// instruction count per lane is what bounds ld/st/SFP throughput):
//  decode:  t = code << 17 (sign shifted out; t == 0 for +-0, 0xFFFE0000 for the inf code),
//           magnitude = (t >> 3) + (96 << 23) with those two fixed up, sign = bit 31 of the
//           sign-extended code;
//  encode:  rel = ((mag + 0x2000 - (96 << 23)) >>s 14) clamped to [0, 0x7FFF] is the code
//           body (flush to zero below, the inf/NaN code above), sign kept unless NaN;
//  round:   decode(encode(x)) directly in fp32: mag rounded = (mag + 0x2000) & ~0x3FFF, then
//           the same flush/overflow limits (as float compares of |x|).

/// DL16 -> fp32 on 64 lanes (or one scalar i16).
Value *FunctionLowering::decode(Value *h16) {
  bool vec = h16->getType()->isVectorTy();
  Value *w = b_.CreateSExt(h16, vec ? static_cast<Type *>(vi32_) : i32_);
  Value *t = b_.CreateShl(w, c32(w, 17));
  Value *mag = b_.CreateAdd(b_.CreateLShr(t, c32(w, 3)), c32(w, 96u << 23));
  mag = b_.CreateSelect(b_.CreateICmpEQ(t, c32(w, 0)), c32(w, 0), mag);
  mag = b_.CreateSelect(b_.CreateICmpEQ(t, c32(w, 0xFFFE0000u)), c32(w, 0x7F800000), mag);
  Value *u = b_.CreateOr(mag, b_.CreateAnd(w, c32(w, 0x80000000u)));
  Value *f = b_.CreateBitCast(u, vec ? static_cast<Type *>(vf_) : f32_);
  codeOf_[f] = h16;
  return f;
}

/// The sign bit of the fp32 lanes `x` (bits `u`, shifted right by `shift`), cleared for NaN
/// (which encodes to the positive inf/NaN code). NaN is tested in the float domain (one
/// compare; an unsigned integer compare is two instructions on AVX2).
Value *FunctionLowering::signUnlessNaN(Value *x, Value *u, unsigned shift) {
  Value *s = b_.CreateAnd(b_.CreateLShr(u, c32(u, shift)), c32(u, 0x80000000u >> shift));
  return b_.CreateSelect(b_.CreateFCmpORD(x, x), s, c32(u, 0));
}

/// fp32 -> DL16 codes on 64 lanes.
Value *FunctionLowering::encode(Value *x) {
  if (auto it = preCanon_.find(x); it != preCanon_.end())
    x = it->second; // every NaN encodes to the same code
  if (auto it = preRound_.find(x); it != preRound_.end())
    x = it->second; // encode(round(y)) == encode(y)
  if (auto it = codeOf_.find(x); it != codeOf_.end())
    return it->second;
  Value *u = b_.CreateBitCast(x, vi32_);
  Value *mag = b_.CreateAnd(u, splat(0x7FFFFFFF));
  Value *rel = b_.CreateAShr(b_.CreateAdd(mag, splat(0x2000u - (96u << 23))), splat(14));
  rel = intrinsic(Intrinsic::smax, {rel, splat(0)}, {vi32_});
  rel = intrinsic(Intrinsic::smin, {rel, splat(0x7FFF)}, {vi32_});
  return b_.CreateTrunc(b_.CreateOr(rel, signUnlessNaN(x, u, 16)), vi16_);
}

Value *FunctionLowering::roundTo(Format f, Value *x) {
  if (f == Format::DL16) {
    if (codeOf_.count(x) || exact_.count(x)) // already a DL16 value
      return x;
    // The flush and overflow limits on the rounded magnitude r = (mag + 0x2000) & ~0x3FFF
    // (r < 0x30004000: zero; r >= 0x4FFFC000: inf), tested on |x| before rounding, where they
    // are |x| < bits 0x30002000 and |x| >= bits 0x4FFFA000 (NaN included): float compares,
    // one instruction each on AVX2 (unsigned integer compares are two).
    Value *u = b_.CreateBitCast(x, vi32_);
    Value *ax = intrinsic(Intrinsic::fabs, {x}, {vf_});
    Value *r = b_.CreateAnd(b_.CreateAdd(asInt(ax), splat(0x2000)), splat(0xFFFFC000u));
    auto limit = [&](uint32_t bits) {
      return ConstantVector::getSplat(ElementCount::getFixed(kLanes), ConstantFP::get(f32_, dl16::bitsFloat(bits)));
    };
    r = b_.CreateSelect(b_.CreateFCmpOLT(ax, limit(0x30002000)), splat(0), r);
    r = b_.CreateSelect(b_.CreateFCmpUGE(ax, limit(0x4FFFA000)), splat(0x7F800000), r);
    Value *res = asFloat(b_.CreateOr(r, signUnlessNaN(x, u, 0)));
    preRound_[res] = x;
    return res;
  }
  // f32: canonical NaN, as isa::roundTo; the value before is the NaN-blind form (readNaNBlind).
  Value *res = b_.CreateSelect(b_.CreateFCmpUNO(x, x), asFloat(splat(isa::kCanonicalNaN)), x);
  if (res != x && llvm::isa<Instruction>(res))
    preCanon_[res] = x;
  return res;
}

} // namespace spyre::jit
