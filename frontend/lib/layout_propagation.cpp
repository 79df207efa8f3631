// Layout propagation (torch-spyre's propagate_spyre_tensor_layouts + the restickify insertion
// that follows it, notes §4.3), run after the decompositions and before K padding and work
// division.
//
// Every kernel the frontend drafts reads its operands in, and writes its output in, the generic
// stick layout of the operand's own host shape (SpyreTensorLayout(size)). One op breaks that on
// its output: a reduction writes the generic layout of its *keepdim* shape, because the backend
// accumulates each kept index into its own position of the unreduced iteration space. Without
// keepdim the value's host shape drops those dims, and where that moves elements between sticks
// (a reduction over the stick dim: f16[67, 129] -> f16[67] is one value per stick, lane 0, not 67
// values packed in two sticks) a consumer reading the generic layout of f16[67] would read
// garbage. This pass computes each value's device layout forward through the graph and, where a
// consumer needs another layout than its producer gives, inserts an explicit conversion:
//   %s = sum(%x, dims=[1]) : f16[67]
//   %y = exp(%s) : f16[67]
// becomes
//   %s_kd = sum(%x, dims=[1], keepdim=1) : f16[67, 1] {layout=[67, 1]}
//   %s_t = transpose(%s_kd) : f16[1, 67] {restickify=1}
//   %s = reshape(%s_t) : f16[67]                     (zero-copy: [1, 67] and [67] share bytes)
//   %y = exp(%s) : f16[67]
// A reshape whose output's generic layout is exactly the reduction's device layout (the
// `unsqueeze(-1)` of `x - x.sum(-1).unsqueeze(-1)`) reads the keepdim value directly: no
// conversion, and compileGraph aliases it.
//
// Choice of layouts: torch-spyre searches candidate layouts per value (a beam of width 64)
// to minimise restickify cost. Here every value but a reduction output is generic, so there is
// nothing to choose between: the only freedom is where a conversion goes, and it goes once per
// reduction value, before its first consumer that needs it (a greedy, not a searched, choice).
#include "kernel_draft.h"
#include "spyre/frontend/compiler.h"
#include "spyre/frontend/passes.h"
#include "spyre/isa/error.h"

namespace spyre::frontend {

namespace {

bool isReduction(const std::string &op) { return op == "sum" || op == "mean" || op == "amax" || op == "amin"; }

std::string shapeText(const std::vector<int64_t> &s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i)
    t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

std::vector<double> toDoubles(const std::vector<int64_t> &v) { return std::vector<double>(v.begin(), v.end()); }

int64_t elemsPerStickOf(const Value &v) {
  return elemsPerStick(detail::deviceFormat(v.dtype, "%" + v.name));
}

/// The restickify of a reduction's keepdim output (shape `kd`, `red` = reduced dims) into the
/// generic layout of the squeezed shape: the permutation of kd that puts the size-1 dims where
/// the squeezed shape's generic layout does not see them. The generic layout of a rank-k shape
/// s is device dims [s1..s(k-2), tile(s(k-1)), s0]: dim 0 innermost, the last dim in the stick,
/// so [s0, 1.., s1, .., s(k-1)] (k >= 2) or [1.., s0] (k = 1) has the bytes of s.
std::vector<size_t> restickPermutation(const std::vector<bool> &red) {
  std::vector<size_t> kept, ones;
  for (size_t d = 0; d < red.size(); ++d)
    (red[d] ? ones : kept).push_back(d);
  std::vector<size_t> perm;
  if (kept.size() == 1) {
    perm = ones;
    perm.push_back(kept[0]);
  } else if (!kept.empty()) {
    perm.push_back(kept[0]);
    perm.insert(perm.end(), ones.begin(), ones.end());
    perm.insert(perm.end(), kept.begin() + 1, kept.end());
  } else {
    perm = ones;
  }
  return perm;
}

} // namespace

std::map<int, std::vector<int64_t>> deviceLayouts(const Graph &g) {
  std::map<int, std::vector<int64_t>> shapes;
  for (const Node &n : g.nodes) {
    if (!isReduction(n.op) || n.inputs.size() != 1)
      continue;
    const Value &in = g.values.at(n.inputs[0]);
    if (in.shape.empty())
      continue; // a scalar's reduction is a copy of its one stick
    auto red = detail::reducedDims(n, in.shape.size(), "node %" + g.values[n.output].name);
    shapes[n.output] = detail::keepdimShape(in.shape, red);
  }
  // Every other op writes the generic layout of its own shape (the kernels in compiler.cpp,
  // data_ops.cpp, reshape_ops.cpp, layernorm_ops.cpp), and graph inputs arrive in it.
  return shapes;
}

bool hasGenericLayout(const Graph &g, int v, const std::map<int, std::vector<int64_t>> &layouts) {
  auto it = layouts.find(v);
  if (it == layouts.end())
    return true;
  const Value &val = g.values[v];
  return it->second == val.shape || reshapeKeepsDeviceBytes(it->second, val.shape, elemsPerStickOf(val));
}

void propagateLayouts(Graph &g) {
  const auto layouts = deviceLayouts(g);
  // Values whose device layout is not the generic layout of their shape, and what they became.
  struct Converted {
    int keepdim = -1; ///< the reduction's output in its keepdim shape (generic layout)
    std::string op;   ///< the reduction
    std::vector<bool> reduced;
    bool emitted = false; ///< the restickify to the original value has been inserted
  };
  std::map<int, Converted> off;
  std::vector<int> uses(g.values.size(), 0);
  for (const Node &n : g.nodes)
    for (int v : n.inputs)
      ++uses[v];
  for (const auto &[v, shape] : layouts)
    if (!hasGenericLayout(g, v, layouts) && uses[v] > 0)
      off[v] = {};

  std::vector<Node> nodes;
  // Appends the conversion of reduction value v (keepdim layout) to the generic layout of its
  // own shape, whose result is v itself (so graph outputs and names stay).
  auto restickify = [&](int v, const std::string &consumer) {
    Converted &c = off.at(v);
    if (c.emitted)
      return;
    c.emitted = true;
    const Value val = g.values[v];
    const std::vector<int64_t> kd = g.values[c.keepdim].shape;
    std::vector<size_t> perm = restickPermutation(c.reduced);
    std::vector<int64_t> permuted;
    for (size_t p : perm)
      permuted.push_back(kd[p]);
    const int64_t eps = elemsPerStickOf(val);
    const std::string what = "%" + val.name + " = " + c.op + " writes the layout of " +
                             std::string(dtypeShortName(val.dtype)) + shapeText(kd) + ", " + consumer +
                             " needs the generic layout of " + std::string(dtypeShortName(val.dtype)) +
                             shapeText(val.shape);
    if (!reshapeKeepsDeviceBytes(permuted, val.shape, eps))
      throw Unsupported("restickify: " + what + " (no permutation of the keepdim shape has its bytes)");
    const bool changesStick = perm.back() != kd.size() - 1 && kd[perm.back()] != 1;
    if (changesStick && detail::deviceFormat(val.dtype, what) != DataFormat::SEN169_FP16)
      throw Unsupported("restickify: " + what + "; moving the stick dim of a " + std::string(dtypeShortName(val.dtype)) +
                        " tensor goes through the PE array, which is fp16/bf16 only");
    int cur = c.keepdim;
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i)
      identity &= perm[i] == i;
    if (!identity) {
      std::vector<size_t> swap(perm.size());
      for (size_t i = 0; i < swap.size(); ++i)
        swap[i] = i;
      std::swap(swap[swap.size() - 1], swap[swap.size() - 2]);
      // Swapping the last two dims is the transpose kernel (what decompose uses for select).
      const bool swapLast = perm == swap;
      int t = g.addValue(g.freshName(val.name + (swapLast ? "_t" : "_p")), permuted, val.dtype);
      Node conv{swapLast ? "transpose" : "permute", {cur}, t, {}, {}};
      if (!swapLast) {
        std::vector<double> dims(perm.begin(), perm.end());
        conv.attrs["dims"] = Attr(dims);
      }
      conv.notes["restickify"] = Attr(1.0);
      nodes.push_back(std::move(conv));
      cur = t;
    }
    // The same bytes under the squeezed shape: compileGraph aliases it (or copies it once for a
    // graph output).
    nodes.push_back({"reshape", {cur}, v, {}, {}});
  };

  for (const Node &orig : g.nodes) {
    Node n = orig;
    const std::string where = "node %" + g.values[n.output].name + " = " + n.op;
    for (int &v : n.inputs) {
      auto it = off.find(v);
      if (it == off.end())
        continue;
      const Value &out = g.values[n.output];
      // A reshape to a shape whose generic layout is the keepdim layout reads it directly.
      if (n.op == "reshape" && out.dtype == g.values[v].dtype &&
          reshapeKeepsDeviceBytes(g.values[it->second.keepdim].shape, out.shape, elemsPerStickOf(out))) {
        v = it->second.keepdim;
        continue;
      }
      restickify(v, where);
    }
    if (off.count(n.output)) {
      // The reduction writes its keepdim shape under a new name; the original value is the end
      // of the restickify, inserted before its first consumer that needs it.
      Converted &c = off[n.output];
      const Value out = g.values[n.output];
      c.keepdim = g.addValue(g.freshName(out.name + "_kd"), layouts.at(n.output), out.dtype);
      c.op = n.op;
      c.reduced = detail::reducedDims(n, g.values[n.inputs[0]].shape.size(), where);
      n.output = c.keepdim;
      n.attrs["keepdim"] = Attr(1.0);
      n.notes["layout"] = Attr(toDoubles(layouts.at(orig.output)));
    } else if (layouts.count(n.output) && !hasGenericLayout(g, n.output, layouts)) {
      // Only a graph output reads it (through its buffer's layout): nothing to convert.
      n.notes["layout"] = Attr(toDoubles(layouts.at(n.output)));
    }
    nodes.push_back(std::move(n));
  }
  // A converted reduction that is also a graph output needs its generic form at the end.
  for (int v : g.outputs)
    if (auto it = off.find(v); it != off.end() && !it->second.emitted)
      restickify(v, "the graph output");
  g.nodes = std::move(nodes);
}

} // namespace spyre::frontend
