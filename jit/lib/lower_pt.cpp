// pt.mm (a micro-kernel on B sticks decoded once per phase), pt.out and pt.tr.
#include "function_lowering.h"
#include <algorithm>
#include <cstdlib>
#include <llvm/TargetParser/Host.h>

namespace spyre::jit {

using namespace llvm;
using isa::Format;
using isa::Instr;
using isa::Opcode;

namespace {

/// The LX bytes an instruction writes, as [first, second) relative to its `lx` operand (every
/// LX-writing instruction writes at `lx`); nullopt if it writes no LX. The decoded-B cache of
/// pt.mm relies on this covering every writer: a new instruction that writes LX needs a row here.
std::optional<std::pair<int64_t, int64_t>> lxWriteExtent(const Instr &in) {
  switch (in.op) {
  case Opcode::St: return std::pair<int64_t, int64_t>{0, 128};
  case Opcode::Stu: return std::pair<int64_t, int64_t>{0, in.imm * (in.fmt == isa::Format::DL16 ? 2 : 4)};
  case Opcode::DmaIn:
  case Opcode::DmaMc:
  case Opcode::DmaGather: return isa::dmaLxExtent(in);
  case Opcode::PtMm: return std::pair<int64_t, int64_t>{0, in.imms[0] / 32 * in.imm * 128};
  case Opcode::PtOut: return std::pair<int64_t, int64_t>{0, in.imms[0] / 64 * in.imm * 128};
  case Opcode::PtTr: return std::pair<int64_t, int64_t>{0, in.imm * in.imms[0] * 2};
  case Opcode::RingRecv:
  case Opcode::RingPsum: return std::pair<int64_t, int64_t>{0, in.imm * 128};
  default: return std::nullopt;
  }
}

/// Whether pt.mm `mm` may read B bytes that the cores of a multicast cohort share, so that
/// another core's decode on the same host thread may serve it: its B lies at a fixed LX address
/// that a dma.mc of the kernel writes (at a fixed address too), directly or through a pt.tr
/// from such a range. Only a cost heuristic (whether to compare with and record the thread's
/// last decode: for a B no other core stages, that is a 2-byte-per-lane copy for nothing); the
/// reuse itself is decided by comparing the bytes.
bool bMayBeShared(const isa::Kernel &k, const Instr &mm) {
  if (mm.lx3.base >= 0)
    return false;
  using Range = std::pair<int64_t, int64_t>;
  std::vector<Range> mc;                     // fixed dma.mc destinations
  std::vector<std::pair<Range, Range>> trs; // pt.tr (source, destination)
  for (const isa::CoreProgram &p : k.programs)
    isa::forEachNested(p.body, 0, [&](const Instr &in, int, int, int &) {
      if (in.op == Opcode::DmaMc && in.lx.base < 0) {
        auto [lo, hi] = isa::dmaLxExtent(in);
        mc.push_back({in.lx.offset + lo, in.lx.offset + hi});
      } else if (in.op == Opcode::PtTr && in.lx.base < 0 && in.lx2.base < 0) {
        const int64_t bytes = in.imm * in.imms[0] * 2;
        trs.push_back({{in.lx2.offset, in.lx2.offset + bytes}, {in.lx.offset, in.lx.offset + bytes}});
      }
      return in.op == Opcode::Loop;
    });
  auto overlaps = [](const Range &a, const Range &b) { return a.first < b.second && b.first < a.second; };
  for (const auto &[src, dst] : trs)
    for (size_t i = 0, n = mc.size(); i < n; ++i)
      if (overlaps(src, mc[i])) {
        mc.push_back(dst);
        break;
      }
  const Range b{mm.lx3.offset, mm.lx3.offset + mm.imms[0] / 64 * mm.imms[1] * 128};
  return std::any_of(mc.begin(), mc.end(), [&](const Range &r) { return overlaps(r, b); });
}

} // namespace

namespace {
/// The register blocks of the pt.mm micro-kernel: up to `rows` rows of A times `cols(rows)`
/// columns of a 64-column tile, so rows * cols / vector-width accumulators plus the B vectors
/// and a broadcast fit the registers, and there are enough independent fma chains to cover the
/// fma latency. AVX-512 (32 zmm): 4 rows x 64 columns (16 accumulators). AVX2 (16 ymm): 6 rows
/// x 16 columns (12 accumulators, 2 B loads and 6 broadcasts per 12 fma; 4 x 64 would need 32
/// ymm and spill every k); a block of 1 row takes 64 columns and one of 2 rows 32 (8
/// accumulators: K-split matmuls multiply single rows). The host is fixed for the process and
/// part of the code-cache key (jit_engine.cpp), so the choice is too.
struct PtBlock {
  bool avx512;
  int rows;
  int cols(int r) const { return avx512 || r == 1 ? 64 : r == 2 ? 32 : 16; }
};
PtBlock ptBlock() {
  static const PtBlock b = [] {
    auto f = llvm::sys::getHostCPUFeatures();
    auto it = f.find("avx512f");
    bool z = it != f.end() && it->second;
    return PtBlock{z, z ? 4 : 6};
  }();
  return b;
}
/// pt.mm with at most this many rows (default: one register block, ptBlock().rows) that is the
/// only read of its B (bReadOnce) decodes its B sticks in registers inside the micro-kernel
/// instead of into the thread's decoded mirror: each B element is used M times, so with one row
/// block the mirror's fp32 store and reload cost more than the fma's they feed (P.V 1x8192x128:
/// M = 1, K split). Also when a multicast cohort shares the B (SwiGLU 4x256x1024: 4 cores of one
/// row each): decoding 16 codes per AVX2 register in registers measured cheaper than the
/// mirror's one decode per host thread plus a memcmp per core (docs/performance.md Log).
/// LowerOptions::tinyMRows (SPYRE_JIT_TINY_M) sets the limit (0: off; -1: the default).
int64_t tinyMRows(int64_t option) { return option >= 0 ? option : ptBlock().rows; }
/// Columns per register block of the raw-B micro-kernel: 32 for one row (4 accumulators, 2
/// x 16 codes decoded per k), 16 otherwise (rows x 2 accumulators). 64 for one row spilled on
/// AVX2 and measured slower (attn_pv_1x8192x128, docs/performance.md Log).
int rawCols(int rows) { return rows == 1 ? 32 : 16; }
/// Index of a column width in ptScratch_.accs.
int widthIndex(int w) { return w == 64 ? 0 : w == 32 ? 1 : 2; }
/// Whether pt.mm `mm` is the only read of its B in program `p`: it runs once (not inside a loop)
/// and no other pt.mm of the program reads an overlapping B range (one addressed by a register
/// counts as overlapping). Only then can decoding B in registers (tinyMRows) not repeat a decode
/// that the phase's decoded-B cache would have saved (pipelined row blocks on a resident B).
bool bReadOnce(const isa::CoreProgram &p, const Instr &mm) {
  bool found = false, once = true;
  const int64_t bytes = mm.imms[0] / 64 * mm.imms[1] * 128;
  isa::forEachNested(p.body, 0, [&](const Instr &in, int, int depth, int &) {
    if (in.op != Opcode::PtMm)
      return in.op == Opcode::Loop;
    if (&in == &mm) {
      found = true;
      once = once && depth == 0;
    } else if (in.lx3.base >= 0 || mm.lx3.base >= 0 ||
               (in.lx3.offset < mm.lx3.offset + bytes &&
                mm.lx3.offset < in.lx3.offset + in.imms[0] / 64 * in.imms[1] * 128)) {
      once = false;
    }
    return true;
  });
  return found && once;
}

/// DL16 codes -> fp32 from 16-bit lane operations (dl16::toFloat's values). A code h = sign |
/// body decodes to sign<<31 | (body<<14 + 96<<23), body 0 to +-0 and body 0x7FFF to +-inf. Both
/// 16-bit halves of that fp32 word come from 16-bit operations, 16 lanes per AVX2 register
/// instead of the 8 of decode(): the high half is ((h >>a 2) & 0x9FFF) + 0x3000 (no carry into
/// the sign: (body>>2) + 0x3000 <= 0x4FFF), with 0x5F81 added instead of 0x3000 for inf and 0
/// for zero; the low half is h << 14 (0 for inf). `order[p]` is the code whose value goes to
/// result lane p: the identity, or unpackedOrder() where the halves interleave like
/// vpunpck{l,h}wd with no lane-crossing permute after them.
Value *decodeByHalves(IRBuilder<> &b, Type *f32, Value *h, ArrayRef<int> order) {
  auto *t = cast<FixedVectorType>(h->getType());
  const int n = static_cast<int>(t->getNumElements());
  auto c16 = [&](uint16_t x) { return ConstantInt::get(t, x); };
  Value *sm = b.CreateAnd(b.CreateAShr(h, c16(2)), c16(0x9FFF));
  Value *twice = b.CreateShl(h, c16(1));
  Value *inf = b.CreateICmpEQ(twice, c16(0xFFFE));
  Value *add = b.CreateSelect(inf, c16(0x5F81), b.CreateSelect(b.CreateICmpEQ(twice, c16(0)), c16(0), c16(0x3000)));
  Value *hiHalf = b.CreateAdd(sm, add);
  Value *loHalf = b.CreateSelect(inf, c16(0), b.CreateShl(h, c16(14)));
  SmallVector<int, 128> mask;
  for (int p = 0; p < n; ++p) {
    mask.push_back(order[static_cast<size_t>(p)]);
    mask.push_back(n + order[static_cast<size_t>(p)]);
  }
  return b.CreateBitCast(b.CreateShuffleVector(loHalf, hiHalf, mask), FixedVectorType::get(f32, static_cast<unsigned>(n)));
}
/// The lane order of vpunpck{l,h}wd per 16 lanes: lanes 0-3, 8-11, 4-7, 12-15 (an involution).
SmallVector<int, 64> unpackedOrder() {
  SmallVector<int, 64> o;
  for (int l = 0; l < 64; ++l)
    o.push_back(l / 16 * 16 + (l % 16 < 4 || l % 16 >= 12 ? l % 16 : l % 16 < 8 ? l % 16 + 4 : l % 16 - 4));
  return o;
}
SmallVector<int, 64> naturalOrder() {
  SmallVector<int, 64> o;
  for (int l = 0; l < 64; ++l)
    o.push_back(l);
  return o;
}

} // namespace

/// The decoded-B cache starts empty in every invocation of the phase function: within a
/// phase only this core's own instructions write its LX, so they are all the invalidation
/// needs to see (other cores, the host and the runtime act between phases).
void FunctionLowering::setUpDecodedB() {
  decodedLx_ = b_.CreateCall(m_.getOrInsertFunction("spyre_jit_decoded_lx", FunctionType::get(ptr_, {}, false)),
                             {}, "decoded.lx");
  bLo_ = b_.CreateAlloca(i64_, nullptr, "b.lo");
  bHi_ = b_.CreateAlloca(i64_, nullptr, "b.hi");
  b_.CreateStore(b_.getInt64(0), bLo_);
  b_.CreateStore(b_.getInt64(0), bHi_);
}
/// Empties the decoded-B cache if the LX bytes `in` writes overlap it.
void FunctionLowering::invalidateDecodedB(const Instr &in) {
  auto ext = lxWriteExtent(in);
  if (!bHi_ || !ext)
    return;
  Value *at = lxOffset(in.lx);
  Value *lo = b_.CreateAdd(at, b_.getInt64(ext->first)), *hi = b_.CreateAdd(at, b_.getInt64(ext->second));
  Value *cached = b_.CreateLoad(i64_, bHi_);
  Value *overlap = b_.CreateAnd(b_.CreateICmpSLT(lo, cached), b_.CreateICmpSLT(b_.CreateLoad(i64_, bLo_), hi));
  b_.CreateStore(b_.CreateSelect(overlap, b_.getInt64(0), cached), bHi_);
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
// Across invocations (cores, phases, kernels) the mirror is reused by content: before
// decoding, spyre_jit_b_reuse compares the B bytes with the copy the thread's last decode kept
// (an exact memcmp, so no provenance is needed). The cores of a multicast cohort stage the same
// weight slice at the same LX offsets (an M split: 4 cores of a BERT linear), so one decode per
// host thread serves them all; a mismatch usually shows in the first bytes.
//
// A pt.mm of tiny M that alone reads its B (tinyMRows, bReadOnce) skips all of this: its
// micro-kernel reads the DL16 sticks from LX and decodes each B vector in registers.
//
// The micro-kernel is one internal function per (M, N, K, acc) and module, called with the
// tile addresses: kernels with one program per core (K-split matmuls: 32 pt.mm of the same
// shape) compile it once instead of once per core.
void FunctionLowering::lowerPtMm(const Instr &in) {
  const int64_t M = in.imm, N = in.imms[0], K = in.imms[1];
  const bool acc = in.imms[2] != 0;
  const int64_t bSticks = N / 64 * K;
  std::string name = "spyre_ptmm_" + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) +
                     (acc ? "_acc" : "");
  if (M <= tinyMRows(tinyMRows_) && bReadOnce(prog_, in)) { // tiny M: B decoded in registers; the mirror is not touched
    Function *mm = outlined(name + "_rawb", 3, [&](ArrayRef<Value *> a) { emitPtMm(M, N, K, acc, a[0], a[1], a[2], true); });
    b_.CreateCall(mm, {lxAddr(in.lx), lxAddr(in.lx2), lxAddr(in.lx3)});
    return;
  }
  const bool shared = shareDecodedB_ && bMayBeShared(k_, in);
  Value *bOff = lxOffset(in.lx3);
  Value *bEnd = b_.CreateAdd(bOff, b_.getInt64(bSticks * 128));
  Value *bDec = b_.CreateInBoundsGEP(i8_, decodedLx_, b_.CreateShl(bOff, 1)); // 4 bytes per 2
  Value *hit = b_.CreateAnd(b_.CreateICmpSLE(b_.CreateLoad(i64_, bLo_), bOff),
                            b_.CreateICmpSLE(bEnd, b_.CreateLoad(i64_, bHi_)));
  BasicBlock *check = BasicBlock::Create(ctx_, "ptb.shared", f_);
  BasicBlock *miss = BasicBlock::Create(ctx_, "ptb.decode", f_);
  BasicBlock *set = BasicBlock::Create(ctx_, "ptb.cached", f_);
  BasicBlock *join = BasicBlock::Create(ctx_, "ptb.ready", f_);
  b_.CreateCondBr(hit, join, check);
  // Not decoded in this invocation: the thread's last decode may hold these very bytes (an
  // earlier core of the multicast cohort).
  b_.SetInsertPoint(check);
  Value *lxB = lxAddr(in.lx3);
  if (shared) {
    FunctionCallee reuse =
        m_.getOrInsertFunction("spyre_jit_b_reuse", FunctionType::get(i32_, {ptr_, i64_, i64_}, false));
    Value *same = b_.CreateCall(reuse, {lx_, bOff, b_.getInt64(bSticks * 128)});
    b_.CreateCondBr(b_.CreateICmpNE(same, b_.getInt32(0)), set, miss);
  } else {
    b_.CreateBr(miss);
  }
  b_.SetInsertPoint(miss);
  Function *dec = outlined("spyre_dl16_decode_" + std::to_string(bSticks), 2, [&](ArrayRef<Value *> a) {
    countedLoop(bSticks, "dec", [&](Value *s) {
      Value *src = b_.CreateInBoundsGEP(i8_, a[1], b_.CreateMul(s, b_.getInt64(128)));
      Value *dst = b_.CreateInBoundsGEP(vf_, a[0], s);
      Value *h = b_.CreateAlignedLoad(vi16_, src, Align(2));
      b_.CreateAlignedStore(decodeByHalves(b_, f32_, h, naturalOrder()), dst, Align(64));
    });
  });
  b_.CreateCall(dec, {bDec, lxB});
  // Every decode into the mirror is recorded (the thread's record must describe the mirror),
  // with its bytes only where another core may reuse it.
  b_.CreateCall(helper("spyre_jit_b_decoded", {ptr_, i64_, i64_, i32_}),
                {lx_, bOff, b_.getInt64(bSticks * 128), b_.getInt32(shared ? 1 : 0)});
  b_.CreateBr(set);
  b_.SetInsertPoint(set);
  b_.CreateStore(bOff, bLo_);
  b_.CreateStore(bEnd, bHi_);
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
  Function *mm = outlined(name, 3, [&](ArrayRef<Value *> a) { emitPtMm(M, N, K, acc, a[0], a[1], a[2], false); });
  b_.CreateCall(mm, {lxAddr(in.lx), lxAddr(in.lx2), bDec});
}


/// The micro-kernel on decoded B sticks (`bDec`: stick (n/64, k) at float (n/64*K + k)*64), or
/// with `rawB` on the DL16 sticks themselves (stick (n/64, k) at byte (n/64*K + k)*128), each B
/// vector decoded in registers right before its fma's (tinyMRows: the same products and sums).
/// Per 64-wide k tile, rows go ptBlock().rows at a time with the A values of the k tile
/// decoded once per row; per 64-column tile and block of `cols` columns the inner loop is the
/// B loads (from the decoded tile in memory) and one fma per row with a broadcast operand per
/// k. Partial sums live in C between k tiles (fp32, exact), so every C element still
/// accumulates k = 0..K-1 in order.
void FunctionLowering::emitPtMm(int64_t M, int64_t N, int64_t K, bool acc, Value *C, Value *A, Value *bDec, bool rawB) {
  const PtBlock blk = ptBlock();
  const int kRows = blk.rows;
  auto *v32 = FixedVectorType::get(f32_, 32);
  auto entryBuilder = [&] { return IRBuilder<>(&f_->getEntryBlock(), f_->getEntryBlock().begin()); };
  if (!ptScratch_.aDec) { // one set of scratch buffers per function, shared by its pt.mm's
    ptScratch_.aDec = entryBuilder().CreateAlloca(ArrayType::get(f32_, static_cast<uint64_t>(kRows) * kLanes));
    ptScratch_.aDec->setAlignment(Align(64));
  }
  // The accumulators of a block `w` columns wide (one alloca per row and width, so that SROA
  // keeps each in registers).
  auto accsFor = [&](int w) {
    AllocaInst **a = ptScratch_.accs[widthIndex(w)];
    for (int r = 0; r < kRows; ++r)
      if (!a[r]) {
        a[r] = entryBuilder().CreateAlloca(FixedVectorType::get(f32_, static_cast<unsigned>(w)));
        a[r]->setAlignment(Align(64));
      }
    return a;
  };
  AllocaInst *aDec = ptScratch_.aDec;
  SmallVector<int, 64> cat, lo, hi;
  for (unsigned l = 0; l < kLanes; ++l)
    cat.push_back(static_cast<int>(l));
  for (unsigned l = 0; l < 32; ++l) {
    lo.push_back(static_cast<int>(l));
    hi.push_back(static_cast<int>(32 + l));
  }
  auto c64 = [&](int64_t v) { return b_.getInt64(static_cast<uint64_t>(v)); };
  SmallVector<int, 64> unpacked = unpackedOrder();
  // k tiles outermost, then row blocks, then 64-column tiles: each A stick is decoded once per
  // pt.mm, and the B tiles of one k tile (N/64 x 16 KiB) stay in cache across the row blocks.
  countedLoop(K / 64, "pt.kt", [&](Value *kt) {
    Value *first = b_.CreateICmpEQ(kt, c64(0));
    Value *nt = nullptr, *bTile = nullptr; // set per 64-column tile below
    // Rows i0 .. i0+rows-1 over this k tile.
    auto block = [&](Value *i0, int rows) {
      const int W = rawB ? rawCols(rows) : blk.cols(rows);
      auto *vw = FixedVectorType::get(f32_, static_cast<unsigned>(W));
      Function *fma = Intrinsic::getDeclaration(&m_, Intrinsic::fma, {vw});
      AllocaInst *const *accs = accsFor(W);
      Value *rowI[8];
      for (int r = 0; r < rows; ++r) { // A stick (kt, i), decoded
        rowI[r] = b_.CreateAdd(i0, c64(r));
        Value *aAddr = b_.CreateInBoundsGEP(i8_, A, b_.CreateMul(b_.CreateAdd(b_.CreateMul(kt, c64(M)), rowI[r]), c64(128)));
        Value *dst = b_.CreateConstInBoundsGEP1_64(f32_, aDec, static_cast<uint64_t>(r) * kLanes);
        b_.CreateAlignedStore(decode(b_.CreateAlignedLoad(vi16_, aAddr, Align(2))), dst, Align(64));
      }
      // Columns c*W .. c*W+W-1 of the tile.
      auto columns = [&](Value *c) {
        Value *cp[8];
        for (int r = 0; r < rows; ++r) {
          Value *cur;
          if (W == 64) {
            Value *c0 = b_.CreateInBoundsGEP(i8_, C, b_.CreateMul(b_.CreateAdd(b_.CreateMul(nt, c64(2 * M)), rowI[r]), c64(128)));
            Value *c1 = b_.CreateInBoundsGEP(i8_, c0, c64(M * 128));
            cp[r] = c0;
            cur = b_.CreateShuffleVector(b_.CreateAlignedLoad(v32, c0, Align(4)), b_.CreateAlignedLoad(v32, c1, Align(4)), cat);
          } else { // W divides 32: the block lies in C stick (2nt + c*W/32, i) at float c*W % 32
            Value *h = b_.CreateUDiv(b_.CreateMul(c, c64(W)), c64(32));
            Value *within = b_.CreateURem(b_.CreateMul(c, c64(W * 4)), c64(128));
            Value *stick = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(nt, c64(2)), h), c64(M)), rowI[r]);
            cp[r] = b_.CreateInBoundsGEP(i8_, C, b_.CreateAdd(b_.CreateMul(stick, c64(128)), within));
            cur = b_.CreateAlignedLoad(vw, cp[r], Align(4));
          }
          if (!acc)
            cur = b_.CreateSelect(first, Constant::getNullValue(vw), cur);
          if (rawB)
            cur = b_.CreateShuffleVector(cur, ArrayRef<int>(unpacked).take_front(static_cast<size_t>(W)));
          b_.CreateAlignedStore(cur, accs[r], Align(64));
        }
        countedLoop(64, "pt.k", [&](Value *kk) {
          Value *bV;
          if (rawB) { // the DL16 stick's lanes c*W .. c*W+W-1, decoded here
            Value *bP = b_.CreateInBoundsGEP(i8_, bTile, b_.CreateAdd(b_.CreateMul(kk, c64(128)), b_.CreateMul(c, c64(2 * W))));
            bV = decodeByHalves(b_, f32_, b_.CreateAlignedLoad(FixedVectorType::get(i16_, static_cast<unsigned>(W)), bP, Align(2)), unpacked);
          } else {
            Value *bP = b_.CreateInBoundsGEP(f32_, b_.CreateInBoundsGEP(vf_, bTile, kk), b_.CreateMul(c, c64(W)));
            bV = b_.CreateAlignedLoad(vw, bP, Align(64));
          }
          for (int r = 0; r < rows; ++r) {
            Value *aP = b_.CreateInBoundsGEP(f32_, aDec, b_.CreateAdd(c64(static_cast<int64_t>(r) * kLanes), kk));
            Value *aV = b_.CreateVectorSplat(static_cast<unsigned>(W), b_.CreateAlignedLoad(f32_, aP, Align(4)));
            Value *sum = b_.CreateCall(fma, {aV, bV, b_.CreateAlignedLoad(vw, accs[r], Align(64))});
            b_.CreateAlignedStore(sum, accs[r], Align(64));
          }
        });
        for (int r = 0; r < rows; ++r) {
          Value *res = b_.CreateAlignedLoad(vw, accs[r], Align(64));
          if (rawB)
            res = b_.CreateShuffleVector(res, ArrayRef<int>(unpacked).take_front(static_cast<size_t>(W)));
          if (W == 64) {
            b_.CreateAlignedStore(b_.CreateShuffleVector(res, lo), cp[r], Align(4));
            b_.CreateAlignedStore(b_.CreateShuffleVector(res, hi), b_.CreateInBoundsGEP(i8_, cp[r], c64(M * 128)), Align(4));
          } else {
            b_.CreateAlignedStore(res, cp[r], Align(4));
          }
        }
      };
      countedLoop(N / 64, "pt.n", [&](Value *ntV) {
        nt = ntV; // the k tile's 64 decoded B rows: sticks (nt, kt*64 + kk)
        Value *stick = b_.CreateAdd(b_.CreateMul(nt, c64(K)), b_.CreateMul(kt, c64(64)));
        bTile = rawB ? b_.CreateInBoundsGEP(i8_, bDec, b_.CreateMul(stick, c64(128))) : b_.CreateInBoundsGEP(vf_, bDec, stick);
        if (W == 64)
          columns(c64(0));
        else
          countedLoop(64 / W, "pt.c", columns);
      });
    };
    countedLoop(M / kRows, "pt.ib", [&](Value *ib) { block(b_.CreateMul(ib, c64(kRows)), kRows); });
    if (M % kRows)
      block(c64(M / kRows * kRows), static_cast<int>(M % kRows));
  });
}

/// pt.tr moves 16-bit words only: the reference's 64 x 64 tile transpose (isa::ptTr, SSE2 or AVX2
/// unpacks) beats a per-word loop of IR, and a call per instruction costs nothing next to it.
/// The same call at every tier.
void FunctionLowering::lowerPtTr(const Instr &in) {
  b_.CreateCall(helper("spyre_jit_pt_tr", {ptr_, ptr_, i64_, i64_}),
                {lxAddr(in.lx), lxAddr(in.lx2), b_.getInt64(in.imm), b_.getInt64(in.imms[0])});
}

void FunctionLowering::lowerPtOut(const Instr &in) {
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

} // namespace spyre::jit
