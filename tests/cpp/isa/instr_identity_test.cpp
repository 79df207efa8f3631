// Instruction identity (program.h): equality and hash, every field but the source line; and the
// one operand printer (listing.h), including negative and extreme offsets.
#include "spyre/isa/listing.h"
#include "spyre/isa/program.h"
#include <cmath>
#include <cstdint>
#include <gtest/gtest.h>
#include <unordered_set>

using namespace spyre::isa;

namespace {

Instr loopOf(Instr body, int64_t n) {
  Instr l;
  l.op = Opcode::Loop;
  l.imm = n;
  l.body = {std::move(body)};
  return l;
}

Instr addi(int rd, int rs, int64_t imm) {
  Instr in;
  in.op = Opcode::Addi;
  in.r = {rd, rs};
  in.imm = imm;
  return in;
}

} // namespace

TEST(InstrIdentity, EqualIgnoresOnlyTheSourceLine) {
  Instr a = addi(1, 2, 64), b = addi(1, 2, 64);
  b.line = 17;
  EXPECT_TRUE(a == b);
  EXPECT_EQ(hashInstr(a), hashInstr(b));
  EXPECT_EQ(std::hash<Instr>{}(a), std::hash<Instr>{}(b));
  b.imm = 65;
  EXPECT_FALSE(a == b);
  Instr c = a;
  c.lx2.offset = -128; // a field addi does not print still counts
  EXPECT_FALSE(a == c);
}

TEST(InstrIdentity, FloatsCompareByBitPattern) {
  Instr a;
  a.op = Opcode::Bcast;
  a.fimm = 0.0f;
  Instr b = a;
  b.fimm = -0.0f;
  EXPECT_FALSE(a == b);
  a.fimm = b.fimm = std::nanf("");
  EXPECT_TRUE(a == b);
}

TEST(InstrIdentity, LoopBodiesRecursivelyAndUpToLi) {
  Instr li;
  li.op = Opcode::Li;
  li.r[0] = 3;
  li.imm = 4096;
  Instr other = li;
  other.imm = 8192;
  EXPECT_FALSE(loopOf(li, 4) == loopOf(other, 4));
  EXPECT_EQ(instrIdentity(loopOf(li, 4), true), instrIdentity(loopOf(other, 4), true));
  EXPECT_NE(instrIdentity(loopOf(li, 4), true), instrIdentity(loopOf(other, 5), true));
  EXPECT_TRUE(loopOf(addi(1, 1, 128), 8) == loopOf(addi(1, 1, 128), 8));
  std::unordered_set<Instr> set{loopOf(addi(1, 1, 128), 8), loopOf(addi(1, 1, 128), 8), loopOf(addi(1, 1, 256), 8)};
  EXPECT_EQ(set.size(), 2u);
}

TEST(OperandPrinter, NegativeOffsets) {
  EXPECT_EQ(lxText({-1, 0x100}), "lx[0x100]");
  EXPECT_EQ(lxText({2, 0x100}), "lx[r2+0x100]");
  EXPECT_EQ(lxText({2, -0x80}), "lx[r2-0x80]");
  EXPECT_EQ(lxText({2, 0}), "lx[r2]");
  EXPECT_EQ(lxText({2, INT64_MIN}), "lx[r2-0x8000000000000000]");
  Kernel k;
  k.args = {"a"};
  EXPECT_EQ(ddrText({0, 1, -0x80}, k), "ddr[a+r1-0x80]");
  EXPECT_EQ(ddrText({0, -1, 0x80}, k), "ddr[a+0x80]");
  EXPECT_EQ(ddrText({3, -1, 0}, k), "ddr[arg3]");
  EXPECT_EQ(hexText(-1), "-0x1");
  EXPECT_EQ(hexText(INT64_MIN), "-0x8000000000000000");
}

TEST(OperandPrinter, ListingAndMessagesAgree) {
  Kernel k = parseKernel(".kernel t cores=1\n.args a\n.core 0\n    ld.dl16   v0, lx[r2-0x80]\n");
  EXPECT_NE(printKernel(k).find("lx[r2-0x80]"), std::string::npos) << printKernel(k);
  EXPECT_EQ(lxText(k.programs[0].body[0].lx), "lx[r2-0x80]");
}
