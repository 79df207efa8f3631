#include "spyre/isa/listing.h"
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

using namespace spyre;
using namespace spyre::isa;

static std::string readFile(const std::string &p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(Listing, HandWrittenKernelRoundTrips) {
  std::string text = readFile(std::string(SPYRE_TEST_DATA_DIR) + "/kernels/add_relu_mul.lst");
  Kernel k = parseKernel(text, "add_relu_mul.lst");
  EXPECT_EQ(k.numCores, 2);
  EXPECT_EQ(k.args.size(), 3u);
  EXPECT_EQ(k.numPhases(), 2);
  std::string printed = printKernel(k);
  EXPECT_EQ(printed, text);
  EXPECT_EQ(printKernel(parseKernel(printed)), printed);
}

TEST(Listing, DmaStridesRoundTrip) {
  std::string text = ".kernel k cores=1\n.args a\n.core 0\n"
                     "    dma.in    lx[0x80], ddr[a+r3-0x10], shape=(2,3,4), ddr.stride=(9000,700), lx.stride=(2000,600) -> t5\n"
                     "    dma.out   ddr[a], lx[r1], shape=(1,2,1), lx.stride=(256,256) -> t1\n";
  EXPECT_EQ(printKernel(parseKernel(text)), text);
}

TEST(Listing, HeaderCommentWithTrailingCarriageReturnsIsStable) {
  // fuzz_listing (fixed/header_comment_trailing_cr.lst): a header comment ending in "\r\r\r"
  // lost one "\r" per print/parse cycle (the CRLF strip), so print(parse(print(k))) != print(k).
  Kernel k = parseKernel("; op=identity \x7f\r\r\r\n.kernel k cores=1\n.args a\n.core 0\n    li r2, 0\n");
  EXPECT_EQ(k.comment, "op=identity \x7f");
  const std::string printed = printKernel(k);
  EXPECT_EQ(printKernel(parseKernel(printed)), printed);
}

// Listings that do not parse (file, line, column and expectation of each message) are text
// tests: tests/lit/listing/parse-errors.test.

TEST(Listing, EveryInstructionPrintsAndParses) {
  // One instruction of every table row, in every allowed format.
  Kernel k;
  k.name = "all";
  k.args = {"a"};
  CoreProgram p;
  for (const auto &info : allOps()) {
    std::vector<Format> fmts;
    if (info.formats == FMT_NONE) fmts.push_back(Format::None);
    if (info.formats & FMT_DL16) fmts.push_back(Format::DL16);
    if (info.formats & FMT_F32) fmts.push_back(Format::F32);
    if (info.formats & FMT_I32) fmts.push_back(Format::I32);
    for (Format f : fmts) {
      Instr in;
      in.op = info.op;
      in.fmt = f;
      in.v = {1, 2, 3};
      in.r = {4, 5};
      in.imm = 7;
      in.fimm = 0.1f;
      in.lx = {6, 256};
      in.ddr = {0, 7, 128};
      in.dma.n = {1, 2, 3};
      in.dma.ddrStride = in.dma.lxStride = DmaShape::dense(in.dma.n);
      in.outToken = 3;
      in.tokens = {3};
      in.table = {1};
      if (info.op == Opcode::Loop)
        in.body.push_back(Instr{});
      p.body.push_back(in);
    }
  }
  k.programs.push_back(p);
  std::string text = printKernel(k);
  Kernel back = parseKernel(text);
  EXPECT_EQ(printKernel(back), text);
  ASSERT_EQ(back.programs[0].body.size(), p.body.size());
  for (size_t i = 0; i < p.body.size(); ++i) {
    EXPECT_EQ(back.programs[0].body[i].op, p.body[i].op);
    EXPECT_EQ(back.programs[0].body[i].fmt, p.body[i].fmt);
  }
}
