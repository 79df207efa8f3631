// ISA -> LLVM IR. One function per (core program, phase):
//   void @<name>(ptr %core /*CoreState*/, ptr %ddr, ptr %argbase /*i64[]*/)
#pragma once
#include "spyre/isa/program.h"
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <memory>
#include <string>

namespace spyre::jit {

std::string phaseSymbol(const isa::Kernel &k, size_t program, size_t phase);
/// A module holding the phase functions of `k` (verified).
std::unique_ptr<llvm::Module> lowerKernel(const isa::Kernel &k, llvm::LLVMContext &ctx);
/// The runtime helpers of the out-of-line lowering (same semantics as the interpreter).
extern "C" void spyre_jit_ld(uint32_t fmt, float *v, const uint8_t *p);
extern "C" void spyre_jit_st(uint32_t fmt, const float *v, uint8_t *p);
/// Adds the phase functions of `k` to `m` (several kernels with distinct names may share one
/// module); call verifyLowered(m) when done. `outOfLine` (the O0 tier): vector registers stay in
/// CoreState and ld/st/SFP instructions call spyre_jit_ld/st and spyre_sfp_apply.
void lowerKernelInto(const isa::Kernel &k, llvm::Module &m, bool outOfLine);
void verifyLowered(const llvm::Module &m);

} // namespace spyre::jit
