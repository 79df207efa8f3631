// Layout propagation, second half: rewrites the graph in the device shapes of the layouts the
// search chose (layout_propagation.cpp), inserting the restickifies they need.
#include "layout_search.h"
#include "kernels/kernels.h"
#include "spyre/frontend/compiler.h"
#include "spyre/frontend/ops.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <numeric>

namespace spyre::frontend {

namespace layout {

namespace {

std::string mapText(const DimMap &m) {
  std::string t = "[";
  for (size_t i = 0; i < m.size(); ++i)
    t += (i ? ", " : "") + std::to_string(m[i]);
  return t + "]";
}

/// Emits the graph in device shapes for the chosen state, with the restickifies it needs.
class Rewriter {
public:
  Rewriter(const Problem &p, Graph &g) : p_(p), g_(g) {}

  void run(const BeamState &best) {
    BeamState s;
    const std::vector<Node> orig = g_.nodes;
    for (size_t ni = 0; ni < orig.size(); ++ni) {
      const Node &n = orig[ni];
      const NodeLayout l = candidates(p_, s, n).at(best.choices[ni]);
      emit(s, n, l);
      apply(p_, s, n, l, best.choices[ni]);
      g_.values[n.output].shape = deviceShapeOf(p_.host[n.output], l.output);
    }
    for (int &v : g_.outputs)
      if (producedByRelabel(v))
        v = genericOutput(s, v);
    g_.nodes = std::move(nodes_);
  }

private:
  const Problem &p_;
  Graph &g_;
  std::vector<Node> nodes_;
  std::map<std::pair<int, std::vector<int>>, int> converted_; ///< (value, byte key) -> its copy
  std::map<std::pair<int, std::vector<int64_t>>, int> views_; ///< (value, device shape) -> a zero-copy reshape

  static bool isIdentity(const DimMap &m) { return m == identityDimMap(m.size()); }

  bool producedByRelabel(int v) const {
    const int p = p_.g.producer(v);
    return p >= 0 && ruleOf(p_.g, p_.g.nodes[p]) == Rule::Relabel;
  }

  /// A relabel has no kernel of its own, so a graph output it produces needs a copy anyway: the
  /// copy restickifies it to the generic layout (the transpose / permute the host asked for),
  /// under the output's name.
  int genericOutput(const BeamState &s, int v) {
    const int c = operand(s, v, identityDimMap(p_.host[v].size()), "the graph output");
    if (c == v)
      return v;
    const std::string name = g_.values[v].name;
    g_.values[v].name = g_.freshName(name + "_view");
    g_.values[c].name = name;
    return c;
  }

  int addNode(std::string op, int in, const std::string &name, std::vector<int64_t> shape, const DimMap &hostMap,
              int orig) {
    const int v = g_.addValue(g_.freshName(name), std::move(shape), g_.values[in].dtype);
    Node n{std::move(op), {in}, v, {}, {}};
    // The copy's host meaning is the original value's, in another map.
    if (!isIdentity(hostMap))
      n.notes["layout"] = Attr(std::vector<double>(hostMap.begin(), hostMap.end()));
    nodes_.push_back(std::move(n));
    return v;
  }

  /// v (device shape `from`) under device shape `to` with the same bytes: itself or a reshape
  /// that compileGraph aliases.
  int view(int v, int orig, const std::vector<int64_t> &to, const DimMap &hostMap) {
    if (g_.values[v].shape == to)
      return v;
    auto [it, fresh] = views_.try_emplace({v, to}, -1);
    if (!fresh)
      return it->second;
    if (!reshapeKeepsDeviceBytes(g_.values[v].shape, to, p_.eps[orig]))
      throw Error("layout propagation: %" + g_.values[v].name + " viewed as " + mapText(hostMap) +
                  " would move bytes");
    it->second = addNode("reshape", v, g_.values[orig].name + "_v", to, hostMap, orig);
    return it->second;
  }

  /// Original value v, currently in map `cur`, as an operand in map `want`.
  int operand(const BeamState &s, int v, const DimMap &want, const std::string &consumer) {
    const DimMap cur = mapOf(p_, s, v);
    const std::vector<int64_t> wantShape = deviceShapeOf(p_.host[v], want);
    const std::vector<int> key = p_.key(v, want);
    if (key == p_.key(v, cur))
      return view(v, v, wantShape, want);
    auto [it, fresh] = converted_.try_emplace({v, key}, -1);
    if (fresh)
      it->second = restickify(v, cur, want, consumer);
    return view(it->second, v, wantShape, want);
  }

  /// Copies v from map `from` into map `to`: unit dims added where they move no byte, one
  /// transpose / permute of the device dims (note restickify=1), then the target's shape.
  int restickify(int v, DimMap from, const DimMap &to, const std::string &consumer) {
    const Value &val = g_.values[v];
    const std::string what = "%" + val.name + " in layout " + mapText(from) + ", " + consumer + " needs " +
                             mapText(to) + " (" + std::string(dtypeShortName(val.dtype)) + ")";
    const long missing = std::count(to.begin(), to.end(), -1) - std::count(from.begin(), from.end(), -1);
    int cur = v;
    if (missing > 0) {
      from = withUnitDims(from, static_cast<size_t>(missing));
      cur = view(cur, v, deviceShapeOf(p_.host[v], from), from);
    }
    // Target dim i is the source position holding to[i]; spare unit positions go where they
    // move no byte.
    std::vector<int> perm, spare;
    std::vector<bool> used(from.size(), false);
    for (int h : to) {
      size_t pos = 0;
      while (pos < from.size() && (used[pos] || from[pos] != h))
        ++pos;
      if (pos == from.size())
        throw Error("layout propagation: " + what + ": the maps hold different dims");
      used[pos] = true;
      perm.push_back(static_cast<int>(pos));
    }
    for (size_t pos = 0; pos < from.size(); ++pos)
      if (!used[pos])
        spare.push_back(static_cast<int>(pos));
    perm.insert(perm.begin() + (perm.size() >= 2 ? 1 : 0), spare.begin(), spare.end());
    DimMap permuted;
    for (int pos : perm)
      permuted.push_back(from[pos]);
    if (perm.size() > kMaxDeviceRank)
      throw Unsupported("restickify: " + what + "; more than " + std::to_string(kMaxDeviceRank) + " device dims");
    if (laneOf(p_.key(v, from)) != laneOf(p_.key(v, to)) && p_.eps[v] != 64)
      throw Unsupported("restickify: " + what + "; moving the stick dim of a " + std::string(dtypeShortName(val.dtype)) +
                        " tensor goes through the PE array, which is fp16/bf16 only");
    std::vector<int> swapLast(perm.size());
    std::iota(swapLast.begin(), swapLast.end(), 0);
    if (swapLast.size() >= 2)
      std::swap(swapLast[swapLast.size() - 1], swapLast[swapLast.size() - 2]);
    // Swapping the last two dims is the transpose kernel, unless the host asked for a permute.
    const int prod = p_.g.producer(v);
    const bool isTranspose = perm.size() >= 2 && perm == swapLast && (prod < 0 || !isOp(p_.g.nodes[prod].op, OpId::Permute));
    if (perm != std::vector<int>(identityDimMap(perm.size()))) {
      cur = addNode(isTranspose ? "transpose" : "permute", cur, val.name + (isTranspose ? "_t" : "_p"),
                    deviceShapeOf(p_.host[v], permuted), permuted, v);
      if (!isTranspose)
        nodes_.back().attrs["dims"] = Attr(std::vector<double>(perm.begin(), perm.end()));
      nodes_.back().notes["restickify"] = Attr(1.0);
    }
    return cur;
  }

  void emit(const BeamState &s, const Node &orig, const NodeLayout &l) {
    Node n = orig;
    const std::string where = "node %" + g_.values[n.output].name + " = " + n.op;
    const Rule rule = ruleOf(p_.g, orig);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      n.inputs[i] = rule == Rule::Relabel ? n.inputs[i] : operand(s, n.inputs[i], l.inputs[i], where);
    if (rule == Rule::Relabel) {
      n.op = "reshape";
      n.attrs.clear();
      n.notes["relabel"] = Attr(1.0);
    } else if (rule == Rule::Reduction && !(isIdentity(l.inputs[0]) && isIdentity(l.output))) {
      // The reduction in device dims: the positions of the reduced host dims, keepdim shape.
      const auto red = detail::reducedDims(orig, p_.host[orig.inputs[0]].size(), where);
      std::vector<double> dims;
      for (size_t i = 0; i < l.inputs[0].size(); ++i)
        if (l.inputs[0][i] >= 0 && red[l.inputs[0][i]])
          dims.push_back(static_cast<double>(i));
      n.attrs["dims"] = Attr(dims);
      n.attrs["keepdim"] = Attr(1.0);
    }
    if (rule == Rule::Matmul && !isIdentity(l.inputs[1]))
      n.attrs["transb"] = Attr(1.0); // y arrives in device shape [.., N, K]
    if (!isIdentity(l.output))
      n.notes["layout"] = Attr(std::vector<double>(l.output.begin(), l.output.end()));
    nodes_.push_back(std::move(n));
  }
};

} // namespace

} // namespace layout

LayoutSearchResult propagateLayouts(Graph &g, int beamWidth, int maxCores, bool matmulTransB) {
  if (beamWidth < 1)
    throw Error("layout propagation: beam width " + std::to_string(beamWidth) + " (at least 1)");
  const Graph original = g;
  const layout::Problem p(original, maxCores, matmulTransB);
  const layout::BeamState best = layout::search(p, beamWidth);
  layout::Rewriter(p, g).run(best);
  return {best.cost, best.restickifies};
}

} // namespace spyre::frontend
