// Pointwise fusion: connected elementwise nodes over one iteration space become one kernel. See
// passes.h.
#include "fusion.h"
#include "spyre/frontend/ops.h"
#include "spyre/frontend/passes.h"
#include "spyre/isa/data_format.h"
#include "spyre/isa/superdsc.h"
#include <algorithm>
#include <set>

namespace spyre::frontend {

namespace {

struct Group {
  std::vector<int> members; ///< node indices, in graph order
};

} // namespace

bool fusibleElementwise(const Graph &g, const Node &n) {
  const OpInfo *op = findOp(n.op);
  if (!op || !(op->cls == OpClass::Pointwise || op->cls == OpClass::Comparison))
    return false;
  if (op->id == OpId::Clone)
    return false; // a clone aliases its input or is a graph output's copy
  for (const auto &[key, a] : n.attrs)
    if (a.isRuntime() && key != "scalar" && key != "a" && key != "b")
      return false;
  const Value &out = g.values[n.output];
  if (out.shape.empty() || out.dtype == HostType::I64)
    return false;
  // int64 is int32 on the card; a comparison reads it as such, other ops keep int64 apart
  for (int v : n.inputs)
    if (g.values[v].dtype == HostType::I64 && op->cls != OpClass::Comparison)
      return false;
  return true;
}

bool fusibleConversion(const Graph &g, const Node &n) {
  if (!isOp(n.op, OpId::ToDtype) || n.inputs.size() != 1)
    return false;
  const HostType in = g.values[n.inputs[0]].dtype, out = g.values[n.output].dtype;
  return !g.values[n.output].shape.empty() && g.values[n.inputs[0]].shape == g.values[n.output].shape &&
         ((in == HostType::F32 && out == HostType::I32) || (in == HostType::I32 && out == HostType::F32));
}

int constantOperands(const Node &n) {
  int c = 0;
  for (const char *key : {"scalar", "a", "b"})
    c += n.attrs.count(key) ? 1 : 0;
  return c;
}

int firstFreeGroup(const Graph &g) {
  int next = 0;
  for (const Node &n : g.nodes)
    if (auto it = n.notes.find("fused"); it != n.notes.end())
      next = std::max(next, static_cast<int>(it->second.scalar()) + 1);
  return next;
}

int fusePointwise(Graph &g) {
  const int numNodes = static_cast<int>(g.nodes.size());
  std::vector<int> producer(g.values.size(), -1);
  for (int i = 0; i < numNodes; ++i)
    producer[g.nodes[i].output] = i;
  std::vector<std::vector<int>> consumers(g.values.size());
  for (int i = 0; i < numNodes; ++i)
    for (int v : g.nodes[i].inputs)
      consumers[v].push_back(i);
  std::set<int> graphOutputs(g.outputs.begin(), g.outputs.end());

  std::vector<Group> groups;
  std::vector<int> groupOf(numNodes, -1);
  auto sameSpace = [&](const Node &a, const Node &b) {
    const Value &va = g.values[a.output], &vb = g.values[b.output];
    auto layout = [](const Node &n) {
      auto it = n.notes.find("layout");
      return it == n.notes.end() ? std::vector<double>() : it->second.values;
    };
    return va.shape == vb.shape && layout(a) == layout(b) &&
           elemsPerStick(deviceFormatFor(va.dtype)) == elemsPerStick(deviceFormatFor(vb.dtype));
  };
  // Would group G with node i added be one legal kernel? Its kernel runs at i (its last
  // member), so no other node before i may read a value of G; its tensors (external inputs and
  // outputs) must fit the kernel's segments and its values the 16 vector registers.
  auto canJoin = [&](const Group &G, int i) {
    std::set<int> members(G.members.begin(), G.members.end());
    members.insert(i);
    std::set<int> values;
    for (int m : members)
      values.insert(g.nodes[m].output);
    for (int j = G.members.front() + 1; j < i; ++j)
      if (!members.count(j))
        for (int v : g.nodes[j].inputs)
          if (values.count(v))
            return false;
    std::set<int> ext;
    int outputs = 0, consts = 0;
    for (int m : members) {
      for (int v : g.nodes[m].inputs)
        if (!values.count(v))
          ext.insert(v);
      consts += constantOperands(g.nodes[m]);
      const int v = g.nodes[m].output;
      bool outside = graphOutputs.count(v) > 0;
      for (int c : consumers[v])
        outside = outside || !members.count(c);
      outputs += outside ? 1 : 0;
    }
    return static_cast<int>(ext.size()) + outputs <= isa::kMaxSegments &&
           static_cast<int>(ext.size() + members.size()) + consts <= 16;
  };

  for (int i = 0; i < numNodes; ++i) {
    const Node &n = g.nodes[i];
    if (!(fusibleElementwise(g, n) || fusibleConversion(g, n)) || n.notes.count("fused"))
      continue; // not elementwise, or already in a row-fused group (fuseRows)
    // The groups of n's operands in its iteration space: all of them together with n if that
    // is one legal kernel (x1 * cos - x2 * sin: both products' groups meet at the sub), else
    // the first n may join.
    std::vector<int> candidates;
    for (int v : n.inputs) {
      const int p = producer[v];
      if (p >= 0 && groupOf[p] >= 0 && sameSpace(g.nodes[p], n) &&
          std::find(candidates.begin(), candidates.end(), groupOf[p]) == candidates.end())
        candidates.push_back(groupOf[p]);
    }
    int joined = -1;
    if (candidates.size() > 1) {
      Group all;
      for (int c : candidates)
        all.members.insert(all.members.end(), groups[c].members.begin(), groups[c].members.end());
      std::sort(all.members.begin(), all.members.end());
      if (canJoin(all, i)) {
        joined = *std::min_element(candidates.begin(), candidates.end());
        for (int c : candidates)
          if (c != joined) {
            for (int m : groups[c].members)
              groupOf[m] = joined;
            groups[c].members.clear();
          }
        groups[joined] = std::move(all);
      }
    }
    for (size_t k = 0; joined < 0 && k < candidates.size(); ++k)
      if (canJoin(groups[candidates[k]], i))
        joined = candidates[k];
    if (joined < 0) {
      joined = static_cast<int>(groups.size());
      groups.push_back({});
    }
    groups[joined].members.push_back(i);
    groupOf[i] = joined;
  }
  int numbered = firstFreeGroup(g), made = 0;
  for (const Group &G : groups) {
    if (G.members.size() < 2)
      continue;
    for (int m : G.members)
      g.nodes[m].notes["fused"] = Attr(static_cast<double>(numbered));
    ++numbered;
    ++made;
  }
  return made;
}

} // namespace spyre::frontend
