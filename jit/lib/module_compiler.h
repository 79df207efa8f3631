// The compile half of the JIT engine: kernels (or one generic nest) in, an object file out.
// Lowering to LLVM IR, the tier's IR pipeline and the code generator, chosen per module. The
// engine (jit_engine.cpp) owns one, and keeps the code cache, linking and tier-up.
#pragma once

#include "code_cache.h"
#include "pass_pipelines.h"
#include "spyre/isa/program.h"
#include "spyre/jit/jit_engine.h"
#include <chrono>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>
#include <llvm/Target/TargetMachine.h>
#include <memory>
#include <string>
#include <vector>

namespace spyre::jit {

struct NestUse;

using Clock = std::chrono::steady_clock;
inline double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

/// The value of `e`, or spyre::Error "JIT: <what>: <LLVM's message>".
template <typename T> T checkLlvm(llvm::Expected<T> e, const char *what) {
  if (!e)
    throw spyre::Error(std::string("JIT: ") + what + ": " + llvm::toString(e.takeError()));
  return std::move(*e);
}

/// The host, detected once per process.
struct Host {
  std::string triple, cpu, features;
  static const Host &get();
};

/// A target machine builder for this host at `tier`. `llvmArgs` (JitOptions::llvmArgs) are
/// parsed by the first call in the process.
llvm::orc::JITTargetMachineBuilder hostMachineBuilder(OptTier tier, const std::string &llvmArgs = "");

/// Lowers, verifies, optimises and compiles modules. Not thread-safe: the engine calls it under
/// its compile mutex (the optimiser and code generators are built once and reused).
class ModuleCompiler {
public:
  /// `opts.tier` is O0 or O2 (a tiered engine holds one compiler per tier).
  ModuleCompiler(const JitOptions &opts, std::unique_ptr<llvm::TargetMachine> tm);
  ~ModuleCompiler();

  /// One object of the kernels `ks` (their names become the symbols' prefixes).
  ObjectBytes kernels(const std::vector<isa::Kernel> &ks, const std::string &dumpName, CompileTimes &t);
  /// The object of generic nest `use` of kernel `k`, in a module of its own.
  ObjectBytes nest(const isa::Kernel &k, const NestUse &use, const std::string &dumpName, CompileTimes &t);

private:
  /// Verifies, optimises and compiles `m` (lowered since t0); adds to the times in `t`. A module
  /// left without vector code may go through the fast code generator.
  ObjectBytes finish(llvm::Module &m, const std::string &dumpName, CompileTimes &t, Clock::time_point t0,
                     bool mayUseFastCodegen);

  JitOptions opts_;
  std::unique_ptr<llvm::TargetMachine> tm_;
  std::unique_ptr<Optimiser> optimiser_;  // built on the first compile, reused
  std::unique_ptr<CodeGenerator> codegen_; // likewise
  // O2 with generic nests: a kernel module left without vector code (its phase functions are
  // scalar glue: DMA and nest calls) goes through the fast code generator (FastISel, fast
  // register allocation): ~0.5 instead of ~2 ms, and that code runs once per phase call.
  std::unique_ptr<llvm::TargetMachine> tmFast_;
  std::unique_ptr<CodeGenerator> codegenFast_;
};

} // namespace spyre::jit
