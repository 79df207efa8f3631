#include "spyre/frontend/graph.h"
#include "spyre/frontend/ops.h"
#include "spyre/isa/error.h"
#include <gtest/gtest.h>

using namespace spyre;
using namespace spyre::frontend;

TEST(GraphText, RoundTrips) {
  std::string text = "graph(%a: f16[67, 256], %b: f16[67, 256]) {\n"
                     "  %add = add(%a, %b, alpha=1) : f16[67, 256]\n"
                     "  %relu = relu(%add) : f16[67, 256]\n"
                     "  %mul = mul(%relu, %b) : f16[67, 256]\n"
                     "  %sum = sum(%mul, dims=[0, -1], keepdim=1) : f16[1, 1]\n"
                     "  return (%mul, %sum)\n"
                     "}\n";
  Graph g = parseGraph(text);
  EXPECT_EQ(g.nodes.size(), 4u);
  EXPECT_EQ(g.nodes[3].attrs.at("dims"), Attr(std::vector<double>{0, -1}));
  EXPECT_EQ(g.nodes[0].attrs.at("alpha").scalar(), 1.0);
  EXPECT_EQ(printGraph(g), text);
  Graph s = parseGraph("graph() {\n  return ()\n}\n");
  EXPECT_TRUE(s.nodes.empty());
}

// Graph text that does not parse (file, line, column and expectation of each message) is a text
// test: tests/lit/graph/parse-errors.test.

// The op table (ops.def) drives the parser and Graph::verify: an op it does not have is
// Unsupported, an operand count outside the op's bounds an Error, both naming the op, the node and
// its line (the parsed text's own line; printGraph's line for a graph built in code).
TEST(GraphOps, ParserRejectsUnknownOpsAndWrongArityWithTheLine) {
  try {
    parseGraph("graph(%a: f16[4]) {\n  %b = relu(%a) : f16[4]\n\n  %c = atan(%b) : f16[4]\n  return (%c)\n}\n",
               "<fx graph>");
    ADD_FAILURE() << "atan accepted";
  } catch (const Unsupported &e) {
    EXPECT_STREQ(e.what(), "Unsupported: <fx graph>:4: op 'atan' (node %c = atan)");
  }
  struct Case {
    const char *text, *msg;
  } cases[] = {
      {"graph(%a: f16[4]) {\n  %b = add(%a, %a, %a) : f16[4]\n  return (%b)\n}\n",
       "<graph>:2: add takes 1 to 2 tensor operand(s), got 3 (node %b = add)"},
      {"graph(%a: f16[4]) {\n  %b = relu(%a, %a) : f16[4]\n  return (%b)\n}\n",
       "<graph>:2: relu takes 1 tensor operand(s), got 2 (node %b = relu)"},
      {"graph(%a: f16[4, 4]) {\n  %b = matmul(%a) : f16[4, 4]\n  return (%b)\n}\n",
       "<graph>:2: matmul takes 2 tensor operand(s), got 1 (node %b = matmul)"},
      {"graph(%a: f16[4]) {\n  %b = full(%a, value=1) : f16[4]\n  return (%b)\n}\n",
       "<graph>:2: full takes 0 tensor operand(s), got 1 (node %b = full)"},
      {"graph() {\n  %b = cat(dim=0) : f16[4]\n  return (%b)\n}\n",
       "<graph>:2: cat takes at least 1 tensor operand(s), got 0 (node %b = cat)"},
      {"graph(%x: f16[2, 64], %s: f32[2, 2], %r: f32[2, 1]) {\n  %y = layernormnorm(%x, %s) : f16[2, 64]\n"
       "  return (%y)\n}\n",
       "<graph>:2: layernormnorm takes 3 to 5 tensor operand(s), got 2 (node %y = layernormnorm)"},
  };
  for (const Case &c : cases) {
    try {
      parseGraph(c.text);
      ADD_FAILURE() << c.text;
    } catch (const Unsupported &e) {
      ADD_FAILURE() << e.what();
    } catch (const Error &e) {
      EXPECT_STREQ(e.what(), c.msg);
    }
  }
}

TEST(GraphOps, VerifyRejectsUnknownOpsAndWrongArityOfBuiltGraphs) {
  Graph g;
  int a = g.addInput("a", {4}, HostType::F16);
  int b = g.addNode("relu", {a}, "b", {4}, HostType::F16);
  g.outputs = {g.addNode("frobnicate", {b}, "c", {4}, HostType::F16)};
  try {
    g.verify();
    ADD_FAILURE() << "frobnicate accepted";
  } catch (const Unsupported &e) {
    EXPECT_STREQ(e.what(), "Unsupported: <graph>:3: op 'frobnicate' (node %c = frobnicate)");
  }
  Graph h;
  int x = h.addInput("x", {4}, HostType::F16);
  h.outputs = {h.addNode("where", {x, x, x, x}, "w", {4}, HostType::F16)};
  try {
    h.verify();
    ADD_FAILURE() << "where of 4 operands accepted";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "<graph>:2: where takes 1 to 3 tensor operand(s), got 4 (node %w = where)");
  }
}

TEST(GraphOps, TableQueries) {
  ASSERT_NE(findOp("div"), nullptr);
  EXPECT_EQ(findOp("div")->opFunc, "realdiv");
  EXPECT_EQ(findOp("div")->cls, OpClass::Pointwise);
  EXPECT_TRUE(findOp("ge")->isElementwise());
  EXPECT_EQ(findOp("ge")->cls, OpClass::Comparison);
  EXPECT_TRUE(isOp("layernormnorm", OpId::LayerNormNorm));
  EXPECT_TRUE(isOpClass("amin", OpClass::Reduction));
  EXPECT_FALSE(isOpClass("cumsum", OpClass::Reduction));
  EXPECT_TRUE(isOpClass("cumsum", OpClass::Scan));
  EXPECT_EQ(findOp("atan"), nullptr);
  EXPECT_TRUE(findOp("slice")->allowsAttr("step"));
  EXPECT_FALSE(findOp("slice")->allowsAttr("ste"));
  EXPECT_FALSE(findOp("transpose")->allowsAttr(""));
  EXPECT_THROW(opInfo("atan"), Unsupported);
}
