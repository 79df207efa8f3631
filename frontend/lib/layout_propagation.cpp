// Layout propagation (torch-spyre's propagate_spyre_tensor_layouts with its restickify-cost
// search, and the restickify insertion that follows it, notes §4.3), run after the
// decompositions and before K padding and work division.
//
// The layout model. A value's device layout is a DimMap: for each dim of a *device shape*, the
// host dim it holds, or -1 for a unit dim the host shape does not have. Its bytes are the generic
// stick layout of the device shape (torch-spyre's SpyreTensorLayout with a dim_order: the last
// entry is in the stick). The identity map is the generic layout of the host shape;
// a permutation p holds the bytes of permute(v, p); a non-keepdim reduction writes the keepdim
// shape of its input, e.g. f16[67, 129].sum(1) -> f16[67] in map [0, -1] (device f16[67, 1], one
// value per stick), which is not the generic layout of f16[67] (two packed sticks).
//
// What each op accepts and produces:
//   pointwise ops (incl. where, clone, expand, to_dtype): any map of the output (a "frame"); each
//     operand in the same frame (its dims where the output's are, broadcast dims as units);
//   reductions: any map of the input; the output keeps the input's order (reduced dims as units);
//   transpose / permute: a relabel of the input's map: zero-copy, no kernel;
//   reshape: its input in the generic layout, or in any order-keeping map whose device shape has
//     the output's bytes (the unsqueeze of a reduction reads the keepdim value directly);
//   matmul: x and the output generic; y generic or with its last two dims swapped, i.e. sticked
//     on K (the matmul then transposes y's tiles in the PE array: attribute transb=1), so
//     `x @ w.t()` reads w as stored (opt-in, CompileOptions::matmulTransB; where the kernel
//     can: fp16/bf16, N a multiple of 64, no K split);
//   everything else (layer norm, data ops): generic only.
// Graph inputs arrive generic; graph outputs keep whatever map they have (their buffer's
// SpyreTensorLayout carries it, so the host sees the right elements).
//
// The choice. A beam search over the nodes in order (width kLayoutBeamWidth, SPYRE_LAYOUT_BEAM):
// a state is the maps chosen so far, the restickifies made and their cost; a node's candidate
// frames are its operands' maps plus the generic one. The cost of a kernel is the sticks it
// reads and writes in the chosen maps (a pointwise op on f16[67] in map [0, -1] touches 67
// sticks, in the generic map 2), a restickify costs the sticks it moves plus a fixed launch
// cost. Ties break on the earlier candidate index, so the result is deterministic.
//
// The rewrite. The graph comes out in device shapes: every value's shape is its device shape
// (so the kernel builders draft generic kernels on it: a kernel in map p is the same kernel on
// permuted shapes), a node whose output map is not the identity notes it (`layout=[..]`, host
// dims per device dim), reductions in a non-generic map write their keepdim device shape, a
// relabel becomes a zero-copy reshape (note `relabel=1`), and where a consumer needs another map
// than its producer gives, a restickify (transpose / permute, note `restickify=1`) is inserted
// once per value and map. Before:
//   %t = transpose(%x) : f16[256, 64]
//   %r = relu(%t) : f16[256, 64]
//   %o = transpose(%r) : f16[64, 256]
// after (no kernel moves a stick):
//   %t = reshape(%x) : f16[64, 256] {layout=[1, 0], relabel=1}
//   %r = relu(%t) : f16[64, 256] {layout=[1, 0]}
//   %o = reshape(%r) : f16[64, 256] {relabel=1}
#include "kernel_draft.h"
#include "spyre/frontend/compiler.h"
#include "spyre/frontend/passes.h"
#include "spyre/frontend/work_division.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <set>

namespace spyre::frontend {

int layoutBeamWidthFromEnv() {
  const char *e = std::getenv("SPYRE_LAYOUT_BEAM");
  if (!e || !*e)
    return kLayoutBeamWidth;
  char *end = nullptr;
  long v = std::strtol(e, &end, 10);
  if (*end != '\0' || v < 1 || v > 4096)
    throw Unsupported(std::string("invalid SPYRE_LAYOUT_BEAM value ") + e + " (1..4096)");
  return static_cast<int>(v);
}

DimMap identityDimMap(size_t rank) {
  DimMap m(rank);
  std::iota(m.begin(), m.end(), 0);
  return m;
}

std::vector<int64_t> deviceShapeOf(const std::vector<int64_t> &host, const DimMap &m) {
  std::vector<int64_t> d;
  for (int h : m)
    d.push_back(h < 0 ? 1 : host[h]);
  return d;
}

DimMap valueDimMap(const Graph &g, int v) {
  const int p = g.producer(v);
  if (p >= 0)
    if (auto it = g.nodes[p].notes.find("layout"); it != g.nodes[p].notes.end())
      return DimMap(it->second.values.begin(), it->second.values.end());
  return identityDimMap(g.values[v].shape.size());
}

std::vector<int64_t> hostShapeOf(const Graph &g, int v) {
  const std::vector<int64_t> &dev = g.values[v].shape;
  const DimMap m = valueDimMap(g, v);
  if (m.size() != dev.size())
    throw Error("%" + g.values[v].name + ": layout note has " + std::to_string(m.size()) + " dims, its shape " +
                std::to_string(dev.size()));
  std::vector<int64_t> host(static_cast<size_t>(std::count_if(m.begin(), m.end(), [](int h) { return h >= 0; })));
  for (size_t i = 0; i < m.size(); ++i)
    if (m[i] >= 0)
      host.at(static_cast<size_t>(m[i])) = dev[i];
  return host;
}

SpyreTensorLayout deviceTensorLayout(const Graph &g, int v) {
  const Value &val = g.values[v];
  const DataFormat fmt = detail::deviceFormat(val.dtype, "%" + val.name);
  if (val.shape.empty())
    return SpyreTensorLayout(val.shape, fmt);
  // The generic layout of the device shape, stepping the host strides of the dims it holds.
  const DimMap m = valueDimMap(g, v);
  const std::vector<int64_t> hostStrides = contiguousStrides(hostShapeOf(g, v));
  std::vector<int64_t> strides;
  std::vector<int64_t> order(m.size());
  std::iota(order.begin(), order.end(), 0);
  for (int h : m)
    strides.push_back(h < 0 ? 1 : hostStrides[h]);
  return SpyreTensorLayout(val.shape, strides, fmt, order);
}

namespace {

/// Cost weights, in sticks (128 B) moved: a restickify moves a stick about as fast as a kernel
/// streams one, and a launch costs about as much as streaming 512 sticks (a few µs).
constexpr double kRestickifyWeight = 1.0;
constexpr double kLaunchCostSticks = 512;
constexpr double kInfeasible = std::numeric_limits<double>::infinity();
/// The kernel builders draft at most rank-4 iteration spaces.
constexpr size_t kMaxDeviceRank = 4;

int64_t elemsPerStickOf(const Value &v) { return v.dtype == HostType::F32 ? 32 : 64; }

int64_t sticks(const std::vector<int64_t> &dev, int64_t eps) {
  if (dev.empty())
    return 1;
  int64_t n = (dev.back() + eps - 1) / eps;
  for (size_t i = 0; i + 1 < dev.size(); ++i)
    n *= dev[i];
  return n;
}

/// What decides where map m puts each element: outer -> inner, the host dims the stick index
/// steps through (a dim's stick tiles as ~dim), then the host dim in the lanes (-1: none). Dims
/// of extent 1 step nothing and are left out, so two maps with the same key hold the same bytes.
std::vector<int> byteKey(const std::vector<int64_t> &host, const DimMap &m, int64_t eps) {
  const std::vector<int64_t> dev = deviceShapeOf(host, m);
  const size_t k = dev.size();
  std::vector<int> key;
  auto digit = [&](size_t pos, bool tile) {
    if ((tile ? (dev[pos] + eps - 1) / eps : dev[pos]) > 1)
      key.push_back(tile ? ~m[pos] : m[pos]);
  };
  for (size_t i = 1; i + 1 < k; ++i)
    digit(i, false);
  if (k >= 1)
    digit(k - 1, true);
  if (k >= 2)
    digit(0, false);
  key.push_back(INT_MIN);
  key.push_back(k >= 1 && dev[k - 1] > 1 ? m[k - 1] : -1);
  return key;
}

int laneOf(const std::vector<int> &key) { return key.back(); }

/// True when the map's non-unit dims keep host order: the device shape's row-major element
/// order is the host's, so a reshape of the device shape means the reshape of the host shape.
bool keepsHostOrder(const std::vector<int64_t> &host, const DimMap &m) {
  int last = -1;
  for (int h : m) {
    if (h < 0 || host[h] == 1)
      continue;
    if (h < last)
      return false;
    last = h;
  }
  return true;
}

/// Where `k` more unit dims go without moving a byte: after the first dim (rank >= 2), or in
/// front of a rank <= 1 map.
DimMap withUnitDims(DimMap m, size_t k) {
  m.insert(m.begin() + (m.size() >= 2 ? 1 : 0), k, -1);
  return m;
}

enum class Rule { Pointwise, Reduction, Relabel, Reshape, Matmul, GenericOnly };

bool isReduction(const std::string &op) { return op == "sum" || op == "mean" || op == "amax" || op == "amin"; }

/// Output dim k of a transpose / permute is input dim perm[k]; empty if the node is malformed
/// (its kernel builder reports it).
std::vector<int> relabelPermutation(const Graph &g, const Node &n) {
  if (n.inputs.size() != 1)
    return {};
  const size_t r = g.values[n.inputs[0]].shape.size();
  std::vector<int> perm(r);
  std::iota(perm.begin(), perm.end(), 0);
  if (n.op == "transpose") {
    if (r < 2 || !n.attrs.empty())
      return {};
    std::swap(perm[r - 1], perm[r - 2]);
  } else {
    auto it = n.attrs.find("dims");
    if (n.attrs.size() != 1 || it == n.attrs.end() || it->second.values.size() != r)
      return {};
    std::vector<bool> seen(r, false);
    for (size_t k = 0; k < r; ++k) {
      double d = it->second.values[k];
      if (d < 0 || d >= static_cast<double>(r) || seen[static_cast<size_t>(d)] || d != static_cast<int>(d))
        return {};
      perm[k] = static_cast<int>(d);
      seen[perm[k]] = true;
    }
  }
  std::vector<int64_t> expect;
  for (int p : perm)
    expect.push_back(g.values[n.inputs[0]].shape[p]);
  if (expect != g.values[n.output].shape || g.values[n.output].dtype != g.values[n.inputs[0]].dtype)
    return {};
  return perm;
}

Rule ruleOf(const Graph &g, const Node &n) {
  if ((detail::isPointwiseOp(n.op) || n.op == "to_dtype") && !n.inputs.empty())
    return Rule::Pointwise;
  if (isReduction(n.op) && n.inputs.size() == 1 && !g.values[n.inputs[0]].shape.empty())
    return Rule::Reduction;
  if ((n.op == "transpose" || n.op == "permute") && !relabelPermutation(g, n).empty())
    return Rule::Relabel;
  if (n.op == "reshape" && n.inputs.size() == 1)
    return Rule::Reshape;
  if (n.op == "matmul" && n.inputs.size() == 2 && n.attrs.empty())
    return Rule::Matmul;
  return Rule::GenericOnly;
}

/// One way to lay out a node: the map each tensor operand must be in, the output's map and the
/// cost of the node's kernel in them.
struct NodeLayout {
  std::vector<DimMap> inputs;
  DimMap output;
  double cost = 0;
};

/// A pointwise operand of rank k in the frame of a rank-r output: its dims where the output's
/// are; dims it lacks are units, except leading ones (right-aligned broadcasting drops them).
DimMap operandMap(const DimMap &frame, size_t k, size_t r) {
  constexpr int kMissing = -2;
  DimMap m;
  for (int f : frame) {
    int d = f < 0 ? -1 : f - static_cast<int>(r - k);
    m.push_back(f >= 0 && d < 0 ? kMissing : d);
  }
  auto first = std::find_if(m.begin(), m.end(), [](int d) { return d != kMissing; });
  m.erase(m.begin(), first);
  std::replace(m.begin(), m.end(), kMissing, -1);
  return m;
}

/// A reduction's output map when its input is in `frame`: reduced dims become units (keepdim
/// keeps them as size-1 host dims), the kept ones are renumbered.
DimMap reducedMap(const DimMap &frame, const std::vector<bool> &red, bool keepdim) {
  DimMap m;
  for (int f : frame) {
    if (f < 0 || (red[f] && !keepdim)) {
      m.push_back(-1);
      continue;
    }
    m.push_back(keepdim ? f : static_cast<int>(std::count(red.begin(), red.begin() + f, false)));
  }
  return m;
}

/// The matmul kernel can read y sticked on K (matmulKernel's transb): fp16/bf16 operands of
/// rank >= 2, N a whole number of sticks, and a work division without a K split.
bool transposedYFits(const Graph &g, const Node &n, int maxCores) {
  const int x = n.inputs[0], y = n.inputs[1];
  const auto &xs = g.values[x].shape, &ys = g.values[y].shape;
  for (int v : {x, y, n.output})
    if (g.values[v].dtype != HostType::F16 && g.values[v].dtype != HostType::BF16)
      return false;
  if (xs.size() < 2 || ys.size() < 2 || xs.size() > 4 || ys[ys.size() - 2] != xs.back() || ys.back() % 64 != 0)
    return false;
  if (ys.size() != 2 && (ys.size() != xs.size() || !std::equal(xs.begin(), xs.end() - 2, ys.begin())))
    return false; // batch broadcasting the matmul builder rejects anyway
  const MatmulProblem mp{std::vector<int64_t>(xs.begin(), xs.end() - 2), ys.size() != 2, xs[xs.size() - 2], ys.back(),
                         xs.back()};
  return matmulWorkDivision(mp, maxCores).back() == 1;
}

/// Graph facts the search reads: host shapes and stick sizes of the original values, and
/// the matmuls (by output value) that may read y sticked on K (decided once per node: the beam
/// asks for every state).
struct Problem {
  const Graph &g;
  std::vector<std::vector<int64_t>> host;
  std::vector<int64_t> eps;
  std::set<int> transposedY;

  Problem(const Graph &graph, int maxCores, bool matmulTransB) : g(graph) {
    for (const Value &v : g.values) {
      host.push_back(v.shape);
      eps.push_back(elemsPerStickOf(v));
    }
    if (matmulTransB)
      for (const Node &n : g.nodes)
        if (ruleOf(g, n) == Rule::Matmul && transposedYFits(g, n, maxCores))
          transposedY.insert(n.output);
  }
  std::vector<int> key(int v, const DimMap &m) const { return byteKey(host[v], m, eps[v]); }
  double sticksOf(int v, const DimMap &m) const {
    return static_cast<double>(sticks(deviceShapeOf(host[v], m), eps[v]));
  }
  /// Cost of restickifying v from map `from` to `to`: both buffers' sticks plus a launch, or
  /// infeasible where the permute kernel cannot (an fp32 lane move, more than 4 dims).
  double conversionCost(int v, const DimMap &from, const DimMap &to) const {
    const size_t units = static_cast<size_t>(std::max<long>(
        0, std::count(to.begin(), to.end(), -1) - std::count(from.begin(), from.end(), -1)));
    if (from.size() + units > kMaxDeviceRank)
      return kInfeasible;
    if (laneOf(key(v, from)) != laneOf(key(v, to)) && eps[v] != 64)
      return kInfeasible;
    return kRestickifyWeight * (sticksOf(v, from) + sticksOf(v, to)) + kLaunchCostSticks;
  }
};

/// y's map when a matmul reads it sticked on K: its last two dims swapped.
DimMap swappedLastTwo(size_t rank) {
  DimMap m = identityDimMap(rank);
  std::swap(m[rank - 1], m[rank - 2]);
  return m;
}

/// A partial assignment: the maps of the values laid out so far (absent: identity), the
/// restickified copies made (value, byte key) and their cost.
struct BeamState {
  std::map<int, DimMap> maps;
  std::set<std::pair<int, std::vector<int>>> converted;
  double cost = 0;
  int restickifies = 0;
  std::vector<int> choices; ///< candidate index per node so far
};

DimMap mapOf(const Problem &p, const BeamState &s, int v) {
  auto it = s.maps.find(v);
  return it != s.maps.end() ? it->second : identityDimMap(p.host[v].size());
}

/// The candidate layouts of node n given the maps of its operands; the first is the generic one.
std::vector<NodeLayout> candidates(const Problem &p, const BeamState &s, const Node &n) {
  const Graph &g = p.g;
  const int out = n.output;
  const size_t r = p.host[out].size();
  std::vector<NodeLayout> c;
  auto allIdentity = [&] {
    NodeLayout l;
    for (int v : n.inputs) {
      l.inputs.push_back(identityDimMap(p.host[v].size()));
      l.cost += p.sticksOf(v, l.inputs.back());
    }
    l.output = identityDimMap(r);
    l.cost += p.sticksOf(out, l.output);
    return l;
  };
  switch (ruleOf(g, n)) {
  case Rule::Pointwise: {
    std::vector<DimMap> frames{identityDimMap(r)};
    for (int v : n.inputs)
      if (p.host[v].size() == r) {
        DimMap f = mapOf(p, s, v);
        if (f.size() <= kMaxDeviceRank && std::find(frames.begin(), frames.end(), f) == frames.end())
          frames.push_back(f);
      }
    for (const DimMap &f : frames) {
      NodeLayout l;
      for (int v : n.inputs) {
        l.inputs.push_back(operandMap(f, p.host[v].size(), r));
        l.cost += p.sticksOf(v, l.inputs.back());
      }
      l.output = f;
      l.cost += p.sticksOf(out, f);
      c.push_back(std::move(l));
    }
    break;
  }
  case Rule::Reduction: {
    const int in = n.inputs[0];
    const auto red = detail::reducedDims(n, p.host[in].size(), "node %" + g.values[out].name + " = " + n.op);
    const bool keepdim = detail::attrOr(n, "keepdim", 0.0) != 0.0;
    std::vector<DimMap> frames{identityDimMap(p.host[in].size())};
    if (DimMap f = mapOf(p, s, in); f != frames[0])
      frames.push_back(f);
    for (const DimMap &f : frames) {
      NodeLayout l;
      l.inputs = {f};
      l.output = reducedMap(f, red, keepdim);
      // From the generic input, a reduction whose output has the generic bytes anyway (not over
      // the stick dim) keeps its host form.
      const DimMap generic = identityDimMap(r);
      if (f == frames[0] && p.key(out, l.output) == p.key(out, generic))
        l.output = generic;
      l.cost = p.sticksOf(in, f) + p.sticksOf(out, l.output);
      c.push_back(std::move(l));
    }
    break;
  }
  case Rule::Relabel: {
    const std::vector<int> perm = relabelPermutation(g, n);
    std::vector<int> outDimOf(perm.size());
    for (size_t k = 0; k < perm.size(); ++k)
      outDimOf[perm[k]] = static_cast<int>(k);
    NodeLayout l;
    l.inputs = {mapOf(p, s, n.inputs[0])};
    for (int h : l.inputs[0])
      l.output.push_back(h < 0 ? -1 : outDimOf[h]);
    c.push_back(std::move(l));
    break;
  }
  case Rule::Reshape: {
    const int in = n.inputs[0];
    const DimMap m = mapOf(p, s, in);
    NodeLayout l;
    const bool direct = keepsHostOrder(p.host[in], m) && g.values[in].dtype == g.values[out].dtype &&
                        reshapeKeepsDeviceBytes(deviceShapeOf(p.host[in], m), p.host[out], p.eps[out]);
    l.inputs = {direct ? m : identityDimMap(p.host[in].size())};
    l.output = identityDimMap(r);
    c.push_back(std::move(l));
    break;
  }
  case Rule::Matmul: {
    c.push_back(allIdentity());
    if (p.transposedY.count(n.output)) {
      NodeLayout l = allIdentity();
      const int y = n.inputs[1];
      l.cost -= p.sticksOf(y, l.inputs[1]);
      l.inputs[1] = swappedLastTwo(p.host[y].size());
      l.cost += p.sticksOf(y, l.inputs[1]);
      c.push_back(std::move(l));
    }
    break;
  }
  case Rule::GenericOnly: c.push_back(allIdentity()); break;
  }
  return c;
}

/// The restickifies node layout l needs on top of state s, and their cost.
double transitionCost(const Problem &p, const BeamState &s, const Node &n, const NodeLayout &l, int *newConversions) {
  double cost = l.cost;
  std::set<std::pair<int, std::vector<int>>> made;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const int v = n.inputs[i];
    const DimMap cur = mapOf(p, s, v);
    auto want = std::make_pair(v, p.key(v, l.inputs[i]));
    if (want.second == p.key(v, cur) || s.converted.count(want) || !made.insert(want).second)
      continue;
    cost += p.conversionCost(v, cur, l.inputs[i]);
  }
  if (newConversions)
    *newConversions = static_cast<int>(made.size());
  return cost;
}

void apply(const Problem &p, BeamState &s, const Node &n, const NodeLayout &l, int choice) {
  int made = 0;
  s.cost += transitionCost(p, s, n, l, &made);
  s.restickifies += made;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const int v = n.inputs[i];
    if (auto k = p.key(v, l.inputs[i]); k != p.key(v, mapOf(p, s, v)))
      s.converted.insert({v, k});
  }
  if (l.output == identityDimMap(p.host[n.output].size()))
    s.maps.erase(n.output);
  else
    s.maps[n.output] = l.output;
  s.choices.push_back(choice);
}

/// Beam search over the nodes in order; the best complete state.
BeamState search(const Problem &p, int width) {
  std::vector<BeamState> beam(1);
  for (const Node &n : p.g.nodes) {
    struct Child {
      size_t parent;
      int choice;
      double cost;
    };
    std::vector<std::vector<NodeLayout>> cands;
    std::vector<Child> children;
    for (size_t b = 0; b < beam.size(); ++b) {
      cands.push_back(candidates(p, beam[b], n));
      for (size_t c = 0; c < cands.back().size(); ++c)
        children.push_back({b, static_cast<int>(c),
                            beam[b].cost + transitionCost(p, beam[b], n, cands.back()[c], nullptr)});
    }
    // Cheapest first; equal costs keep the earlier candidates (beam order is by the same key).
    std::stable_sort(children.begin(), children.end(),
                     [](const Child &a, const Child &b) { return a.cost < b.cost; });
    std::vector<BeamState> next;
    for (size_t k = 0; k < children.size() && next.size() < static_cast<size_t>(width); ++k) {
      const Child &ch = children[k];
      BeamState s = beam[ch.parent];
      apply(p, s, n, cands[ch.parent][ch.choice], ch.choice);
      next.push_back(std::move(s));
    }
    beam = std::move(next);
  }
  // Graph outputs a relabel produces are restickified to the generic layout (Rewriter::run).
  for (BeamState &s : beam)
    for (int v : p.g.outputs) {
      const int prod = p.g.producer(v);
      const DimMap generic = identityDimMap(p.host[v].size());
      const std::vector<int> key = p.key(v, generic);
      if (prod < 0 || ruleOf(p.g, p.g.nodes[prod]) != Rule::Relabel || key == p.key(v, mapOf(p, s, v)) ||
          !s.converted.insert({v, key}).second)
        continue;
      s.cost += p.conversionCost(v, mapOf(p, s, v), generic);
      ++s.restickifies;
    }
  return *std::min_element(beam.begin(), beam.end(),
                           [](const BeamState &a, const BeamState &b) { return a.cost < b.cost; });
}

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
    const bool isTranspose = perm.size() >= 2 && perm == swapLast && (prod < 0 || p_.g.nodes[prod].op != "permute");
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

LayoutSearchResult propagateLayouts(Graph &g, int beamWidth, int maxCores, bool matmulTransB) {
  if (beamWidth < 1)
    throw Error("layout propagation: beam width " + std::to_string(beamWidth) + " (at least 1)");
  const Graph original = g;
  const Problem p(original, maxCores, matmulTransB);
  const BeamState best = search(p, beamWidth);
  Rewriter(p, g).run(best);
  return {best.cost, best.restickifies};
}

} // namespace spyre::frontend
