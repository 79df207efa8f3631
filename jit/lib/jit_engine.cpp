#include "spyre/jit/jit_engine.h"
#include "lowering.h"
#include "spyre/isa/semantics.h"
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

namespace spyre::jit {

using namespace llvm;

OptTier tierFromEnv() {
  const char *e = std::getenv("SPYRE_JIT_OPT");
  if (!e || !*e)
    return OptTier::O2;
  std::string s(e);
  if (s == "O0" || s == "0")
    return OptTier::O0;
  if (s == "O2" || s == "2")
    return OptTier::O2;
  throw spyre::Error("SPYRE_JIT_OPT must be O0 or O2, got '" + s + "'");
}

namespace {

std::string toError(llvm::Error err) { return toString(std::move(err)); }

template <typename T> T check(Expected<T> e, const char *what) {
  if (!e)
    throw spyre::Error(std::string("JIT: ") + what + ": " + toError(e.takeError()));
  return std::move(*e);
}

void writeModule(const Module &m, const std::string &path) {
  std::error_code ec;
  raw_fd_ostream os(path, ec);
  if (!ec)
    m.print(os, nullptr);
}

using PhaseFn = void (*)(sim::CoreState *, uint8_t *, const uint64_t *);

class JitKernel final : public sim::PreparedKernel {
public:
  JitKernel(isa::Kernel k, orc::ResourceTrackerSP rt, std::vector<std::vector<PhaseFn>> fns)
      : k_(std::move(k)), rt_(std::move(rt)), fns_(std::move(fns)) {}
  ~JitKernel() override {
    if (rt_)
      consumeError(rt_->remove());
  }
  const isa::Kernel &kernel() const override { return k_; }
  void runPhase(int phase, int core, sim::CoreState &cs, const sim::LaunchArgs &args) const override {
    for (size_t pi = 0; pi < k_.programs.size(); ++pi) {
      const auto &p = k_.programs[pi];
      if (core < p.firstCore || core > p.lastCore)
        continue;
      if (phase < static_cast<int>(fns_[pi].size()))
        fns_[pi][phase](&cs, args.ddr, args.base.data());
      return;
    }
  }

private:
  isa::Kernel k_;
  orc::ResourceTrackerSP rt_;
  std::vector<std::vector<PhaseFn>> fns_;
};

} // namespace

struct JitEngine::Impl {
  JitOptions opts;
  std::unique_ptr<orc::LLJIT> jit;
  std::unique_ptr<TargetMachine> tm;
  std::mutex mu;
  double lastMs = 0;
  uint64_t counter = 0;

  void optimise(Module &m) {
    if (opts.tier == OptTier::O0)
      return;
    LoopAnalysisManager lam;
    FunctionAnalysisManager fam;
    CGSCCAnalysisManager cgam;
    ModuleAnalysisManager mam;
    PipelineTuningOptions pto;
    PassBuilder pb(tm.get(), pto);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(OptimizationLevel::O2);
    mpm.run(m, mam);
  }
};

JitEngine::JitEngine(JitOptions opts) : impl_(std::make_unique<Impl>()) {
  static std::once_flag init;
  std::call_once(init, [] {
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
  });
  impl_->opts = std::move(opts);
  auto jtmb = check(orc::JITTargetMachineBuilder::detectHost(), "detecting the host");
  jtmb.setCPU(sys::getHostCPUName().str());
  SubtargetFeatures features;
  for (auto &f : sys::getHostCPUFeatures())
    features.AddFeature(f.first(), f.second);
  jtmb.addFeatures(features.getFeatures());
  jtmb.setCodeGenOptLevel(impl_->opts.tier == OptTier::O0 ? CodeGenOptLevel::None
                                                           : CodeGenOptLevel::Default);
  impl_->tm = check(jtmb.createTargetMachine(), "creating the target machine");
  impl_->jit = check(orc::LLJITBuilder()
                         .setJITTargetMachineBuilder(jtmb)
                         .setObjectLinkingLayerCreator([](orc::ExecutionSession &es, const Triple &) {
                           return std::make_unique<orc::ObjectLinkingLayer>(es);
                         })
                         .create(),
                     "creating LLJIT");
  // The shared SFP reference implementation, callable from JIT code (the Python extension is
  // loaded RTLD_LOCAL, so process-wide symbol lookup would not find it).
  {
    auto &jd = impl_->jit->getMainJITDylib();
    orc::SymbolMap syms;
    syms[impl_->jit->mangleAndIntern("spyre_sfp_apply")] = {orc::ExecutorAddr::fromPtr(&spyre_sfp_apply),
                                                            JITSymbolFlags::Exported | JITSymbolFlags::Callable};
    if (auto err = jd.define(orc::absoluteSymbols(std::move(syms))))
      throw spyre::Error("JIT: defining runtime symbols: " + toError(std::move(err)));
  }
  Impl *impl = impl_.get();
  impl_->jit->getIRTransformLayer().setTransform(
      [impl](orc::ThreadSafeModule tsm, const orc::MaterializationResponsibility &) -> Expected<orc::ThreadSafeModule> {
        tsm.withModuleDo([&](Module &m) {
          impl->optimise(m);
          if (!impl->opts.dumpDir.empty())
            writeModule(m, impl->opts.dumpDir + "/" + m.getModuleIdentifier() + ".opt.ll");
        });
        return tsm;
      });
}

JitEngine::~JitEngine() = default;

double JitEngine::lastCompileMs() const { return impl_->lastMs; }

std::string kernelToIR(const isa::Kernel &k) {
  LLVMContext ctx;
  auto m = lowerKernel(k, ctx);
  std::string s;
  raw_string_ostream os(s);
  m->print(os, nullptr);
  return os.str();
}

std::shared_ptr<const sim::PreparedKernel> JitEngine::prepare(const isa::Kernel &kIn) {
  std::lock_guard<std::mutex> g(impl_->mu);
  auto t0 = std::chrono::steady_clock::now();
  // Unique symbol names per prepared kernel: the same kernel may be prepared twice.
  isa::Kernel k = kIn;
  std::string origName = k.name;
  k.name = kIn.name + "_" + std::to_string(impl_->counter++);
  auto ctx = std::make_unique<LLVMContext>();
  auto m = lowerKernel(k, *ctx);
  m->setDataLayout(impl_->tm->createDataLayout());
  m->setTargetTriple(impl_->tm->getTargetTriple().str());
  if (!impl_->opts.dumpDir.empty())
    writeModule(*m, impl_->opts.dumpDir + "/" + m->getModuleIdentifier() + ".ll");
  auto &jd = impl_->jit->getMainJITDylib();
  auto rt = jd.createResourceTracker();
  if (auto err = impl_->jit->addIRModule(rt, orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    throw spyre::Error("JIT: adding module: " + toError(std::move(err)));
  std::vector<std::vector<PhaseFn>> fns(k.programs.size());
  for (size_t pi = 0; pi < k.programs.size(); ++pi) {
    size_t phases = isa::phaseRanges(k.programs[pi]).size();
    for (size_t ph = 0; ph < phases; ++ph) {
      auto addr = check(impl_->jit->lookup(phaseSymbol(k, pi, ph)), "looking up a phase function");
      fns[pi].push_back(addr.toPtr<PhaseFn>());
    }
  }
  k.name = origName;
  impl_->lastMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return std::make_shared<JitKernel>(std::move(k), std::move(rt), std::move(fns));
}

} // namespace spyre::jit
