#include "spyre/isa/error.h"
#include "spyre/isa/superdsc.h"
#include <gtest/gtest.h>

using namespace spyre;
using namespace spyre::isa;

namespace {
// The reconstructed torch-spyre example (notes §2.5): abs on (4,64) fp16 over 2 cores (also
// tests/sdsc/abs_4x64/sdsc_0.json).
const char *kAbs = R"({"0_abs": {
  "numCoresUsed_": 2, "coreIdToDsc_": {"0":0,"1":0},
  "numWkSlicesPerDim_": {"mb":2,"out":1},
  "coreIdToWkSlice_": {"0":{"mb":0,"out":0},"1":{"mb":1,"out":0}},
  "coreIdToDscSchedule": {"0":[[-1,0,0,0]],"1":[[-1,0,0,0]]},
  "dscs_": [{"abs": {
    "numCoresUsed_":2, "N_": {"name_":"n","mb_":4,"out_":64},
    "primaryDsInfo_": {"OUTPUT":{"layoutDimOrder_":["mb","out"],"stickDimOrder_":["out"],"stickSize_":[64]}},
    "scheduleTree_": [
      {"nodeType_":"allocate","name_":"allocate-Tensor0_hbm","ldsIdx_":0,"component_":"hbm",
       "startAddressCoreCorelet_":{"data_":{"[0, 0, 0]":"0","[1, 0, 0]":"256"}}},
      {"nodeType_":"allocate","name_":"allocate-Tensor1_hbm","ldsIdx_":1,"component_":"hbm",
       "startAddressCoreCorelet_":{"data_":{"[0, 0, 0]":"17179869184","[1, 0, 0]":"17179869440"}}}],
    "labeledDs_": [
      {"ldsIdx_":0,"dsName_":"Tensor0","dsType_":"OUTPUT","scale_":[1,1],"wordLength":2,
       "dataFormat_":"SEN169_FP16","memOrg_":{"hbm":{"isPresent":1},"lx":{"isPresent":1}}},
      {"ldsIdx_":1,"dsName_":"Tensor1","dsType_":"OUTPUT","scale_":[1,1],"wordLength":2,
       "dataFormat_":"SEN169_FP16","memOrg_":{"hbm":{"isPresent":1},"lx":{"isPresent":1}}}],
    "constantInfo_": {},
    "computeOp_": [{"exUnit":"sfp","opFuncName":"abs","inputLabeledDs":["Tensor0-idx0"],"outputLabeledDs":["Tensor1-idx1"]}]
  }}]}})";

std::string mutate(std::string s, const std::string &from, const std::string &to) {
  auto p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  return s.replace(p, from.size(), to);
}
} // namespace

TEST(SuperDsc, ParsesTorchSpyreExample) {
  // Compiled by the backend in tests/cpp/backend/compile_superdsc_test.cpp.
  SuperDsc s = parseSuperDscText(kAbs, "sdsc_0.json");
  EXPECT_EQ(s.name, "0_abs");
  EXPECT_EQ(s.dims, (std::vector<std::string>{"mb", "out"}));
  EXPECT_EQ(s.N, (std::vector<int64_t>{4, 64}));
  EXPECT_EQ(s.labeledDs[1].startAddress[1], 17179869440ull);
}

TEST(SuperDsc, WriteParseRoundTrip) {
  SuperDsc s = parseSuperDscText(kAbs, "sdsc_0.json");
  std::string text = writeSuperDsc(s).dump(2);
  SuperDsc t = parseSuperDscText(text, "again.json");
  EXPECT_EQ(writeSuperDsc(t).dump(2), text);
  EXPECT_EQ(t.coreIdToWkSlice, s.coreIdToWkSlice);
}

TEST(SuperDsc, MalformedInputNamesFileAndJsonPath) {
  struct Case { std::string text, msg; } cases[] = {
      {"{not json", "sdsc_0.json: malformed JSON"},
      {mutate(kAbs, R"("mb_":4,)", ""), "/0_abs/numWkSlicesPerDim_/mb: dimension is not in N_"},
      {mutate(kAbs, R"("mb_":4)", R"("mb_":"four")"), "/0_abs/dscs_/0/abs/N_/mb_: expected an integer, got \"four\""},
      {mutate(kAbs, R"("numWkSlicesPerDim_": {"mb":2,"out":1})", R"("numWkSlicesPerDim_": {"mb":4,"out":1})"),
       "/0_abs/numWkSlicesPerDim_: product of splits 4 does not equal numCoresUsed_ 2"},
      {mutate(kAbs, R"("scale_":[1,1],"wordLength":2,
       "dataFormat_":"SEN169_FP16")", R"("scale_":[1,3],"wordLength":2,
       "dataFormat_":"SEN169_FP16")"), "/0_abs/dscs_/0/abs/labeledDs_/0/scale_: expected scales 1, -1 or -2, got 3"},
      {mutate(kAbs, R"("dataFormat_":"SEN169_FP16","memOrg_":{"hbm":{"isPresent":1},"lx":{"isPresent":1}}},
      {"ldsIdx_":1)", R"("dataFormat_":"FP13","memOrg_":{"hbm":{"isPresent":1},"lx":{"isPresent":1}}},
      {"ldsIdx_":1)"), "labeledDs_/0/dataFormat_: unknown data format 'FP13'"},
      {mutate(kAbs, R"("outputLabeledDs":["Tensor1-idx1"])", R"("outputLabeledDs":["Tensor1-idx9"])"),
       "computeOp_/0/outputLabeledDs/0: no labeledDs_ entry with ldsIdx_ 9"},
      {mutate(kAbs, R"("exUnit":"sfp")", R"("exUnit":"gpu")"), "computeOp_/0/exUnit: expected 'sfp' or 'pt', got 'gpu'"},
      {mutate(kAbs, R"("1":{"mb":1,"out":0})", R"("1":{"mb":2,"out":0})"), "/0_abs/coreIdToWkSlice_/1/mb: slice 2 outside 0..1"},
      {mutate(kAbs, R"("[1, 0, 0]":"256")", R"("[2, 0, 0]":"256")"), "missing field '[1, 0, 0]'"},
      {mutate(kAbs, R"("dsType_":"OUTPUT","scale_":[1,1],"wordLength":2,
       "dataFormat_":"SEN169_FP16","memOrg_":{"hbm":{"isPresent":1},"lx":{"isPresent":1}}},
      {"ldsIdx_":1)", R"("dsType_":"WEIRD","scale_":[1,1],"wordLength":2,
       "dataFormat_":"SEN169_FP16","memOrg_":{"hbm":{"isPresent":1},"lx":{"isPresent":1}}},
      {"ldsIdx_":1)"), "labeledDs_/0/dsType_: layout class 'WEIRD' is not in primaryDsInfo_"},
      {mutate(kAbs, R"("primaryDsInfo_": {)", R"("primaryDsInfoX": {)"), "/0_abs/dscs_/0/abs: missing field 'primaryDsInfo_'"},
  };
  for (const auto &c : cases) {
    try {
      parseSuperDscText(c.text, "sdsc_0.json");
      ADD_FAILURE() << "no error, expected: " << c.msg;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(c.msg), std::string::npos) << e.what();
    }
  }
}

TEST(SuperDsc, MoreThanEightLabeledDsRejected) {
  SuperDsc s = parseSuperDscText(kAbs, "x.json");
  auto j = writeSuperDsc(s);
  auto &lds = j["0_abs"]["dscs_"][0]["abs"]["labeledDs_"];
  for (int i = 0; i < 8; ++i)
    lds.push_back(lds[0]);
  try {
    parseSuperDsc(j, "x.json");
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("10 labeled data structures; the backend allows at most 8"), std::string::npos);
  }
}

TEST(SuperDsc, BundleMlir) {
  std::string m = writeBundleMlir({"sdsc_0.json", "sdsc_1.json"});
  EXPECT_EQ(parseBundleMlir(m, "bundle.mlir"), (std::vector<std::string>{"sdsc_0.json", "sdsc_1.json"}));
  EXPECT_THROW(parseBundleMlir("module {}", "bundle.mlir"), Error);
}
