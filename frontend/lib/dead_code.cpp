// Dead code elimination (torch-spyre's deadcode_elimination): every op of the graph IR is pure,
// so a node is live exactly when some graph output depends on its value.
#include "spyre/frontend/passes.h"
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

void eraseNodes(Graph &g, const std::vector<bool> &erase) {
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!erase[i])
      kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
}

} // namespace spyre::frontend
