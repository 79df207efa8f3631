// Differential testing of the JIT against the reference interpreter on random valid kernels
// (tests/cpp/jit/random_kernel.h): DDR, LX and every core's registers must match byte for byte.
// CI runs 10,000 kernels in batches of 125 per JIT module (one batch at O2, the rest at O0: the O2
// lowering is also checked by the SFP, codec and engine tests, and O2 code generation costs
// ~15 ms per random kernel against ~0.8 ms at O0),
// compiled on SPYRE_DIFF_THREADS worker threads (default: the host's cores, at most 4).
// SPYRE_DIFF_LONG=N runs N kernels with every 4th batch at O2 (SPYRE_DIFF_O2_EVERY=k: every k-th);
// SPYRE_DIFF_SEED picks the seed; SPYRE_DIFF_VERBOSE=1 prints per-batch compile times;
// SPYRE_DIFF_DUMP=dir writes every batch's LLVM IR and object.
// Differential.TieredBothTiersBitExact runs random kernels through a tiered engine
// (SPYRE_JIT_OPT=tiered) on the code they start with and again after the O2 tier-up.
#include "jit_test_util.h"
#include "random_kernel.h"
#include "spyre/isa/listing.h"
#include "spyre/jit/jit_engine.h"
#include <chrono>
#include <cstdlib>
#include <atomic>
#include <future>
#include <thread>
#include <gtest/gtest.h>

using namespace spyre;
using namespace spyre::testing;

namespace {

/// One engine's machine, reused across kernels: DDR buffers and cores.
class Machine {
public:
  explicit Machine(const RandomKernelOptions &o) : mem_(8 << 20), rt_(1, o.maxCores), lxBytes_(o.lxBytes) {
    for (int i = 0; i < o.maxArgs; ++i)
      base_.push_back(mem_.allocate(1 << 20));
  }
  /// Runs `pk` from the given DDR and LX contents (threads = 1: cores run in order, so even
  /// kernels whose cores race on DDR are deterministic).
  RunResult run(const sim::PreparedKernel &pk, const std::vector<std::vector<uint8_t>> &ddr,
                const std::vector<std::vector<uint8_t>> &lx) {
    const isa::Kernel &k = pk.kernel();
    sim::LaunchArgs la;
    la.ddr = mem_.base();
    la.ddrSize = mem_.capacity();
    for (size_t i = 0; i < ddr.size(); ++i) {
      std::memcpy(mem_.at(base_[i], ddr[i].size()), ddr[i].data(), ddr[i].size());
      la.base.push_back(base_[i]);
      la.size.push_back(ddr[i].size());
    }
    for (int c = 0; c < k.numCores; ++c)
      std::memcpy(rt_.cores()[c].lx, lx[c].data(), lxBytes_);
    RunResult r;
    try {
      rt_.launch(pk, la);
    } catch (const Error &e) { // a device fault: part of the result both engines must agree on
      r.error = e.what();
    }
    for (size_t i = 0; i < ddr.size(); ++i) {
      uint8_t *p = mem_.at(base_[i], ddr[i].size());
      r.ddr.insert(r.ddr.end(), p, p + ddr[i].size());
    }
    for (int c = 0; c < k.numCores; ++c) {
      const auto &cs = rt_.cores()[c];
      r.lx.insert(r.lx.end(), cs.lx, cs.lx + lxBytes_);
      auto *b = reinterpret_cast<const uint8_t *>(&cs);
      r.regs.insert(r.regs.end(), b, b + offsetof(sim::CoreState, lx));
    }
    return r;
  }

private:
  sim::DeviceMemory mem_;
  sim::Runtime rt_;
  int64_t lxBytes_;
  std::vector<uint64_t> base_;
};

std::string firstDifference(const RunResult &a, const RunResult &b, int cores) {
  auto diff = [](const std::vector<uint8_t> &x, const std::vector<uint8_t> &y) -> int64_t {
    for (size_t i = 0; i < std::min(x.size(), y.size()); ++i)
      if (x[i] != y[i])
        return static_cast<int64_t>(i);
    return x.size() == y.size() ? -1 : static_cast<int64_t>(std::min(x.size(), y.size()));
  };
  if (a.error != b.error)
    return "the device error: '" + a.error + "' vs '" + b.error + "'";
  if (int64_t i = diff(a.ddr, b.ddr); i >= 0)
    return "DDR byte " + std::to_string(i);
  if (int64_t i = diff(a.lx, b.lx); i >= 0)
    return "LX byte " + std::to_string(i) + " (core " + std::to_string(i / (a.lx.size() / cores)) + ")";
  if (int64_t i = diff(a.regs, b.regs); i >= 0) {
    size_t per = offsetof(sim::CoreState, lx), off = static_cast<size_t>(i) % per;
    std::string where = off < offsetof(sim::CoreState, v)
                            ? "r" + std::to_string(off / 8)
                            : "v" + std::to_string((off - offsetof(sim::CoreState, v)) / (4 * isa::kLanes)) + " lane " +
                                  std::to_string((off - offsetof(sim::CoreState, v)) % (4 * isa::kLanes) / 4);
    return "core " + std::to_string(static_cast<size_t>(i) / per) + " " + where;
  }
  return "none";
}

/// Random DDR arguments and LX contents for `c` (the generator's stream: call in a fixed order).
void randomInputs(KernelGenerator &gen, const RandomCase &c, const RandomKernelOptions &opts,
                  std::vector<std::vector<uint8_t>> &ddr, std::vector<std::vector<uint8_t>> &lx) {
  for (uint64_t bytes : c.argBytes) {
    ddr.emplace_back(bytes);
    gen.fill(ddr.back().data(), bytes);
  }
  for (int core = 0; core < c.kernel.numCores; ++core) {
    lx.emplace_back(opts.lxBytes);
    gen.fill(lx.back().data(), lx.back().size());
  }
}

bool sameRun(const RunResult &a, const RunResult &b) {
  return a.ddr == b.ddr && a.lx == b.lx && a.regs == b.regs && a.error == b.error;
}

struct Totals {
  int kernels = 0, instructions = 0;
  std::set<std::string> mnemonics;
};

void countInstrs(const std::vector<isa::Instr> &body, Totals &t) {
  for (const auto &in : body) {
    ++t.instructions;
    std::string m(isa::opInfo(in.op).mnemonic);
    if (in.fmt != isa::Format::None)
      m += "." + std::string(isa::formatName(in.fmt));
    t.mnemonics.insert(m);
    countInstrs(in.body, t);
  }
}

/// One JIT module's worth of kernels, compiled on a worker thread.
struct Batch {
  std::vector<RandomCase> cases;
  bool o2 = false;
  std::vector<std::shared_ptr<const sim::PreparedKernel>> prepared;
  double ms = 0;
  jit::CompileTimes times;
};

/// Generates `count` kernels from `seed` and runs them in JIT batches of `batch` kernels (one
/// LLVM module each): every `o2Every`-th batch at O2 (the inline vector lowering, expensive to
/// compile), the rest at O0 (out-of-line ld/st/SFP: tests loops, DMA, PT, ring, scalars, phases,
/// cores). Batches compile on `threads` worker threads (each with its own engines) while this
/// thread runs and compares the compiled ones in order, so results do not depend on threads.
void runDifferential(int count, uint64_t seed, int batch, int o2Every, RandomKernelOptions opts, int threads) {
  KernelGenerator gen(seed, opts);
  auto interp = sim::makeInterpreter();
  const char *dump = std::getenv("SPYRE_DIFF_DUMP"); // LLVM IR and objects of every batch
  std::string dumpDir = dump ? dump : "";
  Machine mi(opts), mj(opts);
  Totals totals;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Batch> batches;
  for (int done = 0, b = 0; done < count; ++b) {
    Batch bt;
    bt.o2 = b % o2Every == o2Every - 1;
    for (int i = 0; i < std::min(batch, count - done); ++i) {
      bt.cases.push_back(gen.next());
      ++totals.kernels;
      for (const auto &p : bt.cases.back().kernel.programs)
        countInstrs(p.body, totals);
    }
    done += static_cast<int>(bt.cases.size());
    batches.push_back(std::move(bt));
  }
  // Compile order: the expensive O2 batches first, then the rest in the order they are run.
  std::vector<size_t> order;
  for (size_t b = 0; b < batches.size(); ++b)
    if (batches[b].o2)
      order.push_back(b);
  for (size_t b = 0; b < batches.size(); ++b)
    if (!batches[b].o2)
      order.push_back(b);
  std::atomic<size_t> nextJob{0};
  std::vector<std::promise<void>> ready(batches.size());
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w)
    workers.emplace_back([&] {
      jit::JitEngine o0({jit::OptTier::O0, dumpDir, "off", false}), o2({jit::OptTier::O2, dumpDir, "off", false});
      for (size_t job; (job = nextJob++) < order.size();) {
        size_t b = order[job];
        Batch &bt = batches[b];
        jit::JitEngine &jit = bt.o2 ? o2 : o0;
        std::vector<isa::Kernel> kernels;
        for (const auto &c : bt.cases)
          kernels.push_back(c.kernel);
        auto tj = std::chrono::steady_clock::now();
        try {
          bt.prepared = jit.prepareAll(kernels);
        } catch (...) {
          ready[b].set_exception(std::current_exception());
          continue;
        }
        bt.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tj).count();
        bt.times = jit.lastCompileTimes();
        ready[b].set_value();
      }
    });
  double jitMs = 0, o2Ms = 0;
  int done = 0;
  bool ok = true;
  for (size_t b = 0; b < batches.size() && ok; ++b) {
    Batch &bt = batches[b];
    ready[b].get_future().get();
    jitMs += bt.ms;
    if (bt.o2)
      o2Ms += bt.ms;
    if (std::getenv("SPYRE_DIFF_VERBOSE"))
      std::printf("[differential] batch %zu (%s): key %.1f lower %.1f opt %.1f codegen %.1f link %.1f ms, %.1f ms in "
                  "prepareAll\n",
                  b, bt.o2 ? "O2" : "O0", bt.times.keyMs, bt.times.lowerMs, bt.times.optMs, bt.times.codegenMs,
                  bt.times.linkMs, bt.ms);
    for (size_t i = 0; i < bt.cases.size() && ok; ++i) {
      const RandomCase &c = bt.cases[i];
      std::vector<std::vector<uint8_t>> ddr, lx;
      randomInputs(gen, c, opts, ddr, lx);
      RunResult ri = mi.run(*interp->prepare(c.kernel), ddr, lx);
      RunResult rj = mj.run(*bt.prepared[i], ddr, lx);
      ok = sameRun(ri, rj);
      EXPECT_TRUE(ok) << "kernel " << done + static_cast<int>(i) << " of seed " << seed << " (" << (bt.o2 ? "O2" : "O0")
                      << "): first difference at " << firstDifference(ri, rj, c.kernel.numCores) << "\n"
                      << isa::printKernel(c.kernel);
    }
    done += static_cast<int>(bt.cases.size());
    bt.prepared.clear(); // frees the batch's JIT code
  }
  for (auto &t : workers)
    t.join();
  double totalMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[differential] %d kernels (%d instructions, %zu distinct mnemonic.format), %llu rejected by the "
              "verifier; %.0f ms total on %d compile thread(s), %.0f ms of JIT compilation (%.0f ms of it at O2)\n",
              totals.kernels, totals.instructions, totals.mnemonics.size(),
              static_cast<unsigned long long>(gen.rejected()), totalMs, threads, jitMs, o2Ms);
  // Every instruction of the ISA table, and every format of the SFP, LSU and ring ones, must have
  // been generated.
  for (const auto &info : isa::allOps()) {
    std::vector<std::string> want;
    if (info.formats == isa::FMT_NONE || info.unit == isa::Unit::Pt || info.unit == isa::Unit::Dma)
      want.push_back(std::string(info.mnemonic));
    else
      for (auto [f, bit] : {std::pair{isa::Format::DL16, isa::FMT_DL16}, std::pair{isa::Format::F32, isa::FMT_F32},
                            std::pair{isa::Format::I32, isa::FMT_I32}})
        if (info.formats & bit)
          want.push_back(std::string(info.mnemonic) + "." + std::string(isa::formatName(f)));
    for (const auto &m : want) {
      bool any = false;
      for (const auto &t : totals.mnemonics)
        any |= t == m || t.rfind(m + ".", 0) == 0;
      EXPECT_TRUE(any || count < 2000) << m << " was never generated";
    }
  }
  EXPECT_LT(gen.rejected(), static_cast<uint64_t>(count / 50 + 10)) << "last rejection: " << gen.lastRejection();
}

} // namespace

TEST(Differential, GeneratedKernelsPassTheVerifier) {
  KernelGenerator gen(123);
  for (int i = 0; i < 500; ++i)
    gen.next();
  // The generator retries rejected candidates. It does not model the LX spans of outstanding
  // DMAs, so the verifier's DMA-race rule (no access to LX a pending DMA fills, no write to LX a
  // pending dma.out reads) rejects ~6 % of candidates; more would mean a generator bug.
  EXPECT_LT(gen.rejected(), 50u) << gen.lastRejection();
}

TEST(Differential, RandomKernelsBitExact) {
  int count = 10000, o2Every = 80; // 125-kernel batches: 1 of the 80 at O2
  uint64_t seed = 20261130;
  if (const char *e = std::getenv("SPYRE_DIFF_LONG"); e && *e) {
    count = std::atoi(e);
    o2Every = std::getenv("SPYRE_DIFF_O2_EVERY") ? std::atoi(std::getenv("SPYRE_DIFF_O2_EVERY")) : 4;
  }
  if (const char *e = std::getenv("SPYRE_DIFF_SEED"); e && *e)
    seed = std::strtoull(e, nullptr, 0);
  // Compile threads: SPYRE_DIFF_THREADS, default the host's cores (at most 4).
  int threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
  if (const char *e = std::getenv("SPYRE_DIFF_THREADS"); e && *e)
    threads = std::max(1, std::atoi(e));
  RandomKernelOptions opts;
  opts.maxInstrs = 5;
  opts.maxPhases = 2;
  opts.lxBytes = 20480; // room for PT tiles (pt.mm B and pt.tr tiles are 8 KiB)
  if (const char *e = std::getenv("SPYRE_DIFF_INSTRS"); e && *e)
    opts.maxInstrs = std::atoi(e);
  runDifferential(count, seed, 125, o2Every, opts, threads);
}

TEST(Differential, TieredBothTiersBitExact) {
  // Two batches of 16 random kernels through one tiered engine (an O2 random kernel costs
  // 100-400 ms to compile on the AVX2 CI host): each kernel runs on the code it
  // has right after prepareAll (O0 unless the background O2 compile was already done), then, after
  // waitForTierUp, on its O2 code; both must equal the interpreter. The second batch is prepared
  // while the first one's O2 compile is still queued or running.
  RandomKernelOptions opts;
  opts.maxInstrs = 5;
  opts.maxPhases = 2;
  opts.lxBytes = 20480;
  KernelGenerator gen(20261202, opts);
  auto interp = sim::makeInterpreter();
  Machine mi(opts), mj(opts);
  jit::JitEngine jit({jit::OptTier::Tiered, "", "off", false});
  std::vector<std::vector<RandomCase>> batches(2);
  std::vector<std::vector<std::shared_ptr<const sim::PreparedKernel>>> prepared;
  for (auto &b : batches) {
    std::vector<isa::Kernel> ks;
    for (int i = 0; i < 16; ++i) {
      b.push_back(gen.next());
      ks.push_back(b.back().kernel);
    }
    prepared.push_back(jit.prepareAll(ks));
  }
  int earlyO2 = 0;
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1)
      jit.waitForTierUp();
    for (size_t b = 0; b < batches.size(); ++b)
      for (size_t i = 0; i < batches[b].size(); ++i) {
        const RandomCase &c = batches[b][i];
        const sim::PreparedKernel &pk = *prepared[b][i];
        bool o2 = jit::isTieredUp(pk);
        if (pass == 1)
          ASSERT_TRUE(o2) << "kernel " << i << " of batch " << b << " did not tier up";
        earlyO2 += pass == 0 && o2;
        std::vector<std::vector<uint8_t>> ddr, lx;
        randomInputs(gen, c, opts, ddr, lx);
        RunResult ri = mi.run(*interp->prepare(c.kernel), ddr, lx), rj = mj.run(pk, ddr, lx);
        ASSERT_TRUE(sameRun(ri, rj)) << "batch " << b << " kernel " << i << " ("
                                     << (o2 ? "O2" : "O0") << "): first difference at "
                                     << firstDifference(ri, rj, c.kernel.numCores) << "\n"
                                     << isa::printKernel(c.kernel);
      }
  }
  std::printf("[differential] tiered: 32 kernels on both tiers (%d already at O2 on their first run)\n", earlyO2);
}

TEST(Differential, Dl16EncodeDecodeRoundTripIsIdentity) {
  // The JIT stores a DL16 value that came from a load without re-encoding it: valid only if
  // encode(decode(c)) == c for every code.
  for (uint32_t c = 0; c < 65536; ++c)
    ASSERT_EQ(dl16::fromFloat(dl16::toFloat(static_cast<uint16_t>(c))), c) << c;
}

extern "C" void spyre_jit_ld(uint32_t fmt, float *v, const uint8_t *p);
extern "C" void spyre_jit_st(uint32_t fmt, const float *v, uint8_t *p);

TEST(Differential, OutOfLineLoadStoreMatchDl16) {
  // The O0 tier's ld/st helpers: every DL16 code, and fp32 patterns (random bits, specials).
  for (uint32_t base = 0; base < 65536; base += 64) {
    uint16_t codes[64];
    float lanes[64];
    for (int l = 0; l < 64; ++l)
      codes[l] = static_cast<uint16_t>(base + l);
    spyre_jit_ld(static_cast<uint32_t>(isa::Format::DL16), lanes, reinterpret_cast<const uint8_t *>(codes));
    for (int l = 0; l < 64; ++l)
      ASSERT_EQ(dl16::floatBits(lanes[l]), dl16::floatBits(dl16::toFloat(codes[l]))) << base + l;
  }
  std::mt19937 g(5);
  const uint32_t specials[] = {0u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x7F800001u,
                               0x30002000u, 0x30001FFFu, 0x4FFFBFFFu, 0x4FFFE000u, 0x3F800000u, 0x00000001u};
  for (int round = 0; round < 20000; ++round) {
    uint32_t bits[64];
    for (int l = 0; l < 64; ++l)
      bits[l] = l < static_cast<int>(std::size(specials)) && round == 0 ? specials[l] : static_cast<uint32_t>(g());
    float lanes[64];
    std::memcpy(lanes, bits, sizeof lanes);
    uint16_t out[64];
    spyre_jit_st(static_cast<uint32_t>(isa::Format::DL16), lanes, reinterpret_cast<uint8_t *>(out));
    for (int l = 0; l < 64; ++l)
      ASSERT_EQ(out[l], dl16::fromFloat(lanes[l])) << std::hex << bits[l];
  }
}
