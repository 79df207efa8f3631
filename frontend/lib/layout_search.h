// Internal to spyre_frontend: the layout search's shared pieces (layout_propagation.cpp searches,
// layout_rewrite.cpp rewrites the graph in the chosen layouts; passes.h propagateLayouts).
#pragma once
#include "spyre/frontend/passes.h"
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace spyre::frontend::layout {

/// Cost weights, in sticks (128 B) moved: a restickify moves a stick about as fast as a kernel
/// streams one, and a launch costs about as much as streaming 512 sticks (a few µs).
inline constexpr double kRestickifyWeight = 1.0;
inline constexpr double kLaunchCostSticks = 512;
inline constexpr double kInfeasible = std::numeric_limits<double>::infinity();
/// The kernel builders draft at most rank-4 iteration spaces.
inline constexpr size_t kMaxDeviceRank = 4;

int64_t elemsPerStickOf(const Value &v);
/// Sticks of a device shape in its generic layout.
int64_t sticks(const std::vector<int64_t> &dev, int64_t eps);
/// What decides where map m puts each element (see layout_propagation.cpp); equal keys, equal
/// bytes.
std::vector<int> byteKey(const std::vector<int64_t> &host, const DimMap &m, int64_t eps);
/// The host dim in the lanes of a byte key (-1: none).
int laneOf(const std::vector<int> &key);
/// m with k unit dims inserted after its first dim.
DimMap withUnitDims(DimMap m, size_t k);

enum class Rule { Pointwise, Reduction, Relabel, Reshape, Matmul, GenericOnly };

Rule ruleOf(const Graph &g, const Node &n);
/// The matmul kernel can read y sticked on K (matmulKernel's transb).
bool transposedYFits(const Graph &g, const Node &n, int maxCores);

/// One way to lay out a node: the map each tensor operand must be in, the output's map and the
/// cost of the node's kernel in them.
struct NodeLayout {
  std::vector<DimMap> inputs;
  DimMap output;
  double cost = 0;
};

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

/// A partial assignment: the maps of the values laid out so far (absent: identity), the
/// restickified copies made (value, byte key) and their cost.
struct BeamState {
  std::map<int, DimMap> maps;
  std::set<std::pair<int, std::vector<int>>> converted;
  double cost = 0;
  int restickifies = 0;
  std::vector<int> choices; ///< candidate index per node so far
};

/// The map of v in s (absent: identity).
DimMap mapOf(const Problem &p, const BeamState &s, int v);
/// The candidate layouts of node n given the maps of its operands; the first is the generic one.
std::vector<NodeLayout> candidates(const Problem &p, const BeamState &s, const Node &n);
/// Records node n laid out as l (candidate `choice`) in s.
void apply(const Problem &p, BeamState &s, const Node &n, const NodeLayout &l, int choice);
/// The beam search over the nodes in order: the cheapest complete state.
BeamState search(const Problem &p, int width);

} // namespace spyre::frontend::layout
