// Dead code elimination (torch-spyre's deadcode_elimination): every op of the graph IR is pure,
// so a node is live exactly when some graph output depends on its value.
#include "spyre/frontend/passes.h"
#include <set>

namespace spyre::frontend {

void eliminateDeadCode(Graph &g) {
  std::set<int> live(g.outputs.begin(), g.outputs.end());
  std::vector<bool> keep(g.nodes.size(), false);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    if (!live.count(g.nodes[i].output))
      continue;
    keep[i] = true;
    live.insert(g.nodes[i].inputs.begin(), g.nodes[i].inputs.end());
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (keep[i])
      kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
}

} // namespace spyre::frontend
