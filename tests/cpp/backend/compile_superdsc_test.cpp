// The backend compiler on its own: one SuperDSC -> Kernel, a JobPlan -> verified, timed kernels,
// and its options.
#include "spyre/backend/backend.h"
#include "spyre/isa/env.h"
#include "spyre/isa/error.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/superdsc.h"
#include "spyre/isa/timing.h"
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

using namespace spyre;
using namespace spyre::isa;

namespace {

/// The reconstructed torch-spyre example (notes §2.5): abs on (4,64) fp16 over 2 cores.
std::string absExample() {
  std::ifstream f(std::string(SPYRE_TEST_DATA_DIR) + "/sdsc/abs_4x64/sdsc_0.json");
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_FALSE(ss.str().empty());
  return ss.str();
}

std::string mutate(std::string s, const std::string &from, const std::string &to) {
  auto p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  return s.replace(p, from.size(), to);
}

/// A plan of one launch of the abs example: buffer 0 in, buffer 1 out.
JobPlan absPlan() {
  JobPlan plan;
  for (int i = 0; i < 2; ++i) {
    BufferSpec b;
    b.name = i == 0 ? "x" : "y";
    b.kind = i == 0 ? BufferSpec::Kind::Input : BufferSpec::Kind::Output;
    b.hostShape = {4, 64};
    b.layout = SpyreTensorLayout({4, 64}, DataFormat::SEN169_FP16);
    plan.buffers.push_back(b);
  }
  KernelLaunch l;
  l.sdscFile = "sdsc_0.json";
  l.sdscJson = absExample();
  l.sdsc = parseSuperDscText(l.sdscJson, l.sdscFile);
  l.argBuffers = {0, 1};
  plan.launches.push_back(l);
  plan.inputs = {0};
  plan.outputs = {1};
  plan.outputAliasesInput = {-1};
  return plan;
}

} // namespace

TEST(Backend, CompilesTorchSpyreExample) {
  SuperDsc s = parseSuperDscText(absExample(), "sdsc_0.json");
  Kernel k = backend::compileSuperDsc(s);
  EXPECT_EQ(k.numCores, 2);
  EXPECT_EQ(k.args, (std::vector<std::string>{"Tensor0", "Tensor1"}));
  std::string listing = printKernel(k);
  EXPECT_NE(listing.find("abs.dl16"), std::string::npos) << listing;
  EXPECT_NE(listing.find("tbl       r1, [0, 256]"), std::string::npos) << listing;
  EXPECT_EQ(printKernel(parseKernel(listing)), listing);
}

TEST(Backend, RejectsInconsistentDescriptors) {
  const std::string abs = absExample();
  // Start address that does not match the core's work slice.
  std::string bad = mutate(abs, R"("[1, 0, 0]":"256")", R"("[1, 0, 0]":"384")");
  SuperDsc s = parseSuperDscText(bad, "sdsc_0.json");
  try {
    backend::compileSuperDsc(s);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("start address of Tensor0 on core 1 is 384, but its work slice starts at 256"),
              std::string::npos) << e.what();
  }
  // An uneven split, 3 rows over 2 cores: 2 rows, then 1 (core 1 starts two rows in, as for 4):
  // one program per run of equal slices.
  std::string uneven = mutate(abs, R"("mb_":4)", R"("mb_":3)");
  isa::Kernel k = backend::compileSuperDsc(parseSuperDscText(uneven, "u.json"));
  ASSERT_EQ(k.programs.size(), 2u);
  EXPECT_EQ(k.programs[0].lastCore, 0);
  EXPECT_EQ(k.programs[1].firstCore, 1);
  // 1 row over 2 cores leaves core 1 nothing.
  try {
    backend::compileSuperDsc(parseSuperDscText(mutate(abs, R"("mb_":4)", R"("mb_":1)"), "e.json"));
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("numWkSlicesPerDim_.mb = 2 leaves slice 1 of the device extent 1 of N_.mb = 1 "
                                         "empty"),
              std::string::npos)
        << e.what();
  }
  // Unknown op.
  std::string op = mutate(mutate(abs, R"({"abs": {)", R"({"frobnicate": {)"), R"("opFuncName":"abs")",
                          R"("opFuncName":"frobnicate")");
  try {
    backend::compileSuperDsc(parseSuperDscText(op, "o.json"));
    FAIL();
  } catch (const Unsupported &e) {
    EXPECT_NE(std::string(e.what()).find("'frobnicate'"), std::string::npos) << e.what();
  }
}

TEST(Backend, CompileJobPlanVerifiesAndTimesEveryLaunch) {
  JobPlan plan = absPlan();
  backend::CompiledJob job = backend::compileJobPlan(plan);
  ASSERT_EQ(job.kernels.size(), 1u);
  Kernel k = backend::compileSuperDsc(plan.launches[0].sdsc);
  EXPECT_EQ(printKernel(job.kernels[0].kernel), printKernel(k));
  TimingReport rep = timeKernel(k, HardwareConfig{});
  EXPECT_EQ(job.kernels[0].simulatedUs, rep.scheduledUs);
  EXPECT_EQ(job.kernels[0].timing, rep.summary());
  EXPECT_GE(job.compileMs, 0);
  // The verifier checks the kernel against the plan's buffers: a buffer too small for the
  // kernel's DDR accesses is an error, not a kernel.
  plan.buffers[1].layout = SpyreTensorLayout({1, 64}, DataFormat::SEN169_FP16);
  EXPECT_THROW(backend::compileJobPlan(plan), Error);
}

TEST(BackendOptions, FromEnv) {
  EXPECT_TRUE(backend::BackendOptions{}.multicast);
  EXPECT_TRUE(backend::BackendOptions::fromEnv(Env()).multicast);
  EXPECT_FALSE(backend::BackendOptions::fromEnv(Env::fromMap({{"SPYRE_MULTICAST", "0"}})).multicast);
  EXPECT_FALSE(backend::BackendOptions::fromEnv(Env::fromMap({{"SPYRE_MULTICAST", "off"}})).multicast);
  EXPECT_TRUE(backend::BackendOptions::fromEnv(Env::fromMap({{"SPYRE_MULTICAST", "1"}})).multicast);
  try {
    backend::BackendOptions::fromEnv(Env::fromMap({{"SPYRE_MULTICAST", "maybe"}}));
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("invalid SPYRE_MULTICAST value 'maybe'"), std::string::npos) << e.what();
  }
}
