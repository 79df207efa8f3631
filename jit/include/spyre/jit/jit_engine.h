// The LLVM ORC engine: lowers each (core program, phase) of a kernel to an LLVM function over
// the CoreState ABI, optimises it and links it in-process with LLJIT/JITLink.
#pragma once
#include "spyre/sim/engine.h"
#include <memory>
#include <string>

namespace spyre::jit {

enum class OptTier { O0, O2 };

struct JitOptions {
  OptTier tier = OptTier::O2;
  /// If non-empty, writes <kernel>.ll (before) and <kernel>.opt.ll (after optimisation).
  std::string dumpDir;
};

/// SPYRE_JIT_OPT=O0|O2 (default O2).
OptTier tierFromEnv();

class JitEngine final : public sim::Engine {
public:
  explicit JitEngine(JitOptions opts = {});
  ~JitEngine() override;
  const char *name() const override { return "jit"; }
  std::shared_ptr<const sim::PreparedKernel> prepare(const isa::Kernel &k) override;
  /// Milliseconds spent in IR generation + optimisation + linking by the last prepare().
  double lastCompileMs() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The LLVM IR (unoptimised) the JIT generates for a kernel, for dumps and tests.
std::string kernelToIR(const isa::Kernel &k);

} // namespace spyre::jit
