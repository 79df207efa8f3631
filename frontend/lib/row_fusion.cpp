// Row fusion: row reductions (sum, mean, amax, amin over the last, stick dim) with the
// elementwise ops around them over the same rows become one row-fused kernel. See passes.h.
#include "fusion.h"
#include "spyre/frontend/lx_planner.h"
#include "spyre/frontend/ops.h"
#include "spyre/frontend/passes.h"
#include "spyre/isa/data_format.h"
#include "spyre/isa/superdsc.h"
#include <algorithm>
#include <set>

namespace spyre::frontend {

namespace {

enum class Role { None, Stick, Reduce, Row };

bool floatType(HostType t) { return t == HostType::F16 || t == HostType::BF16 || t == HostType::F32; }

std::vector<int64_t> rowShape(std::vector<int64_t> s) {
  s.back() = 1;
  return s;
}

/// sum / mean / amax / amin of one float tensor over exactly its last dim, keepdim.
bool rowReduction(const Graph &g, const Node &n) {
  const OpInfo *op = findOp(n.op);
  if (!op || n.inputs.size() != 1 ||
      !(op->id == OpId::Sum || op->id == OpId::Mean || op->id == OpId::Amax || op->id == OpId::Amin))
    return false;
  const Value &in = g.values[n.inputs[0]], &out = g.values[n.output];
  const size_t r = in.shape.size();
  if (r == 0 || in.shape.back() < 2 || in.dtype != out.dtype || !floatType(in.dtype) || out.shape != rowShape(in.shape))
    return false;
  auto it = n.attrs.find("dims");
  if (it == n.attrs.end() || it->second.isRuntime() || it->second.values.size() != 1)
    return false;
  const double d = it->second.values[0];
  return d == static_cast<double>(r - 1) || d == -1.0;
}

std::vector<double> layoutOf(const Node &n) {
  auto it = n.notes.find("layout");
  return it == n.notes.end() ? std::vector<double>() : it->second.values;
}

struct RowGroup {
  std::vector<int> members;   ///< node indices, in graph order
  std::vector<int64_t> shape; ///< the rows' iteration space [.., C]
  HostType dtype = HostType::F16;
  std::vector<double> layout; ///< the stick values' layout note
};

class RowFuser {
public:
  explicit RowFuser(Graph &g) : g_(g) {
    producer_.assign(g.values.size(), -1);
    consumers_.resize(g.values.size());
    for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
      producer_[g.nodes[i].output] = i;
      for (int v : g.nodes[i].inputs)
        consumers_[v].push_back(i);
    }
    graphOutputs_.insert(g.outputs.begin(), g.outputs.end());
    role_.assign(g.nodes.size(), Role::None);
    groupOf_.assign(g.nodes.size(), -1);
  }
  int run();

private:
  bool rowValueOf(const std::set<int> &members, int v) const {
    const int p = producer_[v];
    return p >= 0 && members.count(p) && (role_[p] == Role::Reduce || role_[p] == Role::Row);
  }
  Role roleIn(const RowGroup &G, const std::set<int> &members, int i) const;
  bool canJoin(const RowGroup &G, std::vector<int> members, int i, Role r) const;
  bool valid(const RowGroup &G) const;

  Graph &g_;
  std::vector<int> producer_;
  std::vector<std::vector<int>> consumers_;
  std::set<int> graphOutputs_;
  std::vector<Role> role_;
  std::vector<int> groupOf_;
  std::vector<RowGroup> groups_;
};

/// What node i would be in group G (members: G's nodes): a stick op over G's rows, a row
/// reduction of them, a row op on G's row values only, or none.
Role RowFuser::roleIn(const RowGroup &G, const std::set<int> &members, int i) const {
  const Node &n = g_.nodes[i];
  const int64_t eps = elemsPerStick(deviceFormatFor(G.dtype));
  if (rowReduction(g_, n)) {
    const Value &in = g_.values[n.inputs[0]];
    return in.shape == G.shape && elemsPerStick(deviceFormatFor(in.dtype)) == eps ? Role::Reduce : Role::None;
  }
  if (!fusibleElementwise(g_, n))
    return Role::None;
  const Value &out = g_.values[n.output];
  if (out.shape == G.shape && elemsPerStick(deviceFormatFor(out.dtype)) == eps &&
      (G.layout.empty() || layoutOf(n) == G.layout))
    return Role::Stick;
  if (out.shape == rowShape(G.shape) && !n.inputs.empty()) {
    for (int v : n.inputs)
      if (!rowValueOf(members, v))
        return Role::None;
    return Role::Row;
  }
  return Role::None;
}

/// Would G's members with node i added be one legal kernel so far? It runs at i (its last
/// member), so no other node before i may read a value of the group; its external inputs plus
/// outputs fit the kernel's segments, its constants and inputs leave registers for the walk,
/// and one row of every tensor it stages fits well inside LX (the rest of LX for the graph's
/// LX-resident tensors and the blocks around it).
bool RowFuser::canJoin(const RowGroup &G, std::vector<int> members, int i, Role r) const {
  members.push_back(i);
  std::set<int> mset(members.begin(), members.end()), values;
  for (int m : members)
    values.insert(g_.nodes[m].output);
  for (int j = members.front() + 1; j < i; ++j)
    if (!mset.count(j))
      for (int v : g_.nodes[j].inputs)
        if (values.count(v))
          return false;
  std::set<int> ext;
  int outputs = 0, consts = 0;
  for (int m : members) {
    for (int v : g_.nodes[m].inputs)
      if (!values.count(v))
        ext.insert(v);
    consts += constantOperands(g_.nodes[m]);
    const int v = g_.nodes[m].output;
    const Role mr = m == i ? r : role_[m];
    bool outside = graphOutputs_.count(v) > 0;
    for (int c : consumers_[v])
      outside = outside || !mset.count(c);
    outputs += outside && mr == Role::Stick ? 1 : 0;
  }
  const int tensors = static_cast<int>(ext.size()) + outputs;
  const int64_t eps = elemsPerStick(deviceFormatFor(G.dtype));
  const int64_t rowBytes = (G.shape.back() + eps - 1) / eps * kStickBytes;
  return tensors <= isa::kMaxSegments && static_cast<int>(ext.size()) + consts <= 10 &&
         tensors * rowBytes <= kLxUsableBytes / 4;
}

/// A finished group: a reduction among at least two members, and its row values (one per row)
/// read only inside it (the kernel stores full-width values only).
bool RowFuser::valid(const RowGroup &G) const {
  if (G.members.size() < 2)
    return false;
  std::set<int> mset(G.members.begin(), G.members.end());
  bool reduces = false;
  for (int m : G.members) {
    if (role_[m] == Role::Stick)
      continue;
    reduces = reduces || role_[m] == Role::Reduce;
    const int v = g_.nodes[m].output;
    if (graphOutputs_.count(v))
      return false;
    for (int c : consumers_[v])
      if (!mset.count(c))
        return false;
  }
  return reduces;
}

int RowFuser::run() {
  const int numNodes = static_cast<int>(g_.nodes.size());
  for (int i = 0; i < numNodes; ++i) {
    const Node &n = g_.nodes[i];
    if (n.notes.count("fused"))
      continue;
    std::vector<int> candidates;
    for (int v : n.inputs) {
      const int p = producer_[v];
      if (p >= 0 && groupOf_[p] >= 0 &&
          std::find(candidates.begin(), candidates.end(), groupOf_[p]) == candidates.end())
        candidates.push_back(groupOf_[p]);
    }
    // All operand groups at once (their rows must agree), else the first n may join.
    auto tryJoin = [&](const std::vector<int> &gs) {
      RowGroup all = groups_[gs[0]];
      all.members.clear();
      for (int c : gs) {
        const RowGroup &G = groups_[c];
        if (G.shape != all.shape || G.dtype != all.dtype ||
            (!G.layout.empty() && !all.layout.empty() && G.layout != all.layout))
          return false;
        if (all.layout.empty())
          all.layout = G.layout;
        all.members.insert(all.members.end(), G.members.begin(), G.members.end());
      }
      std::sort(all.members.begin(), all.members.end());
      std::set<int> mset(all.members.begin(), all.members.end());
      const Role r = roleIn(all, mset, i);
      if (r == Role::None || !canJoin(all, all.members, i, r))
        return false;
      const int into = *std::min_element(gs.begin(), gs.end());
      for (int c : gs)
        if (c != into)
          groups_[c].members.clear();
      all.members.push_back(i);
      if (r == Role::Stick && all.layout.empty())
        all.layout = layoutOf(n);
      for (int m : all.members)
        groupOf_[m] = into;
      role_[i] = r;
      groups_[into] = std::move(all);
      return true;
    };
    bool joined = candidates.size() > 1 && tryJoin(candidates);
    for (size_t k = 0; !joined && k < candidates.size(); ++k)
      joined = tryJoin({candidates[k]});
    if (joined)
      continue;
    // A new group: a row reduction, or an elementwise op that may feed one (x * x of RMSNorm).
    RowGroup G;
    if (rowReduction(g_, n)) {
      G.shape = g_.values[n.inputs[0]].shape;
      role_[i] = Role::Reduce;
    } else if (fusibleElementwise(g_, n) && g_.values[n.output].shape.back() > 1 &&
               floatType(g_.values[n.output].dtype)) {
      G.shape = g_.values[n.output].shape;
      G.layout = layoutOf(n);
      role_[i] = Role::Stick;
    } else {
      continue;
    }
    G.dtype = g_.values[n.output].dtype;
    G.members = {i};
    groupOf_[i] = static_cast<int>(groups_.size());
    groups_.push_back(std::move(G));
  }
  int numbered = firstFreeGroup(g_), made = 0;
  for (const RowGroup &G : groups_) {
    if (!valid(G))
      continue;
    for (int m : G.members)
      g_.nodes[m].notes["fused"] = Attr(static_cast<double>(numbered));
    ++numbered;
    ++made;
  }
  return made;
}

/// torch-spyre's layer norm, exx2(x) -> layernormscale -> layernormnorm(x, ..): one group when
/// its statistics are read only by the triple (the kernel stores only the normalised rows).
int fuseLayerNorms(Graph &g) {
  std::vector<int> producer(g.values.size(), -1);
  std::vector<std::vector<int>> consumers(g.values.size());
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    producer[g.nodes[i].output] = i;
    for (int v : g.nodes[i].inputs)
      consumers[v].push_back(i);
  }
  std::set<int> outputs(g.outputs.begin(), g.outputs.end());
  auto readOnlyBy = [&](int v, std::set<int> by) {
    if (outputs.count(v))
      return false;
    for (int c : consumers[v])
      if (!by.count(c))
        return false;
    return true;
  };
  int numbered = firstFreeGroup(g), made = 0;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const Node &n = g.nodes[i];
    if (!isOp(n.op, OpId::LayerNormNorm) || n.inputs.size() < 3 || n.notes.count("fused"))
      continue;
    const int e = producer[n.inputs[1]], sc = producer[n.inputs[2]];
    if (e < 0 || sc < 0 || !isOp(g.nodes[e].op, OpId::Exx2) || !isOp(g.nodes[sc].op, OpId::LayerNormScale) ||
        g.nodes[e].notes.count("fused") || g.nodes[sc].notes.count("fused") || g.nodes[e].inputs.size() != 1 ||
        g.nodes[e].inputs[0] != n.inputs[0] || g.nodes[sc].inputs.size() != 1 || g.nodes[sc].inputs[0] != n.inputs[1] ||
        !readOnlyBy(n.inputs[1], {sc, i}) || !readOnlyBy(n.inputs[2], {i}) || !floatType(g.values[n.output].dtype))
      continue;
    for (int m : {e, sc, i})
      g.nodes[m].notes["fused"] = Attr(static_cast<double>(numbered));
    ++numbered;
    ++made;
  }
  return made;
}

} // namespace

int fuseRows(Graph &g) { return fuseLayerNorms(g) + RowFuser(g).run(); }

} // namespace spyre::frontend
