// Constant dedup and promotion (torch-spyre's dedup_and_promote_constants): identical `full`
// constants (value, dtype, shape) are computed once, and every constant moves to the front so
// its fill kernel runs before the kernels that read it.
#include "spyre/frontend/passes.h"
#include "spyre/frontend/ops.h"
#include <algorithm>
#include <map>
#include <tuple>

namespace spyre::frontend {

void dedupConstants(Graph &g) {
  using Key = std::tuple<double, HostType, std::vector<int64_t>>;
  std::map<Key, int> first; // key -> value of the kept constant
  std::map<int, int> replace;
  std::vector<Node> constants, rest;
  for (Node &n : g.nodes) {
    if (!isOp(n.op, OpId::Full) || !n.inputs.empty()) {
      rest.push_back(std::move(n));
      continue;
    }
    const bool isOutput = std::find(g.outputs.begin(), g.outputs.end(), n.output) != g.outputs.end();
    const Value &v = g.values[n.output];
    auto it = n.attrs.find("value");
    Key key{it == n.attrs.end() ? 0.0 : it->second.scalar(), v.dtype, v.shape};
    auto [pos, fresh] = first.try_emplace(key, n.output);
    if (!fresh && !isOutput && n.attrs.size() <= 1) {
      replace[n.output] = pos->second;
      continue;
    }
    constants.push_back(std::move(n));
  }
  for (Node &n : rest)
    for (int &in : n.inputs)
      if (auto it = replace.find(in); it != replace.end())
        in = it->second;
  g.nodes = std::move(constants);
  for (Node &n : rest)
    g.nodes.push_back(std::move(n));
}

} // namespace spyre::frontend
