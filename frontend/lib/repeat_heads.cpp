// The repeat-heads pass: grouped-query attention's head repeat read by the attention matmuls
// in place (matmul kvrep=r) instead of three copy kernels. See passes.h.
#include "spyre/frontend/ops.h"
#include "spyre/frontend/passes.h"
#include <algorithm>
#include <numeric>

namespace spyre::frontend {

namespace {

int64_t prod(std::vector<int64_t>::const_iterator b, std::vector<int64_t>::const_iterator e) {
  return std::accumulate(b, e, int64_t{1}, [](int64_t a, int64_t c) { return a * c; });
}

/// r = reshape(clone?(expand(reshape(k)))) (or expand(k) of a single kv head) with r[.., h, s, d] = k[.., h / rep, s, d]: k and r
/// rank 4, [B, Hkv, S, D] and [B, Hkv * rep, S, D]; the expand broadcasts exactly one unit dim
/// u of its input y, which splits y's elements into the B * Hkv head blocks before u and the
/// S * D elements of one head after it. Returns rep (> 1) and k, or 0.
int64_t repeatOf(const Graph &g, const std::vector<int> &producer, int r, int &k, std::vector<int> &chain) {
  auto prodOf = [&](int v) { return v >= 0 && v < static_cast<int>(producer.size()) ? producer[v] : -1; };
  auto single = [&](int p, OpId id) {
    return p >= 0 && isOp(g.nodes[p].op, id) && g.nodes[p].inputs.size() == 1 && g.nodes[p].attrs.empty();
  };
  const int pOut = prodOf(r);
  // One kv head (multi-query attention): the reshapes are no-ops and went; expand(k) from
  // [B, 1, S, D] to [B, H, S, D] is left.
  if (single(pOut, OpId::Expand)) {
    k = g.nodes[pOut].inputs[0];
    const auto &ks = g.values[k].shape, &rs = g.values[r].shape;
    if (ks.size() != 4 || rs.size() != 4 || ks[1] != 1 || rs[1] < 2 || ks[0] != rs[0] || ks[2] != rs[2] ||
        ks[3] != rs[3] || g.values[k].dtype != g.values[r].dtype)
      return 0;
    chain = {pOut};
    return rs[1];
  }
  if (!single(pOut, OpId::Reshape))
    return 0;
  int pExp = prodOf(g.nodes[pOut].inputs[0]);
  int pClone = -1;
  if (single(pExp, OpId::Clone)) {
    pClone = pExp;
    pExp = prodOf(g.nodes[pClone].inputs[0]);
  }
  if (!single(pExp, OpId::Expand))
    return 0;
  const int pIn = prodOf(g.nodes[pExp].inputs[0]);
  if (!single(pIn, OpId::Reshape))
    return 0;
  k = g.nodes[pIn].inputs[0];
  const auto &ks = g.values[k].shape, &rs = g.values[r].shape;
  const auto &ys = g.values[g.nodes[pExp].inputs[0]].shape, &es = g.values[g.nodes[pExp].output].shape;
  if (ks.size() != 4 || rs.size() != 4 || ys.size() != es.size() || g.values[k].dtype != g.values[r].dtype)
    return 0;
  if (ks[0] != rs[0] || ks[2] != rs[2] || ks[3] != rs[3] || ks[1] < 1 || rs[1] % ks[1] != 0)
    return 0;
  const int64_t rep = rs[1] / ks[1];
  int u = -1;
  for (size_t d = 0; d < ys.size(); ++d)
    if (ys[d] != es[d]) {
      if (u >= 0 || ys[d] != 1 || es[d] != rep)
        return 0;
      u = static_cast<int>(d);
    }
  if (u < 0 || rep < 2)
    return 0;
  if (prod(ys.begin(), ys.begin() + u) != ks[0] * ks[1] || prod(ys.begin() + u + 1, ys.end()) != ks[2] * ks[3])
    return 0;
  chain = {pIn, pExp, pOut};
  if (pClone >= 0)
    chain.push_back(pClone);
  return rep;
}

} // namespace

int fuseRepeatHeads(Graph &g) {
  const int numNodes = static_cast<int>(g.nodes.size());
  std::vector<int> producer(g.values.size(), -1);
  std::vector<std::vector<int>> readers(g.values.size());
  for (int i = 0; i < numNodes; ++i) {
    producer[g.nodes[i].output] = i;
    for (int v : g.nodes[i].inputs)
      readers[v].push_back(i);
  }
  std::vector<bool> returned(g.values.size(), false);
  for (int v : g.outputs)
    returned[v] = true;
  // A matmul that may read k as its y with kvrep: fp16/bf16, rank 4 both, no attributes yet.
  auto matmulY = [&](int node, int y) {
    const Node &m = g.nodes[node];
    if (!isOp(m.op, OpId::Matmul) || m.inputs.size() != 2 || m.inputs[1] != y || m.inputs[0] == y ||
        !m.attrs.empty())
      return false;
    const Value &x = g.values[m.inputs[0]], &yv = g.values[y];
    return x.shape.size() == 4 && yv.shape.size() == 4 && x.shape[0] == yv.shape[0] && x.shape[1] == yv.shape[1] &&
           (x.dtype == HostType::F16 || x.dtype == HostType::BF16);
  };
  std::vector<bool> drop(g.nodes.size(), false);
  int rewrites = 0;
  const int numValues = static_cast<int>(g.values.size()); // the rewrite adds values
  for (int v = 0; v < numValues; ++v) {
    if (producer[v] < 0 || drop[producer[v]] || returned[v] || readers[v].empty())
      continue;
    int k = -1;
    std::vector<int> chain;
    const int64_t rep = repeatOf(g, producer, v, k, chain);
    if (rep == 0)
      continue;
    // The chain's inner values feed only the chain (none returned).
    bool ok = true;
    for (size_t c = 0; c + 1 < std::min<size_t>(chain.size(), 3) && ok; ++c) {
      const int inner = g.nodes[chain[c]].output;
      ok = !returned[inner] && readers[inner].size() == 1;
    }
    if (chain.size() == 4) {
      const int cv = g.nodes[chain[3]].output;
      ok = ok && !returned[cv] && readers[cv].size() == 1;
    }
    // Every reader of r: a matmul's y, or a transpose (last two dims) read only as matmuls' y.
    for (int rd : readers[v]) {
      if (!ok)
        break;
      if (matmulY(rd, v))
        continue;
      const Node &t = g.nodes[rd];
      const int tv = t.output;
      ok = isOp(t.op, OpId::Transpose) && t.inputs.size() == 1 && !returned[tv] && !readers[tv].empty();
      for (int m : ok ? readers[tv] : std::vector<int>{})
        ok = ok && matmulY(m, tv);
    }
    if (!ok)
      continue;
    const std::vector<int64_t> ks = g.values[k].shape;
    for (int rd : readers[v]) {
      Node &t = g.nodes[rd];
      if (isOp(t.op, OpId::Matmul)) {
        t.inputs[1] = k;
        t.attrs["kvrep"] = Attr(static_cast<double>(rep));
        continue;
      }
      // transpose(r) -> transpose(k): a new value of k's shape with the last two dims swapped.
      std::vector<int64_t> ts = ks;
      std::swap(ts[2], ts[3]);
      const int old = t.output;
      const int nv = g.addValue(g.freshName(g.values[old].name + "_kv"), ts, g.values[old].dtype);
      t.inputs[0] = k;
      t.output = nv;
      for (int m : readers[old]) {
        g.nodes[m].inputs[1] = nv;
        g.nodes[m].attrs["kvrep"] = Attr(static_cast<double>(rep));
      }
    }
    for (int c : chain)
      drop[c] = true;
    ++rewrites;
  }
  if (rewrites > 0)
    eraseNodes(g, drop);
  return rewrites;
}

} // namespace spyre::frontend
