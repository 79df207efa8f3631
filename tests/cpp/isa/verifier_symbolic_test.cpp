// The verifier's symbolic pass against the exact dry run it stands in for: on random programs it
// may give up, but whenever it proves a program the dry run must accept it (soundness); and on
// deep loop nests it must prove in linear time what the dry run needs exponential time for.
#include "../../../isa/lib/verifier_checks.h"
#include "spyre/isa/limits.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/timing.h"
#include "spyre/isa/verifier.h"
#include <chrono>
#include <gtest/gtest.h>
#include <random>

using namespace spyre;
using namespace spyre::isa;

namespace {

/// Random bodies over r1..r4, small LX offsets (some out of range or misaligned), DMAs on two
/// tokens with waits: enough to hit every rule of verifier_dynamic.cpp now and then.
class RandomProgram {
public:
  explicit RandomProgram(uint32_t seed) : rng_(seed) {}

  std::string text() {
    std::string s = ".kernel k cores=2\n.args a\n.core 0..1\n";
    body(s, 0);
    return s;
  }

private:
  std::mt19937 rng_;
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }

  std::string addr() {
    static const char *offs[] = {"0", "0x80", "0x100", "0x1000", "0x40", "0x199f00", "-0x80"};
    return pick(3) == 0 ? std::string("lx[") + offs[pick(4)] + "]"
                        : "lx[r" + std::to_string(1 + pick(4)) + "+" + offs[pick(7)] + "]";
  }

  void body(std::string &s, int depth) {
    const int n = 1 + pick(5);
    for (int i = 0; i < n; ++i) {
      const int r = 1 + pick(4);
      switch (pick(depth < 3 ? 9 : 8)) {
      case 0: s += "li r" + std::to_string(r) + ", " + std::to_string(128 * pick(4)) + "\n"; break;
      case 1: s += "addi r" + std::to_string(r) + ", r" + std::to_string(1 + pick(4)) + ", " +
                   std::to_string(pick(2) ? 128 : 64 * (pick(5) - 2)) + "\n"; break;
      case 2: s += "muli r" + std::to_string(r) + ", r" + std::to_string(1 + pick(4)) + ", " +
                   std::to_string(pick(4) - 1) + "\n"; break;
      case 3: s += "ld.dl16 v0, " + addr() + "\n"; break;
      case 4: s += "st.dl16 " + addr() + ", v0\n"; break;
      case 5: s += "dma.in " + addr() + ", ddr[a+r" + std::to_string(r) + "], shape=(1,1," +
                   std::to_string(1 + pick(3)) + ") -> t" + std::to_string(pick(2)) + "\n"; break;
      case 6: s += "dma.out ddr[a], " + addr() + ", shape=(1,1,1) -> t" + std::to_string(pick(2)) + "\n"; break;
      case 7: s += pick(2) ? "wait t0\n" : "wait t1\n"; break;
      case 8:
        s += "loop " + std::to_string(pick(6)) + " {\n";
        body(s, depth + 1);
        s += "}\n";
        break;
      }
    }
  }
};

bool dryRunAccepts(const Kernel &k, const std::vector<uint64_t> &argBytes, int core) {
  try {
    detail::checkDynamic(k, *k.programFor(core), core, argBytes, 1677721);
    return true;
  } catch (const Error &) {
    return false;
  }
}

} // namespace

TEST(VerifierSymbolic, NeverProvesWhatTheDryRunRejects) {
  int proved = 0, accepted = 0;
  const std::vector<uint64_t> argBytes{1 << 20};
  for (uint32_t seed = 0; seed < 4000; ++seed) {
    Kernel k = parseKernel(RandomProgram(seed).text());
    for (int core = 0; core < 2; ++core) {
      const bool ok = dryRunAccepts(k, argBytes, core);
      const bool prove = !detail::proveDynamic(k, *k.programFor(core), core, argBytes, 1677721);
      accepted += ok;
      proved += prove;
      if (prove)
        ASSERT_TRUE(ok) << "seed " << seed << ", core " << core << ":\n" << printKernel(k);
    }
  }
  // Not vacuous: the pass proves most of what the dry run accepts.
  EXPECT_GT(proved, accepted / 2) << proved << " proved of " << accepted << " accepted";
}

namespace {
std::string nest(int depth, int64_t trips, const std::string &inner) {
  std::string s = ".kernel k cores=1\n.args a\n.core 0\n";
  for (int i = 0; i < depth; ++i)
    s += "loop " + std::to_string(trips) + " {\n";
  s += inner;
  for (int i = 0; i < depth; ++i)
    s += "}\n";
  return s;
}
double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
} // namespace

// 4^18 executions of one ld (the dry run walks a few iterations per level: 3^18 visits).
TEST(VerifierSymbolic, DeepNestIsLinear) {
  Kernel k = parseKernel(nest(18, 4, "ld.dl16 v0, lx[r1]\naddi r1, r1, 0\n"));
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(detail::proveDynamic(k, k.programs[0], 0, {4096}, 1677721));
  EXPECT_NO_THROW(verifyKernel(k, {4096}));
  TimingReport rep = timeKernel(k, HardwareConfig{});
  EXPECT_EQ(rep.lsuSticks, uint64_t{1} << 36);
  // 4^18 addi plus the loop entries: 1 + 4 + ... + 4^17.
  EXPECT_EQ(rep.scalarOps, (uint64_t{1} << 36) + ((uint64_t{1} << 36) - 1) / 3);
  EXPECT_LT(secondsSince(t0), 5.0); // a budget against hangs, not a benchmark
}

// The same nest walking LX: the box of the induction variables bounds every address exactly.
TEST(VerifierSymbolic, DeepNestRangeIsExact) {
  // 4^6 = 4096 iterations, one stick each: LX [0, 512 KiB) exactly.
  std::string fits = ".kernel k cores=1\n.args a\n.core 0\n";
  for (int i = 0; i < 6; ++i)
    fits += "loop 4 {\n";
  fits += "ld.dl16 v0, lx[r1]\naddi r1, r1, 128\n";
  for (int i = 0; i < 6; ++i)
    fits += "}\n";
  Kernel k = parseKernel(fits);
  EXPECT_FALSE(detail::proveDynamic(k, k.programs[0], 0, {4096}, 1677721));
  EXPECT_TRUE(detail::proveDynamic(k, k.programs[0], 0, {4096}, 4095 * 128).has_value());
}

TEST(VerifierSymbolic, LimitsOnInMemoryKernels) {
  Kernel k;
  k.name = "deep";
  k.args = {"a"};
  k.programs.push_back(CoreProgram{});
  Instr *cur = nullptr;
  std::vector<Instr> *body = &k.programs[0].body;
  for (int d = 0; d < 100000; ++d) { // far deeper than any recursion could survive
    Instr l;
    l.op = Opcode::Loop;
    l.imm = 1;
    l.line = d + 4;
    body->push_back(std::move(l));
    cur = &body->back();
    body = &cur->body;
  }
  try {
    verifyKernel(k, {4096});
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "kernel deep, core 0, line 68, loop: loop nesting deeper than 64");
  }
  EXPECT_THROW(timeKernel(k, HardwareConfig{}), Error);
  // Tear the nest down iteratively (the recursive destructor would overflow the stack).
  std::vector<Instr> keep = std::move(k.programs[0].body);
  while (!keep.empty()) {
    std::vector<Instr> next = std::move(keep[0].body);
    keep = std::move(next);
  }

  KernelLimits small;
  small.maxInstructions = 3;
  Kernel four = parseKernel(".kernel k cores=1\n.args a\n.core 0\nli r1, 0\nli r1, 0\nli r1, 0\nli r1, 0\n");
  try {
    checkKernelLimits(four, small);
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "kernel k: more than 3 instructions");
  }
}
