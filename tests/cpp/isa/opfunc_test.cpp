// The SuperDSC opFunc table (opfuncs.def).
#include "spyre/isa/opfunc.h"
#include <gtest/gtest.h>
#include <set>
#include <string>

using namespace spyre::isa;

TEST(OpFuncs, EveryRowIsFoundByNameAndNamesAreUnique) {
  std::set<std::string_view> names;
  for (const OpFuncInfo &f : allOpFuncs()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    ASSERT_EQ(findOpFunc(f.name), &f) << f.name;
    EXPECT_GE(f.arity, 1) << f.name;
    // Only pointwise rows name the SFP instruction of their walk.
    EXPECT_EQ(f.sfpOp.has_value(), f.cls == OpClass::Pointwise) << f.name;
  }
  EXPECT_EQ(findOpFunc("frobnicate"), nullptr);
  EXPECT_EQ(findOpFunc(""), nullptr);
}

TEST(OpFuncs, ClassesArityAndUnits) {
  EXPECT_EQ(findOpFunc("add")->cls, OpClass::Pointwise);
  EXPECT_EQ(findOpFunc("add")->arity, 2);
  EXPECT_EQ(*findOpFunc("where3")->sfpOp, Opcode::Sel);
  EXPECT_EQ(findOpFunc("layernormnorm")->arity, 5);
  EXPECT_EQ(findOpFunc("sumnonstick")->cls, OpClass::Reduction);
  EXPECT_EQ(findOpFunc("batchmatmul")->unit, ExUnit::Pt);
  EXPECT_EQ(findOpFunc("fp32todl16")->cls, OpClass::Convert);
  EXPECT_EQ(findOpFunc("swap")->cls, OpClass::Transpose);
  EXPECT_EQ(findOpFunc("reshape")->cls, OpClass::LaneReshape);
  EXPECT_EQ(findOpFunc("ReStickifyOpHBM")->unit, ExUnit::Any);
  EXPECT_STREQ(opClassName(OpClass::LaneReshape), "lane-reshape");
}
