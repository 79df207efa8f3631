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
#include "kernels/kernels.h"
#include "layout_search.h"
#include "spyre/frontend/ops.h"
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

namespace {
std::string shapeText(const std::vector<int64_t> &shape) {
  std::string t = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    t += (i ? ", " : "") + std::to_string(shape[i]);
  return t + "]";
}
} // namespace

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
  // Each host dim exactly once, -1 for inserted size-1 device dims (a note parsed from text
  // may say anything).
  const size_t rank = static_cast<size_t>(std::count_if(m.begin(), m.end(), [](int h) { return h >= 0; }));
  std::vector<int64_t> host(rank);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < m.size(); ++i) {
    if (m[i] < -1 || (m[i] >= 0 && (static_cast<size_t>(m[i]) >= rank || seen[static_cast<size_t>(m[i])])))
      throw Error("%" + g.values[v].name + ": layout note entry " + std::to_string(m[i]) + " is not a host dim 0.." +
                  std::to_string(static_cast<int64_t>(rank) - 1) + " used once, or -1");
    if (m[i] >= 0) {
      seen[static_cast<size_t>(m[i])] = true;
      host[static_cast<size_t>(m[i])] = dev[i];
    }
  }
  return host;
}

SpyreTensorLayout deviceTensorLayout(const Graph &g, int v) {
  const Value &val = g.values[v];
  const DataFormat fmt = detail::deviceFormatOrInt(val.dtype, "%" + val.name);
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

namespace layout {


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


bool isReduction(const std::string &op) { return isOpClass(op, OpClass::Reduction); }

/// Output dim k of a transpose / permute is input dim perm[k]; empty if the node is malformed
/// (its kernel builder reports it).
std::vector<int> relabelPermutation(const Graph &g, const Node &n) {
  if (n.inputs.size() != 1)
    return {};
  const size_t r = g.values[n.inputs[0]].shape.size();
  std::vector<int> perm(r);
  std::iota(perm.begin(), perm.end(), 0);
  if (isOp(n.op, OpId::Transpose)) {
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
  if ((detail::isPointwiseOp(n.op) || isOp(n.op, OpId::ToDtype)) && !n.inputs.empty())
    return Rule::Pointwise;
  if (isReduction(n.op) && n.inputs.size() == 1 && !g.values[n.inputs[0]].shape.empty())
    return Rule::Reduction;
  if ((isOp(n.op, OpId::Transpose) || isOp(n.op, OpId::Permute)) && !relabelPermutation(g, n).empty())
    return Rule::Relabel;
  if (isOp(n.op, OpId::Reshape) && n.inputs.size() == 1)
    return Rule::Reshape;
  if (isOp(n.op, OpId::Matmul) && n.inputs.size() == 2 &&
      (n.attrs.empty() || (n.attrs.size() == 1 && (n.attrs.count("kvrep") || n.attrs.count("heads")))))
    return Rule::Matmul;
  return Rule::GenericOnly;
}


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
/// rank >= 2, N a whole number of sticks, and a work division without a K split (the transposed-B
/// division splits K only where pass 1 must, for the span limit).
bool transposedYFits(const Graph &g, const Node &n, int maxCores) {
  const int x = n.inputs[0], y = n.inputs[1];
  const auto &xs = g.values[x].shape, &ys = g.values[y].shape;
  for (int v : {x, y, n.output})
    if (g.values[v].dtype != HostType::F16 && g.values[v].dtype != HostType::BF16)
      return false;
  if (xs.size() < 2 || ys.size() < 2 || xs.size() > 4 || ys[ys.size() - 2] != xs.back() || ys.back() % 64 != 0)
    return false;
  // kvrep=r (grouped-query attention): y's head dim is x's divided by r.
  const int64_t rep = n.attrs.count("kvrep") ? static_cast<int64_t>(n.attrs.at("kvrep").scalar()) : 1;
  if (rep != 1 && (xs.size() != 4 || ys.size() != 4 || ys[0] != xs[0] || ys[1] * rep != xs[1]))
    return false;
  // heads=H (the split-heads pass): x [B, 1, M, K], y [K, H * D], the output [B, H, M, D].
  const int64_t heads = n.attrs.count("heads") ? static_cast<int64_t>(n.attrs.at("heads").scalar()) : 0;
  const auto &os = g.values[n.output].shape;
  if (heads > 0 && (os.size() != 4 || ys.size() != 2 || os[3] % 64 != 0))
    return false;
  const auto batch = heads > 0  ? std::vector<int64_t>(os.begin(), os.end() - 2)
                     : rep == 1 ? detail::matmulBatch(xs, ys)
                                : std::vector<int64_t>(xs.begin(), xs.end() - 2);
  if (!batch)
    return false; // batch broadcasting the matmul builder rejects anyway
  const MatmulProblem mp{*batch, ys.size() != 2 || heads > 0, xs[xs.size() - 2], heads > 0 ? os.back() : ys.back(),
                         xs.back(), /*transB=*/true};
  return matmulWorkDivision(mp, maxCores).back() == 1;
}


/// y's map when a matmul reads it sticked on K: its last two dims swapped.
DimMap swappedLastTwo(size_t rank) {
  DimMap m = identityDimMap(rank);
  std::swap(m[rank - 1], m[rank - 2]);
  return m;
}


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
    const std::string where = "node %" + g.values[out].name + " = " + n.op;
    const auto red = detail::reducedDims(n, p.host[in].size(), where);
    const bool keepdim = detail::attrOr(n, "keepdim", 0.0) != 0.0;
    // The declared output type must be what the reduction makes: the kernels trust it.
    std::vector<int64_t> expect, dims;
    for (size_t d = 0; d < red.size(); ++d) {
      if (red[d])
        dims.push_back(static_cast<int64_t>(d));
      if (!red[d] || keepdim)
        expect.push_back(red[d] ? 1 : p.host[in][d]);
    }
    if (expect != p.host[out])
      throw Error(where + ": output shape " + shapeText(p.host[out]) + ", expected " + shapeText(expect) +
                  " (input " + shapeText(p.host[in]) + " reduced over dims " + shapeText(dims) +
                  ", keepdim=" + (keepdim ? "1" : "0") + ")");
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

} // namespace layout

} // namespace spyre::frontend
