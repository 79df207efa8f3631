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

TEST(GraphText, ErrorsNamePosition) {
  struct Case { const char *text, *msg; } cases[] = {
      {"graph(%a: f16[4]) {\n  %b = relu(%c) : f16[4]\n  return (%b)\n}\n", "<graph>:2:15: expected a defined value, got '%c'"},
      {"graph(%a: f99[4]) {\n", "<graph>:1:14: expected a dtype"},
      {"graph(%a: f16[4]) {\n  %a = relu(%a) : f16[4]\n", "expected a new value name, got '%a'"},
      {"graph(%a: f16[4]) {\n  return (%a)\n", "expected '}', got end of input"},
      {"graph(%a: f16[-4]) {\n", "expected a non-negative integer dimension"},
  };
  for (auto &c : cases) {
    try {
      parseGraph(c.text);
      ADD_FAILURE() << c.text;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(c.msg), std::string::npos) << e.what();
    }
  }
}
