// Rank reduction (decompose.cpp's helper): the kernel builders take at most 4 dims, so an op on
// more (GPT-J's rotary `stack(.., dim=-1)`, grouped-query attention's `x[:, :, None].expand`,
// a rank-5 reduction or permute) runs on fewer dims between reshapes.
//
// The generic stick layout of a shape [d0, d1, .., d(k-2), L] is device dims [d1 .. d(k-2),
// ceil(L / eps), d0]: merging adjacent middle dims (1 .. k-2) or dropping a unit middle dim
// keeps every byte where it is, so those reshapes are zero-copy aliases. The reduction merges
// middle dims first and touches dim 0 only when that is not enough (then the reshapes are
// stick reorders). The last (stick) dim is never merged: that would move lanes.
#include "rank_reduction.h"
#include "kernels/kernels.h"
#include "spyre/frontend/ops.h"
#include <algorithm>

namespace spyre::frontend::detail {

namespace {

constexpr size_t kMaxRank = 4;

int64_t product(const std::vector<int64_t> &s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d)
    p *= s[d];
  return p;
}

/// A frame: the op's dims (the output's, or the input's for a reduction) and every operand's
/// shape over them (left-padded with 1s where an operand has fewer dims: broadcasting).
/// `pinned` dims keep a group of their own (a cat/slice/scan dim, a matmul's or transpose's
/// last two dims).
struct Frame {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> operands; // the op's inputs, then its output
  std::vector<bool> pinned;
};

/// Groups of adjacent frame dims (outer -> inner) with at most kMaxRank groups, or empty when
/// there are none. Two groups merge when neither is pinned, neither is the stick dim, and every
/// operand reads both alike (both broadcast or both whole).
std::vector<std::vector<size_t>> groupDims(const Frame &f) {
  const size_t r = f.dims.size();
  auto alike = [&](size_t a, size_t b) {
    for (const auto &s : f.operands)
      if ((s[a] != f.dims[a]) != (s[b] != f.dims[b]))
        return false;
    return !f.pinned[a] && !f.pinned[b];
  };
  for (int pass = 0; pass < 2; ++pass) {
    const bool touchDim0 = pass == 1; // the second pass may drop or merge dim 0 (stick reorders)
    std::vector<std::vector<size_t>> groups;
    for (size_t d = 0; d < r; ++d)
      if (f.dims[d] != 1 || d + 1 == r || f.pinned[d] || (d == 0 && !touchDim0))
        groups.push_back({d});
    bool merged = true;
    while (groups.size() > kMaxRank && merged) {
      merged = false;
      for (size_t i = touchDim0 ? 0 : 1; i + 2 < groups.size() && !merged; ++i) { // i + 1 is not the stick dim
        if (alike(groups[i].back(), groups[i + 1].front())) {
          groups[i].insert(groups[i].end(), groups[i + 1].begin(), groups[i + 1].end());
          groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(i) + 1);
          merged = true;
        }
      }
    }
    if (groups.size() <= kMaxRank)
      return groups;
  }
  return {};
}

std::vector<int64_t> groupedShape(const std::vector<std::vector<size_t>> &groups, const std::vector<int64_t> &shape) {
  std::vector<int64_t> rs;
  for (const auto &grp : groups) {
    int64_t p = 1;
    for (size_t d : grp)
      p *= shape[d];
    rs.push_back(p);
  }
  return rs;
}

size_t groupOf(const std::vector<std::vector<size_t>> &groups, size_t d) {
  for (size_t i = 0; i < groups.size(); ++i)
    if (std::find(groups[i].begin(), groups[i].end(), d) != groups[i].end())
      return i;
  return groups.size(); // a dropped unit dim
}

int64_t dimAttr(const Node &n, const char *key, size_t rank) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end() || it->second.isList || it->second.isRuntime())
    return -1;
  auto d = static_cast<int64_t>(it->second.scalar());
  d = d < 0 ? d + static_cast<int64_t>(rank) : d;
  return d >= 0 && d < static_cast<int64_t>(rank) ? d : -1;
}

/// The frame of node n, or false when its class has no rank reduction here.
bool frameOf(const Graph &g, const Node &n, Frame &f, std::vector<bool> &reduced) {
  const OpInfo *op = findOp(n.op);
  if (!op)
    return false;
  const std::vector<int64_t> &os = g.values[n.output].shape;
  auto pad = [](std::vector<int64_t> s, size_t r) {
    s.insert(s.begin(), r - std::min(r, s.size()), 1);
    return s;
  };
  switch (op->cls) {
  case OpClass::Pointwise:
  case OpClass::Comparison:
  case OpClass::Convert:
  case OpClass::Full:
    f.dims = os;
    f.pinned.assign(os.size(), false);
    for (int in : n.inputs) {
      if (g.values[in].shape.size() > os.size())
        return false;
      f.operands.push_back(pad(g.values[in].shape, os.size()));
    }
    break;
  case OpClass::Cat:
  case OpClass::Slice:
  case OpClass::Scan: {
    f.dims = op->cls == OpClass::Cat ? os : g.values.at(n.inputs.at(0)).shape;
    f.pinned.assign(f.dims.size(), false);
    const int64_t d = dimAttr(n, "dim", f.dims.size());
    if (d < 0)
      return false;
    f.pinned[static_cast<size_t>(d)] = true;
    for (int in : n.inputs) {
      if (g.values[in].shape.size() != f.dims.size())
        return false;
      f.operands.push_back(g.values[in].shape);
    }
    break;
  }
  case OpClass::Transpose:
  case OpClass::Matmul: {
    f.dims = os;
    if (os.size() < 3)
      return false;
    f.pinned.assign(os.size(), false);
    f.pinned[os.size() - 2] = f.pinned[os.size() - 1] = true;
    for (int in : n.inputs) {
      if (g.values[in].shape.size() != os.size()) // a matmul's 2-d weight stays as it is
        f.operands.push_back(std::vector<int64_t>(os.size(), 1));
      else
        f.operands.push_back(g.values[in].shape);
    }
    break;
  }
  case OpClass::Reduction: {
    f.dims = g.values.at(n.inputs.at(0)).shape;
    f.pinned.assign(f.dims.size(), false);
    f.operands.push_back(f.dims);
    reduced.assign(f.dims.size(), false);
    auto it = n.attrs.find("dims");
    if (it == n.attrs.end() || it->second.values.empty())
      reduced.assign(f.dims.size(), true);
    else
      for (double v : it->second.values) {
        auto d = static_cast<int64_t>(v);
        d = d < 0 ? d + static_cast<int64_t>(f.dims.size()) : d;
        if (d < 0 || d >= static_cast<int64_t>(f.dims.size()))
          return false;
        reduced[static_cast<size_t>(d)] = true;
      }
    std::vector<int64_t> keep = f.dims;
    for (size_t d = 0; d < keep.size(); ++d)
      if (reduced[d])
        keep[d] = 1;
    if (product(keep, 0, keep.size()) != product(os, 0, os.size()))
      return false;
    f.operands.push_back(keep); // the output, with the reduced dims kept as 1
    return true;
  }
  default: return false;
  }
  if (f.operands.size() == n.inputs.size())
    f.operands.push_back(os.size() == f.dims.size() ? os : pad(os, f.dims.size()));
  return true;
}

/// A permute on more than 4 dims: unit dims (not the input's last) are dropped, then input dims
/// that stay adjacent and in order in the output merge (never the input's or the output's last
/// dim); it runs on the reduced shapes between reshapes (MultiheadAttention's packed projection
/// `unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2)`).
bool reducePermuteRank(Graph &g, const Node &n, std::vector<Node> &out) {
  const std::vector<int64_t> xs = g.values.at(n.inputs.at(0)).shape;
  const size_t r = xs.size();
  auto it = n.attrs.find("dims");
  if (it == n.attrs.end() || it->second.values.size() != r)
    return false;
  std::vector<size_t> perm; // output position -> input dim
  for (double pd : it->second.values) {
    const auto d = static_cast<size_t>(pd < 0 ? pd + static_cast<double>(r) : pd);
    if (d >= r)
      return false;
    perm.push_back(d);
  }
  // Input dims kept, in output order; then runs of consecutive input dims merged greedily:
  // runs[i] and runs[i + 1] when their input dims follow each other, runs[i + 1] holds neither
  // the input's last dim nor the output's last.
  std::vector<std::vector<size_t>> runs;
  for (size_t d : perm)
    if (xs[d] != 1 || d + 1 == r)
      runs.push_back({d});
  bool merged = true;
  while (runs.size() > kMaxRank && merged) {
    merged = false;
    for (size_t i = 0; i + 2 < runs.size() && !merged; ++i)
      if (runs[i].back() + 1 == runs[i + 1].front() && runs[i + 1].back() + 1 != r) {
        runs[i].insert(runs[i].end(), runs[i + 1].begin(), runs[i + 1].end());
        runs.erase(runs.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        merged = true;
      }
  }
  if (runs.size() > kMaxRank)
    return false;
  // The reduced input: runs in input order.
  std::vector<size_t> order(runs.size());
  for (size_t i = 0; i < runs.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return runs[a].front() < runs[b].front(); });
  std::vector<int64_t> rxs, ros;
  std::vector<double> rperm(runs.size());
  std::vector<size_t> rankOfRun(runs.size());
  for (size_t k = 0; k < order.size(); ++k) {
    rankOfRun[order[k]] = k;
    int64_t p = 1;
    for (size_t d : runs[order[k]])
      p *= xs[d];
    rxs.push_back(p);
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    rperm[i] = static_cast<double>(rankOfRun[i]);
    ros.push_back(rxs[rankOfRun[i]]);
  }
  const std::string base = g.values[n.output].name;
  const HostType t = g.values[n.output].dtype;
  int in = g.addValue(g.freshName(base + "_in"), rxs, t);
  out.push_back({"reshape", {n.inputs[0]}, in, {}, {}});
  int p = g.addValue(g.freshName(base + "_r"), ros, t);
  out.push_back({"permute", {in}, p, {{"dims", Attr(rperm)}}, {}});
  out.push_back({"reshape", {p}, n.output, {}, {}});
  return true;
}

} // namespace

namespace {

/// When no grouping of n's dims fits (broadcasts or reduced dims alternating with whole ones,
/// as `a * b[None, :, None]` or `mean(x, (1, 3))` of rank 5): an elementwise op's broadcast
/// operands are materialised one dim at a time (an expand along one dim always fits) until the
/// op's dims group; a reduction over several dims reduces one dim at a time (keepdim; sum, mean,
/// amax and amin of parts are those of the whole). Each step is rank-reduced in turn.
bool splitRank(Graph &g, const Node &n, const Frame &f, const std::vector<bool> &reduced, std::vector<Node> &out) {
  const OpInfo *op = findOp(n.op);
  const std::string base = g.values[n.output].name;
  if (op && op->cls == OpClass::Reduction && std::count(reduced.begin(), reduced.end(), true) > 1) {
    int cur = n.inputs[0];
    std::vector<int64_t> shape = f.dims;
    const HostType t = g.values[n.output].dtype;
    for (size_t d = reduced.size(); d-- > 0;) {
      if (!reduced[d])
        continue;
      shape[d] = 1;
      Node step = n;
      step.inputs = {cur};
      step.output = g.addValue(g.freshName(base + "_d" + std::to_string(d)), shape, t);
      step.attrs["dims"] = Attr(std::vector<double>{static_cast<double>(d)});
      step.attrs["keepdim"] = Attr(1.0);
      if (!reduceRank(g, step, out))
        out.push_back(step);
      cur = step.output;
    }
    out.push_back({"reshape", {cur}, n.output, {}, {}});
    return true;
  }
  if (!op || !op->isElementwise() || n.inputs.empty())
    return false;
  Node m = n;
  Frame fm = f;
  std::vector<Node> expands;
  bool fits = false;
  // Middle dims first: their reshapes stay zero-copy; then dim 0, then the stick dim.
  const size_t r = f.dims.size();
  std::vector<size_t> dimOrder;
  for (size_t d = 1; d + 1 < r; ++d)
    dimOrder.push_back(d);
  dimOrder.push_back(0);
  dimOrder.push_back(r - 1);
  for (size_t k = 0; k < n.inputs.size() && !fits; ++k)
    for (size_t d : dimOrder) {
      if (fits)
        break;
      if (fm.operands[k][d] == f.dims[d])
        continue;
      fm.operands[k][d] = f.dims[d];
      const HostType t = g.values[m.inputs[k]].dtype;
      const int v = g.addValue(g.freshName(base + "_x"), fm.operands[k], t);
      expands.push_back({"expand", {m.inputs[k]}, v, {}, {}});
      m.inputs[k] = v;
      fits = !groupDims(fm).empty();
    }
  if (!fits)
    return false;
  for (const Node &e : expands)
    if (!reduceRank(g, e, out))
      out.push_back(e);
  if (!reduceRank(g, m, out))
    out.push_back(m);
  return true;
}

} // namespace

bool reduceRank(Graph &g, const Node &n, std::vector<Node> &out) {
  size_t rank = g.values[n.output].shape.size();
  for (int in : n.inputs)
    rank = std::max(rank, g.values[in].shape.size());
  if (rank <= kMaxRank)
    return false;
  if (isOp(n.op, OpId::Permute) && n.inputs.size() == 1)
    return reducePermuteRank(g, n, out);
  Frame f;
  std::vector<bool> reduced;
  if (!frameOf(g, n, f, reduced))
    return false;
  const std::vector<std::vector<size_t>> groups = groupDims(f);
  if (groups.empty())
    return splitRank(g, n, f, reduced, out);
  std::vector<double> reducedGroups;
  for (size_t i = 0; i < groups.size() && !reduced.empty(); ++i)
    if (reduced[groups[i][0]])
      reducedGroups.push_back(static_cast<double>(i));
  if (!reduced.empty() && reducedGroups.empty())
    return false; // only unit dims reduced (dims=[] would mean every dim)
  const std::string base = g.values[n.output].name;
  Node op = n;
  const bool matmul = isOp(n.op, OpId::Matmul);
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    int &in = op.inputs[k];
    const Value &v = g.values[in];
    if (matmul && v.shape.size() == 2)
      continue; // a 2-d weight
    const std::vector<int64_t> rs = groupedShape(groups, f.operands[k]);
    if (rs == v.shape)
      continue;
    const HostType it = v.dtype;
    int nv = g.addValue(g.freshName(base + "_in"), rs, it);
    out.push_back({"reshape", {in}, nv, {}, {}});
    in = nv;
  }
  const std::vector<int64_t> ros = groupedShape(groups, f.operands.back());
  op.output = g.addValue(g.freshName(base + "_r"), ros, g.values[n.output].dtype);
  if (auto it = op.attrs.find("dim"); it != op.attrs.end() && !it->second.isList)
    it->second = Attr(static_cast<double>(groupOf(groups, static_cast<size_t>(dimAttr(n, "dim", f.dims.size())))));
  if (!reduced.empty()) {
    op.attrs["dims"] = Attr(reducedGroups);
    op.attrs["keepdim"] = Attr(1.0);
  }
  out.push_back(op);
  out.push_back({"reshape", {op.output}, n.output, {}, {}});
  return true;
}

} // namespace spyre::frontend::detail
