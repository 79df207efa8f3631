// Decompositions (the "split to one op per kernel" half of torch-spyre's split_multi_ops that
// the graph IR needs): select, constant_pad_nd and slices stepping along the stick dim become
// ops that are one kernel each, or a zero-copy reshape; a node that gives its input unchanged
// (a clone, an expand to its own shape, x * 1, x / 1, x - 0) goes: its readers read the input
// (a returned clone keeps its copy). The rewritten node's value keeps its name; helpers get fresh
// names.
#include "kernels/kernels.h"
#include "rank_reduction.h"
#include "spyre/frontend/ops.h"
#include "spyre/frontend/passes.h"
#include <algorithm>
#include "spyre/isa/error.h"
#include <cmath>
#include <map>
#include <set>

namespace spyre::frontend {

namespace {

int64_t intAttr(const Node &n, const char *key, const std::string &where) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end() || it->second.isList)
    throw Error(where + ": needs " + key + "=<integer>");
  double v = it->second.scalar();
  if (v != std::floor(v))
    throw Error(where + ": " + key + " must be an integer");
  return static_cast<int64_t>(v);
}

/// select(%x, dim=d, index=i): x[.., i, ..] without dim d.
void decomposeSelect(Graph &g, const Node &n, std::vector<Node> &out) {
  const Value &x = g.values.at(n.inputs.at(0));
  const std::string where = "node %" + g.values[n.output].name + " = select";
  const int64_t r = static_cast<int64_t>(x.shape.size());
  int64_t d = intAttr(n, "dim", where), i = intAttr(n, "index", where);
  if (d < 0)
    d += r;
  if (r == 0 || d < 0 || d >= r)
    throw Error(where + ": dim out of range for a rank-" + std::to_string(r) + " tensor");
  if (i < 0)
    i += x.shape[d];
  if (i < 0 || i >= x.shape[d])
    throw Error(where + ": index out of range for dim " + std::to_string(d) + " of size " + std::to_string(x.shape[d]));
  std::vector<int64_t> squeezed = x.shape;
  squeezed.erase(squeezed.begin() + d);
  if (g.values[n.output].shape != squeezed || g.values[n.output].dtype != x.dtype)
    throw Error(where + ": the output must be x's dtype and shape without dim " + std::to_string(d));
  const std::string base = g.values[n.output].name;
  const HostType t = x.dtype;
  int cur = n.inputs[0];
  std::vector<int64_t> shape = x.shape;
  if (shape[d] != 1) {
    shape[d] = 1;
    int v = g.addValue(g.freshName(base + "_slice"), shape, t);
    out.push_back(
        {"slice", {cur}, v, {{"dim", Attr(double(d))}, {"start", Attr(double(i))}, {"end", Attr(double(i + 1))}}, {}});
    cur = v;
  }
  // The generic layout puts dim 0 inside the stick tile dim and the last dim in the stick:
  // there a size-1 dim changes the device order, elsewhere it is free.
  if (d == r - 1 && r >= 2) {
    std::swap(shape[r - 1], shape[r - 2]);
    int v = g.addValue(g.freshName(base + "_t"), shape, t);
    out.push_back({"transpose", {cur}, v, {}, {}});
    cur = v;
  } else if (d == 0 && r >= 3) {
    std::vector<double> perm;
    for (int64_t k = 0; k < r; ++k)
      perm.push_back(static_cast<double>(k == 0 ? 1 : k == 1 ? 0 : k));
    std::swap(shape[0], shape[1]);
    int v = g.addValue(g.freshName(base + "_p"), shape, t);
    out.push_back({"permute", {cur}, v, {{"dims", Attr(perm)}}, {}});
    cur = v;
  }
  out.push_back({"reshape", {cur}, n.output, {}, {}});
}

/// slice(%x, dim=last, .., step=k > 1): stepping along the stick dim would gather lanes, so the
/// stick dim is transposed out of the way, sliced as a row dim (a strided view), and
/// transposed back. Rank 1 goes through [1, n] (zero-copy reshapes).
void decomposeSteppedSlice(Graph &g, const Node &n, std::vector<Node> &out) {
  const Value &x = g.values.at(n.inputs.at(0));
  const std::string base = g.values[n.output].name;
  const HostType t = x.dtype;
  const std::vector<int64_t> ys = g.values[n.output].shape;
  int cur = n.inputs[0];
  std::vector<int64_t> shape = x.shape;
  const bool vec = shape.size() == 1;
  if (vec) {
    shape.insert(shape.begin(), 1);
    int v = g.addValue(g.freshName(base + "_row"), shape, t);
    out.push_back({"reshape", {cur}, v, {}, {}});
    cur = v;
  }
  const size_t r = shape.size();
  std::swap(shape[r - 1], shape[r - 2]);
  int tIn = g.addValue(g.freshName(base + "_t"), shape, t);
  out.push_back({"transpose", {cur}, tIn, {}, {}});
  Node sl = n;
  sl.inputs = {tIn};
  sl.attrs["dim"] = Attr(static_cast<double>(r - 2));
  shape[r - 2] = ys.back();
  sl.output = g.addValue(g.freshName(base + "_s"), shape, t);
  out.push_back(sl);
  std::swap(shape[r - 1], shape[r - 2]);
  if (!vec) {
    out.push_back({"transpose", {sl.output}, n.output, {}, {}});
    return;
  }
  int tOut = g.addValue(g.freshName(base + "_tt"), shape, t);
  out.push_back({"transpose", {sl.output}, tOut, {}, {}});
  out.push_back({"reshape", {tOut}, n.output, {}, {}});
}

/// constant_pad_nd(%x, pad=[..], value=v): torch's pad list starts at the last dim. Other dims:
/// a fill of the whole output and one copy into a view of it (whole sticks). The last (stick)
/// dim: a cat with filled blocks, whose copies merge the sticks they share (a plain copy into a
/// view would write x's padding lanes over the fill).
void decomposePad(Graph &g, const Node &n, std::vector<Node> &out) {
  const std::string name = g.values[n.output].name;
  const std::vector<int64_t> xs = g.values.at(n.inputs.at(0)).shape, os = g.values[n.output].shape;
  const HostType t = g.values[n.inputs[0]].dtype;
  const std::string where = "node %" + name + " = constant_pad_nd";
  auto it = n.attrs.find("pad");
  if (it == n.attrs.end() || it->second.values.size() % 2 != 0 || it->second.values.size() / 2 > xs.size())
    throw Error(where + ": needs pad=[..] with two entries per padded dim (last dim first)");
  const size_t r = xs.size();
  std::vector<int64_t> lo(r, 0), hi(r, 0), shape = xs;
  const auto &pad = it->second.values;
  for (size_t k = 0; k < pad.size() / 2; ++k) {
    if (pad[2 * k] < 0 || pad[2 * k + 1] < 0)
      throw Unsupported("constant_pad_nd with a negative pad (cropping) (" + where + ")");
    const size_t dim = r - 1 - k;
    lo[dim] = static_cast<int64_t>(pad[2 * k]);
    hi[dim] = static_cast<int64_t>(pad[2 * k + 1]);
    shape[dim] += lo[dim] + hi[dim];
  }
  if (os != shape || g.values[n.output].dtype != t)
    throw Error(where + ": the output must be x's dtype and padded shape");
  auto vit = n.attrs.find("value");
  const Attr value(vit == n.attrs.end() ? 0.0 : vit->second.scalar());
  const bool padLast = r > 0 && lo[r - 1] + hi[r - 1] > 0;
  int cur = n.inputs[0];
  std::vector<int64_t> inner = xs; // x padded on every dim but the last
  bool padOther = false;
  for (size_t d = 0; d + 1 < r; ++d) {
    inner[d] = shape[d];
    padOther |= lo[d] + hi[d] > 0;
  }
  if (padOther) {
    int c = g.addValue(g.freshName(name + "_fill"), {}, t);
    out.push_back({"full", {}, c, {{"value", value}}, {}});
    std::vector<double> offsets;
    for (size_t d = 0; d < r; ++d) // the last dim is padded by the cat below
      offsets.push_back(d + 1 < r ? static_cast<double>(lo[d]) : 0.0);
    int v = padLast ? g.addValue(g.freshName(name + "_rows"), inner, t) : n.output;
    out.push_back({"copy_into", {c, cur}, v, {{"offsets", Attr(offsets)}}, {}});
    cur = v;
  }
  if (padLast) {
    std::vector<int> parts;
    for (int64_t w : {lo[r - 1], int64_t{-1}, hi[r - 1]}) {
      if (w < 0) {
        parts.push_back(cur);
        continue;
      }
      if (w == 0)
        continue;
      std::vector<int64_t> block = inner;
      block[r - 1] = w;
      int c = g.addValue(g.freshName(name + "_fill"), block, t);
      out.push_back({"full", {}, c, {{"value", value}}, {}});
      parts.push_back(c);
    }
    out.push_back({"cat", parts, n.output, {{"dim", Attr(static_cast<double>(r - 1))}}, {}});
  } else if (!padOther) {
    out.push_back({"clone", {cur}, n.output, {}, {}});
  }
}

/// arange(start=a, step=s) : T[n] -> full(value=s), cumsum(dim=0), add(scalar=a - s) in fp32
/// (int32 for int T; both exact for integers up to 2^24), then a cast to an fp16/bf16 T.
void decomposeArange(Graph &g, const Node &n, std::vector<Node> &out) {
  const Value y = g.values[n.output];
  const std::string where = "node %" + y.name + " = arange";
  if (y.shape.size() != 1)
    throw Error(where + ": arange produces a rank-1 tensor");
  auto attr = [&](const char *k, double dflt) { return n.attrs.count(k) ? n.attrs.at(k).scalar() : dflt; };
  const double start = attr("start", 0), step = attr("step", 1);
  const bool ints = y.dtype == HostType::I32 || y.dtype == HostType::I64;
  if (!ints && y.dtype != HostType::F32 && y.dtype != HostType::F16 && y.dtype != HostType::BF16)
    throw Unsupported("arange of " + std::string(dtypeShortName(y.dtype)) + " (" + where + ")");
  const HostType c = ints ? y.dtype : HostType::F32;
  const int fill = g.addValue(g.freshName(y.name + "_step"), y.shape, c);
  out.push_back({"full", {}, fill, {{"value", Attr(step)}}, {}});
  const int sum = g.addValue(g.freshName(y.name + "_sum"), y.shape, c);
  out.push_back({"cumsum", {fill}, sum, {{"dim", Attr(0.0)}}, {}});
  if (c == y.dtype) {
    out.push_back({"add", {sum}, n.output, {{"scalar", Attr(start - step)}}, {}});
    return;
  }
  const int shifted = g.addValue(g.freshName(y.name + "_f32"), y.shape, c);
  out.push_back({"add", {sum}, shifted, {{"scalar", Attr(start - step)}}, {}});
  out.push_back({"to_dtype", {shifted}, n.output, {}, {}});
}

/// Elements per stick of a dtype's device format.
int64_t lanesOf(HostType t, const std::string &what = "a value") {
  return elemsPerStick(detail::deviceFormatOrInt(t, what));
}

/// Elements per stick of a value's device format.
int64_t laneCount(const Graph &g, int v) { return lanesOf(g.values[v].dtype, "%" + g.values[v].name); }

/// The 32-lane 0 / 1 behind bools (splitLaneGeometry).
struct ZeroOnes {
  std::map<int, int> of;                     ///< bool -> the comparison's 0 / 1 it was cast from
  std::map<std::pair<int, int>, int> as;     ///< (bool, dtype) -> its 0 / 1 converted to dtype
  /// The bool b as a 0 / 1 of dtype t already made, or -1.
  int find(const Graph &g, int b, HostType t) const {
    auto it = of.find(b);
    if (it == of.end())
      return -1;
    if (g.values[it->second].dtype == t)
      return it->second;
    auto conv = as.find({b, static_cast<int>(t)});
    return conv == as.end() ? -1 : conv->second;
  }
};

/// bool lives in DL16 sticks (64 lanes), fp32 and int32 in 32-lane sticks: ops mixing the two
/// geometries go through a conversion kernel so every elementwise kernel has one geometry.
/// - to_dtype(x -> bool) of a non-bool x is ne(x, 0) (then the rule below);
/// - a comparison of 32-lane operands produces 0 / 1 in their dtype, then to_dtype(bool);
/// - where(bool cond, 32-lane a, b) first converts cond to the values' dtype (0 / 1).
/// A bool made by the second rule is remembered with its 32-lane 0 / 1 (`zeroOnes`): a where or
/// a to_dtype reading it from 32 lanes reads that 0 / 1 instead (converted once per dtype when
/// its dtype is another), so routing's int32 compare -> where is two kernels of one geometry,
/// which fuse, not four with a DL16 round trip between them (the bool's own cast is then dead
/// code unless something else reads it). False (nothing appended) when n needs none of these.
bool splitLaneGeometry(Graph &g, const Node &n, std::vector<Node> &out, ZeroOnes &zeroOnes) {
  const OpInfo *op = findOp(n.op);
  if (!op || n.inputs.empty())
    return false;
  const Value y = g.values[n.output]; // a copy: addValue below may move g.values
  const int x = n.inputs[0];
  // The bool x as 0 / 1 of y's dtype, in `into` (or a fresh value when -1).
  auto zeroOneAs = [&](int into) {
    const int known = zeroOnes.find(g, x, y.dtype);
    if (known >= 0 && into < 0)
      return known;
    const int src = zeroOnes.of.count(x) && laneCount(g, zeroOnes.of.at(x)) == laneCount(g, n.output) ? zeroOnes.of.at(x) : x;
    const int v = into >= 0 ? into : g.addValue(g.freshName(y.name + "_cond"), g.values[x].shape, y.dtype);
    out.push_back({g.values[src].dtype == y.dtype ? "clone" : "to_dtype", {src}, v, {}, {}});
    if (src != x)
      zeroOnes.as[{x, static_cast<int>(y.dtype)}] = v;
    return v;
  };
  if (op->id == OpId::ToDtype && y.dtype == HostType::Bool && g.values[x].dtype != HostType::Bool) {
    Node ne{"ne", {x}, n.output, {{"scalar", Attr(0.0)}}, {}};
    if (!splitLaneGeometry(g, ne, out, zeroOnes))
      out.push_back(ne);
    return true;
  }
  if (op->id == OpId::ToDtype && zeroOnes.of.count(x) && laneCount(g, x) != laneCount(g, n.output)) {
    zeroOneAs(n.output);
    return true;
  }
  if (op->cls == OpClass::Comparison && y.dtype == HostType::Bool && laneCount(g, x) != laneCount(g, n.output)) {
    Node cmp = n;
    // int64 is int32 on the card: an int64 comparison's 0 / 1 is int32 (its readers fuse)
    const HostType t = g.values[x].dtype == HostType::I64 ? HostType::I32 : g.values[x].dtype;
    cmp.output = g.addValue(g.freshName(y.name + "_01"), y.shape, t);
    out.push_back(cmp);
    out.push_back({"to_dtype", {cmp.output}, n.output, {}, {}});
    zeroOnes.of[n.output] = cmp.output;
    return true;
  }
  if (op->id == OpId::Where && g.values[x].dtype == HostType::Bool && laneCount(g, x) != laneCount(g, n.output)) {
    Node w = n;
    w.inputs[0] = zeroOneAs(-1);
    out.push_back(w);
    return true;
  }
  return false;
}

/// How many nodes (and graph outputs) read each value.
std::map<int, int> useCounts(const Graph &g) {
  std::map<int, int> uses;
  for (const Node &n : g.nodes)
    for (int in : n.inputs)
      ++uses[in];
  for (int o : g.outputs)
    ++uses[o];
  return uses;
}

/// Sinks reshapes that only drop leading unit dims (x [1, S, K] -> [S, K]) below the matmuls
/// and elementwise ops that read them, so those run on x's shape and the reshape moves down.
/// aten.linear on a contiguous 3-d input with a bias is view(x, [S, K]) -> addmm -> view back:
/// in the generic stick layout (dim 0 innermost) [1, S, K] and [S, K] order their sticks
/// differently, so each view was a copy kernel (BERT, ViT, GPT-2, Qwen2's q/k/v). Sunk, the
/// views meet and collapse (collapseReshapeChains) into a reshape of unchanged device bytes,
/// which aliases. Only a reshape read once is sunk (no op runs twice), ops of rank <= 4 result.
void sinkUnitDimReshapes(Graph &g) {
  std::map<int, int> uses = useCounts(g);
  struct Dropped {
    int source;
    size_t k; // leading unit dims dropped
  };
  std::map<int, Dropped> dropped; // reshape output -> its source
  std::vector<Node> out;
  for (Node &n : g.nodes) {
    const Value &ov = g.values[n.output];
    if (isOp(n.op, OpId::Reshape) && n.inputs.size() == 1) {
      const Value &iv = g.values[n.inputs[0]];
      const size_t k = iv.shape.size() - std::min(iv.shape.size(), ov.shape.size());
      if (k > 0 && iv.dtype == ov.dtype && std::equal(ov.shape.begin(), ov.shape.end(), iv.shape.begin() + k) &&
          std::all_of(iv.shape.begin(), iv.shape.begin() + k, [](int64_t d) { return d == 1; }))
        dropped[n.output] = {n.inputs[0], k};
      out.push_back(std::move(n));
      continue;
    }
    const OpInfo *op = findOp(n.op);
    const bool matmul = op && op->cls == OpClass::Matmul && n.inputs.size() == 2 &&
                        g.values[n.inputs[1]].shape.size() == 2 && !dropped.count(n.inputs[1]);
    const bool elementwise = op && (op->isElementwise() || op->cls == OpClass::Convert);
    size_t k = 0;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (auto it = dropped.find(n.inputs[i]); it != dropped.end() && uses[n.inputs[i]] == 1 &&
                                               (elementwise || (matmul && i == 0)))
        k = std::max(k, it->second.k);
    if (k == 0 || ov.shape.size() + k > 4) {
      out.push_back(std::move(n));
      continue;
    }
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (auto it = dropped.find(n.inputs[i]); it != dropped.end() && uses[n.inputs[i]] == 1 &&
                                               (elementwise || i == 0)) {
        --uses[n.inputs[i]];
        n.inputs[i] = it->second.source;
        ++uses[n.inputs[i]];
      }
    std::vector<int64_t> shape(k, 1);
    shape.insert(shape.end(), ov.shape.begin(), ov.shape.end());
    const int orig = n.output;
    const HostType dt = ov.dtype;
    const int wide = g.addValue(g.freshName(g.values[orig].name + "_u"), shape, dt);
    n.output = wide;
    out.push_back(std::move(n));
    Node r;
    r.op = "reshape";
    r.inputs = {wide};
    r.output = orig;
    uses[wide] = 1;
    dropped[orig] = {wide, k};
    out.push_back(std::move(r));
  }
  g.nodes = std::move(out);
}

/// reshape(reshape(x)) -> reshape(x) when the inner value has no other use (the inner reshape
/// is then dead code).
void collapseReshapeChains(Graph &g) {
  std::map<int, int> uses = useCounts(g);
  std::map<int, int> sourceOf; // reshape output -> reshape input
  std::map<int, int> same;     // a reshape to its input's own shape -> that input
  const std::set<int> outputs(g.outputs.begin(), g.outputs.end());
  for (Node &n : g.nodes) {
    for (int &in : n.inputs)
      if (auto it = same.find(in); it != same.end())
        in = it->second;
    if (isOp(n.op, OpId::Reshape) && n.inputs.size() == 1) {
      auto it = sourceOf.find(n.inputs[0]);
      if (it != sourceOf.end() && uses[n.inputs[0]] == 1)
        n.inputs[0] = it->second;
      sourceOf[n.output] = n.inputs[0];
      // What is left of a chain that ends where it began (sunk linear views) is no op: its
      // readers read the input (so a matmul epilogue or fusion group sees the op behind it).
      const Value &in = g.values[n.inputs[0]], &out = g.values[n.output];
      if (in.shape == out.shape && in.dtype == out.dtype && !outputs.count(n.output))
        same[n.output] = n.inputs[0];
    }
  }
  eliminateDeadCode(g);
}

/// Whether `n` gives its one input unchanged, bit for bit: an expand to the input's own shape
/// (aten.matmul's decomposition expands both operands to the batch shape they already have), or
/// arithmetic with an identity constant of the same type: x * 1, x / 1, x - (+0) (not x + 0:
/// -0 + 0 is +0). Models write these as configurable multipliers (GraniteMoE's embedding,
/// residual and logits multipliers of 1; sdpa's sqrt(scale) for scale 1).
bool isNoOp(const Graph &g, const Node &n) {
  if (n.inputs.size() != 1 || g.values[n.inputs[0]].shape != g.values[n.output].shape ||
      g.values[n.inputs[0]].dtype != g.values[n.output].dtype)
    return false;
  if (isOp(n.op, OpId::Expand))
    return true;
  if (n.attrs.size() != 1 || !n.attrs.count("scalar") || n.attrs.at("scalar").isRuntime())
    return false;
  const double c = n.attrs.at("scalar").values.at(0);
  if (isOp(n.op, OpId::Mul) || isOp(n.op, OpId::Div))
    return c == 1.0;
  if (isOp(n.op, OpId::Sub))
    return c == 0.0 && !std::signbit(c);
  return false;
}

} // namespace

void decomposeOps(Graph &g) {
  std::vector<Node> nodes;
  // A node that gives its input unchanged (isNoOp) goes: its readers read the input instead (a
  // graph output keeps a clone, its copy into the output buffer). A clone likewise (below).
  std::map<int, int> sameAs;
  const std::set<int> outputs(g.outputs.begin(), g.outputs.end());
  std::vector<Node> returnedClones;
  ZeroOnes zeroOnes; // the 32-lane 0 / 1 behind bools (splitLaneGeometry)
  // n as one op per kernel, appended to nodes.
  auto lower = [&](const Node &n) {
    std::vector<Node> parts;
    if (isOp(n.op, OpId::Select) && n.inputs.size() == 1)
      decomposeSelect(g, n, parts);
    else if (isOp(n.op, OpId::Arange))
      decomposeArange(g, n, parts);
    else if (isOp(n.op, OpId::ConstantPadNd) && n.inputs.size() == 1)
      decomposePad(g, n, parts);
    else if (isOp(n.op, OpId::Slice) && n.inputs.size() == 1 && !g.values[n.inputs[0]].shape.empty() &&
             n.attrs.count("step") && n.attrs.at("step").scalar() != 1 &&
             n.attrs.count("dim") && static_cast<size_t>(n.attrs.at("dim").scalar()) + 1 == g.values[n.inputs[0]].shape.size())
      decomposeSteppedSlice(g, n, parts);
    else if (!splitLaneGeometry(g, n, parts, zeroOnes))
      parts.push_back(n);
    // Every resulting op on more than 4 dims runs on fewer between reshapes where it can.
    for (const Node &p : parts)
      if (!detail::reduceRank(g, p, nodes))
        nodes.push_back(p);
  };
  for (const Node &orig : g.nodes) {
    Node n = orig;
    for (int &in : n.inputs)
      if (auto it = sameAs.find(in); it != sameAs.end())
        in = it->second;
    // A clone is no op either (every op is pure): its readers read its input, so the producer's
    // fusion group or matmul epilogue sees them (HF's KV cache: cat of an empty cache with the new
    // keys is a clone the graph returns, and the attention reads it). A clone that is returned
    // keeps its kernel, the copy into the output buffer, and moves to the end of the graph (no
    // node reads it now; a fusion group may then take its input's other readers); any other goes.
    if (isOp(n.op, OpId::Clone) && n.inputs.size() == 1 && n.attrs.empty() &&
        g.values[n.inputs[0]].shape == g.values[n.output].shape &&
        g.values[n.inputs[0]].dtype == g.values[n.output].dtype) {
      sameAs[n.output] = n.inputs[0];
      if (outputs.count(n.output))
        returnedClones.push_back(n);
      continue;
    }
    // A bool's to_dtype to a 0 / 1 already made (the comparison's own, or its conversion for
    // another reader) is that 0 / 1.
    if (isOp(n.op, OpId::ToDtype) && n.inputs.size() == 1 && !outputs.count(n.output))
      if (const int v = zeroOnes.find(g, n.inputs[0], g.values[n.output].dtype); v >= 0) {
        sameAs[n.output] = v;
        continue;
      }
    if (isNoOp(g, n)) {
      if (!outputs.count(n.output)) {
        sameAs[n.output] = n.inputs[0];
        continue;
      }
      n.op = "clone";
      n.attrs.clear();
    }
    lower(n);
  }
  for (const Node &n : returnedClones)
    lower(n);
  g.nodes = std::move(nodes);
  sinkUnitDimReshapes(g);
  collapseReshapeChains(g);
}

} // namespace spyre::frontend
