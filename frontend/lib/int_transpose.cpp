// int32 / int64 transposes (after layout propagation, which inserts them as restickifies): the
// PE array moves 16-bit words, so a 32-bit element cannot go through pt.tr whole. The value
// is split into its four bytes in place (x & 0xFF << 8k: at most 8 significant bits, exact in
// DL16), each byte field converted to fp16, transposed (or permuted) through the PE array,
// converted back and the four added (disjoint bit fields: the sum is x's bits, the top field
// carries the sign). Bit-exact for every int32.
#include "kernels/kernels.h"
#include "spyre/frontend/ops.h"

namespace spyre::frontend::detail {

namespace {

/// A transpose, or a permute that moves the stick dim, of a 32-bit integer tensor.
bool movesIntSticks(const Graph &g, const Node &n) {
  if (n.inputs.size() != 1)
    return false;
  const Value &x = g.values[n.inputs[0]];
  if (x.dtype != HostType::I32 && x.dtype != HostType::I64)
    return false;
  if (isOp(n.op, OpId::Transpose))
    return x.shape.size() >= 2;
  if (!isOp(n.op, OpId::Permute) || x.shape.empty())
    return false;
  auto it = n.attrs.find("dims");
  if (it == n.attrs.end() || it->second.values.size() != x.shape.size())
    return false;
  const double last = it->second.values.back();
  return last != static_cast<double>(x.shape.size() - 1) && last != -1;
}

} // namespace

void splitIntTransposes(Graph &g) {
  std::vector<Node> nodes;
  for (const Node &n : g.nodes) {
    if (!movesIntSticks(g, n)) {
      nodes.push_back(n);
      continue;
    }
    const std::string base = g.values[n.output].name;
    const HostType t = g.values[n.output].dtype;
    const std::vector<int64_t> xs = g.values[n.inputs[0]].shape, ys = g.values[n.output].shape;
    int sum = -1;
    for (int k = 0; k < 4; ++k) {
      const std::string tag = "_b" + std::to_string(k);
      // 0xFF << 8k as an int32 (the top byte's mask is negative)
      const double mask = k == 3 ? -16777216.0 : static_cast<double>(0xFFLL << (8 * k));
      const int field = g.addValue(g.freshName(base + tag), xs, t);
      nodes.push_back({"bitwise_and", {n.inputs[0]}, field, {{"scalar", Attr(mask)}}, {}});
      const int half = g.addValue(g.freshName(base + tag + "_h"), xs, HostType::F16);
      nodes.push_back({"to_dtype", {field}, half, {}, {}});
      const int moved = g.addValue(g.freshName(base + tag + "_t"), ys, HostType::F16);
      Node move = n;
      move.inputs = {half};
      move.output = moved;
      move.notes.erase("layout");
      nodes.push_back(move);
      const int back = g.addValue(g.freshName(base + tag + "_i"), ys, t);
      nodes.push_back({"to_dtype", {moved}, back, {}, {}});
      if (sum < 0) {
        sum = back;
        continue;
      }
      const int next = k == 3 ? n.output : g.addValue(g.freshName(base + tag + "_s"), ys, t);
      Node add{"add", {sum, back}, next, {}, {}};
      if (k == 3)
        add.notes = n.notes; // the transposed value's layout note
      nodes.push_back(add);
      sum = next;
    }
  }
  g.nodes = std::move(nodes);
}

} // namespace spyre::frontend::detail
