// Matmul epilogue fusion: a matmul with the elementwise chain that consumes only its output (bias
// add, activation, residual add, scalar mul, SwiGLU's silu(x @ w1) * (x @ w3)) becomes one
// kernel. See passes.h.
#include "fusion.h"
#include "spyre/frontend/ops.h"
#include "spyre/frontend/passes.h"
#include "spyre/isa/superdsc.h"
#include <algorithm>
#include <set>

namespace spyre::frontend {

namespace {

std::vector<double> layoutOf(const Node &n) {
  auto it = n.notes.find("layout");
  return it == n.notes.end() ? std::vector<double>() : it->second.values;
}

/// Vector registers the epilogue may use: v12, v13 (lane mask) and v15 (zero) belong to the
/// matmul lowering, v14 is kept free.
constexpr int kEpilogueRegisters = 12;

/// An operand of the epilogue besides the chain's value: a full [.., M, N] tensor or a row
/// vector broadcast over M and the batch dims ([N], [1, N], [1, .., 1, N]).
bool matmulEpilogueOperand(const std::vector<int64_t> &out, const std::vector<int64_t> &shape) {
  if (shape == out)
    return true;
  if (shape.empty() || shape.size() > out.size() || shape.back() != out.back())
    return false;
  return std::all_of(shape.begin(), shape.end() - 1, [](int64_t d) { return d == 1; });
}

} // namespace

int fuseMatmulEpilogues(Graph &g) {
  const int numNodes = static_cast<int>(g.nodes.size());
  std::vector<int> producer(g.values.size(), -1);
  std::vector<std::vector<int>> consumers(g.values.size());
  for (int i = 0; i < numNodes; ++i) {
    producer[g.nodes[i].output] = i;
    for (int v : g.nodes[i].inputs)
      if (consumers[v].empty() || consumers[v].back() != i)
        consumers[v].push_back(i);
  }
  std::set<int> graphOutputs(g.outputs.begin(), g.outputs.end());
  int numbered = firstFreeGroup(g), made = 0;
  for (int i = 0; i < numNodes; ++i) {
    const Node &mm = g.nodes[i];
    if (!isOp(mm.op, OpId::Matmul) || mm.notes.count("fused"))
      continue;
    const Value &out = g.values[mm.output];
    if (out.dtype != HostType::F16 && out.dtype != HostType::BF16)
      continue;
    std::vector<int> members = {i};
    std::set<int> ext;
    int consts = 0, cur = mm.output;
    while (true) {
      // The value so far must feed exactly one node and nothing else (the kernel stores only its
      // last member's value).
      if (graphOutputs.count(cur) || consumers[cur].size() != 1)
        break;
      const int c = consumers[cur][0];
      const Node &n = g.nodes[c];
      if (n.notes.count("fused") || !fusibleElementwise(g, n) || layoutOf(n) != layoutOf(mm))
        break;
      const Value &v = g.values[n.output];
      if (v.shape != out.shape || v.dtype != out.dtype)
        break;
      bool runtime = false;
      for (const auto &[key, a] : n.attrs)
        runtime = runtime || a.isRuntime();
      if (runtime)
        break;
      std::set<int> more = ext;
      bool ok = true;
      for (int in : n.inputs) {
        if (in == cur)
          continue;
        const Value &x = g.values[in];
        const int p = producer[in];
        const bool full = x.shape == out.shape;
        ok = ok && x.dtype == out.dtype && matmulEpilogueOperand(out.shape, x.shape) &&
             (p < 0 || (full ? layoutOf(g.nodes[p]) == layoutOf(mm) : layoutOf(g.nodes[p]).empty()));
        more.insert(in);
      }
      const int moreConsts = consts + constantOperands(n);
      // Three segments are the matmul's (x, y, the output); registers: the constants, one per
      // external operand, and two for the values in flight.
      if (!ok || 3 + static_cast<int>(more.size()) > isa::kMaxSegments ||
          moreConsts + static_cast<int>(more.size()) + 2 > kEpilogueRegisters)
        break;
      ext = std::move(more);
      consts = moreConsts;
      members.push_back(c);
      cur = n.output;
    }
    if (members.size() < 2)
      continue;
    for (int m : members)
      g.nodes[m].notes["fused"] = Attr(static_cast<double>(numbered));
    ++numbered;
    ++made;
  }
  return made;
}

} // namespace spyre::frontend
