// The LLVM ORC engine: lowers each (core program, phase) of a kernel to an LLVM function over
// the CoreState ABI, optimises it, compiles it to an object file and links that in-process with
// LLJIT/JITLink. Object files are cached in memory and on disk (see docs/performance.md).
#pragma once
#include "spyre/isa/env.h"
#include "spyre/sim/engine.h"
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace spyre::jit {

/// O0: compiles in about a millisecond, runs at about interpreter speed (calls the shared
/// instruction implementations). O2: fully vectorised code, tens to hundreds of milliseconds per
/// kernel. Tiered: O2 code from the code cache if it is there; else O0 code at once and O2
/// compiled on a background thread, swapped in when linked (docs/architecture.md, "Tiers").
enum class OptTier { O0, O2, Tiered };
inline const char *tierName(OptTier t) { return t == OptTier::O0 ? "O0" : t == OptTier::O2 ? "O2" : "tiered"; }

struct JitOptions {
  OptTier tier = OptTier::O2;
  /// If non-empty, writes <kernel>.ll (before), <kernel>.opt.ll (after optimisation) and
  /// <kernel>.o (the object file). Dumping bypasses cache lookups (entries are still written).
  std::string dumpDir;
  /// Directory of the on-disk object cache; "" or "off" = no disk cache. fromEnv resolves it:
  /// SPYRE_CACHE_DIR (off disables it), else $XDG_CACHE_HOME/spyre-jit, else ~/.cache/spyre-jit.
  std::string cacheDir;
  /// The process-wide in-memory object cache (shared by all engines).
  bool memoryCache = true;
  /// Developer knobs. `passes` replaces the tier's IR pass pipeline (part of the cache key);
  /// `llvmArgs` are LLVM command-line options (e.g. "-time-passes"), parsed once per process
  /// by the first engine; `printTimes` prints one line per engine creation and per prepare on
  /// stderr; `debug` registers JIT code with GDB and perf.
  std::string passes;
  std::string llvmArgs;
  bool printTimes = false;
  bool debug = false;
  /// The disk cache's size bound (SPYRE_CACHE_MAX_MB, default 1024 MiB): past it, the least
  /// recently used entries are deleted after each write. (Last: brace-initialised options
  /// keep their meaning.)
  uint64_t cacheMaxBytes = uint64_t{1024} << 20;
  /// Host-side code generation choices (the kernels and simulated times do not depend on them;
  /// both are part of the cache key). `genericNests` (SPYRE_JIT_GENERIC_NESTS, O2 only): each
  /// top-level loop nest is compiled and cached on its own with its shape immediates as
  /// parameters. `shareDecodedB` (SPYRE_JIT_SHARE_B): a pt.mm whose B a multicast cohort shares
  /// compares the B bytes with its host thread's last decode and reuses it when equal.
  /// `tinyMRows` (SPYRE_JIT_TINY_M): a pt.mm of at most this many rows that is the only read of
  /// its B decodes B in registers inside the micro-kernel; -1 (unset): one register block of
  /// the host's micro-kernel (6 rows on AVX2, 4 on AVX-512); 0: never.
  bool genericNests = true;
  bool shareDecodedB = true;
  int64_t tinyMRows = -1;

  /// SPYRE_JIT_OPT=O0|O2|tiered (also 0|2; default O2), SPYRE_CACHE_DIR / XDG_CACHE_HOME / HOME (the
  /// cache directory), SPYRE_CACHE_MAX_MB (1..1048576), SPYRE_JIT_PASSES, SPYRE_JIT_LLVM_ARGS,
  /// SPYRE_JIT_TIMES, SPYRE_JIT_DEBUG, SPYRE_JIT_GENERIC_NESTS, SPYRE_JIT_SHARE_B,
  /// SPYRE_JIT_TINY_M (0..4096).
  /// Invalid values throw spyre::Error naming the variable and the accepted values.
  static JitOptions fromEnv(const spyre::Env &env);
};

/// Where the last prepare() spent its time, in milliseconds.
struct CompileTimes {
  double keyMs = 0;     ///< cache key (listing + hash) and cache lookup
  double lowerMs = 0;   ///< ISA -> LLVM IR
  double optMs = 0;     ///< IR pass pipeline
  double codegenMs = 0; ///< IR -> object file, including...
  double cgSetupMs = 0; ///< ...building the code generator's pass pipeline for the module
  double linkMs = 0;    ///< JITLink + symbol lookup, including...
  double lookupMs = 0;  ///< ...the symbol lookups (the object is linked on the first one)
  double totalMs = 0;
  double cpuMs = 0;     ///< CPU time of this thread for the whole prepare (robust to a loaded host)
  bool hit = false;     ///< object came from the memory or disk cache
};

struct CacheStats {
  uint64_t memoryHits = 0, diskHits = 0, misses = 0, diskWrites = 0, corruptEntries = 0;
  uint64_t hits() const { return memoryHits + diskHits; }
};

class JitEngine final : public sim::Engine {
public:
  explicit JitEngine(JitOptions opts = {});
  ~JitEngine() override;
  const char *name() const override { return "jit"; }
  std::shared_ptr<const sim::PreparedKernel> prepare(const isa::Kernel &k) override;
  /// Prepares several kernels as one LLVM module and one object file (one cache entry): much
  /// cheaper than a prepare() per kernel when there are many small kernels.
  std::vector<std::shared_ptr<const sim::PreparedKernel>> prepareAll(const std::vector<isa::Kernel> &ks);
  /// Milliseconds spent in the last prepare() (cache lookup, IR generation, optimisation,
  /// codegen and linking).
  double lastCompileMs() const;
  CompileTimes lastCompileTimes() const;
  /// Cache counters of this engine since construction.
  CacheStats cacheStats() const;
  /// The disk cache directory in use ("" when disabled).
  std::string cacheDir() const;
  /// Tiered engines: blocks until every O2 compile queued so far is done (and its code in use).
  /// Other engines: returns at once.
  void waitForTierUp();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// True when `k` was prepared by a tiered engine at O0 and now runs its O2 code.
bool isTieredUp(const sim::PreparedKernel &k);

/// The LLVM IR (unoptimised) the JIT generates for a kernel, for dumps and tests.
std::string kernelToIR(const isa::Kernel &k);
/// The IR after the pass pipeline of `tier`.
std::string kernelToOptimisedIR(const isa::Kernel &k, OptTier tier);

/// Drops the process-wide in-memory object cache (tests, benchmarks).
void clearMemoryCache();

} // namespace spyre::jit
