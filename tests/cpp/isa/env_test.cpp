#include "spyre/isa/env.h"
#include <gtest/gtest.h>

using spyre::Env;

TEST(Env, DefaultsWhenUnsetOrEmpty) {
  Env none;
  EXPECT_TRUE(none.flag("X", true));
  EXPECT_EQ(none.integer("X", 7, 1, 9), 7);
  Env empty = Env::fromMap({{"X", ""}});
  EXPECT_FALSE(empty.flag("X", false));
  EXPECT_EQ(empty.choice("X", "jit", {"jit", "interp"}), "jit");
}

TEST(Env, FlagsAcceptTheDocumentedSpellings) {
  Env e = Env::fromMap({{"A", "ON"}, {"B", "0"}, {"C", "False"}, {"D", "yes"}});
  EXPECT_TRUE(e.flag("A", false));
  EXPECT_FALSE(e.flag("B", true));
  EXPECT_FALSE(e.flag("C", true));
  EXPECT_TRUE(e.flag("D", false));
}

TEST(Env, InvalidValuesNameTheVariableAndTheAcceptedValues) {
  Env e = Env::fromMap({{"LX_PLANNING", "maybe"}, {"SENCORES", "+4"}, {"N", "40"}, {"SPYRE_ENGINE", "gpu"}});
  try {
    e.flag("LX_PLANNING", true);
    FAIL();
  } catch (const spyre::Error &x) {
    EXPECT_STREQ(x.what(), "invalid LX_PLANNING value 'maybe' (expected one of 1, 0, true, false, on, off)");
  }
  try {
    e.integer("SENCORES", 32, 1, 32);
    FAIL();
  } catch (const spyre::Error &x) {
    EXPECT_STREQ(x.what(), "invalid SENCORES value '+4' (expected an integer in 1..32)");
  }
  EXPECT_THROW(e.integer("N", 1, 1, 32), spyre::Error);
  try {
    e.choice("SPYRE_ENGINE", "jit", {"jit", "interp"});
    FAIL();
  } catch (const spyre::Error &x) {
    EXPECT_STREQ(x.what(), "invalid SPYRE_ENGINE value 'gpu' (expected one of jit, interp)");
  }
}

TEST(Env, IntegersInRange) {
  Env e = Env::fromMap({{"N", "12"}, {"M", "-3"}, {"S", " 4"}});
  EXPECT_EQ(e.integer("N", 0, 1, 32), 12);
  EXPECT_EQ(e.integer("M", 0, -5, 5), -3);
  EXPECT_THROW(e.integer("S", 0, 0, 9), spyre::Error);
}
