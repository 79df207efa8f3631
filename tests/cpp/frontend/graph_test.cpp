#include "spyre/frontend/graph.h"
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
