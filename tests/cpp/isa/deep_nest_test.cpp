// A kernel built in memory may be nested far deeper than the limits let a listing be: the code
// that must handle it before checkKernelLimits rejects it (the destructor, the identity/hash, the
// printer, the limit check itself) uses no stack per nesting level. Run on a thread with a 1 MiB
// stack so that a recursive walker fails here (a 200k-deep recursion needs several MiB) instead
// of passing on a large main-thread stack.
#include "spyre/isa/limits.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/program.h"
#include <algorithm>
#include <functional>
#include <gtest/gtest.h>
#include <pthread.h>

using namespace spyre::isa;

namespace {

constexpr int kDepth = 200000;

/// `depth` loops of 1 around `addi r1, r1, imm`, built by moves only (no recursive copy).
Instr deepNest(int depth, int64_t imm) {
  Instr cur;
  cur.op = Opcode::Addi;
  cur.r = {1, 1};
  cur.imm = imm;
  for (int i = 0; i < depth; ++i) {
    Instr loop;
    loop.op = Opcode::Loop;
    loop.imm = 1;
    loop.body.push_back(std::move(cur));
    cur = std::move(loop);
  }
  return cur;
}

void runOnSmallStack(const std::function<void()> &fn) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, 1 << 20), 0);
  pthread_t t;
  auto entry = [](void *p) -> void * {
    (*static_cast<const std::function<void()> *>(p))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&t, &attr, entry, const_cast<std::function<void()> *>(&fn)), 0);
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
}

} // namespace

TEST(DeepNest, DestroyHashCompareAndPrintUseNoStackPerLevel) {
  runOnSmallStack([] {
    {
      Instr a = deepNest(kDepth, 7), b = deepNest(kDepth, 7);
      // The identity is every instruction's fields in pre-order: one fixed-size record each.
      EXPECT_EQ(instrIdentity(a).size(), (kDepth + 1) * instrIdentity(Instr{}).size());
      EXPECT_TRUE(a == b);
      EXPECT_EQ(hashInstr(a), hashInstr(b));
      Instr *inner = &b;
      while (!inner->body.empty())
        inner = &inner->body[0];
      inner->imm = 8;
      EXPECT_FALSE(a == b); // they differ only in the innermost immediate
      EXPECT_NE(hashInstr(a), hashInstr(b));
    } // a and b destroyed here
    Kernel k;
    k.name = "deep";
    k.programs.push_back({0, 0, {}});
    k.programs[0].body.push_back(deepNest(kDepth, 7));
    std::string text = printKernel(k);
    // Header (3 lines), kDepth loop lines, the addi, kDepth closing braces.
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3 + 2 * kDepth + 1);
    // Indentation stops growing past the deepest nest the limits accept: linear size.
    const size_t maxIndent = 4 * (kKernelLimits.maxLoopDepth + 1);
    EXPECT_NE(text.find("\n" + std::string(maxIndent, ' ') + "addi      r1, r1, 7\n"), std::string::npos);
    EXPECT_LT(text.size(), (2 * kDepth + 4) * (maxIndent + 20));
    const std::string head = ".kernel deep cores=1\n.args\n.core 0\n    loop 1 {\n        loop 1 {\n";
    EXPECT_EQ(text.substr(0, head.size()), head);
    try {
      checkKernelLimits(k);
      ADD_FAILURE() << "a 200k-deep nest passed checkKernelLimits";
    } catch (const spyre::Error &e) {
      EXPECT_STREQ(e.what(), "kernel deep, core 0, line 0, loop: loop nesting deeper than 64");
    }
  });
}

TEST(DeepNest, PrintIndentsFourColumnsPerLevelWithinTheLimits) {
  Kernel k;
  k.programs.push_back({0, 0, {}});
  k.programs[0].body.push_back(deepNest(2, 3));
  EXPECT_EQ(printKernel(k), ".kernel kernel cores=1\n.args\n.core 0\n"
                            "    loop 1 {\n"
                            "        loop 1 {\n"
                            "            addi      r1, r1, 3\n"
                            "        }\n"
                            "    }\n");
}
