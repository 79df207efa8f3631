// ring.send / ring.recv / ring.psum, and the sync instructions wait and bar.
#include "function_lowering.h"
#include "spyre/sim/machine.h"

namespace spyre::jit {

using namespace llvm;
using isa::Format;
using isa::Instr;
using isa::Opcode;

void FunctionLowering::lowerRingSend(const Instr &in) { lowerRing(in); }
void FunctionLowering::lowerRingRecv(const Instr &in) { lowerRing(in); }
void FunctionLowering::lowerRingPsum(const Instr &in) { lowerRing(in); }

// Ring transfers call the simulator's shared implementation (simulator/lib/ring.cpp).
void FunctionLowering::lowerRing(const Instr &in) {
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

// DMA completes synchronously in the functional model and a phase function ends at its `bar`:
// neither emits code.
void FunctionLowering::lowerWait(const Instr &) {}
void FunctionLowering::lowerBar(const Instr &) {}

} // namespace spyre::jit
