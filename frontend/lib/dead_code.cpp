// Dead code elimination (torch-spyre's deadcode_elimination): every op of the graph IR is pure,
// so a node is live exactly when some graph output depends on its value. Also the returned-copies
// pass and eraseNodes.
#include "spyre/frontend/ops.h"
#include "spyre/frontend/passes.h"
#include <algorithm>
#include <set>

namespace spyre::frontend {

void eliminateDeadCode(Graph &g) {
  std::set<int> live(g.outputs.begin(), g.outputs.end());
  std::vector<bool> dead(g.nodes.size(), true);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    if (!live.count(g.nodes[i].output))
      continue;
    dead[i] = false;
    live.insert(g.nodes[i].inputs.begin(), g.nodes[i].inputs.end());
  }
  eraseNodes(g, dead);
}

int dropReturnedCopies(Graph &g) {
  std::vector<int> producer(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    producer[g.nodes[i].output] = static_cast<int>(i);
  auto isView = [](const OpInfo *op) {
    return op && (op->cls == OpClass::Reshape || op->cls == OpClass::Transpose || op->cls == OpClass::Permute ||
                  op->cls == OpClass::Slice);
  };
  // Returned buffers: the outputs and every value a returned view shares its buffer with.
  std::set<int> returned(g.outputs.begin(), g.outputs.end());
  for (int o : g.outputs)
    for (int v = o; producer[v] >= 0;) {
      const Node &p = g.nodes[producer[v]];
      if (!isView(findOp(p.op)) || p.inputs.empty())
        break;
      v = p.inputs[0];
      returned.insert(v);
    }
  std::vector<bool> drop(g.nodes.size(), false);
  int dropped = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node &c = g.nodes[i];
    if (!isOp(c.op, OpId::Clone) || c.inputs.size() != 1 || !c.attrs.empty() ||
        std::count(g.outputs.begin(), g.outputs.end(), c.output) != 1)
      continue;
    const int v = c.inputs[0], p = producer[v];
    const OpInfo *op = p < 0 ? nullptr : findOp(g.nodes[p].op);
    if (!op || returned.count(v) || isOp(g.nodes[p].op, OpId::Clone) || g.values[v].shape != g.values[c.output].shape ||
        g.values[v].dtype != g.values[c.output].dtype ||
        !(op->cls == OpClass::Pointwise || op->cls == OpClass::Comparison || op->cls == OpClass::Reduction ||
          op->cls == OpClass::Matmul || op->cls == OpClass::Convert))
      continue;
    std::replace(g.outputs.begin(), g.outputs.end(), c.output, v);
    returned.insert(v);
    drop[i] = true;
    ++dropped;
  }
  if (dropped > 0)
    eraseNodes(g, drop);
  return dropped;
}

void eraseNodes(Graph &g, const std::vector<bool> &erase) {
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!erase[i])
      kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
}

} // namespace spyre::frontend
