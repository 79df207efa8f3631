#include "spyre/isa/error.h"
#include "spyre/isa/superdsc.h"
#include <cmath>
#include <gtest/gtest.h>
#include <limits>

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

TEST(SuperDsc, NonFiniteConstantsRoundTripAsStrings) {
  // JSON has no infinities: constantInfo_ holds them (and NaN) as "inf", "-inf", "nan".
  SuperDsc s = parseSuperDscText(kAbs, "sdsc_0.json");
  s.constants = {{"lo", -std::numeric_limits<double>::infinity()},
                 {"hi", std::numeric_limits<double>::infinity()},
                 {"fill", std::numeric_limits<double>::quiet_NaN()}};
  std::string text = writeSuperDsc(s).dump(2);
  EXPECT_NE(text.find("\"value_\": \"-inf\""), std::string::npos) << text;
  EXPECT_EQ(text.find("null"), std::string::npos) << text;
  SuperDsc t = parseSuperDscText(text, "again.json");
  EXPECT_EQ(t.constants.at("lo"), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(t.constants.at("hi"), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(t.constants.at("fill")));
  // Any other string is an error naming the field.
  std::string bad = mutate(text, "\"-inf\"", "\"-Infinity\"");
  try {
    parseSuperDscText(bad, "g/sdsc_0.json");
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("g/sdsc_0.json: /0_abs/dscs_/0/abs/constantInfo_/"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("expected a number or \"inf\", \"-inf\", \"nan\", got \"-Infinity\""),
              std::string::npos)
        << e.what();
  }
}

TEST(SuperDsc, MalformedInputNamesFileAndJsonPath) {
  struct Case { std::string text, msg; } cases[] = {
      {"{not json", "sdsc_0.json: /: malformed JSON: parse error at line 1, column 3: syntax error while parsing object key"},
      {mutate(kAbs, R"("mb_":4,)", ""), "/0_abs/numWkSlicesPerDim_/mb: dimension is not in N_"},
      {mutate(kAbs, R"("mb_":4)", R"("mb_":"four")"), "/0_abs/dscs_/0/abs/N_/mb_: expected an integer, got \"four\""},
      {mutate(kAbs, R"("numWkSlicesPerDim_": {"mb":2,"out":1})", R"("numWkSlicesPerDim_": {"mb":1,"out":1})"),
       "/0_abs/numWkSlicesPerDim_: product of splits 1 does not equal numCoresUsed_ 2"},
      {mutate(kAbs, R"("numWkSlicesPerDim_": {"mb":2,"out":1})", R"("numWkSlicesPerDim_": {"mb":4,"out":1})"),
       "/0_abs/numWkSlicesPerDim_/mb: expected an integer in 1..2, got 4"},
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
      {mutate(kAbs, R"("[1, 0, 0]":"256")", R"("[2, 0, 0]":"256")"),
       "startAddressCoreCorelet_/data_/[2, 0, 0]: key is not \"[c, 0, 0]\" for a core c in 0..1 (numCoresUsed_ 2)"},
      {mutate(kAbs, R"("[1, 0, 0]":"256")", R"("[0, 0, 0]":"256")"),
       "/0_abs/dscs_/0/abs/scheduleTree_/0/startAddressCoreCorelet_/data_/[0, 0, 0]: malformed JSON: duplicate key '[0, 0, 0]'"},
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

// The scanner accepts what the regex did: whitespace (newlines too) between tokens, other text
// ignored, an incomplete operation skipped.
TEST(SuperDsc, BundleMlirScanner) {
  EXPECT_EQ(parseBundleMlir("x sdscbundle.sdsc_execute(){sdsc_filename=\"a.json\"} "
                            "sdscbundle.sdsc_execute () {sdsc_filename=\"\"} "
                            "sdscbundle.sdsc_execute ( ) {sdsc_filename=\"b.json\" "
                            "sdscbundle.sdsc_execute\n (\n)\n {\n sdsc_filename\n =\n \"c d.json\"\n }",
                            "b.mlir"),
            (std::vector<std::string>{"a.json", "c d.json"}));
}

namespace {
std::string parseError(const std::string &text, const std::string &file = "g2/sdsc_0.json") {
  try {
    parseSuperDscText(text, file);
  } catch (const Error &e) {
    return e.what();
  }
  return "(accepted)";
}
const std::string kLxMem = R"("memOrg_":{"hbm":{"isPresent":1},"lx":{"isPresent":1}}},
      {"ldsIdx_":1)";
} // namespace

// Every integer is read as int64 and range-checked before the model's int fields get it: the
// values below used to wrap to valid ones (4294967322 -> 26, 4294967296 -> 0).
TEST(SuperDsc, IntegersAreRangeCheckedBeforeNarrowing) {
  EXPECT_EQ(parseError(mutate(kAbs, R"("numCoresUsed_": 2,)", R"("numCoresUsed_": 4294967322,)")),
            "g2/sdsc_0.json: /0_abs/numCoresUsed_: expected an integer in 1..32, got 4294967322");
  EXPECT_EQ(parseError(mutate(kAbs, R"({"ldsIdx_":0,"dsName_")", R"({"ldsIdx_":4294967296,"dsName_")")),
            "g2/sdsc_0.json: /0_abs/dscs_/0/abs/labeledDs_/0/ldsIdx_: expected an integer in 0..2147483647, got 4294967296");
  EXPECT_EQ(parseError(mutate(kAbs, R"("mb_":4,)", R"("mb_":"4294967296000000000000",)")),
            "g2/sdsc_0.json: /0_abs/dscs_/0/abs/N_/mb_: expected an integer in 1..1099511627776, got \"4294967296000000000000\"");
  EXPECT_EQ(parseError(mutate(kAbs, R"("mb_":4,)", R"("mb_":"-0x4",)")),
            "g2/sdsc_0.json: /0_abs/dscs_/0/abs/N_/mb_: expected an integer, got \"-0x4\"");
  EXPECT_EQ(parseError(mutate(kAbs, R"("stickSize_":[64])", R"("stickSize_":[-64])")),
            "g2/sdsc_0.json: /0_abs/dscs_/0/abs/primaryDsInfo_/OUTPUT/stickSize_/0: expected an integer in 1..1024, got -64");
}

TEST(SuperDsc, NumberBeyondADoubleNamesFileAndPointer) {
  EXPECT_EQ(parseError(mutate(kAbs, R"("mb_":4,)", R"("mb_":1e999,)")),
            "g2/sdsc_0.json: /0_abs/dscs_/0/abs/N_/mb_: malformed JSON: number overflow parsing '1e999' (a JSON number "
            "must fit a double)");
}

// memOrg_ components count when their isPresent is 1: {"lx": {"isPresent": 0}} used to be an
// LX-resident tensor.
TEST(SuperDsc, MemOrgHonoursIsPresent) {
  auto withMem = [&](const std::string &mem) { return mutate(kAbs, kLxMem, R"("memOrg_":)" + mem + R"(},
      {"ldsIdx_":1)"); };
  EXPECT_FALSE(parseSuperDscText(withMem(R"({"hbm":{"isPresent":1},"lx":{"isPresent":0}})"), "x.json").labeledDs[0].inLx);
  EXPECT_FALSE(parseSuperDscText(withMem(R"({"hbm":{"isPresent":1}})"), "x.json").labeledDs[0].inLx);
  EXPECT_TRUE(parseSuperDscText(withMem(R"({"hbm":{"isPresent":0},"lx":{"isPresent":1}})"), "x.json").labeledDs[0].inLx);
  EXPECT_TRUE(parseSuperDscText(withMem(R"({"lx":{"isPresent":1}})"), "x.json").labeledDs[0].inLx);
  EXPECT_EQ(parseError(withMem(R"({"lx":{"isPresent":0}})")),
            "g2/sdsc_0.json: /0_abs/dscs_/0/abs/labeledDs_/0/memOrg_: neither hbm nor lx has isPresent 1");
  EXPECT_EQ(parseError(withMem(R"({"lx":{}})")), "g2/sdsc_0.json: /0_abs/dscs_/0/abs/labeledDs_/0/memOrg_/lx: missing field 'isPresent'");
  EXPECT_EQ(parseError(withMem(R"({"lx":{"isPresent":1,"size":4}})")),
            "g2/sdsc_0.json: /0_abs/dscs_/0/abs/labeledDs_/0/memOrg_/lx/size: unknown field (expected only isPresent)");
}

TEST(SuperDsc, DuplicatesAreErrors) {
  EXPECT_EQ(parseError(mutate(kAbs, R"({"ldsIdx_":1,"dsName_":"Tensor1")", R"({"ldsIdx_":1,"dsName_":"Tensor0")")),
            "g2/sdsc_0.json: /0_abs/dscs_/0/abs/labeledDs_/1/dsName_: duplicate dsName_ 'Tensor0' (also at "
            "/0_abs/dscs_/0/abs/labeledDs_/0)");
  EXPECT_EQ(parseError(mutate(kAbs, R"("layoutDimOrder_":["mb","out"])", R"("layoutDimOrder_":["mb","mb"])")),
            "g2/sdsc_0.json: /0_abs/dscs_/0/abs/primaryDsInfo_/OUTPUT/layoutDimOrder_: dimension 'mb' is listed twice");
}

// Unknown fields of torch-spyre's schema objects are warnings; the known-ignored ones are silent.
TEST(SuperDsc, UnknownSchemaFieldsAreWarnings) {
  EXPECT_TRUE(parseSuperDscText(kAbs, "x.json").warnings.empty());
  SuperDsc s = parseSuperDscText(
      mutate(mutate(kAbs, R"("exUnit":"sfp")", R"("exUnit":"sfp","newField":[1])"), R"("wordLength":2,)", R"("wordLength":2,"x_":{},)"),
      "d/x.json");
  EXPECT_EQ(s.warnings, (std::vector<std::string>{"d/x.json: /0_abs/dscs_/0/abs/labeledDs_/0/x_: unknown field (ignored)",
                                                  "d/x.json: /0_abs/dscs_/0/abs/computeOp_/0/newField: unknown field (ignored)"}));
  // At most 16, then one line saying so.
  std::string many;
  for (int i = 0; i < 40; ++i)
    many += "\"f" + std::to_string(i) + "\": 0, ";
  SuperDsc m = parseSuperDscText(mutate(kAbs, R"("numCoresUsed_": 2,)", R"("numCoresUsed_": 2, )" + many), "x.json");
  ASSERT_EQ(m.warnings.size(), 17u);
  EXPECT_EQ(m.warnings[15], "x.json: /0_abs/f15: unknown field (ignored)");
  EXPECT_EQ(m.warnings[16], "x.json: further warnings not reported");
}

TEST(SuperDsc, NestingAndSizeAreBounded) {
  EXPECT_EQ(parseError(std::string(100000, '[')).substr(0, 24), "g2/sdsc_0.json: /0/0/0/0");
  EXPECT_NE(parseError(std::string(100000, '[')).find(": malformed JSON: nesting deeper than 64 (the SuperDSC limit)"),
            std::string::npos);
  std::string many = "[";
  for (int i = 0; i < (1 << 20) + 1; ++i)
    many += "0,";
  many.back() = ']';
  EXPECT_EQ(parseError(many), "g2/sdsc_0.json: /1048575: malformed JSON: more than 1048576 values (the SuperDSC limit)");
}
