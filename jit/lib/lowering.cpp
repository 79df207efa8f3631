#include "lowering.h"
#include "phase_groups.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/semantics.h"
#include "spyre/sim/machine.h"
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <map>

namespace spyre::jit {

using namespace llvm;
using isa::Format;
using isa::Instr;
using isa::Opcode;

std::string phaseSymbol(const std::string &kernelName, size_t program, size_t phase) {
  return "spyre_" + kernelName + "_c" + std::to_string(program) + "_p" + std::to_string(phase);
}
std::string phaseSymbol(const isa::Kernel &k, size_t program, size_t phase) {
  return phaseSymbol(k.name, program, phase);
}

namespace {

constexpr unsigned kLanes = isa::kLanes;

/// The LX bytes an instruction writes, as [first, second) relative to its `lx` operand (every
/// LX-writing instruction writes at `lx`); nullopt if it writes no LX. The decoded-B cache of
/// pt.mm relies on this covering every writer: a new instruction that writes LX needs a row here.
std::optional<std::pair<int64_t, int64_t>> lxWriteExtent(const Instr &in) {
  switch (in.op) {
  case Opcode::St: return std::pair<int64_t, int64_t>{0, 128};
  case Opcode::Stu: return std::pair<int64_t, int64_t>{0, in.imm * (in.fmt == isa::Format::DL16 ? 2 : 4)};
  case Opcode::DmaIn:
  case Opcode::DmaMc: {
    int64_t lo = 0, hi = 0;
    for (int j = 0; j < 2; ++j) {
      int64_t span = (in.dma.n[j] - 1) * in.dma.lxStride[j];
      lo += std::min<int64_t>(span, 0);
      hi += std::max<int64_t>(span, 0);
    }
    return std::pair{lo, hi + in.dma.n[2] * 128};
  }
  case Opcode::PtMm: return std::pair<int64_t, int64_t>{0, in.imms[0] / 32 * in.imm * 128};
  case Opcode::PtOut: return std::pair<int64_t, int64_t>{0, in.imms[0] / 64 * in.imm * 128};
  case Opcode::PtTr: return std::pair<int64_t, int64_t>{0, in.imm * in.imms[0] * 2};
  case Opcode::RingRecv:
  case Opcode::RingPsum: return std::pair<int64_t, int64_t>{0, in.imm * 128};
  default: return std::nullopt;
  }
}

bool containsPtMm(const Instr &in) {
  return in.op == Opcode::PtMm || std::any_of(in.body.begin(), in.body.end(), containsPtMm);
}
bool containsLi(const Instr &in) {
  return in.op == Opcode::Li || std::any_of(in.body.begin(), in.body.end(), containsLi);
}

/// Top-level loop nests that occur more than once in a kernel's compiled phases, by listing
/// text, and the function each compiles to. Double-buffered kernels repeat the same loop nest
/// for each half of the pipeline (and multi-phase kernels per phase); SelectionDAG on the
/// vector code of a nest costs milliseconds, so each distinct nest is compiled once, as a
/// function with the phase signature that keeps registers in CoreState at its boundary, and
/// called. A nest with `li` stays inline (its immediates may be per-core tables, phase_groups.h).
struct SharedLoops {
  std::map<std::string, Function *> fns; ///< text -> function (null until first lowered)
};

class FunctionLowering {
public:
  FunctionLowering(Module &m, const isa::Kernel &k, const isa::CoreProgram &prog, Function *f, bool outOfLine,
                   const std::vector<std::optional<std::vector<int64_t>>> &liTables, SharedLoops *sharedLoops)
      : m_(m), k_(k), prog_(prog), f_(f), ctx_(m.getContext()), b_(ctx_), outOfLine_(outOfLine), liTables_(liTables),
        sharedLoops_(sharedLoops) {
    i8_ = b_.getInt8Ty();
    i16_ = b_.getInt16Ty();
    i32_ = b_.getInt32Ty();
    i64_ = b_.getInt64Ty();
    f32_ = b_.getFloatTy();
    ptr_ = b_.getPtrTy();
    vf_ = FixedVectorType::get(f32_, kLanes);
    vi32_ = FixedVectorType::get(i32_, kLanes);
    vi16_ = FixedVectorType::get(i16_, kLanes);
  }

  void lower(ArrayRef<Instr> instrs) {
    // `entry` holds the allocas and the loads of the registers the phase touches (added on
    // first use, see sregSlot/vregSlot); the code starts in `body`.
    entry_ = BasicBlock::Create(ctx_, "entry", f_);
    BasicBlock *body = BasicBlock::Create(ctx_, "body", f_);
    b_.SetInsertPoint(entry_);
    core_ = f_->getArg(0);
    ddr_ = f_->getArg(1);
    argBase_ = f_->getArg(2);
    lx_ = b_.CreateLoad(ptr_, b_.CreateConstInBoundsGEP1_64(i8_, core_, offsetof(sim::CoreState, lx)), "lx");
    if (!outOfLine_ && std::any_of(instrs.begin(), instrs.end(), containsPtMm))
      setUpDecodedB();
    b_.SetInsertPoint(body);
    for (const Instr &in : instrs)
      lowerInstr(in);
    // Write back what the phase wrote, so machine state matches the interpreter.
    storeWrittenRegisters();
    b_.CreateRetVoid();
    IRBuilder<>(entry_).CreateBr(body);
  }

private:
  Module &m_;
  const isa::Kernel &k_;
  const isa::CoreProgram &prog_;
  Function *f_;
  LLVMContext &ctx_;
  IRBuilder<> b_;
  Type *i8_, *i16_, *i32_, *i64_, *f32_, *ptr_;
  FixedVectorType *vf_, *vi32_, *vi16_;
  Value *core_ = nullptr, *ddr_ = nullptr, *argBase_ = nullptr, *lx_ = nullptr;
  BasicBlock *entry_ = nullptr;
  // Registers live in allocas for the whole phase (SROA/mem2reg promote them), created and
  // loaded from CoreState on first use. Within one basic block the lowering also remembers the
  // last value of each register, so straight-line code reads SSA values directly.
  AllocaInst *sreg_[isa::kNumSRegs] = {};
  AllocaInst *vreg_[isa::kNumVRegs] = {};
  bool sWritten_[isa::kNumSRegs] = {};
  bool vWritten_[isa::kNumVRegs] = {};
  struct Cached {
    Value *v = nullptr;
    BasicBlock *bb = nullptr;
  };
  Cached sCur_[isa::kNumSRegs], vCur_[isa::kNumVRegs];
  // DL16 codes of decoded values (decode(c) -> c): encode(decode(c)) == c for every code, so
  // storing or rounding a value that came from DL16 needs no re-encoding.
  DenseMap<Value *, Value *> codeOf_;
  // DL16-rounded values -> the value before rounding (encode(round(y)) == encode(y)), so a
  // rounded result that is only stored is encoded once and the rounding itself is dead code.
  DenseMap<Value *, Value *> preRound_;
  int tblCount_ = 0;
  struct {
    AllocaInst *aDec = nullptr, *accs[4] = {};
  } ptScratch_; // pt.mm: decoded A rows (1 KiB) and accumulators
  // Decoded-B cache of a phase with pt.mm (see lowerPtMm): the LX byte range [bLo, bHi) whose
  // sticks are decoded to fp32 in `decodedLx_` (this host thread's mirror of LX, one float per
  // DL16 lane at float index = LX byte offset / 2). Empty when bHi == 0. Every LX write of the
  // phase empties it if it overlaps the range.
  AllocaInst *bLo_ = nullptr, *bHi_ = nullptr;
  Value *decodedLx_ = nullptr;
  // The O0 tier: vector registers stay in CoreState and ld/st/SFP instructions call the shared
  // implementations (what the interpreter runs), so the IR is small and compiles fast.
  bool outOfLine_ = false;
  // Per-core values of the `li` immediates that differ between the programs sharing this
  // function (phase_groups.h), by `li` ordinal in pre-order; nullopt: a constant.
  const std::vector<std::optional<std::vector<int64_t>>> &liTables_;
  size_t liCount_ = 0;
  SharedLoops *sharedLoops_; // null inside a shared loop's own function
  int loopDepth_ = 0;

  /// A top-level loop nest that occurs more than once: a call of its shared function. The
  /// registers this function holds go to CoreState before the call and come back after it.
  bool lowerSharedLoop(const Instr &in) {
    if (!sharedLoops_ || loopDepth_ > 0 || outOfLine_)
      return false;
    auto it = sharedLoops_->fns.find(isa::printInstr(in, k_));
    if (it == sharedLoops_->fns.end())
      return false;
    if (!it->second) {
      Function *fn = Function::Create(f_->getFunctionType(), Function::InternalLinkage,
                                      f_->getName() + ".loop" + std::to_string(sharedLoops_->fns.size()), &m_);
      fn->addFnAttr(Attribute::NoUnwind);
      fn->addFnAttr(Attribute::NoInline);
      for (unsigned a = 0; a < 3; ++a)
        fn->addParamAttr(a, Attribute::NoAlias);
      static const std::vector<std::optional<std::vector<int64_t>>> noLiTables;
      FunctionLowering(m_, k_, prog_, fn, false, noLiTables, nullptr).lower(ArrayRef<Instr>(in));
      it->second = fn;
    }
    storeWrittenRegisters();
    b_.CreateCall(it->second, {core_, ddr_, argBase_});
    for (int i = 1; i < isa::kNumSRegs; ++i) {
      Value *v = b_.CreateLoad(i64_, sregPtr(b_, i));
      b_.CreateStore(v, sregSlot(i));
      sCur_[i] = {v, b_.GetInsertBlock()};
    }
    for (int i = 0; i < isa::kNumVRegs; ++i) {
      Value *v = b_.CreateAlignedLoad(vf_, vregPtr(b_, i), Align(64));
      b_.CreateStore(v, vregSlot(i));
      vCur_[i] = {v, b_.GetInsertBlock()};
    }
    if (bHi_) // the nest may have written LX
      b_.CreateStore(b_.getInt64(0), bHi_);
    return true;
  }

  /// The registers this function has written, back to the core's state (the end of a phase,
  /// or before a shared loop nest reads them from there).
  void storeWrittenRegisters() {
    for (int i = 1; i < isa::kNumSRegs; ++i)
      if (sWritten_[i])
        b_.CreateStore(readS(i), sregPtr(b_, i));
    for (int i = 0; i < isa::kNumVRegs; ++i)
      if (vWritten_[i])
        b_.CreateAlignedStore(readV(i), vregPtr(b_, i), Align(64));
  }

  /// The decoded-B cache starts empty in every invocation of the phase function: within a
  /// phase only this core's own instructions write its LX, so they are all the invalidation
  /// needs to see (other cores, the host and the runtime act between phases).
  void setUpDecodedB() {
    decodedLx_ = b_.CreateCall(m_.getOrInsertFunction("spyre_jit_decoded_lx", FunctionType::get(ptr_, {}, false)),
                               {}, "decoded.lx");
    bLo_ = b_.CreateAlloca(i64_, nullptr, "b.lo");
    bHi_ = b_.CreateAlloca(i64_, nullptr, "b.hi");
    b_.CreateStore(b_.getInt64(0), bLo_);
    b_.CreateStore(b_.getInt64(0), bHi_);
  }
  /// Empties the decoded-B cache if the LX bytes `in` writes overlap it.
  void invalidateDecodedB(const Instr &in) {
    auto ext = lxWriteExtent(in);
    if (!bHi_ || !ext)
      return;
    Value *at = lxOffset(in.lx);
    Value *lo = b_.CreateAdd(at, b_.getInt64(ext->first)), *hi = b_.CreateAdd(at, b_.getInt64(ext->second));
    Value *cached = b_.CreateLoad(i64_, bHi_);
    Value *overlap = b_.CreateAnd(b_.CreateICmpSLT(lo, cached), b_.CreateICmpSLT(b_.CreateLoad(i64_, bLo_), hi));
    b_.CreateStore(b_.CreateSelect(overlap, b_.getInt64(0), cached), bHi_);
  }

  /// A private constant table indexed by the core id (r0), as `tbl` reads it.
  Value *perCoreValue(const std::vector<int64_t> &table, const char *what) {
    std::vector<Constant *> vals;
    for (int64_t v : table)
      vals.push_back(b_.getInt64(static_cast<uint64_t>(v)));
    auto *ty = ArrayType::get(i64_, vals.size());
    auto *g = new GlobalVariable(m_, ty, true, GlobalValue::PrivateLinkage, ConstantArray::get(ty, vals),
                                 f_->getName() + what + std::to_string(tblCount_++));
    return b_.CreateLoad(i64_, b_.CreateInBoundsGEP(ty, g, {b_.getInt64(0), readS(0)}));
  }

  Value *vregArg(int v) {
    return v < 0 ? static_cast<Value *>(ConstantPointerNull::get(PointerType::getUnqual(ctx_))) : vregPtr(b_, v);
  }
  /// Out-of-line ld/st/SFP: the calls the interpreter makes, on the registers in CoreState.
  void lowerOutOfLine(const Instr &in) {
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

  Value *sregPtr(IRBuilder<> &b, int i) {
    return b.CreateConstInBoundsGEP1_64(i8_, core_, offsetof(sim::CoreState, r) + 8 * i);
  }
  Value *vregPtr(IRBuilder<> &b, int i) {
    return b.CreateConstInBoundsGEP1_64(i8_, core_, offsetof(sim::CoreState, v) + 4 * kLanes * i);
  }
  AllocaInst *sregSlot(int r) {
    if (!sreg_[r]) {
      IRBuilder<> eb(entry_);
      sreg_[r] = eb.CreateAlloca(i64_, nullptr, "r" + std::to_string(r));
      eb.CreateStore(eb.CreateLoad(i64_, sregPtr(eb, r)), sreg_[r]);
    }
    return sreg_[r];
  }
  AllocaInst *vregSlot(int v) {
    if (!vreg_[v]) {
      IRBuilder<> eb(entry_);
      vreg_[v] = eb.CreateAlloca(vf_, nullptr, "v" + std::to_string(v));
      vreg_[v]->setAlignment(Align(64));
      eb.CreateStore(eb.CreateAlignedLoad(vf_, vregPtr(eb, v), Align(64)), vreg_[v]);
    }
    return vreg_[v];
  }
  Value *readS(int r) {
    if (r < 0)
      return b_.getInt64(0);
    if (sCur_[r].bb != b_.GetInsertBlock())
      sCur_[r] = {b_.CreateLoad(i64_, sregSlot(r)), b_.GetInsertBlock()};
    return sCur_[r].v;
  }
  void writeS(int r, Value *v) {
    if (r <= 0) // r0 (core id) is read-only
      return;
    b_.CreateStore(v, sregSlot(r));
    sWritten_[r] = true;
    sCur_[r] = {v, b_.GetInsertBlock()};
  }
  Value *readV(int v) {
    if (outOfLine_) // registers stay in CoreState
      return b_.CreateAlignedLoad(vf_, vregPtr(b_, v), Align(64));
    if (vCur_[v].bb != b_.GetInsertBlock())
      vCur_[v] = {b_.CreateLoad(vf_, vregSlot(v)), b_.GetInsertBlock()};
    return vCur_[v].v;
  }
  void writeV(int v, Value *x) {
    if (outOfLine_) {
      b_.CreateAlignedStore(x, vregPtr(b_, v), Align(64));
      return;
    }
    b_.CreateStore(x, vregSlot(v));
    vWritten_[v] = true;
    vCur_[v] = {x, b_.GetInsertBlock()};
  }

  /// The LX byte offset of `a`.
  Value *lxOffset(const isa::LxAddr &a) { return b_.CreateAdd(readS(a.base), b_.getInt64(a.offset)); }
  Value *lxAddr(const isa::LxAddr &a, Value *extra = nullptr) {
    Value *off = lxOffset(a);
    if (extra)
      off = b_.CreateAdd(off, extra);
    return b_.CreateInBoundsGEP(i8_, lx_, off);
  }

  Value *splat(uint32_t c) { return ConstantVector::getSplat(ElementCount::getFixed(kLanes), b_.getInt32(c)); }
  /// A 32-bit constant shaped like `like` (a <64 x i32> vector or an i32 scalar).
  Value *c32(Value *like, uint32_t c) {
    return like->getType()->isVectorTy() ? splat(c) : static_cast<Value *>(b_.getInt32(c));
  }

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
  //           the same flush/overflow limits.

  /// DL16 -> fp32 on 64 lanes (or one scalar i16).
  Value *decode(Value *h16) {
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
  /// The sign bit of fp32 lanes `u` (shifted right by `shift`), cleared for NaN (which encodes
  /// to the positive inf/NaN code).
  Value *signUnlessNaN(Value *u, Value *mag, unsigned shift) {
    Value *s = b_.CreateAnd(b_.CreateLShr(u, c32(u, shift)), c32(u, 0x80000000u >> shift));
    return b_.CreateSelect(b_.CreateICmpULE(mag, c32(u, 0x7F800000)), s, c32(u, 0));
  }
  /// fp32 -> DL16 codes on 64 lanes.
  Value *encode(Value *x) {
    if (auto it = preRound_.find(x); it != preRound_.end())
      x = it->second; // encode(round(y)) == encode(y)
    if (auto it = codeOf_.find(x); it != codeOf_.end())
      return it->second;
    Value *u = b_.CreateBitCast(x, vi32_);
    Value *mag = b_.CreateAnd(u, splat(0x7FFFFFFF));
    Value *rel = b_.CreateAShr(b_.CreateAdd(mag, splat(0x2000u - (96u << 23))), splat(14));
    rel = intrinsic(Intrinsic::smax, {rel, splat(0)}, {vi32_});
    rel = intrinsic(Intrinsic::smin, {rel, splat(0x7FFF)}, {vi32_});
    return b_.CreateTrunc(b_.CreateOr(rel, signUnlessNaN(u, mag, 16)), vi16_);
  }
  Value *roundTo(Format f, Value *x) {
    if (f == Format::DL16) {
      if (codeOf_.count(x)) // already a DL16 value
        return x;
      Value *u = b_.CreateBitCast(x, vi32_);
      Value *mag = b_.CreateAnd(u, splat(0x7FFFFFFF));
      Value *r = b_.CreateAnd(b_.CreateAdd(mag, splat(0x2000)), splat(0xFFFFC000u));
      r = b_.CreateSelect(b_.CreateICmpULT(r, splat((96u << 23) | 0x4000)), splat(0), r);
      r = b_.CreateSelect(b_.CreateICmpUGE(r, splat(0x4FFFC000)), splat(0x7F800000), r);
      Value *res = asFloat(b_.CreateOr(r, signUnlessNaN(u, mag, 0)));
      preRound_[res] = x;
      return res;
    }
    // f32: canonical NaN, as isa::roundTo.
    return b_.CreateSelect(b_.CreateFCmpUNO(x, x), asFloat(splat(isa::kCanonicalNaN)), x);
  }

  // Emits `for (i = 0; i < n; ++i) body(i)`; n is a compile-time constant.
  template <typename Fn> void countedLoop(int64_t n, const char *name, Fn body) {
    if (n <= 0)
      return;
    BasicBlock *pre = b_.GetInsertBlock();
    BasicBlock *loop = BasicBlock::Create(ctx_, name, f_);
    BasicBlock *exit = BasicBlock::Create(ctx_, std::string(name) + ".end", f_);
    b_.CreateBr(loop);
    b_.SetInsertPoint(loop);
    PHINode *iv = b_.CreatePHI(i64_, 2, std::string(name) + ".i");
    iv->addIncoming(b_.getInt64(0), pre);
    body(iv);
    Value *next = b_.CreateAdd(iv, b_.getInt64(1));
    iv->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpULT(next, b_.getInt64(n)), loop, exit);
    b_.SetInsertPoint(exit);
  }

  void lowerDma(const Instr &in, bool toLx) {
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

  Value *fsplat(float x) { return ConstantVector::getSplat(ElementCount::getFixed(kLanes), ConstantFP::get(f32_, x)); }
  Value *asInt(Value *v) { return b_.CreateBitCast(v, vi32_); }
  Value *asFloat(Value *v) { return b_.CreateBitCast(v, vf_); }
  Value *select01(Value *cond) { return b_.CreateSelect(cond, fsplat(1.0f), fsplat(0.0f)); }
  /// A float constant shaped like `like` (a float vector of any width, or a float).
  Constant *fc(Value *like, float x) { return ConstantFP::get(like->getType(), x); }
  /// An i32 constant shaped like the float value `like`.
  Constant *ic(Value *like, uint32_t x) {
    Type *t = like->getType();
    if (auto *vt = dyn_cast<FixedVectorType>(t))
      return ConstantInt::get(FixedVectorType::get(i32_, vt->getNumElements()), x);
    return ConstantInt::get(i32_, x);
  }
  Value *nanMaxMin(Value *a, Value *b, bool isMax) {
    Value *uno = b_.CreateFCmpUNO(a, b);
    Value *pick = isMax ? b_.CreateFCmpOGT(a, b) : b_.CreateFCmpOLT(a, b);
    Value *r = b_.CreateSelect(pick, a, b);
    return b_.CreateSelect(uno, b_.CreateBitCast(ic(a, isa::kCanonicalNaN), a->getType()), r);
  }

  /// isa::sfpExp (expApprox in isa/lib/sfp.cpp) as vector IR: the same fp32 operations in the
  /// same order (separate multiplies and adds: the C++ is compiled without FMA contraction), so
  /// the results are bit-identical. The Dl16Codec/differential tests compare it with the
  /// interpreter.
  Value *expApprox(Value *x) {
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

  /// rsum/rmax/rmin: the pairwise halving tree of isa::sfpApply (x[i] op= x[i + s] for s = n/2
  /// .. 1) as vector ops on the halves, then the rounded lane 0 in lanes 0..n-1 and 0 above.
  Value *reduceStick(Opcode op, Format f, Value *a) {
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
  Value *intrinsic(Intrinsic::ID id, std::vector<Value *> args, std::vector<Type *> types) {
    Function *f = Intrinsic::getDeclaration(&m_, id, types);
    return b_.CreateCall(f, args);
  }

  /// Calls the shared reference implementation (isa/lib/sfp.cpp) through temporaries.
  void callSfp(const Instr &in, int d, int d2, int a, int b, int c) {
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

  void lowerSfp(const Instr &in) {
    const Format f = in.fmt;
    auto V = [&](int i) { return readV(in.v[i]); };
    switch (in.op) {
    case Opcode::Bcast: writeV(in.v[0], fsplat(isa::roundTo(f, in.fimm))); return;
    case Opcode::Splat: {
      SmallVector<int, 64> mask(kLanes, static_cast<int>(in.imm & (kLanes - 1)));
      writeV(in.v[0], b_.CreateShuffleVector(V(1), mask));
      return;
    }
    case Opcode::Iota: {
      std::vector<Constant *> lanes;
      for (unsigned i = 0; i < kLanes; ++i)
        lanes.push_back(ConstantFP::get(f32_, static_cast<float>(i)));
      writeV(in.v[0], ConstantVector::get(lanes));
      return;
    }
    case Opcode::Widen: {
      Value *a = V(2);
      SmallVector<int, 64> even, odd;
      for (unsigned i = 0; i < kLanes; ++i) {
        even.push_back(i < kLanes / 2 ? 2 * i : kLanes);
        odd.push_back(i < kLanes / 2 ? 2 * i + 1 : kLanes);
      }
      Value *zero = Constant::getNullValue(vf_);
      Value *e = b_.CreateShuffleVector(a, zero, even), *o = b_.CreateShuffleVector(a, zero, odd);
      writeV(in.v[0], e);
      writeV(in.v[1], o);
      return;
    }
    case Opcode::Unpack: {
      Value *a = V(2), *zero = Constant::getNullValue(vf_);
      SmallVector<int, 64> lo, hi;
      for (unsigned i = 0; i < kLanes; ++i) {
        lo.push_back(i < kLanes / 2 ? i : kLanes);
        hi.push_back(i < kLanes / 2 ? kLanes / 2 + i : kLanes);
      }
      Value *l = b_.CreateShuffleVector(a, zero, lo), *h = b_.CreateShuffleVector(a, zero, hi);
      writeV(in.v[0], l);
      writeV(in.v[1], h);
      return;
    }
    case Opcode::Pack: {
      Value *ra = roundTo(Format::DL16, V(1)), *rb = roundTo(Format::DL16, V(2));
      SmallVector<int, 64> mask;
      for (unsigned i = 0; i < kLanes; ++i)
        mask.push_back(i < kLanes / 2 ? i : kLanes + i - kLanes / 2);
      writeV(in.v[0], b_.CreateShuffleVector(ra, rb, mask));
      return;
    }
    case Opcode::Narrow: {
      Value *ra = roundTo(Format::DL16, V(1)), *rb = roundTo(Format::DL16, V(2));
      SmallVector<int, 64> mask;
      for (unsigned i = 0; i < kLanes / 2; ++i) {
        mask.push_back(i);
        mask.push_back(kLanes + i);
      }
      writeV(in.v[0], b_.CreateShuffleVector(ra, rb, mask));
      return;
    }
    case Opcode::Cvt:
      if (f == Format::I32)
        writeV(in.v[0], asFloat(intrinsic(Intrinsic::fptosi_sat, {V(1)}, {vi32_, vf_})));
      else
        writeV(in.v[0], b_.CreateSIToFP(asInt(V(1)), vf_));
      return;
    case Opcode::Sel: {
      Value *m = V(1);
      Value *cond = f == Format::I32 ? b_.CreateICmpNE(asInt(m), splat(0)) : b_.CreateFCmpUNE(m, fsplat(0.0f));
      writeV(in.v[0], b_.CreateSelect(cond, V(2), V(3)));
      return;
    }
    case Opcode::Fma:
      writeV(in.v[0], roundTo(f, intrinsic(Intrinsic::fma, {V(1), V(2), V(3)}, {vf_})));
      return;
    case Opcode::Eq: writeV(in.v[0], select01(b_.CreateFCmpOEQ(V(1), V(2)))); return;
    case Opcode::Ne: writeV(in.v[0], select01(b_.CreateFCmpUNE(V(1), V(2)))); return;
    case Opcode::Lt: writeV(in.v[0], select01(b_.CreateFCmpOLT(V(1), V(2)))); return;
    case Opcode::Le: writeV(in.v[0], select01(b_.CreateFCmpOLE(V(1), V(2)))); return;
    case Opcode::Gt: writeV(in.v[0], select01(b_.CreateFCmpOGT(V(1), V(2)))); return;
    case Opcode::Ge: writeV(in.v[0], select01(b_.CreateFCmpOGE(V(1), V(2)))); return;
    case Opcode::Add:
    case Opcode::Sub:
    case Opcode::Mul:
    case Opcode::Max:
    case Opcode::Min:
      if (f == Format::I32) {
        Value *a = asInt(V(1)), *b = asInt(V(2)), *r;
        switch (in.op) {
        case Opcode::Add: r = b_.CreateAdd(a, b); break;
        case Opcode::Sub: r = b_.CreateSub(a, b); break;
        case Opcode::Mul: r = b_.CreateMul(a, b); break;
        case Opcode::Max: r = b_.CreateSelect(b_.CreateICmpSGT(a, b), a, b); break;
        default: r = b_.CreateSelect(b_.CreateICmpSLT(a, b), a, b); break;
        }
        writeV(in.v[0], asFloat(r));
        return;
      }
      [[fallthrough]];
    case Opcode::Div: {
      Value *a = V(1), *b = V(2), *r;
      switch (in.op) {
      case Opcode::Add: r = b_.CreateFAdd(a, b); break;
      case Opcode::Sub: r = b_.CreateFSub(a, b); break;
      case Opcode::Mul: r = b_.CreateFMul(a, b); break;
      case Opcode::Div: r = b_.CreateFDiv(a, b); break;
      case Opcode::Max: r = nanMaxMin(a, b, true); break;
      default: r = nanMaxMin(a, b, false); break;
      }
      writeV(in.v[0], roundTo(f, r));
      return;
    }
    case Opcode::Neg: writeV(in.v[0], roundTo(f, b_.CreateFNeg(V(1)))); return;
    case Opcode::Abs: writeV(in.v[0], roundTo(f, asFloat(b_.CreateAnd(asInt(V(1)), splat(0x7FFFFFFF))))); return;
    case Opcode::Relu: {
      Value *a = V(1), *zero = Constant::getNullValue(vf_);
      writeV(in.v[0], roundTo(f, b_.CreateSelect(b_.CreateFCmpOGT(a, zero), a, zero)));
      return;
    }
    case Opcode::Floor: writeV(in.v[0], roundTo(f, intrinsic(Intrinsic::floor, {V(1)}, {vf_}))); return;
    case Opcode::Sqrt: writeV(in.v[0], roundTo(f, intrinsic(Intrinsic::sqrt, {V(1)}, {vf_}))); return;
    case Opcode::Rsqrt:
      writeV(in.v[0], roundTo(f, b_.CreateFDiv(fsplat(1.0f), intrinsic(Intrinsic::sqrt, {V(1)}, {vf_}))));
      return;
    case Opcode::Recip: writeV(in.v[0], roundTo(f, b_.CreateFDiv(fsplat(1.0f), V(1)))); return;
    case Opcode::Clip: {
      Value *r = nanMaxMin(nanMaxMin(V(1), fsplat(in.fimm), true), fsplat(in.fimm2), false);
      writeV(in.v[0], roundTo(f, r));
      return;
    }
    case Opcode::Exp: writeV(in.v[0], roundTo(f, expApprox(V(1)))); return;
    case Opcode::Sigmoid: {
      Value *e = expApprox(b_.CreateFNeg(V(1)));
      writeV(in.v[0], roundTo(f, b_.CreateFDiv(fsplat(1.0f), b_.CreateFAdd(fsplat(1.0f), e))));
      return;
    }
    case Opcode::Silu: {
      Value *a = V(1), *e = expApprox(b_.CreateFNeg(a));
      writeV(in.v[0], roundTo(f, b_.CreateFDiv(a, b_.CreateFAdd(fsplat(1.0f), e))));
      return;
    }
    case Opcode::Rsum:
    case Opcode::Rmax:
    case Opcode::Rmin: writeV(in.v[0], reduceStick(in.op, f, V(1))); return;
    default:
      // log, tanh, gelu, gelu.erf, softplus use the host libm: the shared implementation.
      callSfp(in, in.v[0], -1, in.v[1], in.v[2], in.v[3]);
      return;
    }
  }

  /// An internal, never-inlined function `name` of this module with pointer parameters, its
  /// body emitted by `body(args)` with this lowering's builder on first use.
  template <typename Fn> Function *outlined(const std::string &name, unsigned numArgs, Fn body) {
    if (Function *fn = m_.getFunction(name))
      return fn;
    std::vector<Type *> params(numArgs, ptr_);
    Function *fn = Function::Create(FunctionType::get(b_.getVoidTy(), params, false), Function::InternalLinkage,
                                    name, &m_);
    fn->addFnAttr(Attribute::NoUnwind);
    fn->addFnAttr(Attribute::NoInline);
    IRBuilderBase::InsertPoint ip = b_.saveIP();
    Function *phaseFn = f_;
    auto scratch = ptScratch_;
    f_ = fn;
    ptScratch_ = {};
    b_.SetInsertPoint(BasicBlock::Create(ctx_, "entry", fn));
    SmallVector<Value *, 4> args;
    for (Argument &a : fn->args())
      args.push_back(&a);
    body(args);
    b_.CreateRetVoid();
    f_ = phaseFn;
    ptScratch_ = scratch;
    b_.restoreIP(ip);
    return fn;
  }

  // pt.mm: C[i][n] accumulates fma(A[i][k], B[k][n], .) over k = 0..K-1 in order (the
  // interpreter's per-element order), 64 columns per <64 x float> accumulator.
  //
  // B is decoded once per phase, not once per pt.mm: pipelined matmuls call pt.mm on small row
  // blocks of A (8 rows for 64x2048x8192) against the same resident B, and decoding B cost as
  // much as the multiply. The decoded sticks live in this host thread's fp32 mirror of LX
  // (setUpDecodedB); a pt.mm whose B range lies inside the cached range uses them, otherwise it
  // decodes its B there first. Every LX write of the phase empties an overlapping cache
  // (invalidateDecodedB), so results stay those of the interpreter.
  //
  // The micro-kernel is one internal function per (M, N, K, acc) and module, called with the
  // tile addresses: kernels with one program per core (K-split matmuls: 32 pt.mm of the same
  // shape) compile it once instead of once per core.
  void lowerPtMm(const Instr &in) {
    const int64_t M = in.imm, N = in.imms[0], K = in.imms[1];
    const bool acc = in.imms[2] != 0;
    const int64_t bSticks = N / 64 * K;
    Value *bOff = lxOffset(in.lx3);
    Value *bEnd = b_.CreateAdd(bOff, b_.getInt64(bSticks * 128));
    Value *bDec = b_.CreateInBoundsGEP(i8_, decodedLx_, b_.CreateShl(bOff, 1)); // 4 bytes per 2
    Value *hit = b_.CreateAnd(b_.CreateICmpSLE(b_.CreateLoad(i64_, bLo_), bOff),
                              b_.CreateICmpSLE(bEnd, b_.CreateLoad(i64_, bHi_)));
    BasicBlock *miss = BasicBlock::Create(ctx_, "ptb.decode", f_);
    BasicBlock *join = BasicBlock::Create(ctx_, "ptb.ready", f_);
    b_.CreateCondBr(hit, join, miss);
    b_.SetInsertPoint(miss);
    Function *dec = outlined("spyre_dl16_decode_" + std::to_string(bSticks), 2, [&](ArrayRef<Value *> a) {
      countedLoop(bSticks, "dec", [&](Value *s) {
        Value *src = b_.CreateInBoundsGEP(i8_, a[1], b_.CreateMul(s, b_.getInt64(128)));
        Value *dst = b_.CreateInBoundsGEP(vf_, a[0], s);
        b_.CreateAlignedStore(decode(b_.CreateAlignedLoad(vi16_, src, Align(2))), dst, Align(64));
      });
    });
    b_.CreateCall(dec, {bDec, lxAddr(in.lx3)});
    b_.CreateStore(bOff, bLo_);
    b_.CreateStore(bEnd, bHi_);
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
    std::string name = "spyre_ptmm_" + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) +
                       (acc ? "_acc" : "");
    Function *mm = outlined(name, 3, [&](ArrayRef<Value *> a) { emitPtMm(M, N, K, acc, a[0], a[1], a[2]); });
    b_.CreateCall(mm, {lxAddr(in.lx), lxAddr(in.lx2), bDec});
  }

  /// The micro-kernel on decoded B sticks (`bDec`: stick (n/64, k) at float (n/64*K + k)*64).
  /// Per 64-column tile and 64-wide k tile, rows go 4 at a time (16 zmm accumulators), with the
  /// A values of the k tile decoded once per row, so the inner loop is 4 B loads and 16 fma
  /// with a broadcast operand per k. Partial sums live in C between k tiles (fp32, exact).
  void emitPtMm(int64_t M, int64_t N, int64_t K, bool acc, Value *C, Value *A, Value *bDec) {
    constexpr int kRows = 4;
    auto *v32 = FixedVectorType::get(f32_, 32);
    if (!ptScratch_.aDec) { // one set of scratch buffers per function, shared by its pt.mm's
      IRBuilder<> eb(&f_->getEntryBlock(), f_->getEntryBlock().begin());
      ptScratch_.aDec = eb.CreateAlloca(ArrayType::get(f32_, kRows * kLanes));
      ptScratch_.aDec->setAlignment(Align(64));
      for (auto &a : ptScratch_.accs) {
        a = eb.CreateAlloca(vf_);
        a->setAlignment(Align(64));
      }
    }
    AllocaInst *aDec = ptScratch_.aDec, *const *accs = ptScratch_.accs;
    SmallVector<int, 64> cat, lo, hi;
    for (unsigned l = 0; l < kLanes; ++l)
      cat.push_back(static_cast<int>(l));
    for (unsigned l = 0; l < 32; ++l) {
      lo.push_back(static_cast<int>(l));
      hi.push_back(static_cast<int>(32 + l));
    }
    Function *fma = Intrinsic::getDeclaration(&m_, Intrinsic::fma, {vf_});
    auto c64 = [&](int64_t v) { return b_.getInt64(static_cast<uint64_t>(v)); };
    countedLoop(N / 64, "pt.n", [&](Value *nt) {
      countedLoop(K / 64, "pt.kt", [&](Value *kt) {
        // The k tile's 64 decoded B rows: sticks (nt, kt*64 + kk).
        Value *bTile = b_.CreateInBoundsGEP(vf_, bDec, b_.CreateAdd(b_.CreateMul(nt, c64(K)), b_.CreateMul(kt, c64(64))));
        Value *first = b_.CreateICmpEQ(kt, c64(0));
        // Rows i0 .. i0+rows-1 over this k tile.
        auto block = [&](Value *i0, int rows) {
          Value *c0[kRows], *c1[kRows];
          for (int r = 0; r < rows; ++r) {
            // C sticks (2nt, i) and (2nt+1, i); A stick (kt, i), decoded.
            Value *i = b_.CreateAdd(i0, c64(r));
            c0[r] = b_.CreateInBoundsGEP(i8_, C, b_.CreateMul(b_.CreateAdd(b_.CreateMul(nt, c64(2 * M)), i), c64(128)));
            c1[r] = b_.CreateInBoundsGEP(i8_, c0[r], c64(M * 128));
            Value *cur = b_.CreateShuffleVector(b_.CreateAlignedLoad(v32, c0[r], Align(4)),
                                                b_.CreateAlignedLoad(v32, c1[r], Align(4)), cat);
            if (!acc)
              cur = b_.CreateSelect(first, Constant::getNullValue(vf_), cur);
            b_.CreateAlignedStore(cur, accs[r], Align(64));
            Value *aAddr = b_.CreateInBoundsGEP(i8_, A, b_.CreateMul(b_.CreateAdd(b_.CreateMul(kt, c64(M)), i), c64(128)));
            Value *dst = b_.CreateConstInBoundsGEP1_64(f32_, aDec, static_cast<uint64_t>(r) * kLanes);
            b_.CreateAlignedStore(decode(b_.CreateAlignedLoad(vi16_, aAddr, Align(2))), dst, Align(64));
          }
          countedLoop(64, "pt.k", [&](Value *kk) {
            Value *bV = b_.CreateAlignedLoad(vf_, b_.CreateInBoundsGEP(vf_, bTile, kk), Align(64));
            for (int r = 0; r < rows; ++r) {
              Value *aP = b_.CreateInBoundsGEP(f32_, aDec, b_.CreateAdd(c64(static_cast<int64_t>(r) * kLanes), kk));
              Value *aV = b_.CreateVectorSplat(kLanes, b_.CreateAlignedLoad(f32_, aP, Align(4)));
              Value *sum = b_.CreateCall(fma, {aV, bV, b_.CreateAlignedLoad(vf_, accs[r], Align(64))});
              b_.CreateAlignedStore(sum, accs[r], Align(64));
            }
          });
          for (int r = 0; r < rows; ++r) {
            Value *res = b_.CreateAlignedLoad(vf_, accs[r], Align(64));
            b_.CreateAlignedStore(b_.CreateShuffleVector(res, lo), c0[r], Align(4));
            b_.CreateAlignedStore(b_.CreateShuffleVector(res, hi), c1[r], Align(4));
          }
        };
        countedLoop(M / kRows, "pt.ib", [&](Value *ib) { block(b_.CreateMul(ib, c64(kRows)), kRows); });
        countedLoop(M % kRows, "pt.ir", [&](Value *ir) { block(b_.CreateAdd(ir, c64(M / kRows * kRows)), 1); });
      });
    });
  }

  // Ring transfers call the simulator's shared implementation (simulator/lib/ring.cpp).
  void lowerRing(const Instr &in) {
    Value *port = b_.CreateLoad(ptr_, b_.CreateConstInBoundsGEP1_64(i8_, core_, offsetof(sim::CoreState, ring)));
    Value *p = lxAddr(in.lx);
    Value *bytes = b_.getInt64(in.imm * 128);
    Value *dir = b_.getInt32(static_cast<uint32_t>(in.imms[0]));
    if (in.op == Opcode::RingSend) {
      FunctionCallee fn = m_.getOrInsertFunction("spyre_ring_send", FunctionType::get(b_.getVoidTy(), {ptr_, i32_, ptr_, i64_}, false));
      b_.CreateCall(fn, {port, dir, p, bytes});
      return;
    }
    int mode = in.op == Opcode::RingRecv ? 0 : in.fmt == Format::F32 ? 1 : 2;
    FunctionCallee fn = m_.getOrInsertFunction("spyre_ring_recv",
                                               FunctionType::get(b_.getVoidTy(), {ptr_, i32_, ptr_, i64_, i32_}, false));
    b_.CreateCall(fn, {port, dir, p, bytes, b_.getInt32(mode)});
  }

  /// pt.tr moves 16-bit words only: the reference's 64 x 64 tile transpose (isa::ptTr, SSE2
  /// unpacks) beats a per-word loop of IR, and a call per instruction costs nothing next to it.
  /// The same call at every tier.
  void lowerPtTr(const Instr &in) {
    b_.CreateCall(helper("spyre_jit_pt_tr", {ptr_, ptr_, i64_, i64_}),
                  {lxAddr(in.lx), lxAddr(in.lx2), b_.getInt64(in.imm), b_.getInt64(in.imms[0])});
  }

  void lowerPtOut(const Instr &in) {
    const int64_t M = in.imm, N = in.imms[0];
    Value *D = lxAddr(in.lx), *C = lxAddr(in.lx2);
    auto *v32 = FixedVectorType::get(f32_, 32);
    SmallVector<int, 64> cat;
    for (unsigned l = 0; l < kLanes; ++l)
      cat.push_back(l);
    countedLoop(M, "ptout.i", [&](Value *i) {
      countedLoop(N / 64, "ptout.n", [&](Value *nt) {
        Value *c0 = b_.CreateInBoundsGEP(i8_, C, b_.CreateMul(b_.CreateAdd(b_.CreateMul(b_.CreateMul(nt, b_.getInt64(2)), b_.getInt64(M)), i), b_.getInt64(128)));
        Value *c1 = b_.CreateInBoundsGEP(i8_, c0, b_.getInt64(M * 128));
        Value *v = b_.CreateShuffleVector(b_.CreateAlignedLoad(v32, c0, Align(4)), b_.CreateAlignedLoad(v32, c1, Align(4)), cat);
        Value *d = b_.CreateInBoundsGEP(i8_, D, b_.CreateMul(b_.CreateAdd(b_.CreateMul(nt, b_.getInt64(M)), i), b_.getInt64(128)));
        b_.CreateAlignedStore(encode(v), d, Align(2));
      });
    });
  }

  /// ld.pad: the plain load, then the lanes from n on (up to the format's stick width) take
  /// the fill immediate rounded to the format — a select against a constant lane mask.
  void lowerLdPad(const Instr &in) {
    Instr ld = in;
    ld.op = Opcode::Ld;
    lowerInstr(ld);
    unsigned width = in.fmt == Format::DL16 ? kLanes : kLanes / 2;
    SmallVector<Constant *, 64> keep;
    for (unsigned l = 0; l < kLanes; ++l)
      keep.push_back(b_.getInt1(l < static_cast<uint64_t>(in.imm) || l >= width));
    Value *fill = ConstantVector::getSplat(ElementCount::getFixed(kLanes),
                                           ConstantFP::get(f32_, isa::roundTo(in.fmt, in.fimm)));
    writeV(in.v[0], b_.CreateSelect(ConstantVector::get(keep), readV(in.v[0]), fill));
  }

  /// ldu / stu at every tier: a masked vector load / store of the first n elements at an
  /// element-aligned address (the masked-off lanes of a load read as 0, which decodes to +0).
  void lowerUnaligned(const Instr &in) {
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
  Value *widenF32(Value *stick) {
    SmallVector<int, 64> lanes;
    for (unsigned i = 0; i < kLanes; ++i)
      lanes.push_back(static_cast<int>(i));
    return b_.CreateShuffleVector(stick, Constant::getNullValue(stick->getType()), lanes);
  }
  Value *lowF32(Value *reg) {
    SmallVector<int, 32> lanes;
    for (unsigned i = 0; i < kLanes / 2; ++i)
      lanes.push_back(static_cast<int>(i));
    return b_.CreateShuffleVector(reg, lanes);
  }

  FunctionCallee helper(const char *name, std::vector<Type *> args) {
    return m_.getOrInsertFunction(name, FunctionType::get(b_.getVoidTy(), args, false));
  }
  /// The O0 tier's one-call lowerings of ld.pad, DMA, pt.mm and pt.out (runtime_helpers.cpp;
  /// pt.tr is such a call at every tier, lowerPtTr).
  bool lowerCall(const Instr &in) {
    auto i64c = [&](int64_t v) { return b_.getInt64(static_cast<uint64_t>(v)); };
    switch (in.op) {
    case Opcode::LdPad:
      b_.CreateCall(helper("spyre_jit_ld_pad", {i32_, ptr_, ptr_, i64_, f32_}),
                    {b_.getInt32(static_cast<uint32_t>(in.fmt)), vregPtr(b_, in.v[0]), lxAddr(in.lx), i64c(in.imm),
                     ConstantFP::get(f32_, isa::roundTo(in.fmt, in.fimm))});
      return true;
    case Opcode::DmaIn:
    case Opcode::DmaMc:
    case Opcode::DmaOut: {
      const auto &d = in.dma;
      Value *argBase = b_.CreateLoad(i64_, b_.CreateConstInBoundsGEP1_64(i64_, argBase_, in.ddr.arg));
      Value *ddr = b_.CreateGEP(i8_, ddr_, b_.CreateAdd(b_.CreateAdd(argBase, readS(in.ddr.base)), i64c(in.ddr.offset)));
      b_.CreateCall(helper("spyre_jit_dma", {ptr_, ptr_, i64_, i64_, i64_, i64_, i64_, i64_, i64_, i32_}),
                    {lxAddr(in.lx), ddr, i64c(d.n[0]), i64c(d.n[1]), i64c(d.n[2] * 128), i64c(d.lxStride[0]),
                     i64c(d.lxStride[1]), i64c(d.ddrStride[0]), i64c(d.ddrStride[1]),
                     b_.getInt32(isa::isDmaToLx(in.op) ? 1 : 0)});
      return true;
    }
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

  void lowerInstr(const Instr &in) {
    lowerOp(in);
    invalidateDecodedB(in);
  }
  void lowerOp(const Instr &in) {
    if (outOfLine_ && lowerCall(in))
      return;
    if (in.op == Opcode::LdPad) {
      lowerLdPad(in);
      return;
    }
    if (outOfLine_ && (in.op == Opcode::Ld || in.op == Opcode::St || isa::isSfp(in.op))) {
      lowerOutOfLine(in);
      return;
    }
    switch (in.op) {
    case Opcode::Li: {
      size_t n = liCount_++;
      if (n < liTables_.size() && liTables_[n])
        writeS(in.r[0], perCoreValue(*liTables_[n], ".li"));
      else
        writeS(in.r[0], b_.getInt64(in.imm));
      return;
    }
    case Opcode::Addi: writeS(in.r[0], b_.CreateAdd(readS(in.r[1]), b_.getInt64(in.imm))); return;
    case Opcode::Muli: writeS(in.r[0], b_.CreateMul(readS(in.r[1]), b_.getInt64(in.imm))); return;
    case Opcode::Tbl: writeS(in.r[0], perCoreValue(in.table, ".tbl")); return;
    case Opcode::Loop:
      if (lowerSharedLoop(in))
        return;
      ++loopDepth_;
      countedLoop(in.imm, "loop", [&](Value *) {
        for (const auto &b : in.body)
          lowerInstr(b);
      });
      --loopDepth_;
      return;
    case Opcode::PtMm: lowerPtMm(in); return;
    case Opcode::RingSend:
    case Opcode::RingRecv:
    case Opcode::RingPsum: lowerRing(in); return;
    case Opcode::PtOut: lowerPtOut(in); return;
    case Opcode::PtTr: lowerPtTr(in); return;
    case Opcode::DmaIn:
    case Opcode::DmaMc: lowerDma(in, true); return;
    case Opcode::DmaOut: lowerDma(in, false); return;
    case Opcode::Wait:
    case Opcode::Bar: return;
    case Opcode::Ld: {
      Value *p = lxAddr(in.lx);
      if (in.fmt == Format::DL16) {
        writeV(in.v[0], decode(b_.CreateAlignedLoad(vi16_, p, Align(2))));
      } else {
        writeV(in.v[0], widenF32(b_.CreateAlignedLoad(FixedVectorType::get(f32_, 32), p, Align(4))));
      }
      return;
    }
    case Opcode::Ldu:
    case Opcode::Stu: lowerUnaligned(in); return;
    case Opcode::St: {
      Value *p = lxAddr(in.lx);
      Value *v = readV(in.v[0]);
      if (in.fmt == Format::DL16) {
        b_.CreateAlignedStore(encode(v), p, Align(2));
      } else {
        b_.CreateAlignedStore(lowF32(v), p, Align(4));
      }
      return;
    }
    default:
      if (isa::isSfp(in.op)) {
        lowerSfp(in);
        return;
      }
      break;
    }
    throw spyre::Unsupported("JIT lowering of '" + std::string(isa::opInfo(in.op).mnemonic) + "'");
  }
};

} // namespace

bool phaseIsEmpty(const isa::CoreProgram &p, std::pair<size_t, size_t> range) {
  for (size_t i = range.first; i < range.second; ++i)
    if (p.body[i].op != Opcode::Bar && p.body[i].op != Opcode::Wait)
      return false;
  return true;
}

void lowerKernelInto(const isa::Kernel &k, Module &m, bool outOfLine) {
  LLVMContext &ctx = m.getContext();
  Type *ptr = PointerType::getUnqual(ctx);
  auto *fty = FunctionType::get(Type::getVoidTy(ctx), {ptr, ptr, ptr}, false);
  // Empty phases get no function (the engine skips them); phases equal up to `li` immediates
  // share one, the other programs' symbols are aliases of it.
  std::vector<PhaseGroup> groups = groupPhases(k);
  SharedLoops shared;
  if (!outOfLine) {
    std::map<std::string, int> seen;
    for (const PhaseGroup &g : groups) {
      const auto &body = k.programs[g.programs[0]].body;
      auto range = isa::phaseRanges(k.programs[g.programs[0]])[g.phase];
      for (size_t i = range.first; i < range.second; ++i)
        if (body[i].op == Opcode::Loop && !containsLi(body[i]) && ++seen[isa::printInstr(body[i], k)] == 2)
          shared.fns[isa::printInstr(body[i], k)] = nullptr;
    }
  }
  for (const PhaseGroup &g : groups) {
    size_t rep = g.programs[0];
    auto ranges = isa::phaseRanges(k.programs[rep]);
    Function *f = Function::Create(fty, Function::ExternalLinkage, phaseSymbol(k, rep, g.phase), &m);
    f->addFnAttr(Attribute::NoUnwind);
    for (unsigned a = 0; a < 3; ++a)
      f->addParamAttr(a, Attribute::NoAlias);
    ArrayRef<Instr> body(k.programs[rep].body);
    FunctionLowering(m, k, k.programs[rep], f, outOfLine, g.liTables, &shared)
        .lower(body.slice(ranges[g.phase].first, ranges[g.phase].second - ranges[g.phase].first));
    for (size_t i = 1; i < g.programs.size(); ++i)
      GlobalAlias::create(fty, 0, GlobalValue::ExternalLinkage, phaseSymbol(k, g.programs[i], g.phase), f, &m);
  }
}

void verifyLowered(const Module &m) {
  std::string err;
  raw_string_ostream os(err);
  if (verifyModule(m, &os))
    throw spyre::Error("internal error: invalid LLVM IR for " + m.getModuleIdentifier() + ": " + os.str());
}

std::unique_ptr<Module> lowerKernel(const isa::Kernel &k, LLVMContext &ctx) {
  auto m = std::make_unique<Module>("spyre_" + k.name, ctx);
  lowerKernelInto(k, *m, false);
  verifyLowered(*m);
  return m;
}

} // namespace spyre::jit
