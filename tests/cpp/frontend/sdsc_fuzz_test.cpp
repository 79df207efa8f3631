// SuperDSC robustness: numbers of frontend-generated SuperDSC JSON mutated (off by one,
// doubled, 0/-1, huge powers of two), then parse -> backend -> verifier. Every case must end in
// a kernel the verifier accepts or in spyre::Error / spyre::Unsupported: no other exception,
// no crash, no hang (ctest's timeout). A longer run: SPYRE_FUZZ_CASES=100000.
#include "spyre/frontend/compiler.h"
#include "spyre/backend/backend.h"
#include "spyre/isa/superdsc.h"
#include "spyre/isa/verifier.h"
#include <cstdlib>
#include <functional>
#include <gtest/gtest.h>
#include <random>

using namespace spyre;

namespace {

std::vector<std::string> seedSdscs() {
  const char *graphs[] = {
      "graph(%a: f16[67, 256], %b: f16[67, 256]) {\n  %s = add(%a, %b) : f16[67, 256]\n  return (%s)\n}\n",
      "graph(%x: f16[67, 129]) {\n  %m = amax(%x, dims=[-1], keepdim=1) : f16[67, 1]\n"
      "  %d = sub(%x, %m) : f16[67, 129]\n  return (%d)\n}\n",
      "graph(%a: f16[64, 255], %w: f16[255, 129]) {\n  %c = matmul(%a, %w) : f16[64, 129]\n  return (%c)\n}\n",
      "graph(%p: f16[1, 1024], %v: f16[1024, 128]) {\n  %o = matmul(%p, %v) : f16[1, 128]\n  return (%o)\n}\n",
      "graph(%x: f16[64, 129], %w: f16[129], %b: f16[129]) {\n  %s = exx2(%x) : f32[64, 2]\n"
      "  %r = layernormscale(%s, eps=1e-05) : f32[64, 1]\n"
      "  %y = layernormnorm(%x, %s, %r, %w, %b) : f16[64, 129]\n  return (%y)\n}\n",
      "graph(%x: f16[130, 200]) {\n  %y = slice(%x, dim=1, start=5, end=195) : f16[130, 190]\n  return (%y)\n}\n",
      "graph(%x: f16[3, 67, 129]) {\n  %y = permute(%x, dims=[2, 1, 0]) : f16[129, 67, 3]\n  return (%y)\n}\n",
      "graph(%x: f16[8, 100]) {\n  %w = to_dtype(%x) : f32[8, 100]\n  return (%w)\n}\n",
      "graph(%x: f16[512, 1024], %w: f16[1024]) {\n  %y = mul(%x, %w) : f16[512, 1024]\n  return (%y)\n}\n",
      "graph(%x: f16[523, 1024]) {\n  %y = sum(%x, dims=[-1], keepdim=1) : f16[523, 1]\n  return (%y)\n}\n",
      "graph(%x: f16[67, 129]) {\n  %y = slice(%x, dim=0, start=1, end=67, step=2) : f16[33, 129]\n  return (%y)\n}\n",
  };
  std::vector<std::string> seeds;
  for (const char *gt : graphs)
    for (int cores : {1, 7, 32}) {
      isa::JobPlan plan = frontend::compileGraph(frontend::parseGraph(gt), {cores, ""});
      for (const auto &l : plan.launches)
        seeds.push_back(isa::writeSuperDsc(l.sdsc).dump());
    }
  return seeds;
}

} // namespace

TEST(SdscFuzz, MutatedNumbersGiveAKernelOrAClearError) {
  const char *env = std::getenv("SPYRE_FUZZ_CASES");
  const int cases = env ? std::atoi(env) : 2000;
  const std::vector<std::string> seeds = seedSdscs();
  std::mt19937_64 rng(7);
  int ok = 0, rejected = 0;
  for (int c = 0; c < cases; ++c) {
    isa::ojson j = isa::ojson::parse(seeds[rng() % seeds.size()]);
    std::vector<isa::ojson *> nums;
    std::function<void(isa::ojson &)> walk = [&](isa::ojson &v) {
      if (v.is_number())
        nums.push_back(&v);
      else if (v.is_object() || v.is_array())
        for (auto &e : v)
          walk(e);
    };
    walk(j);
    static const int64_t special[] = {0, 1, -1, 2, 63, 64, 65, 128, 1 << 20, int64_t{1} << 31, int64_t{1} << 40,
                                      int64_t{1} << 62, -(int64_t{1} << 40)};
    for (int m = 1 + static_cast<int>(rng() % 3); m > 0 && !nums.empty(); --m) {
      isa::ojson &v = *nums[rng() % nums.size()];
      int64_t x = v.is_number_float() ? static_cast<int64_t>(v.get<double>()) : v.get<int64_t>();
      switch (rng() % 5) {
      case 0: v = x + 1; break;
      case 1: v = x - 1; break;
      case 2: v = x * 2; break;
      case 3: v = special[rng() % std::size(special)]; break;
      default: v = static_cast<int64_t>(rng() % 100000); break;
      }
    }
    const std::string text = j.dump();
    try {
      isa::SuperDsc s = isa::parseSuperDscText(text, "fuzz.json");
      isa::Kernel k = backend::compileSuperDsc(s);
      std::vector<uint64_t> argBytes(k.args.size(), 0);
      for (const auto &t : s.labeledDs) {
        uint64_t seg = t.startAddress.empty() ? 0 : t.startAddress[0] >> 34;
        if (seg < argBytes.size())
          argBytes[seg] = std::max<uint64_t>(argBytes[seg], static_cast<uint64_t>(backend::sdscTensorBytes(s, t)));
      }
      isa::verifyKernel(k, argBytes);
      ++ok;
    } catch (const Error &) { // spyre::Error and spyre::Unsupported
      ++rejected;
    } catch (const std::exception &e) {
      FAIL() << "case " << c << ": " << typeid(e).name() << ": " << e.what() << "\n" << text;
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(rejected, 0);
}

TEST(SdscFuzz, SizesBeyondTheCardAreErrors) {
  isa::JobPlan plan = frontend::compileGraph(
      frontend::parseGraph("graph(%x: f16[67, 129]) {\n  %y = neg(%x) : f16[67, 129]\n  return (%y)\n}\n"), {1, ""});
  isa::ojson j = isa::writeSuperDsc(plan.launches[0].sdsc);
  std::string text = j.dump();
  // 2^40 rows of 129 fp16 elements: 2^40 * 129 * 4 bytes is far beyond 128 GiB.
  auto pos = text.find("\"mb_\":67");
  ASSERT_NE(pos, std::string::npos) << text;
  text.replace(pos, 8, "\"mb_\":1099511627776");
  try {
    backend::compileSuperDsc(isa::parseSuperDscText(text, "big.json"));
    FAIL() << "accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("more than the card's 128 GiB of DDR"), std::string::npos) << e.what();
  }
}
