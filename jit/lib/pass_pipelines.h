// The LLVM pass pipelines the JIT runs on every kernel module: the tier's IR pipeline and the
// code generator's, each built once per engine (jit_engine.cpp) and reused.
#pragma once

#include "spyre/jit/jit_engine.h"
#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <string>

namespace spyre::jit {

/// Pass pipelines. The IR is already vectorised stick by stick (<64 x float> ops) and every
/// loop has a static trip count: what matters is promoting the register allocas (SROA), local
/// simplification and hoisting; the loop/SLP vectorisers, unrolling, inlining and the
/// interprocedural passes of the stock O2 pipeline only cost compile time. A non-empty
/// `passes` (SPYRE_JIT_PASSES, a developer override) replaces the tier's pipeline.
std::string pipelineFor(OptTier t, const std::string &passes);

/// The tier's IR pass pipeline, built once per engine and run on every module. Building it
/// (PassBuilder, analysis registration, parsing the pipeline) costs about as much as running it
/// on a small kernel; the analysis caches are cleared after each module, since they are keyed
/// by IR pointers that a later module may reuse.
class Optimiser {
public:
  Optimiser(llvm::TargetMachine *tm, const std::string &pipeline);
  void run(llvm::Module &m);

private:
  llvm::PassBuilder pb_;
  llvm::LoopAnalysisManager lam_;
  llvm::FunctionAnalysisManager fam_;
  llvm::CGSCCAnalysisManager cgam_;
  llvm::ModuleAnalysisManager mam_;
  llvm::ModulePassManager mpm_;
};

/// The code generator's (legacy) pass pipeline, built once per engine and run on every module,
/// as `llc -run-twice` does: building it costs 0.15 ms at O0 and 0.5 ms at O2, a third of the
/// whole compile of a small kernel. The passes reset their per-module state in
/// doInitialization/doFinalization (the AsmPrinter resets its streamer, the
/// MachineModuleInfo its MCContext), and the object streamer writes into `bytes_`, which is
/// emptied before each module.
class CodeGenerator {
public:
  explicit CodeGenerator(llvm::TargetMachine &tm);
  /// The object file of m.
  std::string run(llvm::Module &m);

private:
  llvm::SmallVector<char, 0> bytes_;
  llvm::raw_svector_ostream os_{bytes_};
  llvm::legacy::PassManager pm_;
};

} // namespace spyre::jit
