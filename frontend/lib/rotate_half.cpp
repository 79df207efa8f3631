// The rotate-half pass: RoPE's rotate_half(x) = cat(-x[.., h:], x[.., :h], dim=-1) as one op.
// See passes.h.
#include "spyre/frontend/ops.h"
#include "spyre/frontend/passes.h"
#include "spyre/isa/data_format.h"

namespace spyre::frontend {

namespace {

/// slice(x, dim=last, start, end) with step 1: the bounds, or false.
bool lastDimSlice(const Graph &g, const Node &n, int64_t &start, int64_t &end) {
  if (!isOp(n.op, OpId::Slice) || n.inputs.size() != 1)
    return false;
  const size_t r = g.values[n.inputs[0]].shape.size();
  for (const auto &[k, a] : n.attrs)
    if (a.isRuntime() || a.isList || a.values.size() != 1 || (k != "dim" && k != "start" && k != "end" && k != "step"))
      return false;
  auto get = [&](const char *k, double d) {
    auto it = n.attrs.find(k);
    return it == n.attrs.end() ? d : it->second.values[0];
  };
  const double dim = get("dim", 0);
  if (r == 0 || (dim != static_cast<double>(r - 1) && dim != -1) || get("step", 1) != 1)
    return false;
  start = static_cast<int64_t>(get("start", 0));
  end = static_cast<int64_t>(get("end", 0));
  return true;
}

} // namespace

int fuseRotateHalf(Graph &g) {
  const int numNodes = static_cast<int>(g.nodes.size());
  std::vector<int> producer(g.values.size(), -1), uses(g.values.size(), 0);
  for (int i = 0; i < numNodes; ++i) {
    producer[g.nodes[i].output] = i;
    for (int v : g.nodes[i].inputs)
      ++uses[v];
  }
  for (int v : g.outputs)
    ++uses[v];
  std::vector<bool> drop(g.nodes.size(), false);
  int rewrites = 0;
  for (int i = 0; i < numNodes; ++i) {
    Node &cat = g.nodes[i];
    if (!isOp(cat.op, OpId::Cat) || cat.inputs.size() != 2 || cat.attrs.size() != 1)
      continue;
    const Value &out = g.values[cat.output];
    const size_t r = out.shape.size();
    auto dimIt = cat.attrs.find("dim");
    if (r == 0 || dimIt == cat.attrs.end() || dimIt->second.isRuntime() || dimIt->second.values.size() != 1 ||
        (dimIt->second.values[0] != static_cast<double>(r - 1) && dimIt->second.values[0] != -1))
      continue;
    if (out.dtype != HostType::F16 && out.dtype != HostType::BF16)
      continue;
    const int pNeg = producer[cat.inputs[0]], pLo = producer[cat.inputs[1]];
    if (pNeg < 0 || pLo < 0 || drop[pNeg] || drop[pLo] || !isOp(g.nodes[pNeg].op, OpId::Neg) ||
        g.nodes[pNeg].inputs.size() != 1 || !g.nodes[pNeg].attrs.empty())
      continue;
    const int pHi = producer[g.nodes[pNeg].inputs[0]];
    if (pHi < 0 || drop[pHi])
      continue;
    int64_t loS = 0, loE = 0, hiS = 0, hiE = 0;
    if (!lastDimSlice(g, g.nodes[pLo], loS, loE) || !lastDimSlice(g, g.nodes[pHi], hiS, hiE))
      continue;
    const int x = g.nodes[pLo].inputs[0];
    const Value &xv = g.values[x];
    const int64_t L = r ? out.shape[r - 1] : 0, h = L / 2;
    if (g.nodes[pHi].inputs[0] != x || xv.shape != out.shape || xv.dtype != out.dtype || L % 2 != 0 ||
        loS != 0 || loE != h || hiS != h || hiE != L)
      continue;
    // The slices and the neg feed only this cat (their values are not returned).
    if (uses[g.nodes[pLo].output] != 1 || uses[g.nodes[pHi].output] != 1 || uses[g.nodes[pNeg].output] != 1)
      continue;
    // The kernel moves lanes inside whole sticks: head dims that fill their sticks (64 fp16).
    if (L % 64 != 0)
      continue;
    drop[pLo] = drop[pHi] = drop[pNeg] = true;
    cat.op = "rotate_half";
    cat.inputs = {x};
    cat.attrs.clear();
    ++rewrites;
  }
  if (rewrites > 0)
    eraseNodes(g, drop);
  return rewrites;
}

} // namespace spyre::frontend
