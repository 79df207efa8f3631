#include "lowering.h"
#include "function_lowering.h"
#include "phase_groups.h"
#include "spyre/sim/machine.h"
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <algorithm>
#include <unordered_map>

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

bool containsPtMm(const Instr &in) {
  return in.op == Opcode::PtMm || std::any_of(in.body.begin(), in.body.end(), containsPtMm);
}
bool containsLi(const Instr &in) {
  return in.op == Opcode::Li || std::any_of(in.body.begin(), in.body.end(), containsLi);
}

} // namespace

FunctionLowering::FunctionLowering(Module &m, const isa::Kernel &k, const isa::CoreProgram &prog, Function *f,
                                   const LowerOptions &opts, const LiTables &liTables, SharedLoops *sharedLoops)
    : m_(m), k_(k), prog_(prog), f_(f), ctx_(m.getContext()), b_(ctx_), outOfLine_(opts.outOfLine),
      shareDecodedB_(opts.shareDecodedB), tinyMRows_(opts.tinyMRows), liTables_(liTables),
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

void FunctionLowering::lower(ArrayRef<Instr> instrs) {
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
  analyseDl16(instrs, 0); // registers from CoreState: unknown
  analyseUniform(instrs, 0);
  for (const Instr &in : instrs)
    lowerInstr(in);
  // Write back what the phase wrote, so machine state matches the interpreter.
  storeWrittenRegisters();
  b_.CreateRetVoid();
  IRBuilder<>(entry_).CreateBr(body);
}

/// Forward walk: an SFP result in DL16 format (rounded by its semantics), a DL16 load or a DL16
/// broadcast makes its register DL16; any other instruction naming a vector register, except
/// the stores, makes all it names unknown (conservative: some of them are only read). A loop's
/// head state is the fixpoint of (state before) ∩ (state at the end of the body).
uint32_t FunctionLowering::analyseDl16(ArrayRef<Instr> instrs, uint32_t state) {
  for (const Instr &in : instrs) {
    dl16Before_[&in] = state;
    if (in.op == Opcode::Loop) {
      uint32_t head = state;
      for (;;) {
        uint32_t end = analyseDl16(in.body, head);
        uint32_t next = state & end;
        if (next == head) {
          state = head & end;
          break;
        }
        head = next;
      }
      continue;
    }
    switch (in.op) {
    case Opcode::St:
    case Opcode::Stu: continue; // reads its register
    case Opcode::Ld: case Opcode::LdPad: case Opcode::Ldu: case Opcode::Bcast:
    case Opcode::Add: case Opcode::Sub: case Opcode::Mul: case Opcode::Div: case Opcode::Max: case Opcode::Min:
    case Opcode::Fma: case Opcode::Neg: case Opcode::Abs: case Opcode::Relu: case Opcode::Floor: case Opcode::Sqrt:
    case Opcode::Rsqrt: case Opcode::Recip: case Opcode::Clip: case Opcode::Exp: case Opcode::Sigmoid:
    case Opcode::Silu: case Opcode::Tanh: case Opcode::Gelu: case Opcode::GeluErf: case Opcode::Rsum:
    case Opcode::Rmax: case Opcode::Rmin:
      if (in.fmt == Format::DL16 && in.v[0] >= 0) {
        state |= 1u << in.v[0];
        continue;
      }
      break;
    default: break;
    }
    for (int v : in.v)
      if (v >= 0)
        state &= ~(1u << v);
  }
  return state;
}

namespace {

/// An instruction whose result lanes are each a function of the same lanes of its register
/// operands (and immediates) alone: uniform operands give a uniform result.
bool laneWise(Opcode op) {
  switch (op) {
  case Opcode::Add: case Opcode::Sub: case Opcode::Mul: case Opcode::Div: case Opcode::Max: case Opcode::Min:
  case Opcode::Fma: case Opcode::Eq: case Opcode::Ne: case Opcode::Lt: case Opcode::Le: case Opcode::Gt:
  case Opcode::Ge: case Opcode::Sel: case Opcode::Neg: case Opcode::Abs: case Opcode::Relu: case Opcode::Floor:
  case Opcode::Sqrt: case Opcode::Rsqrt: case Opcode::Recip: case Opcode::Exp: case Opcode::Log: case Opcode::Tanh:
  case Opcode::Erf: case Opcode::Sigmoid: case Opcode::Gelu: case Opcode::GeluErf: case Opcode::Silu:
  case Opcode::Clip: return true;
  default: return false;
  }
}

} // namespace

/// Forward walk as analyseDl16: bcast, splat and a DL16 rsum / rmax / rmin (every one of the
/// 64 lanes holds the result; the f32 forms zero lanes 32..63) make their register uniform, a
/// lane-wise op of uniform registers too; any other instruction naming a vector register,
/// except the stores, makes all it names not uniform. A loop's head state is the fixpoint of
/// (state before) ∩ (state at the end of the body).
uint32_t FunctionLowering::analyseUniform(ArrayRef<Instr> instrs, uint32_t state) {
  for (const Instr &in : instrs) {
    if (in.op == Opcode::Loop) {
      uint32_t head = state;
      for (;;) {
        uint32_t end = analyseUniform(in.body, head);
        uint32_t next = state & end;
        if (next == head) {
          state = head & end;
          break;
        }
        head = next;
      }
      uniformAfter_[&in] = state;
      continue;
    }
    bool uniform = false;
    if (in.op == Opcode::St || in.op == Opcode::Stu) {
      uniformAfter_[&in] = state;
      continue; // reads its register
    }
    if (in.op == Opcode::Bcast || in.op == Opcode::Splat) {
      uniform = true;
    } else if (in.op == Opcode::Rsum || in.op == Opcode::Rmax || in.op == Opcode::Rmin) {
      uniform = in.fmt == Format::DL16;
    } else if (laneWise(in.op)) {
      uniform = true;
      for (size_t k = 1; k < std::size(in.v); ++k)
        uniform = uniform && (in.v[k] < 0 || (state >> in.v[k] & 1u));
    }
    for (int v : in.v)
      if (v >= 0)
        state &= ~(1u << v);
    if (uniform && in.v[0] >= 0)
      state |= 1u << in.v[0];
    uniformAfter_[&in] = state;
  }
  return state;
}

void FunctionLowering::lowerInstr(const Instr &in) {
  const Instr *outer = cur_;
  cur_ = &in;
  lowerOp(in);
  cur_ = outer;
  invalidateDecodedB(in);
}

/// One case per row of instructions.def: a row without a `lower<Enum>` handler fails to link.
void FunctionLowering::lowerOp(const Instr &in) {
  if (outOfLine_ && lowerOutOfLineOp(in))
    return;
  switch (in.op) {
#define INST(E, M, U, O, F, T, S)                                                                    \
  case Opcode::E: lower##E(in); return;
#include "spyre/isa/instructions.def"
#undef INST
  }
  throw spyre::Unsupported("JIT lowering of opcode " + std::to_string(static_cast<int>(in.op)));
}

/// The registers this function has written, back to the core's state (the end of a phase,
/// or before a shared loop nest reads them from there).
void FunctionLowering::storeWrittenRegisters() {
  for (int i = 1; i < isa::kNumSRegs; ++i)
    if (sWritten_[i])
      b_.CreateStore(readS(i), sregPtr(b_, i));
  for (int i = 0; i < isa::kNumVRegs; ++i)
    if (vWritten_[i])
      b_.CreateAlignedStore(readV(i), vregPtr(b_, i), Align(64));
}

Value *FunctionLowering::sregPtr(IRBuilder<> &b, int i) {
  return b.CreateConstInBoundsGEP1_64(i8_, core_, offsetof(sim::CoreState, r) + 8 * i);
}

Value *FunctionLowering::vregPtr(IRBuilder<> &b, int i) {
  return b.CreateConstInBoundsGEP1_64(i8_, core_, offsetof(sim::CoreState, v) + 4 * kLanes * i);
}

AllocaInst *FunctionLowering::sregSlot(int r) {
  if (!sreg_[r]) {
    IRBuilder<> eb(entry_);
    sreg_[r] = eb.CreateAlloca(i64_, nullptr, "r" + std::to_string(r));
    eb.CreateStore(eb.CreateLoad(i64_, sregPtr(eb, r)), sreg_[r]);
  }
  return sreg_[r];
}

AllocaInst *FunctionLowering::vregSlot(int v) {
  if (!vreg_[v]) {
    IRBuilder<> eb(entry_);
    vreg_[v] = eb.CreateAlloca(vf_, nullptr, "v" + std::to_string(v));
    vreg_[v]->setAlignment(Align(64));
    Value *init = eb.CreateAlignedLoad(vf_, vregPtr(eb, v), Align(64));
    eb.CreateStore(init, vreg_[v]);
    vregRaw_[v] = eb.CreateAlloca(vf_, nullptr, "v" + std::to_string(v) + ".raw");
    vregRaw_[v]->setAlignment(Align(64));
    eb.CreateStore(init, vregRaw_[v]);
  }
  return vreg_[v];
}

Value *FunctionLowering::readS(int r) {
  if (r < 0)
    return b_.getInt64(0);
  if (sCur_[r].bb != b_.GetInsertBlock())
    sCur_[r] = {b_.CreateLoad(i64_, sregSlot(r)), b_.GetInsertBlock()};
  return sCur_[r].v;
}

void FunctionLowering::writeS(int r, Value *v) {
  if (r <= 0) // r0 (core id) is read-only
    return;
  b_.CreateStore(v, sregSlot(r));
  sWritten_[r] = true;
  sCur_[r] = {v, b_.GetInsertBlock()};
}

Value *FunctionLowering::readV(int v) {
  if (outOfLine_) // registers stay in CoreState
    return b_.CreateAlignedLoad(vf_, vregPtr(b_, v), Align(64));
  if (vCur_[v].bb != b_.GetInsertBlock())
    vCur_[v] = {b_.CreateLoad(vf_, vregSlot(v)), b_.GetInsertBlock()};
  return vCur_[v].v;
}

Value *FunctionLowering::readNaNBlind(int v) {
  if (outOfLine_)
    return readV(v);
  if (vRawCur_[v].bb != b_.GetInsertBlock()) {
    vregSlot(v);
    vRawCur_[v] = {b_.CreateLoad(vf_, vregRaw_[v]), b_.GetInsertBlock()};
  }
  return vRawCur_[v].v;
}

void FunctionLowering::writeV(int v, Value *x) {
  if (outOfLine_) {
    b_.CreateAlignedStore(x, vregPtr(b_, v), Align(64));
    return;
  }
  Value *raw = preCanon_.lookup(x);
  if (cur_ && cur_->op != Opcode::Loop && v == cur_->v[0] && x->getType() == vf_) {
    // A uniform result (analyseUniform): lane 0 splat, so LLVM sees every lane equal.
    auto u = uniformAfter_.find(cur_);
    auto *sv = llvm::dyn_cast<llvm::ShuffleVectorInst>(x);
    if (u != uniformAfter_.end() && (u->second >> v & 1u) && !(sv && sv->isZeroEltSplat())) {
      const bool dl16 = isDl16(x);
      x = b_.CreateShuffleVector(x, SmallVector<int, kLanes>(kLanes, 0));
      raw = nullptr; // a row value: canonical in both forms
      if (dl16)
        exact_[x] = true; // every lane a DL16 value still
    }
  }
  vWritten_[v] = true;
  setV(v, x, raw ? raw : x);
}

void FunctionLowering::setV(int v, Value *x, Value *raw) {
  b_.CreateStore(x, vregSlot(v));
  b_.CreateStore(raw, vregRaw_[v]);
  vCur_[v] = {x, b_.GetInsertBlock()};
  vRawCur_[v] = {raw, b_.GetInsertBlock()};
}

Value *FunctionLowering::imm(const int64_t &field) {
  if (!paramIndex_)
    return b_.getInt64(static_cast<uint64_t>(field));
  auto it = paramIndex_->find(&field);
  if (it == paramIndex_->end())
    return b_.getInt64(static_cast<uint64_t>(field));
  Value *&v = paramVals_[it->second];
  if (!v) {
    IRBuilder<> eb(entry_);
    v = eb.CreateLoad(i64_, eb.CreateConstInBoundsGEP1_64(i64_, f_->getArg(3), it->second),
                      "p" + std::to_string(it->second));
  }
  return v;
}

Value *FunctionLowering::lxAddr(const isa::LxAddr &a, Value *extra) {
  Value *off = lxOffset(a);
  if (extra)
    off = b_.CreateAdd(off, extra);
  return b_.CreateInBoundsGEP(i8_, lx_, off);
}

/// A 32-bit constant shaped like `like` (a <64 x i32> vector or an i32 scalar).
Value *FunctionLowering::c32(Value *like, uint32_t c) {
  return like->getType()->isVectorTy() ? splat(c) : static_cast<Value *>(b_.getInt32(c));
}

Value *FunctionLowering::intrinsic(Intrinsic::ID id, std::vector<Value *> args, std::vector<Type *> types) {
  Function *f = Intrinsic::getDeclaration(&m_, id, types);
  return b_.CreateCall(f, args);
}

bool phaseIsEmpty(const isa::CoreProgram &p, std::pair<size_t, size_t> range) {
  for (size_t i = range.first; i < range.second; ++i)
    if (p.body[i].op != Opcode::Bar && p.body[i].op != Opcode::Wait)
      return false;
  return true;
}

void lowerKernelInto(const isa::Kernel &k, Module &m, const LowerOptions &opts) {
  const bool outOfLine = opts.outOfLine;
  LLVMContext &ctx = m.getContext();
  Type *ptr = PointerType::getUnqual(ctx);
  auto *fty = FunctionType::get(Type::getVoidTy(ctx), {ptr, ptr, ptr}, false);
  // Empty phases get no function (the engine skips them); phases equal up to `li` immediates
  // share one, the other programs' symbols are aliases of it.
  std::vector<PhaseGroup> groups = groupPhases(k);
  SharedLoops shared;
  const bool genericNests = opts.genericNests && !outOfLine;
  if (!outOfLine) { // nests that are not generic (pt.mm) may still be shared
    std::unordered_map<Instr, int> seen;
    for (const PhaseGroup &g : groups) {
      const auto &body = k.programs[g.programs[0]].body;
      auto range = isa::phaseRanges(k.programs[g.programs[0]])[g.phase];
      for (size_t i = range.first; i < range.second; ++i)
        if (body[i].op == Opcode::Loop && !containsLi(body[i]) && ++seen[body[i]] == 2)
          shared.fns[body[i]] = nullptr;
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
    std::unordered_map<const Instr *, NestUse> nests;
    if (genericNests)
      nests = genericNestsOf(k, g);
    FunctionLowering fl(m, k, k.programs[rep], f, opts, g.liTables, &shared);
    fl.setGenericNests(genericNests ? &nests : nullptr);
    fl.lower(body.slice(ranges[g.phase].first, ranges[g.phase].second - ranges[g.phase].first));
    for (size_t i = 1; i < g.programs.size(); ++i)
      GlobalAlias::create(fty, 0, GlobalValue::ExternalLinkage, phaseSymbol(k, g.programs[i], g.phase), f, &m);
  }
}

void lowerGenericNestInto(const isa::Kernel &k, const NestUse &use, Module &m) {
  LLVMContext &ctx = m.getContext();
  Type *ptr = PointerType::getUnqual(ctx);
  auto *fty = FunctionType::get(Type::getVoidTy(ctx), {ptr, ptr, ptr, ptr}, false);
  Function *f = Function::Create(fty, Function::ExternalLinkage, use.symbol(), &m);
  f->addFnAttr(Attribute::NoUnwind);
  for (unsigned a = 0; a < 4; ++a)
    f->addParamAttr(a, Attribute::NoAlias);
  f->addParamAttr(3, Attribute::ReadOnly);
  std::unique_ptr<ErasedNest> erased = eraseNest(*use.nest);
  static const LiTables noLiTables;
  FunctionLowering fl(m, k, k.programs[0], f, LowerOptions{}, noLiTables, nullptr);
  fl.setErasedFields(&erased->index);
  fl.lower(ArrayRef<Instr>(erased->nest));
}

void verifyLowered(const Module &m) {
  std::string err;
  raw_string_ostream os(err);
  if (verifyModule(m, &os))
    throw spyre::Error("internal error: invalid LLVM IR for " + m.getModuleIdentifier() + ": " + os.str());
}

std::unique_ptr<Module> lowerKernel(const isa::Kernel &k, LLVMContext &ctx) {
  auto m = std::make_unique<Module>("spyre_" + k.name, ctx);
  lowerKernelInto(k, *m);
  verifyLowered(*m);
  return m;
}

} // namespace spyre::jit
