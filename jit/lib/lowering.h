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
std::unique_ptr<llvm::Module> lowerKernel(const isa::Kernel &k, llvm::LLVMContext &ctx);

} // namespace spyre::jit
