#include "pass_pipelines.h"
#include "spyre/isa/error.h"
#include <llvm/MC/MCContext.h>
#include <llvm/Support/Error.h>

namespace spyre::jit {

using namespace llvm;

std::string pipelineFor(OptTier t, const std::string &passes) {
  if (!passes.empty()) // developer override
    return passes;
  return t == OptTier::O0 ? "function(sroa)" // registers -> SSA: fast register allocation sees values
                          : "function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg,loop-mssa(licm),gvn,"
                            "instcombine<no-verify-fixpoint>,dse,simplifycfg)";
}

Optimiser::Optimiser(TargetMachine *tm, const std::string &pipeline) : pb_(tm) {
  pb_.registerModuleAnalyses(mam_);
  pb_.registerCGSCCAnalyses(cgam_);
  pb_.registerFunctionAnalyses(fam_);
  pb_.registerLoopAnalyses(lam_);
  pb_.crossRegisterProxies(lam_, fam_, cgam_, mam_);
  if (auto err = pb_.parsePassPipeline(mpm_, pipeline))
    throw spyre::Error("JIT: bad pass pipeline '" + pipeline + "': " + toString(std::move(err)));
}

void Optimiser::run(Module &m) {
  mpm_.run(m, mam_);
  lam_.clear();
  fam_.clear();
  cgam_.clear();
  mam_.clear();
}

CodeGenerator::CodeGenerator(TargetMachine &tm) {
  MCContext *mc = nullptr;
  if (tm.addPassesToEmitMC(pm_, mc, os_))
    throw spyre::Error("JIT: the target cannot emit an object file");
}

std::string CodeGenerator::run(Module &m) {
  bytes_.clear();
  pm_.run(m);
  std::string obj(bytes_.data(), bytes_.size());
  bytes_.clear();
  return obj;
}

} // namespace spyre::jit
