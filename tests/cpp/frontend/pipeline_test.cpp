// Graph -> SuperDSC -> backend -> both engines, against a DL16 reference computed here.
#include "plan_runner.h"
#include "spyre/frontend/compiler.h"
#include "spyre/backend/backend.h"
#include "spyre/isa/dl16.h"
#include "spyre/isa/listing.h"
#include "spyre/jit/jit_engine.h"
#include "spyre/sim/device_memory.h"
#include "spyre/sim/executable.h"
#include "spyre/sim/host_transfer.h"
#include <gtest/gtest.h>
#include <random>

using namespace spyre;
using namespace spyre::frontend;
using spyre::test::numel;

namespace {

Graph skeletonGraph(std::vector<int64_t> shape, HostType t = HostType::F16) {
  Graph g;
  int a = g.addInput("a", shape, t), b = g.addInput("b", shape, t);
  int s = g.addNode("add", {a, b}, "add", shape, t);
  int r = g.addNode("relu", {s}, "relu", shape, t);
  int m = g.addNode("mul", {r, b}, "mul", shape, t);
  g.outputs = {m};
  return g;
}

// Runs the graph with fp16 host inputs; returns the fp16 host output.
std::vector<uint16_t> runGraph(const Graph &g, sim::Engine &engine, int cores, const std::vector<std::vector<uint16_t>> &inputs,
                               int threads = 2) {
  isa::JobPlan plan = compileGraph(g, {cores, ""});
  sim::Executable exe(plan, backend::compileJobPlan(plan).kernels, engine);
  sim::DeviceMemory mem(4ull << 30);
  sim::Runtime rt(threads, 32);
  std::vector<uint64_t> addr;
  for (const auto &b : exe.plan().buffers)
    addr.push_back(mem.allocate(b.layout.deviceBytes()));
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const auto &b = plan.buffers[plan.inputs[i]];
    sim::HostTensor h{const_cast<uint16_t *>(inputs[i].data()), HostType::F16, b.hostShape, contiguousStrides(b.hostShape)};
    auto map = sim::mapLayout(b.layout, b.hostShape, contiguousStrides(b.hostShape));
    sim::copyHostToDevice(h, b.layout, map, mem.at(addr[plan.inputs[i]], b.layout.deviceBytes()));
  }
  exe.run(rt, mem.base(), mem.capacity(), addr);
  const auto &ob = plan.buffers[plan.outputs[0]];
  std::vector<uint16_t> out(numel(ob.hostShape));
  sim::HostTensor h{out.data(), HostType::F16, ob.hostShape, contiguousStrides(ob.hostShape)};
  sim::copyDeviceToHost(mem.at(addr[plan.outputs[0]], ob.layout.deviceBytes()), ob.layout,
                        sim::mapLayout(ob.layout, ob.hostShape, contiguousStrides(ob.hostShape)), h);
  return out;
}

std::vector<uint16_t> randomHalf(int64_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0, 1);
  std::vector<uint16_t> v(n);
  for (auto &x : v)
    x = dl16::floatToHalf(d(g));
  return v;
}

// relu(a + b) * b with every intermediate rounded to DL16, then to fp16.
uint16_t reference(uint16_t a, uint16_t b) {
  float x = dl16::toFloat(dl16::fromHalf(a)), y = dl16::toFloat(dl16::fromHalf(b));
  float s = dl16::round(x + y);
  float r = s > 0 ? s : 0;
  return dl16::toHalf(dl16::fromFloat(r * y));
}

} // namespace

TEST(Pipeline, SkeletonGraphBitExactOnBothEnginesAcrossCoreCounts) {
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  for (auto shape : std::vector<std::vector<int64_t>>{{67, 256}, {64}, {129}, {3, 5, 71}, {2, 3, 4, 130}, {255, 64}, {300, 1024}}) {
    Graph g = skeletonGraph(shape);
    auto a = randomHalf(numel(shape), 7), b = randomHalf(numel(shape), 8);
    for (int cores : {1, 2, 7, 32}) {
      auto ri = runGraph(g, *interp, cores, {a, b});
      auto rj = runGraph(g, jit, cores, {a, b});
      ASSERT_EQ(ri, rj) << "cores " << cores;
      for (int64_t i = 0; i < numel(shape); ++i)
        ASSERT_EQ(rj[i], reference(a[i], b[i])) << "element " << i << " cores " << cores;
    }
  }
}

TEST(Pipeline, WorkDivisionFollowsTorchSpyrePass3) {
  // abs on (256,128,512) fp16 with 32 cores: stick-adjusted (256,128,8) -> split c0 by 32.
  EXPECT_EQ(divideWork({256, 128, 8}, {true, true, true}, 32), (std::vector<int64_t>{32, 1, 1}));
  // 67 rows (prime) x 4 sticks: rows cannot split, sticks split by 4.
  EXPECT_EQ(divideWork({67, 4}, {true, true}, 32), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(divideWork({67, 4}, {true, true}, 7), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(divideWork({64, 4}, {true, true}, 7), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(divideWork({12, 6}, {true, true}, 32), (std::vector<int64_t>{12, 2}));
}

TEST(Pipeline, EmittedSuperDscMatchesTorchSpyreExampleShape) {
  // abs on (4, 64) fp16, 2 cores: the reconstructed example of notes §2.5.
  Graph g;
  int a = g.addInput("x", {4, 64}, HostType::F16);
  g.outputs = {g.addNode("abs", {a}, "y", {4, 64}, HostType::F16)};
  isa::JobPlan plan = compileGraph(g, {2, ""});
  ASSERT_EQ(plan.launches.size(), 1u);
  auto j = isa::ojson::parse(plan.launches[0].sdscJson);
  const auto &top = j["0_abs"];
  EXPECT_EQ(top["numCoresUsed_"], 2);
  EXPECT_EQ(top["numWkSlicesPerDim_"]["mb"], 2);
  EXPECT_EQ(top["numWkSlicesPerDim_"]["out"], 1);
  EXPECT_EQ(top["coreIdToWkSlice_"]["1"]["mb"], 1);
  const auto &dsc = top["dscs_"][0]["abs"];
  EXPECT_EQ(dsc["N_"]["mb_"], 4);
  EXPECT_EQ(dsc["N_"]["out_"], 64);
  EXPECT_EQ(dsc["primaryDsInfo_"]["OUTPUT"]["layoutDimOrder_"], (std::vector<std::string>{"mb", "out"}));
  EXPECT_EQ(dsc["scheduleTree_"][0]["startAddressCoreCorelet_"]["data_"]["[1, 0, 0]"], "256");
  EXPECT_EQ(dsc["scheduleTree_"][1]["startAddressCoreCorelet_"]["data_"]["[0, 0, 0]"], "17179869184");
  EXPECT_EQ(dsc["scheduleTree_"][1]["startAddressCoreCorelet_"]["data_"]["[1, 0, 0]"], "17179869440");
  EXPECT_EQ(dsc["computeOp_"][0]["inputLabeledDs"][0], "Tensor0-idx0");
  EXPECT_EQ(dsc["computeOp_"][0]["outputLabeledDs"][0], "Tensor1-idx1");
  EXPECT_EQ(dsc["labeledDs_"][0]["dataFormat_"], "SEN169_FP16");
}

TEST(Pipeline, UnsupportedOpsAndShapesSayWhat) {
  Graph g;
  int a = g.addInput("x", {4, 64}, HostType::F16);
  g.outputs = {g.addNode("atan", {a}, "y", {4, 64}, HostType::F16)};
  try {
    compileGraph(g);
    FAIL();
  } catch (const Unsupported &e) {
    EXPECT_STREQ(e.what(), "Unsupported: <graph>:2: op 'atan' (node %y = atan)");
  }
  Graph h;
  int x = h.addInput("x", {4, 64}, HostType::F16), y = h.addInput("y", {3, 64}, HostType::F16);
  h.outputs = {h.addNode("add", {x, y}, "z", {4, 64}, HostType::F16)};
  EXPECT_THROW(compileGraph(h), Error); // 3 does not broadcast to 4
  EXPECT_THROW(compileGraph(skeletonGraph({4, 4}), {33, ""}), Unsupported);
  EXPECT_THROW(compileGraph(skeletonGraph({4, 4}, HostType::I8)), Unsupported);
  // int32 add and mul run on the card, relu has no i32 form: the backend says so.
  try {
    backend::compileJobPlan(compileGraph(skeletonGraph({4, 4}, HostType::I32)));
    ADD_FAILURE() << "relu.i32 accepted";
  } catch (const Unsupported &e) {
    EXPECT_NE(std::string(e.what()).find("int32 relufwd (no relu.i32)"), std::string::npos) << e.what();
  }
}

TEST(Pipeline, F32GraphRuns) {
  Graph g = skeletonGraph({33, 40}, HostType::F32);
  isa::JobPlan plan = compileGraph(g, {32, ""});
  jit::JitEngine jit;
  sim::Executable exe(plan, backend::compileJobPlan(plan).kernels, jit);
  EXPECT_EQ(exe.launches().size(), 1u); // add, relu and mul: one fused kernel
  EXPECT_NE(isa::printKernel(exe.launches()[0].kernel).find("add.f32"), std::string::npos);
}
