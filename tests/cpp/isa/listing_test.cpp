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

struct BadCase {
  const char *text;
  const char *message;
};

TEST(Listing, ParseErrorsNameLineColumnAndExpectation) {
  const std::string hdr = ".kernel k cores=2\n.args a b\n.core 0..1\n";
  const BadCase cases[] = {
      {"    frob v0, v1\n", "<listing>:4:5: expected an instruction mnemonic, got 'frob'"},
      {"    add.f16 v0, v1, v2\n", "<listing>:4:5: expected a format suffix, one of add.dl16 add.f32 add.i32, got 'add.f16'"},
      {"    add.dl16 v0, v1\n", "<listing>:4:20: expected ',', got end of line"},
      {"    add.dl16 v0, v1, v16\n", "<listing>:4:22: expected a vector register v0..v15, got 'v16'"},
      {"    ld.dl16 v0, lx[r40]\n", "<listing>:4:20: expected a scalar register r0..r31"},
      {"    dma.in lx[0], ddr[c], shape=(1,1,1) -> t0\n", "<listing>:4:23: expected a kernel argument name declared by .args, got 'c]'"},
      {"    loop 3 {\n    li r1, 1\n", "expected '}' before end of input"},
      {"    }\n", "<listing>:4:6: expected an instruction ('}' without an open loop)"},
      {"    li r1, x\n", "<listing>:4:12: expected an integer, got 'x'"},
      {"    bcast.dl16 v0, one\n", "<listing>:4:20: expected a float immediate, got 'one'"},
      {"    bar extra\n", "<listing>:4:9: expected end of line, got 'extra'"},
      {"    wait\n", "<listing>:4:9: expected a token t0..t15"},
      {"    li.dl16 r1, 0\n", "expected 'li' without a format suffix, got 'li.dl16'"},
  };
  for (const auto &c : cases) {
    try {
      parseKernel(hdr + c.text);
      ADD_FAILURE() << "no error for: " << c.text;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
          << "input: " << c.text << "\nmessage: " << e.what();
    }
  }
  EXPECT_THROW(parseKernel("    li r1, 0\n"), Error);                       // no .kernel
  EXPECT_THROW(parseKernel(".kernel k cores=40\n"), Error);                 // too many cores
  EXPECT_THROW(parseKernel(".kernel k cores=2\n.core 0..2\n"), Error);      // core range
  // Found by fuzzing: a non-name in .args looped forever (and ran out of memory); a core count
  // above 2^32 wrapped to a valid int.
  auto message = [](const std::string &text) {
    try {
      parseKernel(text);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_NE(message(".kernel k cores=1\n.args a, b\n").find("expected an argument name"), std::string::npos);
  EXPECT_NE(message(".kernel k cores=4294967297\n").find("expected cores between 1 and 32, got '4294967297'"),
            std::string::npos)
      << message(".kernel k cores=4294967297\n");
  EXPECT_NE(message(".kernel k cores=2\n.core 4294967296..4294967297\n").find("core range inside 0..1"),
            std::string::npos);
}

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
