// The lowering of one phase (or one shared loop nest) to one LLVM function. Private to the JIT.
//
// One `lower<Enum>` handler per row of instructions.def, declared by the X-macro below and
// dispatched by the switch it generates (lowering.cpp), so a row without a lowering fails to
// link. The handlers live with their instruction group:
//   lower_scalar.cpp       li, addi, muli, tbl, loop (and shared loop nests)
//   lower_memory.cpp       ld, ld.pad, st, ldu, stu
//   lower_dma.cpp          dma.in, dma.out, dma.mc
//   lower_sfp.cpp          the SFP vector ops
//   lower_pt.cpp           pt.mm (with the decoded-B cache), pt.out, pt.tr
//   lower_ring.cpp         ring.send/recv/psum, wait, bar
//   lower_dl16.cpp         the DL16 codec as vector IR (decode, encode, roundTo)
//   lower_out_of_line.cpp  the O0 tier: calls of the shared implementations
//   lowering.cpp           the entry points, dispatch, registers and addresses
#pragma once
#include "generic_nests.h"
#include "lowering.h"
#include "spyre/isa/program.h"
#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/DenseMap.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace spyre::jit {

/// Top-level loop nests that occur more than once in a kernel's compiled phases (equal as
/// isa::Instr: every field but the source line), and the function each compiles to. Double-buffered kernels repeat the same loop nest
/// for each half of the pipeline (and multi-phase kernels per phase); SelectionDAG on the
/// vector code of a nest costs milliseconds, so each distinct nest is compiled once, as a
/// function with the phase signature that keeps registers in CoreState at its boundary, and
/// called. A nest with `li` stays inline (its immediates may be per-core tables, phase_groups.h).
struct SharedLoops {
  std::unordered_map<isa::Instr, llvm::Function *> fns; ///< nest -> function (null until first lowered)
};

/// Per-core values of the `li` immediates of a phase group, by `li` ordinal (phase_groups.h).
using LiTables = std::vector<std::optional<std::vector<int64_t>>>;

class FunctionLowering {
public:
  using Value = llvm::Value;
  using Instr = isa::Instr;

  FunctionLowering(llvm::Module &m, const isa::Kernel &k, const isa::CoreProgram &prog, llvm::Function *f,
                   const LowerOptions &opts, const LiTables &liTables, SharedLoops *sharedLoops);

  /// Emits the body of the function: `instrs`, then the write-back of the registers written.
  void lower(llvm::ArrayRef<Instr> instrs);

  /// A phase function: these top-level loops become calls of their generic nests
  /// (generic_nests.h). Call before lower().
  void setGenericNests(const std::unordered_map<const Instr *, NestUse> *nests) { genericNests_ = nests; }
  /// A generic nest's own function (4th argument: the parameter table): the erased fields of
  /// the instructions being lowered, by address, and their index in the table.
  void setErasedFields(const llvm::DenseMap<const void *, unsigned> *index) { paramIndex_ = index; }

private:
  static constexpr unsigned kLanes = isa::kLanes;

  llvm::Module &m_;
  const isa::Kernel &k_;
  const isa::CoreProgram &prog_;
  llvm::Function *f_;
  llvm::LLVMContext &ctx_;
  llvm::IRBuilder<> b_;
  llvm::Type *i8_, *i16_, *i32_, *i64_, *f32_, *ptr_;
  llvm::FixedVectorType *vf_, *vi32_, *vi16_;
  Value *core_ = nullptr, *ddr_ = nullptr, *argBase_ = nullptr, *lx_ = nullptr;
  llvm::BasicBlock *entry_ = nullptr;
  // Registers live in allocas for the whole phase (SROA/mem2reg promote them), created and
  // loaded from CoreState on first use. Within one basic block the lowering also remembers the
  // last value of each register, so straight-line code reads SSA values directly.
  llvm::AllocaInst *sreg_[isa::kNumSRegs] = {};
  llvm::AllocaInst *vreg_[isa::kNumVRegs] = {};
  // The same registers without the fp32 NaN canonicalisation of roundTo(F32) (preCanon_):
  // every write stores both, so a lane differs between the two only in a NaN's payload and
  // sign. Consumers whose result depends on a NaN lane only through its being NaN, and is
  // canonicalised or DL16-encoded itself, read this one (readNaNBlind): a chain like layer
  // norm's `sub, mul, fma, st` canonicalises nothing in its loop, and a loop-carried fp32
  // accumulator only where the canonical value is read (LLVM sinks it to the loop exit).
  llvm::AllocaInst *vregRaw_[isa::kNumVRegs] = {};
  bool sWritten_[isa::kNumSRegs] = {};
  bool vWritten_[isa::kNumVRegs] = {};
  struct Cached {
    Value *v = nullptr;
    llvm::BasicBlock *bb = nullptr;
  };
  Cached sCur_[isa::kNumSRegs], vCur_[isa::kNumVRegs], vRawCur_[isa::kNumVRegs];
  // roundTo(F32)'s canonicalised results -> the value before (a NaN lane with any payload).
  llvm::DenseMap<Value *, Value *> preCanon_;
  // DL16 codes of decoded values (decode(c) -> c): encode(decode(c)) == c for every code, so
  // storing or rounding a value that came from DL16 needs no re-encoding.
  llvm::DenseMap<Value *, Value *> codeOf_;
  // DL16-rounded values -> the value before rounding (encode(round(y)) == encode(y)), so a
  // rounded result that is only stored is encoded once and the rounding itself is dead code.
  llvm::DenseMap<Value *, Value *> preRound_;
  // Values known to be DL16 values (table lookups: unaryByTable), besides codeOf_'s and the
  // rounded results in preRound_: rounding them to DL16 is the identity.
  llvm::DenseMap<Value *, bool> exact_;
  bool isDl16(Value *v) const { return codeOf_.count(v) || preRound_.count(v) || exact_.count(v); }
  // The vector registers that hold DL16 values on every path to each instruction of this
  // function (bit v: register v), from a walk of the structured program (analyseDl16): what a
  // value cached per basic block cannot tell, e.g. softmax's row sum read inside the next loop.
  llvm::DenseMap<const Instr *, uint32_t> dl16Before_;
  uint32_t analyseDl16(llvm::ArrayRef<Instr> instrs, uint32_t state);
  // The vector registers whose 64 lanes are all equal after each instruction (bcast, splat, a
  // DL16 rsum / rmax / rmin, and lane-wise ops of such registers only; analyseUniform, the
  // same walk): their results are written as a splat of lane 0, so LLVM holds a loop-invariant
  // row value (a mean, an rstd) in one host register instead of eight.
  llvm::DenseMap<const Instr *, uint32_t> uniformAfter_;
  uint32_t analyseUniform(llvm::ArrayRef<Instr> instrs, uint32_t state);
  const Instr *cur_ = nullptr; // the instruction being lowered (writeV)
  /// Operand `k` of `in` (read as `val`) holds DL16 values.
  bool dl16Operand(const Instr &in, int k, Value *val) const {
    if (isDl16(val))
      return true;
    auto it = dl16Before_.find(&in);
    return it != dl16Before_.end() && in.v[k] >= 0 && (it->second >> in.v[k] & 1u);
  }
  int tblCount_ = 0;
  struct {
    llvm::AllocaInst *aDec = nullptr, *accs[3][8] = {}; // accs[width index][row]
  } ptScratch_; // pt.mm: decoded A rows (up to 1.5 KiB) and accumulators (lower_pt.cpp: ptBlock)
  // Decoded-B cache of a phase with pt.mm (see lowerPtMm): the LX byte range [bLo, bHi) whose
  // sticks are decoded to fp32 in `decodedLx_` (this host thread's mirror of LX, one float per
  // DL16 lane at float index = LX byte offset / 2). Empty when bHi == 0. Every LX write of the
  // phase empties it if it overlaps the range.
  llvm::AllocaInst *bLo_ = nullptr, *bHi_ = nullptr;
  Value *decodedLx_ = nullptr;
  // The O0 tier: vector registers stay in CoreState and ld/st/SFP instructions call the shared
  // implementations (what the interpreter runs), so the IR is small and compiles fast.
  bool outOfLine_ = false;
  bool shareDecodedB_ = true; // LowerOptions::shareDecodedB
  int64_t tinyMRows_ = -1;    // LowerOptions::tinyMRows
  // Per-core values of the `li` immediates that differ between the programs sharing this
  // function (phase_groups.h), by `li` ordinal in pre-order; nullopt: a constant.
  const LiTables &liTables_;
  size_t liCount_ = 0;
  SharedLoops *sharedLoops_; // null inside a shared loop's own function
  const std::unordered_map<const Instr *, NestUse> *genericNests_ = nullptr;
  const llvm::DenseMap<const void *, unsigned> *paramIndex_ = nullptr;
  llvm::DenseMap<unsigned, Value *> paramVals_; // loaded in the entry block on first use
  int loopDepth_ = 0;

  // --- dispatch (lowering.cpp) ---------------------------------------------------------------
  void lowerInstr(const Instr &in);
  void lowerOp(const Instr &in);
  // One handler per instruction.
#define INST(E, M, U, O, F, T, S) void lower##E(const Instr &in);
#include "spyre/isa/instructions.def"
#undef INST

  // --- registers and addresses (lowering.cpp) ------------------------------------------------
  void storeWrittenRegisters();
  Value *sregPtr(llvm::IRBuilder<> &b, int i);
  Value *vregPtr(llvm::IRBuilder<> &b, int i);
  llvm::AllocaInst *sregSlot(int r);
  llvm::AllocaInst *vregSlot(int v);
  Value *readS(int r);
  void writeS(int r, Value *v);
  Value *readV(int v);
  /// Register v for a consumer whose result lanes depend on a NaN input lane only through
  /// its being NaN (IEEE arithmetic, nanMaxMin) and are then rounded to a format (which
  /// canonicalises NaN) or DL16-encoded: the value before the NaN canonicalisation.
  Value *readNaNBlind(int v);
  void writeV(int v, Value *x);
  /// Stores the value `x` of register v and its NaN-blind form `raw` (readNaNBlind).
  void setV(int v, Value *x, Value *raw);
  /// The value of the immediate field `field` of an instruction being lowered: a constant, or
  /// in a generic nest's function, its entry of the parameter table when the field is erased.
  Value *imm(const int64_t &field);
  /// The LX byte offset of `a`.
  Value *lxOffset(const isa::LxAddr &a) { return b_.CreateAdd(readS(a.base), imm(a.offset)); }
  Value *lxAddr(const isa::LxAddr &a, Value *extra = nullptr);
  Value *splat(uint32_t c) {
    return llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(kLanes), b_.getInt32(c));
  }
  /// A 32-bit constant shaped like `like` (a <64 x i32> vector or an i32 scalar).
  Value *c32(Value *like, uint32_t c);
  Value *fsplat(float x) {
    return llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(kLanes), llvm::ConstantFP::get(f32_, x));
  }
  Value *asInt(Value *v) { return b_.CreateBitCast(v, vi32_); }
  Value *asFloat(Value *v) { return b_.CreateBitCast(v, vf_); }
  Value *intrinsic(llvm::Intrinsic::ID id, std::vector<Value *> args, std::vector<llvm::Type *> types);

  // --- scalar / control (lower_scalar.cpp) ---------------------------------------------------
  bool lowerSharedLoop(const Instr &in);
  bool lowerGenericNest(const Instr &in);
  /// The registers this function holds, back from CoreState after a call of a nest function.
  void reloadRegistersAfterCall();
  Value *perCoreValue(const std::vector<int64_t> &table, const char *what);

  // --- memory (lower_memory.cpp) -------------------------------------------------------------
  void lowerUnaligned(const Instr &in);
  Value *widenF32(Value *stick);
  Value *lowF32(Value *reg);

  // --- DMA (lower_dma.cpp) -------------------------------------------------------------------
  void lowerDma(const Instr &in, bool toLx);
  void lowerIndexedDma(const Instr &in, const char *fnName);

  // --- SFP (lower_sfp.cpp) -------------------------------------------------------------------
  Value *select01(Value *cond) { return b_.CreateSelect(cond, fsplat(1.0f), fsplat(0.0f)); }
  /// A float constant shaped like `like` (a float vector of any width, or a float).
  llvm::Constant *fc(Value *like, float x) { return llvm::ConstantFP::get(like->getType(), x); }
  llvm::Constant *ic(Value *like, uint32_t x);
  Value *nanMaxMin(Value *a, Value *b, bool isMax);
  Value *expApprox(Value *x);
  Value *tanhApprox(Value *x);
  Value *erfApprox(Value *x);
  Value *horner(Value *x, std::initializer_list<float> coeffs);
  Value *copySign(Value *m, Value *x);
  Value *unaryByTable(isa::Opcode op, Value *x);
  Value *reduceStick(isa::Opcode op, isa::Format f, Value *a);
  void callSfp(const Instr &in, int d, int d2, int a, int b, int c);
  void lowerSfpBinary(const Instr &in);
  void lowerCompare(const Instr &in, llvm::CmpInst::Predicate fp, llvm::CmpInst::Predicate ip);

  // --- PT (lower_pt.cpp) ---------------------------------------------------------------------
  void setUpDecodedB();
  void invalidateDecodedB(const Instr &in);
  /// rawB: B is the DL16 sticks in LX, decoded in registers (tiny M); else the decoded mirror.
  void emitPtMm(int64_t M, int64_t N, int64_t K, bool acc, Value *C, Value *A, Value *b, bool rawB);

  // --- ring (lower_ring.cpp) -----------------------------------------------------------------
  void lowerRing(const Instr &in);

  // --- DL16 codec (lower_dl16.cpp) -----------------------------------------------------------
  Value *decode(Value *h16);
  Value *signUnlessNaN(Value *x, Value *u, unsigned shift);
  Value *encode(Value *x);
  Value *roundTo(isa::Format f, Value *x);

  // --- out-of-line tier (lower_out_of_line.cpp) ----------------------------------------------
  /// The O0 tier's lowering of `in` if it has one (false: lowered like the inline tier).
  bool lowerOutOfLineOp(const Instr &in);
  bool lowerCall(const Instr &in);
  void lowerOutOfLine(const Instr &in);
  Value *vregArg(int v);
  llvm::FunctionCallee helper(const char *name, std::vector<llvm::Type *> args);

  // --- control-flow helpers ------------------------------------------------------------------
  // Emits `for (i = 0; i < n; ++i) body(i)`; n is a compile-time constant.
  template <typename Fn> void countedLoop(int64_t n, const char *name, Fn body) {
    if (n <= 0)
      return;
    loopFromZero(nullptr, name, body, [&](Value *next) { return b_.CreateICmpULT(next, b_.getInt64(n)); });
  }

  /// The same with a run-time count `n` (a generic nest's trip count): skipped when n <= 0.
  template <typename Fn> void countedLoop(Value *n, const char *name, Fn body) {
    if (auto *c = llvm::dyn_cast<llvm::ConstantInt>(n)) {
      countedLoop(c->getSExtValue(), name, body);
      return;
    }
    loopFromZero(b_.CreateICmpSGT(n, b_.getInt64(0)), name, body,
                 [&](Value *next) { return b_.CreateICmpSLT(next, n); });
  }

  /// The two countedLoops' shared shape: i = 0, 1, .. while `more(i + 1)`, entered if `enter`
  /// (nullptr: always).
  template <typename Fn, typename More> void loopFromZero(Value *enter, const char *name, Fn body, More more) {
    llvm::BasicBlock *pre = b_.GetInsertBlock();
    llvm::BasicBlock *loop = llvm::BasicBlock::Create(ctx_, name, f_);
    llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx_, std::string(name) + ".end", f_);
    if (enter)
      b_.CreateCondBr(enter, loop, exit);
    else
      b_.CreateBr(loop);
    b_.SetInsertPoint(loop);
    llvm::PHINode *iv = b_.CreatePHI(i64_, 2, std::string(name) + ".i");
    iv->addIncoming(b_.getInt64(0), pre);
    body(iv);
    Value *next = b_.CreateAdd(iv, b_.getInt64(1));
    iv->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(more(next), loop, exit);
    b_.SetInsertPoint(exit);
  }

  /// An internal, never-inlined function `name` of this module with pointer parameters, its
  /// body emitted by `body(args)` with this lowering's builder on first use.
  template <typename Fn> llvm::Function *outlined(const std::string &name, unsigned numArgs, Fn body) {
    if (llvm::Function *fn = m_.getFunction(name))
      return fn;
    std::vector<llvm::Type *> params(numArgs, ptr_);
    llvm::Function *fn = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), params, false),
                                                llvm::Function::InternalLinkage, name, &m_);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->addFnAttr(llvm::Attribute::NoInline);
    llvm::IRBuilderBase::InsertPoint ip = b_.saveIP();
    llvm::Function *phaseFn = f_;
    auto scratch = ptScratch_;
    f_ = fn;
    ptScratch_ = {};
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn));
    llvm::SmallVector<Value *, 4> args;
    for (llvm::Argument &a : fn->args())
      args.push_back(&a);
    body(args);
    b_.CreateRetVoid();
    f_ = phaseFn;
    ptScratch_ = scratch;
    b_.restoreIP(ip);
    return fn;
  }
};

} // namespace spyre::jit
