// dma.in, dma.mc and dma.out: one call of the shared row copy (spyre_jit_dma) per instruction.
#include "function_lowering.h"
#include "generic_nests.h"
#include "lowering.h"
#include "spyre/sim/machine.h"
#include <array>
#include <cstdint>

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
  Value *table = b_.CreateGEP(i8_, ddr_, b_.CreateAdd(b_.CreateAdd(argBase, readS(in.ddr.base)), imm(in.ddr.offset)));
  FunctionCallee fn =
      m_.getOrInsertFunction(fnName, FunctionType::get(b_.getVoidTy(), {ptr_, ptr_, ptr_, ptr_, ptr_}, false));
  if (in.op == isa::Opcode::DmaGather)
    b_.CreateCall(fn, {port, lxAddr(in.lx), lxAddr(in.lx2), table, g});
  else
    b_.CreateCall(fn, {port, table, lxAddr(in.lx), lxAddr(in.lx2), g});
}
void FunctionLowering::lowerDmaGather(const Instr &in) { lowerIndexedDma(in, "spyre_dma_gather"); }
void FunctionLowering::lowerDmaScatter(const Instr &in) { lowerIndexedDma(in, "spyre_dma_scatter"); }

namespace {

/// dma.out of a kernel that writes at least this many bytes to one DDR argument stores with
/// non-temporal (streaming) stores: such an output does not stay in the host's caches anyway
/// (the whole working set is past what this host keeps in L2 and its share of L3), and a
/// streaming store skips reading each destination line before overwriting it. Measured on the
/// AVX2 host with a standalone copy of 8 KiB rows from a 128 KiB buffer: 16 MiB of output 7.4
/// (memcpy) vs 20 GB/s, 64 MiB 1.7 vs 3.4 GB/s; at 1-4 MiB (cache-resident) memcpy is faster
/// (26-30 vs 21-22 GB/s), so smaller outputs, which the next kernel reads from cache, keep it.
constexpr int64_t kStreamingOutBytes = int64_t{8} << 20;

/// The bytes the whole kernel's dma.out instructions write to DDR argument `arg` (every core of
/// every program, every loop trip; saturating).
int64_t dmaOutBytes(const isa::Kernel &k, int arg) {
  int64_t total = 0;
  for (const isa::CoreProgram &p : k.programs) {
    const int64_t cores = p.lastCore - p.firstCore + 1;
    isa::forEachNested(p.body, int64_t{1}, [&](const Instr &in, int64_t trips, int, int64_t &inner) {
      if (in.op == Opcode::Loop) {
        if (in.imm <= 0 || __builtin_mul_overflow(trips, in.imm, &inner))
          inner = in.imm <= 0 ? 0 : INT64_MAX;
        return in.imm > 0;
      }
      int64_t bytes = 0;
      if (in.op == Opcode::DmaOut && in.ddr.arg == arg &&
          (__builtin_mul_overflow(in.dma.n[0] * in.dma.n[1], in.dma.n[2] * 128, &bytes) ||
           __builtin_mul_overflow(bytes, trips, &bytes) || __builtin_mul_overflow(bytes, cores, &bytes) ||
           __builtin_add_overflow(total, bytes, &total)))
        total = INT64_MAX;
      return false;
    });
  }
  return total;
}

} // namespace

bool dmaOutStreams(const isa::Kernel &k, const Instr &in) {
  return in.op == Opcode::DmaOut && dmaOutBytes(k, in.ddr.arg) >= kStreamingOutBytes;
}

/// One call of the shared row-copy helper (runtime_helpers.cpp) at every tier: inline copy
/// loops (memcpy calls and streaming-store loops) cost 1-2 ms of O2 code generation per DMA
/// instruction and ran no faster.
void FunctionLowering::lowerDma(const Instr &in, bool toLx) {
  const auto &d = in.dma;
  Value *argBase = b_.CreateLoad(i64_, b_.CreateConstInBoundsGEP1_64(i64_, argBase_, in.ddr.arg));
  Value *ddrOff = b_.CreateAdd(b_.CreateAdd(argBase, readS(in.ddr.base)), imm(in.ddr.offset));
  const bool streaming = !toLx && !outOfLine_ && dmaOutStreams(k_, in);
  const int32_t mode = toLx ? kDmaToLx : streaming ? kDmaStreamOut : kDmaOut;
  b_.CreateCall(helper("spyre_jit_dma", {ptr_, ptr_, i64_, i64_, i64_, i64_, i64_, i64_, i64_, i32_}),
                {lxAddr(in.lx), b_.CreateGEP(i8_, ddr_, ddrOff), imm(d.n[0]), imm(d.n[1]),
                 b_.CreateMul(imm(d.n[2]), b_.getInt64(128)), imm(d.lxStride[0]), imm(d.lxStride[1]),
                 imm(d.ddrStride[0]), imm(d.ddrStride[1]), b_.getInt32(static_cast<uint32_t>(mode))});
}

} // namespace spyre::jit
