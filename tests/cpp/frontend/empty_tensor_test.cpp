// Zero-size tensors: compileGraph rejects a graph with an empty value (graph input or node
// result) with an Unsupported naming the value, its type and its line, before any pass divides
// by a dimension; no graph with a zero-size dimension reaches a kernel builder.
#include "spyre/frontend/compiler.h"
#include "spyre/isa/error.h"
#include <gtest/gtest.h>

using namespace spyre;

namespace {
std::string compileError(const std::string &text) {
  try {
    (void)frontend::compileGraph(frontend::parseGraph(text), {32, ""});
  } catch (const Unsupported &e) {
    return e.what();
  }
  return "(compiled)";
}
} // namespace

TEST(EmptyTensors, AGraphInputWithAZeroSizeDimIsUnsupported) {
  // torch.compile(lambda t: t.transpose(0, 1)) on f16[0, 64] once died with SIGFPE here.
  EXPECT_EQ(compileError("graph(%x: f16[0, 64]) {\n"
                         "  %t = transpose(%x) : f16[64, 0]\n"
                         "  return (%t)\n}\n"),
            "Unsupported: empty tensor %x: f16[0, 64] (<graph>:1, graph input): zero-size "
            "dimensions are not compiled");
}

TEST(EmptyTensors, ANodeResultWithAZeroSizeDimIsUnsupported) {
  EXPECT_EQ(compileError("graph(%x: f16[4, 64]) {\n"
                         "  %r = relu(%x) : f16[4, 64]\n"
                         "  %s = slice(%r, dim=0, start=2, end=2) : f16[0, 64]\n"
                         "  return (%s)\n}\n"),
            "Unsupported: empty tensor %s: f16[0, 64] (<graph>:3, node %s = slice): zero-size "
            "dimensions are not compiled");
}

TEST(EmptyTensors, EveryOpClassWithAnEmptyOperandIsUnsupportedNotASignal) {
  const char *graphs[] = {
      "graph(%a: f16[0, 64], %b: f16[0, 64]) {\n  %c = add(%a, %b) : f16[0, 64]\n  return (%c)\n}\n",
      "graph(%a: f16[3, 0, 64]) {\n  %c = sum(%a, dims=[1], keepdim=0) : f16[3, 64]\n  return (%c)\n}\n",
      "graph(%a: f16[8, 0], %b: f16[0, 64]) {\n  %c = matmul(%a, %b) : f16[8, 64]\n  return (%c)\n}\n",
      "graph(%a: f16[0, 64]) {\n  %c = reshape(%a) : f16[0, 4, 16]\n  return (%c)\n}\n",
      "graph(%a: f16[0, 64], %b: f16[2, 64]) {\n  %c = cat(%a, %b, dim=0) : f16[2, 64]\n  return (%c)\n}\n",
      "graph(%a: f16[0, 64]) {\n  %c = to_dtype(%a) : f32[0, 64]\n  return (%c)\n}\n",
      "graph(%a: f16[2, 0, 64]) {\n  %c = permute(%a, dims=[1, 0, 2]) : f16[0, 2, 64]\n  return (%c)\n}\n",
      "graph() {\n  %c = full(value=1) : f16[0, 64]\n  return (%c)\n}\n",
  };
  for (const char *g : graphs)
    EXPECT_NE(compileError(g).find("zero-size dimensions are not compiled"), std::string::npos) << g;
}
