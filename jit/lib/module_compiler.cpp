#include "module_compiler.h"
#include "generic_nests.h"
#include "lowering.h"
#include <fstream>
#include <mutex>
#include <sstream>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/SubtargetFeature.h>

namespace spyre::jit {

using namespace llvm;

const Host &Host::get() {
  static const Host h = [] {
    Host r;
    r.triple = sys::getProcessTriple();
    r.cpu = sys::getHostCPUName().str();
    SubtargetFeatures f;
    for (auto &kv : sys::getHostCPUFeatures())
      f.AddFeature(kv.first(), kv.second);
    r.features = f.getString();
    return r;
  }();
  return h;
}

orc::JITTargetMachineBuilder hostMachineBuilder(OptTier tier, const std::string &llvmArgs) {
  static std::once_flag init;
  std::call_once(init, [&llvmArgs] {
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
    // Developer knob: LLVM command-line options, e.g. SPYRE_JIT_LLVM_ARGS="-time-passes".
    if (!llvmArgs.empty()) {
      static std::vector<std::string> words;
      std::istringstream is(llvmArgs);
      for (std::string w; is >> w;)
        words.push_back(w);
      static std::vector<const char *> argv{"spyre-jit"};
      for (auto &w : words)
        argv.push_back(w.c_str());
      cl::ParseCommandLineOptions(static_cast<int>(argv.size()), argv.data(), "", nullptr, nullptr);
    }
  });
  const Host &host = Host::get();
  orc::JITTargetMachineBuilder jtmb{Triple(host.triple)};
  jtmb.setCPU(host.cpu);
  jtmb.addFeatures(std::vector<std::string>{host.features});
  jtmb.setCodeGenOptLevel(tier == OptTier::O0 ? CodeGenOptLevel::None : CodeGenOptLevel::Default);
  // The x86-64 JIT default is the large code model: every constant-pool load becomes movabs +
  // load and FastISel gives up on most of the O0 code (3x slower code generation). JITLink
  // places all sections of one object in one allocation and reaches external functions (memcpy,
  // the runtime helpers) through GOT/PLT stubs, so the small PIC model is safe.
  jtmb.setCodeModel(CodeModel::Small);
  jtmb.setRelocationModel(Reloc::PIC_);
  // JIT code has no thread-locals; the emulated-TLS pass ORC enables by default only costs time.
  jtmb.getOptions().EmulatedTLS = false;
  return jtmb;
}

namespace {

void writeModule(const Module &m, const std::string &path) {
  std::error_code ec;
  raw_fd_ostream os(path, ec);
  if (!ec)
    m.print(os, nullptr);
}

void writeBytes(std::string_view bytes, const std::string &path) {
  std::ofstream os(path, std::ios::binary);
  os.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Whether any instruction of `m` produces or takes a vector.
bool hasVectorCode(const Module &m) {
  for (const Function &f : m)
    for (const BasicBlock &bb : f)
      for (const Instruction &in : bb) {
        if (in.getType()->isVectorTy())
          return true;
        for (const Value *op : in.operands())
          if (op->getType()->isVectorTy())
            return true;
      }
  return false;
}

} // namespace

ModuleCompiler::ModuleCompiler(const JitOptions &opts, std::unique_ptr<TargetMachine> tm)
    : opts_(opts), tm_(std::move(tm)) {}

ModuleCompiler::~ModuleCompiler() = default;

ObjectBytes ModuleCompiler::kernels(const std::vector<isa::Kernel> &ks, const std::string &dumpName,
                                    CompileTimes &t) {
  auto t0 = Clock::now();
  LLVMContext ctx;
  auto m = std::make_unique<Module>(dumpName, ctx);
  const bool genericNests = opts_.genericNests && opts_.tier == OptTier::O2;
  for (const isa::Kernel &k : ks)
    lowerKernelInto(k, *m,
                    {.outOfLine = opts_.tier == OptTier::O0, .genericNests = opts_.genericNests,
                     .shareDecodedB = opts_.shareDecodedB, .tinyMRows = opts_.tinyMRows});
  return finish(*m, dumpName, t, t0, /*mayUseFastCodegen=*/genericNests);
}

ObjectBytes ModuleCompiler::nest(const isa::Kernel &k, const NestUse &use, const std::string &dumpName,
                                 CompileTimes &t) {
  auto t0 = Clock::now();
  LLVMContext ctx;
  auto m = std::make_unique<Module>(dumpName, ctx);
  lowerGenericNestInto(k, use, *m);
  return finish(*m, dumpName, t, t0, /*mayUseFastCodegen=*/false);
}

ObjectBytes ModuleCompiler::finish(Module &m, const std::string &dumpName, CompileTimes &t, Clock::time_point t0,
                                   bool mayUseFastCodegen) {
  verifyLowered(m);
  m.setDataLayout(tm_->createDataLayout());
  m.setTargetTriple(tm_->getTargetTriple().str());
  if (!opts_.dumpDir.empty())
    writeModule(m, opts_.dumpDir + "/" + dumpName + ".ll");
  t.lowerMs += msSince(t0);
  t0 = Clock::now();
  if (!optimiser_)
    optimiser_ = std::make_unique<Optimiser>(tm_.get(), pipelineFor(opts_.tier, opts_.passes));
  optimiser_->run(m);
  if (!opts_.dumpDir.empty())
    writeModule(m, opts_.dumpDir + "/" + dumpName + ".opt.ll");
  t.optMs += msSince(t0);
  t0 = Clock::now();
  CodeGenerator *cg = nullptr;
  if (mayUseFastCodegen && !hasVectorCode(m)) {
    if (!codegenFast_) {
      tmFast_ = checkLlvm(hostMachineBuilder(OptTier::O0).createTargetMachine(), "creating the target machine");
      codegenFast_ = std::make_unique<CodeGenerator>(*tmFast_);
      t.cgSetupMs += msSince(t0);
    }
    cg = codegenFast_.get();
  } else {
    if (!codegen_) {
      codegen_ = std::make_unique<CodeGenerator>(*tm_);
      t.cgSetupMs += msSince(t0);
    }
    cg = codegen_.get();
  }
  auto obj = std::make_shared<const std::string>(cg->run(m));
  t.codegenMs += msSince(t0);
  if (!opts_.dumpDir.empty())
    writeBytes(*obj, opts_.dumpDir + "/" + dumpName + ".o");
  return obj;
}

} // namespace spyre::jit
