#include "spyre/jit/jit_engine.h"
#include "code_cache.h"
#include "generic_nests.h"
#include "lowering.h"
#include "module_compiler.h"
#include "pass_pipelines.h"
#include "tier_up.h"
#include "unary_tables.h"
#include "spyre/isa/limits.h"
#include "spyre/isa/semantics.h"
#include "spyre_jit_source_hash.h"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <unordered_map>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/Debugging/DebuggerSupport.h>
#include <llvm/ExecutionEngine/Orc/Debugging/PerfSupportPlugin.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/PassTimingInfo.h>
#include <llvm/Support/Timer.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

namespace spyre::jit {

using namespace llvm;

JitOptions JitOptions::fromEnv(const spyre::Env &env) {
  JitOptions o;
  std::string tier = env.choice("SPYRE_JIT_OPT", "O2", {"O0", "O2", "0", "2", "tiered"});
  o.tier = tier == "O0" || tier == "0" ? OptTier::O0 : tier == "tiered" ? OptTier::Tiered : OptTier::O2;
  o.cacheDir = cacheDirFromEnv(env);
  o.cacheMaxBytes = static_cast<uint64_t>(env.integer("SPYRE_CACHE_MAX_MB", 1024, 1, 1048576)) << 20;
  o.passes = env.string("SPYRE_JIT_PASSES");
  o.llvmArgs = env.string("SPYRE_JIT_LLVM_ARGS");
  o.printTimes = env.flag("SPYRE_JIT_TIMES", false);
  o.debug = env.flag("SPYRE_JIT_DEBUG", false);
  o.genericNests = env.flag("SPYRE_JIT_GENERIC_NESTS", true);
  o.shareDecodedB = env.flag("SPYRE_JIT_SHARE_B", true);
  if (env.raw("SPYRE_JIT_TINY_M"))
    o.tinyMRows = env.integer("SPYRE_JIT_TINY_M", 0, 0, 4096);
  return o;
}

void clearMemoryCache() { memoryCacheClear(); }

namespace {

std::string toError(llvm::Error err) { return toString(std::move(err)); }

double threadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

/// The kernel as compiled: name, comment and argument names do not change the generated code,
/// so the cache key (appendKernelKey) and the symbols use a normalised name.
isa::Kernel normalised(const isa::Kernel &k, const std::string &name) {
  isa::Kernel n = k;
  n.name = name;
  n.comment.clear();
  for (size_t i = 0; i < n.args.size(); ++i)
    n.args[i] = "a" + std::to_string(i);
  return n;
}

using PhaseFn = void (*)(sim::CoreState *, uint8_t *, const uint64_t *);

/// One linked object in its own JITDylib (so identical objects can be loaded any number of
/// times), removed when the last PreparedKernel using it goes away.
class LoadedCode {
public:
  LoadedCode(std::shared_ptr<orc::LLJIT> jit, orc::JITDylib *jd) : jit_(std::move(jit)), jd_(jd) {}
  ~LoadedCode() { consumeError(jit_->getExecutionSession().removeJITDylib(*jd_)); }
  LoadedCode(const LoadedCode &) = delete;
  LoadedCode &operator=(const LoadedCode &) = delete;

private:
  std::shared_ptr<orc::LLJIT> jit_; // keeps the session alive while code is in use
  orc::JITDylib *jd_;
};

class JitKernel final : public sim::PreparedKernel {
public:
  JitKernel(isa::Kernel k, std::shared_ptr<LoadedCode> code, std::vector<std::vector<PhaseFn>> fns)
      : k_(std::move(k)), code_(std::move(code)), fns_(std::move(fns)), numPhases_(k_.numPhases()),
        vregs_(sim::usedVectorRegisters(k_)) {}
  JitKernel(const JitKernel &) = delete;
  JitKernel &operator=(const JitKernel &) = delete;
  const isa::Kernel &kernel() const override { return k_; }
  int numPhases() const override { return numPhases_; }
  uint32_t vectorRegisters() const override { return vregs_; }
  void runPhase(int phase, int core, sim::CoreState &cs, const sim::LaunchArgs &args) const override {
    for (size_t pi = 0; pi < k_.programs.size(); ++pi) {
      const auto &p = k_.programs[pi];
      if (core < p.firstCore || core > p.lastCore)
        continue;
      if (phase < static_cast<int>(fns_[pi].size()) && fns_[pi][phase])
        fns_[pi][phase](&cs, args.ddr, args.base.data());
      return;
    }
  }

private:
  isa::Kernel k_;
  std::shared_ptr<LoadedCode> code_;
  std::vector<std::vector<PhaseFn>> fns_;
  int numPhases_;
  uint32_t vregs_;
};

} // namespace

struct JitEngine::Impl {
  JitOptions opts;
  std::shared_ptr<orc::LLJIT> jit;
  std::unique_ptr<ModuleCompiler> compiler; // used under mu
  std::unique_ptr<DiskCache> disk;
  std::unique_ptr<DiskCache> nestDisk; // the same directory, entries "gn-<key>.sjo"
  std::mutex mu;      // the optimiser and code generator (one compile at a time)
  std::mutex lastMu;  // `last`
  CompileTimes last;
  CacheCounters counters;
  std::atomic<uint64_t> counter{0};
  std::string keyPrefix;
  bool printTimes = false; // JitOptions::printTimes: one line per prepare on stderr
  // SPYRE_JIT_OPT=tiered (tier_up.h): this engine compiles at O0; `optimised` (an O2 engine)
  // compiles every kernel again on the tier-up thread. Destroyed in reverse order: the thread
  // is joined before the O2 engine goes.
  std::unique_ptr<JitEngine> optimised;
  std::unique_ptr<TierUp> tierUp;
  std::string dumpTag; // "_O2" on a tiered engine's O2 engine: its dumps do not overwrite the O0 ones
  // Shape-generic loop nests (generic_nests.h): JitOptions::genericNests at O2.
  bool genericNests = true;
  CacheCounters nestCounters; // the nests' own cache traffic (cacheStats() counts kernels)

  /// The kernels from the code cache or compiled; with `cachedOnly`, {} on a cache miss.
  std::vector<std::shared_ptr<const sim::PreparedKernel>> prepare(const std::vector<isa::Kernel> &ks,
                                                                   bool cachedOnly);

  ObjectBytes compile(const std::vector<isa::Kernel> &ks, const std::vector<std::string> &names,
                      const std::string &dumpName, CompileTimes &t) {
    std::vector<isa::Kernel> normal;
    for (size_t i = 0; i < ks.size(); ++i)
      normal.push_back(normalised(ks[i], names[i]));
    return compiler->kernels(normal, dumpName, t);
  }

  /// The objects of the generic nests `ks` call, from the code cache or compiled (and stored).
  /// With `cachedOnly`, false on the first miss. `allHit` is cleared when one was compiled.
  bool nestObjects(const std::vector<isa::Kernel> &ks, bool cachedOnly, bool dumping, CompileTimes &t,
                   std::vector<ObjectBytes> &out, bool &allHit, size_t &compiled) {
    if (!genericNests || opts.tier == OptTier::O0)
      return true;
    CacheLevels levels{opts.memoryCache, nestDisk.get(), &nestCounters, dumping};
    std::unordered_map<std::string, bool> seen;
    for (const isa::Kernel &k : ks) {
      for (const NestUse &use : genericNestsOf(k)) {
        if (!seen.emplace(use.identity, true).second)
          continue;
        CacheKey key = hashKey(keyPrefix + "generic nest\n" + use.identity);
        ObjectBytes obj = levels.lookup(key);
        if (!obj && cachedOnly)
          return false;
        if (!obj) {
          bool fresh = false;
          obj = levels.fill(key, mu, [&] { return compiler->nest(k, use, use.symbol() + dumpTag, t); }, fresh);
          if (fresh) {
            allHit = false;
            ++compiled;
          }
        }
        out.push_back(std::move(obj));
      }
    }
    return true;
  }
};

JitEngine::JitEngine(JitOptions opts) : impl_(std::make_unique<Impl>()) {
  auto tCreate = Clock::now();
  if (opts.tier == OptTier::Tiered) {
    JitOptions o2 = opts;
    o2.tier = OptTier::O2;
    impl_->optimised = std::make_unique<JitEngine>(std::move(o2));
    impl_->optimised->impl_->dumpTag = "_O2";
    JitEngine *optimised = impl_->optimised.get();
    impl_->tierUp = std::make_unique<TierUp>([optimised](const std::vector<isa::Kernel> &ks) {
      return optimised->impl_->prepare(ks, false);
    });
    opts.tier = OptTier::O0; // this engine is the base tier
  }
  impl_->opts = std::move(opts);
  impl_->printTimes = impl_->opts.printTimes;
  impl_->genericNests = impl_->opts.genericNests;
  const Host &host = Host::get();
  orc::JITTargetMachineBuilder jtmb = hostMachineBuilder(impl_->opts.tier, impl_->opts.llvmArgs);
  impl_->compiler =
      std::make_unique<ModuleCompiler>(impl_->opts, checkLlvm(jtmb.createTargetMachine(), "creating the target machine"));
  bool debug = impl_->opts.debug;
  impl_->jit = checkLlvm(orc::LLJITBuilder()
                         .setJITTargetMachineBuilder(jtmb)
                         .setObjectLinkingLayerCreator([](orc::ExecutionSession &es, const Triple &) {
                           return std::make_unique<orc::ObjectLinkingLayer>(es);
                         })
                         // Kernel code has no static initialisers, atexit or TLS: without a
                         // platform, a new JITDylib (one per object) does not get LLJIT's
                         // generic-platform IR module (__dso_handle, init/deinit wrappers).
                         .setPlatformSetUp(orc::setUpInactivePlatform)
                         .create(),
                     "creating LLJIT");
  if (debug) {
    // GDB JIT interface (symbols of JIT code in backtraces) and perf jitdump (perf record -k 1,
    // perf inject --jit). Both need only what libLLVM itself provides.
    if (auto err = orc::enableDebuggerSupport(*impl_->jit))
      warnOnce("debugger", "SPYRE_JIT_DEBUG: GDB registration unavailable: " + toError(std::move(err)));
    auto &es = impl_->jit->getExecutionSession();
    if (auto ps = impl_->jit->getProcessSymbolsJITDylib()) {
      auto plugin = orc::PerfSupportPlugin::Create(es.getExecutorProcessControl(), *ps, true, true);
      if (plugin)
        static_cast<orc::ObjectLinkingLayer &>(impl_->jit->getObjLinkingLayer()).addPlugin(std::move(*plugin));
      else
        warnOnce("perf", "SPYRE_JIT_DEBUG: perf jitdump unavailable: " + toError(plugin.takeError()));
    }
  }
  // The shared SFP reference implementation, callable from JIT code (the Python extension is
  // loaded RTLD_LOCAL, so process-wide symbol lookup would not find it). Every kernel's
  // JITDylib links against the main one.
  {
    auto &jd = impl_->jit->getMainJITDylib();
    orc::SymbolMap syms;
    auto flags = JITSymbolFlags::Exported | JITSymbolFlags::Callable;
    // The C library functions the code generator calls (DMA rows, large copies), so that
    // linking never needs a process-wide dlsym.
    syms[impl_->jit->mangleAndIntern("memcpy")] = {orc::ExecutorAddr::fromPtr(&::memcpy), flags};
    syms[impl_->jit->mangleAndIntern("memmove")] = {orc::ExecutorAddr::fromPtr(&::memmove), flags};
    syms[impl_->jit->mangleAndIntern("memset")] = {orc::ExecutorAddr::fromPtr(&::memset), flags};
    syms[impl_->jit->mangleAndIntern("spyre_sfp_apply")] = {orc::ExecutorAddr::fromPtr(&spyre_sfp_apply), flags};
    syms[impl_->jit->mangleAndIntern("spyre_jit_ld")] = {orc::ExecutorAddr::fromPtr(&spyre_jit_ld), flags};
    syms[impl_->jit->mangleAndIntern("spyre_jit_st")] = {orc::ExecutorAddr::fromPtr(&spyre_jit_st), flags};
    syms[impl_->jit->mangleAndIntern("spyre_jit_ld_pad")] = {orc::ExecutorAddr::fromPtr(&spyre_jit_ld_pad), flags};
    syms[impl_->jit->mangleAndIntern("spyre_jit_dma")] = {orc::ExecutorAddr::fromPtr(&spyre_jit_dma), flags};
    syms[impl_->jit->mangleAndIntern("spyre_jit_pt_mm")] = {orc::ExecutorAddr::fromPtr(&spyre_jit_pt_mm), flags};
    syms[impl_->jit->mangleAndIntern("spyre_jit_decoded_lx")] = {orc::ExecutorAddr::fromPtr(&spyre_jit_decoded_lx),
                                                                  flags};
    syms[impl_->jit->mangleAndIntern("spyre_jit_b_reuse")] = {orc::ExecutorAddr::fromPtr(&spyre_jit_b_reuse), flags};
    syms[impl_->jit->mangleAndIntern("spyre_jit_b_decoded")] = {orc::ExecutorAddr::fromPtr(&spyre_jit_b_decoded),
                                                                 flags};
    syms[impl_->jit->mangleAndIntern("spyre_jit_pt_out")] = {orc::ExecutorAddr::fromPtr(&spyre_jit_pt_out), flags};
    syms[impl_->jit->mangleAndIntern("spyre_jit_pt_tr")] = {orc::ExecutorAddr::fromPtr(&spyre_jit_pt_tr), flags};
    syms[impl_->jit->mangleAndIntern("spyre_ring_send")] = {orc::ExecutorAddr::fromPtr(&spyre_ring_send), flags};
    syms[impl_->jit->mangleAndIntern("spyre_ring_recv")] = {orc::ExecutorAddr::fromPtr(&spyre_ring_recv), flags};
    syms[impl_->jit->mangleAndIntern("spyre_dma_gather")] = {orc::ExecutorAddr::fromPtr(&spyre_dma_gather), flags};
    syms[impl_->jit->mangleAndIntern("spyre_dma_scatter")] = {orc::ExecutorAddr::fromPtr(&spyre_dma_scatter), flags};
    jd.addGenerator(unaryTableGenerator());
    if (auto err = jd.define(orc::absoluteSymbols(std::move(syms))))
      throw spyre::Error("JIT: defining runtime symbols: " + toError(std::move(err)));
  }
  const std::string &dir = impl_->opts.cacheDir;
  if (!dir.empty() && dir != "off") {
    impl_->disk = std::make_unique<DiskCache>(dir, impl_->opts.cacheMaxBytes);
    impl_->nestDisk = std::make_unique<DiskCache>(dir, impl_->opts.cacheMaxBytes, "gn-");
  }
  // Everything besides the kernel the object depends on.
  impl_->keyPrefix = std::string("spyre-jit object\nabi ") + std::to_string(sim::kAbiVersion) + "\nllvm " +
                     LLVM_VERSION_STRING + "\nsource " + SPYRE_JIT_SOURCE_HASH + "\ntriple " + host.triple +
                     "\ncpu " + host.cpu + "\nfeatures " + host.features + "\ntier " +
                     (impl_->opts.tier == OptTier::O0 ? "O0" : "O2") + "\npasses " +
                     pipelineFor(impl_->opts.tier, impl_->opts.passes) + "\n" +
                     (impl_->genericNests ? "generic nests\n" : "") +
                     (impl_->opts.shareDecodedB ? "" : "decoded B not shared\n") +
                     (impl_->opts.tinyMRows < 0 ? "" : "tiny M " + std::to_string(impl_->opts.tinyMRows) + "\n");
  if (impl_->printTimes)
    fprintf(stderr, "spyre-jit: engine (%s) created in %.3f ms (host detection, target machine, LLJIT)\n",
            impl_->opts.tier == OptTier::O0 ? "O0" : "O2", msSince(tCreate));
}

JitEngine::~JitEngine() {
  if (TimePassesIsEnabled) // SPYRE_JIT_LLVM_ARGS=-time-passes
    reportAndResetTimings();
}

double JitEngine::lastCompileMs() const { return lastCompileTimes().totalMs; }
CompileTimes JitEngine::lastCompileTimes() const {
  std::lock_guard<std::mutex> g(impl_->lastMu);
  return impl_->last;
}

void JitEngine::waitForTierUp() {
  if (impl_->tierUp)
    impl_->tierUp->drain();
}

bool isTieredUp(const sim::PreparedKernel &k) {
  auto *t = dynamic_cast<const TieredKernel *>(&k);
  return t && t->tieredUp();
}
std::string JitEngine::cacheDir() const { return impl_->disk ? impl_->disk->dir() : std::string(); }

CacheStats JitEngine::cacheStats() const {
  const auto &c = impl_->counters;
  CacheStats s;
  s.memoryHits = c.memoryHits;
  s.diskHits = c.diskHits;
  s.misses = c.misses;
  s.diskWrites = c.diskWrites;
  s.corruptEntries = c.corrupt;
  return s;
}

std::string kernelToIR(const isa::Kernel &k) {
  LLVMContext ctx;
  auto m = lowerKernel(k, ctx);
  std::string s;
  raw_string_ostream os(s);
  m->print(os, nullptr);
  return os.str();
}

std::string kernelToOptimisedIR(const isa::Kernel &k, OptTier tier) {
  auto tm = checkLlvm(hostMachineBuilder(tier).createTargetMachine(), "creating the target machine");
  LLVMContext ctx;
  auto m = lowerKernel(k, ctx);
  m->setDataLayout(tm->createDataLayout());
  Optimiser(tm.get(), pipelineFor(tier, "")).run(*m);
  std::string s;
  raw_string_ostream os(s);
  m->print(os, nullptr);
  return os.str();
}

std::shared_ptr<const sim::PreparedKernel> JitEngine::prepare(const isa::Kernel &k) { return prepareAll({k})[0]; }

std::vector<std::shared_ptr<const sim::PreparedKernel>> JitEngine::prepareAll(const std::vector<isa::Kernel> &ks) {
  if (ks.empty())
    return {};
  for (const isa::Kernel &k : ks)
    isa::checkKernelLimits(k); // lowering recurses over loop nests: bounded by the depth limit
  Impl &im = *impl_;
  if (!im.tierUp)
    return im.prepare(ks, false);
  // Tiered: O2 code from the cache if it is there, else the O0 code now and O2 later.
  auto cached = im.optimised->impl_->prepare(ks, true);
  if (!cached.empty())
    return cached;
  return im.tierUp->wrapAndEnqueue(ks, im.prepare(ks, false));
}

std::vector<std::shared_ptr<const sim::PreparedKernel>> JitEngine::Impl::prepare(const std::vector<isa::Kernel> &ks,
                                                                                 bool cachedOnly) {
  Impl &im = *this;
  auto tAll = Clock::now();
  double cpu0 = threadCpuMs();
  CompileTimes t;
  uint64_t id = im.counter++;
  std::string dumpName = (ks.size() == 1 ? "spyre_" + ks[0].name + "_" + std::to_string(id)
                                         : "spyre_batch" + std::to_string(ks.size()) + "_" + std::to_string(id)) +
                         im.dumpTag;
  std::vector<std::string> kernelNames; // normalised names (symbols), as in the key
  std::string material = im.keyPrefix;
  for (size_t i = 0; i < ks.size(); ++i) {
    kernelNames.push_back(ks.size() == 1 ? "k" : "k" + std::to_string(i));
    appendKernelKey(ks[i], kernelNames.back(), material);
  }
  CacheKey key = hashKey(material);
  bool dumping = !im.opts.dumpDir.empty();
  CacheLevels levels{im.opts.memoryCache, im.disk.get(), &im.counters, dumping};
  ObjectBytes obj = levels.lookup(key);
  t.keyMs = msSince(tAll);
  t.hit = obj != nullptr;
  if (!obj && cachedOnly)
    return {};
  std::vector<ObjectBytes> nests;
  bool nestsHit = true;
  size_t nestsCompiled = 0;
  if (!im.nestObjects(ks, cachedOnly, dumping, t, nests, nestsHit, nestsCompiled))
    return {};
  if (!obj) {
    bool compiled = false;
    obj = levels.fill(key, im.mu, [&] { return im.compile(ks, kernelNames, dumpName, t); }, compiled);
    t.hit = !compiled;
  }
  t.hit = t.hit && nestsHit;

  // Link: a fresh JITDylib per object (its symbols repeat across loads of one cached object).
  auto t0 = Clock::now();
  auto jdOr = im.jit->createJITDylib("spyre_o" + std::to_string(id));
  if (!jdOr)
    throw spyre::Error("JIT: creating a JITDylib: " + toError(jdOr.takeError()));
  orc::JITDylib &jd = *jdOr;
  // Search the runtime symbols (main) before LLJIT's default links: those end in the process
  // symbol generator, and a dlsym miss per external symbol per link (spyre_jit_ld, ...) costs
  // ~20 µs each in a process with libtorch loaded.
  orc::JITDylibSearchOrder order{{&im.jit->getMainJITDylib(), orc::JITDylibLookupFlags::MatchExportedSymbolsOnly}};
  jd.withLinkOrderDo([&](const orc::JITDylibSearchOrder &cur) {
    for (const auto &e : cur)
      if (e.first != &jd && e.first != &im.jit->getMainJITDylib())
        order.push_back(e);
  });
  jd.setLinkOrder(std::move(order), /*LinkAgainstThisJITDylibFirst=*/true);
  auto code = std::make_shared<LoadedCode>(im.jit, &jd);
  if (auto err = im.jit->addObjectFile(jd, MemoryBuffer::getMemBufferCopy(*obj, dumpName)))
    throw spyre::Error("JIT: adding object: " + toError(std::move(err)));
  // The generic nests the phase functions call, linked into the same JITDylib.
  for (size_t i = 0; i < nests.size(); ++i)
    if (auto err = im.jit->addObjectFile(jd, MemoryBuffer::getMemBufferCopy(*nests[i], dumpName + ".gn" +
                                                                                          std::to_string(i))))
      throw spyre::Error("JIT: adding a generic nest object: " + toError(std::move(err)));
  // One lookup for all phase functions: each lookup is a session round trip (and the first
  // one links the object), so a kernel with 32 core programs paid it 32 times.
  auto tl = Clock::now();
  orc::SymbolLookupSet names;
  std::vector<std::vector<std::vector<orc::SymbolStringPtr>>> syms(ks.size()); // [kernel][program][phase]
  for (size_t ki = 0; ki < ks.size(); ++ki) {
    const isa::Kernel &k = ks[ki];
    syms[ki].resize(k.programs.size());
    for (size_t pi = 0; pi < k.programs.size(); ++pi) {
      auto ranges = isa::phaseRanges(k.programs[pi]);
      for (size_t ph = 0; ph < ranges.size(); ++ph) {
        orc::SymbolStringPtr name; // null: an empty phase has no function
        if (!phaseIsEmpty(k.programs[pi], ranges[ph])) {
          name = im.jit->mangleAndIntern(phaseSymbol(kernelNames[ki], pi, ph));
          names.add(name);
        }
        syms[ki][pi].push_back(std::move(name));
      }
    }
  }
  auto found = im.jit->getExecutionSession().lookup(orc::makeJITDylibSearchOrder(&jd), std::move(names));
  if (!found)
    throw spyre::Error("JIT: looking up the phase functions: " + toError(found.takeError()));
  t.lookupMs = msSince(tl);
  std::vector<std::shared_ptr<const sim::PreparedKernel>> out;
  for (size_t ki = 0; ki < ks.size(); ++ki) {
    std::vector<std::vector<PhaseFn>> fns(syms[ki].size());
    for (size_t pi = 0; pi < syms[ki].size(); ++pi)
      for (const auto &name : syms[ki][pi])
        fns[pi].push_back(name ? (*found)[name].getAddress().toPtr<PhaseFn>() : nullptr);
    out.push_back(std::make_shared<JitKernel>(ks[ki], code, std::move(fns)));
  }
  t.linkMs = msSince(t0);
  t.totalMs = msSince(tAll);
  t.cpuMs = threadCpuMs() - cpu0;
  {
    std::lock_guard<std::mutex> g(im.lastMu);
    im.last = t;
  }
  if (im.printTimes)
    fprintf(stderr,
            "spyre-jit: %s %s %zu kernel(s): %.3f ms (cpu %.3f): key %.3f lower %.3f opt %.3f codegen %.3f "
            "(setup %.3f) link %.3f (lookup %.3f) nests %zu (%zu compiled)\n",
            dumpName.c_str(), t.hit ? "hit" : "miss", ks.size(), t.totalMs, t.cpuMs, t.keyMs, t.lowerMs, t.optMs,
            t.codegenMs, t.cgSetupMs, t.linkMs, t.lookupMs, nests.size(), nestsCompiled);
  return out;
}

} // namespace spyre::jit
