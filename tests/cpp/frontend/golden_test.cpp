// Golden listings ("process replay"): representative graphs through frontend and backend; the
// printed kernels must match tests/golden/<name>.lst byte for byte. After an intended change,
// regenerate with SPYRE_UPDATE_GOLDEN=1 build/bin/spyre_frontend_tests --gtest_filter='Golden*'
// and review the diff.
#include "spyre/frontend/compiler.h"
#include "spyre/backend/backend.h"
#include "spyre/isa/listing.h"
#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

using namespace spyre;

namespace {

struct GoldenCase {
  const char *name;
  const char *graph;
  int cores;
};

const GoldenCase kCases[] = {
    {"add_relu_mul_67x256",
     "graph(%a: f16[67, 256], %b: f16[67, 256]) {\n  %s = add(%a, %b) : f16[67, 256]\n"
     "  %r = relu(%s) : f16[67, 256]\n  %m = mul(%r, %b) : f16[67, 256]\n  return (%m)\n}\n",
     32},
    {"broadcast_bias_gelu",
     "graph(%x: f16[128, 300], %b: f16[300]) {\n  %y = add(%x, %b) : f16[128, 300]\n"
     "  %g = gelu(%y, approximate=1) : f16[128, 300]\n  return (%g)\n}\n",
     32},
    {"softmax_rows_67x129",
     "graph(%x: f16[67, 129]) {\n  %m = amax(%x, dims=[-1], keepdim=1) : f16[67, 1]\n"
     "  %d = sub(%x, %m) : f16[67, 129]\n  %e = exp(%d) : f16[67, 129]\n"
     "  %s = sum(%e, dims=[-1], keepdim=1) : f16[67, 1]\n  %y = div(%e, %s) : f16[67, 129]\n  return (%y)\n}\n",
     32},
    {"matmul_64x255x129", "graph(%a: f16[64, 255], %w: f16[255, 129]) {\n  %c = matmul(%a, %w) : f16[64, 129]\n  return (%c)\n}\n",
     32},
    {"decode_pv_ksplit", "graph(%p: f16[1, 1024], %v: f16[1024, 128]) {\n  %o = matmul(%p, %v) : f16[1, 128]\n  return (%o)\n}\n",
     8},
    {"upcast_f32", "graph(%x: f16[8, 100]) {\n  %w = to_dtype(%x) : f32[8, 100]\n  return (%w)\n}\n", 4},
    {"layer_norm_64x129",
     "graph(%x: f16[64, 129], %w: f16[129], %b: f16[129]) {\n  %s = exx2(%x) : f32[64, 2]\n"
     "  %r = layernormscale(%s, eps=1e-05) : f32[64, 1]\n  %y = layernormnorm(%x, %s, %r, %w, %b) : f16[64, 129]\n"
     "  return (%y)\n}\n",
     4},
    {"slice_lane_shift_130x200",
     "graph(%x: f16[130, 200]) {\n  %y = slice(%x, dim=1, start=5, end=195) : f16[130, 190]\n  return (%y)\n}\n", 2},
    {"permute_restickify_3x67x129",
     "graph(%x: f16[3, 67, 129]) {\n  %y = permute(%x, dims=[2, 1, 0]) : f16[129, 67, 3]\n  return (%y)\n}\n", 3},
    // Double-buffered staging: pointwise with a broadcast row staged once per sweep, and PT row
    // blocks with a masked last K tile.
    {"double_buffered_mul_512x1024",
     "graph(%x: f16[512, 1024], %w: f16[1024]) {\n  %y = mul(%x, %w) : f16[512, 1024]\n  return (%y)\n}\n", 1},
    {"double_buffered_matmul_256x200x130",
     "graph(%a: f16[256, 200], %w: f16[200, 130]) {\n  %c = matmul(%a, %w) : f16[256, 130]\n  return (%c)\n}\n", 1},
    // A fused matmul (superdsc.md §6.11): the bias staged per N block, add + gelu on each D
    // block in LX between pt.out and the write-back.
    {"matmul_bias_gelu_256x200x130",
     "graph(%a: f16[256, 200], %w: f16[200, 130], %b: f16[130]) {\n  %c = matmul(%a, %w) : f16[256, 130]\n"
     "  %y = add(%c, %b) : f16[256, 130]\n  %g = gelu(%y) : f16[256, 130]\n  return (%g)\n}\n",
     1},
};

std::string readFile(const std::string &p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

} // namespace

TEST(Golden, ListingsOfRepresentativeKernels) {
  bool update = std::getenv("SPYRE_UPDATE_GOLDEN") && std::string(std::getenv("SPYRE_UPDATE_GOLDEN")) == "1";
  for (const auto &c : kCases) {
    frontend::Graph g = frontend::parseGraph(c.graph);
    isa::JobPlan plan = frontend::compileGraph(g, {c.cores, ""});
    std::string text;
    for (const auto &l : plan.launches)
      text += isa::printKernel(backend::compileSuperDsc(l.sdsc)) + "\n";
    std::string path = std::string(SPYRE_TEST_DATA_DIR) + "/golden/" + c.name + ".lst";
    if (update) {
      std::ofstream(path) << text;
      continue;
    }
    std::string golden = readFile(path);
    ASSERT_FALSE(golden.empty()) << "missing golden file " << path << " (run with SPYRE_UPDATE_GOLDEN=1)";
    EXPECT_EQ(text, golden) << c.name << ": generated listing differs from " << path;
  }
}
