// Matmul K padding (torch-spyre's insert_bmm_padding): a K that is not a multiple of the
// 64-element stick is padded with zeros in both operands, so the matmul kernel sees whole
// sticks of K: x joins a zero block along K (cat), y is copied into a zero-filled [Kp, N].
// torch-spyre pads only y and lets codegen widen K over x's padding lanes; here x is padded
// too, because lanes past K in an intermediate x are whatever its producer computed there
// (0 * inf would be NaN).
#include "spyre/frontend/passes.h"
#include "spyre/frontend/ops.h"
#include <map>

namespace spyre::frontend {

void padMatmulK(Graph &g) {
  constexpr int64_t kStick = 64;
  std::vector<Node> nodes;
  std::map<HostType, int> zeroOf; // one zero constant per dtype (constant dedup merges the rest)
  for (const Node &n : g.nodes) {
    // A y sticked on K (transb) is padded by the backend when it transposes the tiles.
    if (!isOp(n.op, OpId::Matmul) || n.inputs.size() != 2 || n.attrs.count("transb")) {
      nodes.push_back(n);
      continue;
    }
    const std::vector<int64_t> sa = g.values.at(n.inputs[0]).shape, sb = g.values.at(n.inputs[1]).shape;
    // Malformed matmuls are left to the matmul builder, which reports them.
    if (sa.size() < 2 || sb.size() < 2 || sa.back() % kStick == 0 || sb[sb.size() - 2] != sa.back()) {
      nodes.push_back(n);
      continue;
    }
    const int64_t Kp = (sa.back() + kStick - 1) / kStick * kStick;
    Node mm = n;
    for (int operand = 0; operand < 2; ++operand) {
      std::vector<int64_t> shape = operand == 0 ? sa : sb;
      const size_t r = shape.size();
      const std::string name = g.values[n.inputs[operand]].name;
      const HostType t = g.values[n.inputs[operand]].dtype;
      int p;
      if (operand == 0) { // x: K is its stick dim, zeros join it like a cat
        shape[r - 1] = Kp - sa.back();
        int z = g.addValue(g.freshName(name + "_kzeros"), shape, t);
        nodes.push_back({"full", {}, z, {{"value", Attr(0.0)}}, {}});
        shape[r - 1] = Kp;
        p = g.addValue(g.freshName(name + "_kpad"), shape, t);
        nodes.push_back({"cat", {n.inputs[0], z}, p, {{"dim", Attr(static_cast<double>(r - 1))}}, {}});
      } else { // y: zero rows below K
        if (!zeroOf.count(t)) {
          int z = g.addValue(g.freshName("kpad_zero"), {}, t);
          nodes.push_back({"full", {}, z, {{"value", Attr(0.0)}}, {}});
          zeroOf[t] = z;
        }
        shape[r - 2] = Kp;
        p = g.addValue(g.freshName(name + "_kpad"), shape, t);
        const Attr origin(std::vector<double>(r, 0.0));
        nodes.push_back({"copy_into", {zeroOf[t], n.inputs[1]}, p, {{"offsets", origin}}, {}});
      }
      mm.inputs[operand] = p;
    }
    nodes.push_back(mm);
  }
  g.nodes = std::move(nodes);
}

} // namespace spyre::frontend
