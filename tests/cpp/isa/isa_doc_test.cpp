#include "spyre/isa/isa_doc.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/program.h"
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

using namespace spyre::isa;

TEST(IsaDoc, MentionsEveryMnemonicWithItsSemantics) {
  std::string doc = generateIsaDoc(HardwareConfig{});
  for (const auto &op : allOps()) {
    EXPECT_NE(doc.find("#### `" + std::string(op.mnemonic) + "`"), std::string::npos) << op.mnemonic;
    EXPECT_NE(doc.find(std::string(op.semantics)), std::string::npos) << op.mnemonic;
  }
}

TEST(IsaDoc, ExampleIsTheHandWrittenListing) {
  std::ifstream f(std::string(SPYRE_TEST_DATA_DIR) + "/kernels/add_relu_mul.lst");
  std::stringstream ss;
  ss << f.rdbuf();
  ASSERT_FALSE(ss.str().empty());
  const std::string doc =
      generateIsaDoc(HardwareConfig{}, {{"tests/kernels/add_relu_mul.lst", parseKernel(ss.str())}});
  EXPECT_NE(doc.find("Example (`tests/kernels/add_relu_mul.lst`):\n\n```\n" + ss.str() + "```\n"), std::string::npos);
  EXPECT_EQ(generateIsaDoc(HardwareConfig{}).find("Example ("), std::string::npos); // no examples, no example
}

TEST(IsaDoc, SectionsAndCostsFollowHardwareConfig) {
  HardwareConfig hw;
  std::string doc = generateIsaDoc(hw);
  for (const char *s : {"## 1. Machine state", "## 2. Program structure and phases", "## 3. Listing syntax",
                        "## 4. Instructions", "## 5. DL16", "## 6. Verifier rules", "## 7. Timing model",
                        "## 8. Hardware configuration", "r0 = core id, read-only", "64 fp32 lanes",
                        "ties away from zero", "invalid SENCORES value N"})
    EXPECT_NE(doc.find(s), std::string::npos) << s;
  EXPECT_NE(doc.find("100 ns start-up (150 cycles)"), std::string::npos);
  hw.dmaStartupNs = 200;
  hw.transcendentalCyclesPerStick = 8;
  doc = generateIsaDoc(hw);
  EXPECT_NE(doc.find("200 ns start-up (300 cycles)"), std::string::npos);
  EXPECT_NE(doc.find("(stick-ops + 8 × transcendental stick-ops)"), std::string::npos);
}

TEST(IsaDoc, SyntaxDerivedFromOperandKinds) {
  EXPECT_EQ(instructionSyntax(opInfo(Opcode::Add)), "add.{dl16,f32,i32} vd, va, vb");
  EXPECT_EQ(instructionSyntax(opInfo(Opcode::St)), "st.{dl16,f32,i32} lx[ra+off], vs");
  EXPECT_EQ(instructionSyntax(opInfo(Opcode::Addi)), "addi rd, rs, imm");
  EXPECT_EQ(instructionSyntax(opInfo(Opcode::Tbl)), "tbl rd, [c0, c1, …]");
  EXPECT_EQ(instructionSyntax(opInfo(Opcode::Loop)), "loop N { … }");
  EXPECT_EQ(instructionSyntax(opInfo(Opcode::Wait)), "wait tK[, tK…]");
  EXPECT_EQ(instructionSyntax(opInfo(Opcode::Bar)), "bar");
  EXPECT_EQ(instructionSyntax(opInfo(Opcode::DmaIn)),
            "dma.in lx[ra+off], ddr[arg+rb+off], shape=(n2,n1,n0)[, ddr.stride=(s2,s1)][, lx.stride=(s2,s1)] -> tK");
}
