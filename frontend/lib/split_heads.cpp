// The split-heads pass: attention's q / k / v projections write their heads in place, one
// matmul per projection instead of a matmul and a heads permute (a restickify kernel). See
// passes.h.
#include "spyre/frontend/ops.h"
#include "spyre/frontend/passes.h"
#include <vector>

namespace spyre::frontend {

namespace {

/// The one-input node producing v with op `id` (attributes not checked), or -1.
int singleProducer(const Graph &g, const std::vector<int> &producer, int v, OpId id) {
  const int p = v >= 0 && v < static_cast<int>(producer.size()) ? producer[v] : -1;
  return p >= 0 && isOp(g.nodes[p].op, id) && g.nodes[p].inputs.size() == 1 ? p : -1;
}

} // namespace

int fuseSplitHeads(Graph &g) {
  const int numNodes = static_cast<int>(g.nodes.size());
  std::vector<int> producer(g.values.size(), -1);
  std::vector<int> readers(g.values.size(), 0);
  for (int i = 0; i < numNodes; ++i) {
    producer[g.nodes[i].output] = i;
    for (int v : g.nodes[i].inputs)
      ++readers[v];
  }
  for (int v : g.outputs)
    ++readers[v]; // a returned value counts as read: it is never an inner value of the pattern
  // permute(reshape(matmul(x, transpose(w))), dims=[0, 2, 1, 3]): x [B, S, K], w [H * D, K] (a
  // linear layer's weight), the reshape [B, S, H, D] and the permute [B, H, S, D].
  struct Rewrite {
    int perm, mm, view; ///< nodes
  };
  std::vector<Rewrite> found;
  std::vector<bool> drop(g.nodes.size(), false);
  for (int i = 0; i < numNodes; ++i) {
    const Node &p = g.nodes[i];
    if (!isOp(p.op, OpId::Permute) || p.inputs.size() != 1 || p.attrs.size() != 1 || !p.attrs.count("dims") ||
        p.attrs.at("dims").values != std::vector<double>{0, 2, 1, 3})
      continue;
    const int view = singleProducer(g, producer, p.inputs[0], OpId::Reshape);
    if (view < 0 || readers[g.nodes[view].output] != 1)
      continue;
    const int mm = producer[g.nodes[view].inputs[0]];
    if (mm < 0 || !isOp(g.nodes[mm].op, OpId::Matmul) || g.nodes[mm].inputs.size() != 2 ||
        !g.nodes[mm].attrs.empty() || readers[g.nodes[mm].output] != 1)
      continue;
    const int t = singleProducer(g, producer, g.nodes[mm].inputs[1], OpId::Transpose);
    if (t < 0 || !g.nodes[t].attrs.empty())
      continue;
    const Value &x = g.values[g.nodes[mm].inputs[0]], &w = g.values[g.nodes[t].inputs[0]];
    const Value &vs = g.values[g.nodes[view].output], &out = g.values[p.output];
    if (x.shape.size() != 3 || w.shape.size() != 2 || vs.shape.size() != 4 ||
        (x.dtype != HostType::F16 && x.dtype != HostType::BF16) || w.dtype != x.dtype || out.dtype != x.dtype)
      continue;
    const int64_t B = x.shape[0], S = x.shape[1], K = x.shape[2], H = vs.shape[2], D = vs.shape[3];
    if (vs.shape != std::vector<int64_t>{B, S, H, D} || w.shape != std::vector<int64_t>{H * D, K} ||
        out.shape != std::vector<int64_t>{B, H, S, D} || D % 64 != 0 || H < 2)
      continue;
    found.push_back({i, mm, view});
    drop[mm] = drop[view] = true;
  }
  if (found.empty())
    return 0;
  // x4 = reshape(x) [B, 1, S, K]; out = matmul(x4, transpose(w), heads=H) [B, H, S, D], in the
  // permute's place (the transpose stays: layout propagation reads w as stored, transb=1).
  std::vector<Node> nodes;
  size_t next = 0;
  for (int i = 0; i < numNodes; ++i) {
    if (next < found.size() && found[next].perm == i) {
      const Node mm = g.nodes[found[next++].mm];
      const int out = g.nodes[i].output;
      const std::vector<int64_t> xs = g.values[mm.inputs[0]].shape, os = g.values[out].shape;
      const int x4 = g.addValue(g.freshName(g.values[out].name + "_x"), {xs[0], 1, xs[1], xs[2]}, g.values[out].dtype);
      nodes.push_back({"reshape", {mm.inputs[0]}, x4, {}, {}});
      nodes.push_back({"matmul", {x4, mm.inputs[1]}, out, {{"heads", Attr(static_cast<double>(os[1]))}}, {}});
      continue;
    }
    if (!drop[i])
      nodes.push_back(g.nodes[i]);
  }
  g.nodes = std::move(nodes);
  return static_cast<int>(found.size());
}

} // namespace spyre::frontend
