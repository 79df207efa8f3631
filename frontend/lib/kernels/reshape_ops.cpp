// reshape (aten view / _unsafe_view in compiled graphs). A contiguous tensor's generic stick
// layout (SpyreTensorLayout(size), device dims [d1..d(k-2), ceil(d(k-1)/eps), d0] + elements)
// often puts the elements of the reshaped tensor at exactly the same device bytes: then the
// reshape is a copy of the whole buffer (an identity SuperDSC over the input's dims whose
// output has the same bytes). A reshape that keeps the last dim but merges or splits leading
// dims (the [B, S, H] <-> [B*S, H] of a linear layer on a batch) keeps every stick whole and
// only reorders sticks: the generic layout puts dim 0 inside the stick tiles, so
// f16[2, 64, 256] and f16[128, 256] order their sticks differently. That is a restickify that
// keeps the stick dim (ReStickifyOpHBM on the SFP, each tensor walked in its own layout) over
// the common refinement of both shapes' leading dims. A reshape that changes the row length
// moves elements between lanes: 2-d [R, L] -> [R', L'] with one row count dividing the other
// is one SuperDSC `reshape` (packed and unpacked with ldu/stu, backend_reshape.cpp); any other
// reshape left after layout propagation becomes a chain of such kernels through [R, L],
// [1, R*L] and [R', L'] (expandLaneMovingReshapes).
#include "kernels.h"
#include "spyre/frontend/ops.h"
#include "spyre/frontend/compiler.h"
#include "spyre/isa/error.h"
#include "spyre/frontend/work_division.h"
#include <algorithm>
#include <numeric>
#include <optional>

namespace spyre::frontend::detail {

namespace {

std::string shapeText(const std::vector<int64_t> &s) {
  std::string t;
  for (size_t i = 0; i < s.size(); ++i)
    t += (i ? ", " : "") + std::to_string(s[i]);
  return t;
}

struct StickPos {
  int64_t stick, lane;
};

/// [d0, d1 * .. * d(k-2), L] for a shape of more than 4 dims: its generic layout (device dims
/// [d1 .. d(k-2), tiles, d0]) has the same bytes, so a reshape of such a shape runs as a reshape
/// of this one, which the kernels take; shapes of at most 4 dims unchanged.
std::vector<int64_t> canonicalShape(const std::vector<int64_t> &s) {
  if (s.size() <= 4)
    return s;
  int64_t mid = 1;
  for (size_t d = 1; d + 1 < s.size(); ++d)
    mid *= s[d];
  return {s.front(), mid, s.back()};
}

/// Stick index and lane of host element `idx` (row-major coords) in the generic layout.
StickPos stickOf(const std::vector<int64_t> &shape, const std::vector<int64_t> &idx, int64_t eps) {
  const size_t k = shape.size();
  if (k <= 1)
    return {k ? idx[0] / eps : 0, k ? idx[0] % eps : 0};
  const int64_t T = (shape[k - 1] + eps - 1) / eps;
  int64_t s = 0;
  for (size_t d = 1; d + 1 < k; ++d)
    s = s * shape[d] + idx[d];
  s = (s * T + idx[k - 1] / eps) * shape[0] + idx[0];
  return {s, idx[k - 1] % eps};
}


} // namespace
} // namespace spyre::frontend::detail

namespace spyre::frontend {

namespace {

/// The generic layout's stick index of row r (row-major over the leading dims), tile t, for a
/// shape whose dim 0 has `d0` rows and whose middle dims hold `mid` rows: device dims are
/// [middle dims, tile, dim 0], so S(r, t) = ((r % mid) * tiles + t) * d0 + r / mid.
struct RowOrder {
  int64_t d0, mid;
};

RowOrder rowOrderOf(const std::vector<int64_t> &shape) {
  if (shape.size() <= 1)
    return {1, 1}; // [N] is stored as [1, N]
  int64_t mid = 1;
  for (size_t d = 1; d + 1 < shape.size(); ++d)
    mid *= shape[d];
  return {shape[0], mid};
}

/// S_a(r, t) == S_b(r, t) for every row r < rows and tile t < tiles: equal when dim 0 has the
/// same size (then the middle dims hold as many rows); otherwise both must be the identity
/// r -> r, which needs one tile and dim 0 or the middle dims of size 1 on each side (any
/// other pair differs at row 1: S = d0 * tiles or 1).
bool sameRowOrder(RowOrder a, RowOrder b, int64_t rows, int64_t tiles) {
  if (a.d0 == b.d0 || rows <= 1)
    return true;
  auto identity = [&](RowOrder o) { return o.d0 == 1 || o.mid == 1; };
  return tiles == 1 && identity(a) && identity(b);
}

} // namespace

bool reshapeKeepsDeviceBytes(const std::vector<int64_t> &from, const std::vector<int64_t> &to, int64_t eps) {
  auto numel = [](const std::vector<int64_t> &s) {
    return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
  };
  if (numel(from) != numel(to) || numel(to) == 0)
    return false;
  std::vector<int64_t> a = from.empty() ? std::vector<int64_t>{1} : from;
  std::vector<int64_t> b = to.empty() ? std::vector<int64_t>{1} : to;
  const int64_t lastA = a.back(), lastB = b.back();
  std::vector<int64_t> lead(b.begin(), b.end() - 1);
  const int64_t tiles = (lastB + eps - 1) / eps, rows = numel(lead);
  // Same row length: every stick of b is the stick of a with the same row and tile (same
  // lanes, same padding); the two layouts only order the rows. Closed form, O(rank): the scan
  // below visits every stick, which took seconds on tensors of millions of sticks.
  if (lastA == lastB)
    return sameRowOrder(rowOrderOf(a), rowOrderOf(b), rows, tiles);
  // Every stick of b: its first element must start a stick of a at the same stick index, with
  // the same number of valid lanes (so padding lanes coincide as well).
  int64_t sticksA = numel(std::vector<int64_t>(a.begin(), a.end() - 1)) * ((lastA + eps - 1) / eps);
  if (sticksA != rows * tiles)
    return false;
  std::vector<int64_t> ib(b.size()), ia(a.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t < tiles; ++t) {
      int64_t rest = r;
      for (size_t d = lead.size(); d-- > 0;)
        ib[d] = rest % lead[d], rest /= lead[d];
      ib.back() = t * eps;
      rest = r * lastB + t * eps;
      for (size_t d = a.size(); d-- > 0;)
        ia[d] = rest % a[d], rest /= a[d];
      detail::StickPos pb = detail::stickOf(b, ib, eps), pa = detail::stickOf(a, ia, eps);
      int64_t validB = std::min(eps, lastB - t * eps), validA = std::min(eps, lastA - ia.back());
      if (pa.lane != 0 || pa.stick != pb.stick || validA != validB)
        return false;
    }
  return true;
}

} // namespace spyre::frontend

namespace spyre::frontend::detail {

namespace {

/// The common row-major refinement of two shapes with the same element count: dims f such
/// that every dim of `a` and of `b` is a product of consecutive f dims (groups, outer ->
/// inner). Empty optional when there is none ([6, 4] vs [4, 6]). Size-1 dims get empty groups.
struct Refinement {
  std::vector<int64_t> dims;
  std::vector<std::vector<int>> groupsA, groupsB;
};

std::optional<Refinement> commonRefinement(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  Refinement r;
  r.groupsA.resize(a.size());
  r.groupsB.resize(b.size());
  size_t i = 0, j = 0;
  int64_t ra = a.empty() ? 1 : a[0], rb = b.empty() ? 1 : b[0];
  for (;;) {
    while (i < a.size() && ra == 1 && ++i < a.size())
      ra = a[i];
    while (j < b.size() && rb == 1 && ++j < b.size())
      rb = b[j];
    if (i >= a.size() || j >= b.size())
      return (i >= a.size()) == (j >= b.size()) ? std::optional<Refinement>(r) : std::nullopt;
    const int64_t f = std::min(ra, rb);
    if (std::max(ra, rb) % f != 0)
      return std::nullopt;
    r.groupsA[i].push_back(static_cast<int>(r.dims.size()));
    r.groupsB[j].push_back(static_cast<int>(r.dims.size()));
    r.dims.push_back(f);
    ra /= f;
    rb /= f;
  }
}

/// The generic stick layout of a shape whose leading dims are groups of refinement labels:
/// genericLayout's order [d0, stick, d(k-2) .. d1] with each dim spelled as its group, inner ->
/// outer.
isa::SdscLayout groupedGenericLayout(const std::vector<std::vector<int>> &groups, const std::vector<std::string> &labels,
                                     int64_t eps) {
  isa::SdscLayout lay;
  auto add = [&](const std::vector<int> &grp) {
    for (auto it = grp.rbegin(); it != grp.rend(); ++it)
      lay.layoutDimOrder.push_back(labels[static_cast<size_t>(*it)]);
  };
  if (!groups.empty())
    add(groups[0]);
  lay.layoutDimOrder.push_back(labels.back());
  for (size_t d = groups.size(); d-- > 1;)
    add(groups[d]);
  lay.stickDimOrder = {labels.back()};
  lay.stickSize = {eps};
  return lay;
}

/// A reshape keeping the last dim, as a stick-reordering restickify over the refinement of the
/// leading dims; nullopt if the reshape moves lanes or has no such form.
std::optional<KernelDraft> stickReorderingReshape(const Value &in, const Value &out, int inV, int outV, size_t index,
                                                  int maxCores, DataFormat fmt) {
  if (in.shape.empty() || out.shape.empty() || in.shape.back() != out.shape.back())
    return std::nullopt;
  const std::vector<int64_t> leadA(in.shape.begin(), in.shape.end() - 1), leadB(out.shape.begin(), out.shape.end() - 1);
  const std::optional<Refinement> ref = commonRefinement(leadA, leadB);
  if (!ref || ref->dims.size() + 1 > 4)
    return std::nullopt;
  const int64_t eps = elemsPerStick(fmt);
  std::vector<int64_t> N = ref->dims;
  N.push_back(in.shape.back());
  const size_t r = N.size();
  const std::vector<std::string> labels = dimLabels(r);
  const std::vector<int64_t> adjusted = stickAdjusted(N, eps);
  auto splits = divideWorkWithSpan(adjusted, std::vector<bool>(r, true), {}, maxCores);
  KernelDraft kd = newDraft(index, "ReStickifyOpHBM", "sfp", labels, N, splits, "reshape");
  kd.s.primaryDsInfo["INPUT"] = groupedGenericLayout(ref->groupsA, labels, eps);
  kd.s.primaryDsInfo["OUTPUT"] = groupedGenericLayout(ref->groupsB, labels, eps);
  addCopyOperands(kd, inV, outV, fmt, "INPUT", "OUTPUT", perCoreElems(N, splits, {r - 1}, eps));
  return kd;
}

/// A reshape of 2-d [R, L] to [R', L'] (L != L', one of R, R' dividing the other) that moves
/// elements between lanes: SuperDSC op `reshape` over the common refinement [p, k, q]
/// (backend_reshape.cpp); each tensor's stick dims are the dims of its row.
std::optional<KernelDraft> laneMovingReshape(const Value &in, const Value &out, int inV, int outV, size_t index,
                                             int maxCores, DataFormat fmt) {
  if (in.shape.size() != 2 || out.shape.size() != 2 || in.shape[1] == out.shape[1])
    return std::nullopt;
  const int64_t R = in.shape[0], L = in.shape[1], Ro = out.shape[0], Lo = out.shape[1];
  if (R < 1 || Ro < 1 || (Ro % R != 0 && R % Ro != 0))
    return std::nullopt;
  const bool moreRows = Ro % R == 0; // [R, k*L'] -> [R*k, L']
  const std::vector<int64_t> N = moreRows ? std::vector<int64_t>{R, Ro / R, Lo} : std::vector<int64_t>{Ro, R / Ro, L};
  const std::vector<std::string> labels = dimLabels(3);
  const int64_t eps = elemsPerStick(fmt);
  auto layout = [&](size_t rowDims) {
    isa::SdscLayout lay;
    for (size_t d = rowDims; d-- > 0;)
      lay.layoutDimOrder.push_back(labels[d]);
    for (size_t d = 3; d-- > rowDims;)
      lay.layoutDimOrder.push_back(labels[d]);
    lay.stickDimOrder.assign(labels.begin() + static_cast<std::ptrdiff_t>(rowDims), labels.end());
    lay.stickSize = {eps};
    return lay;
  };
  // p is divided first (every core owns whole rows of both tensors); cores left idle take
  // slices of k whose other side starts and ends on a stick (k / ks a multiple of
  // eps / gcd(q, eps)), so each core moves whole sticks of the side it does not split.
  auto splits = divideWorkWithSpan(N, {true, false, false}, {}, maxCores);
  const int64_t quantum = eps / std::gcd(N[2], eps);
  if (N[1] % quantum == 0)
    splits[1] = largestDivisor(N[1] / quantum, maxCores / splits[0]);
  KernelDraft kd = newDraft(index, "reshape", "sfp", labels, N, splits, "reshape");
  kd.s.primaryDsInfo["INPUT"] = layout(moreRows ? 1 : 2);
  kd.s.primaryDsInfo["OUTPUT"] = layout(moreRows ? 2 : 1);
  addCopyOperands(kd, inV, outV, fmt, "INPUT", "OUTPUT", perCoreElems(N, splits, {}, eps));
  // Start addresses: placeTensor knows one stick dim per tensor, and the row that spans (k, q)
  // starts k0*q elements in, on a stick. A core at (p0, k0) starts at row p0*k + k0 on the
  // split side and at row p0, stick tile k0*q/eps on the other (backend_reshape.cpp checks).
  const int64_t pPer = N[0] / splits[0], kPer = N[1] / splits[1];
  for (int c = 0; c < kd.s.numCoresUsed; ++c) {
    const int64_t p0 = kd.s.coreIdToWkSlice[c][0] * pPer, k0 = kd.s.coreIdToWkSlice[c][1] * kPer;
    const int64_t split = p0 * N[1] + k0, whole = (k0 * N[2] / eps) * (moreRows ? R : Ro) + p0;
    for (int t = 0; t < 2; ++t) {
      isa::SdscTensor &ts = kd.s.labeledDs[static_cast<size_t>(t)];
      const int64_t sticks = (t == 0) == moreRows ? whole : split;
      ts.startAddress[c] =
          static_cast<uint64_t>(ts.ldsIdx) * isa::kSegmentBytes + static_cast<uint64_t>(sticks) * kStickBytes;
    }
  }
  return kd;
}

bool expandLaneMovingReshape(Graph &g, const Node &n, std::vector<Node> &nodes) {
  if (!isOp(n.op, OpId::Reshape) || n.inputs.size() != 1)
    return false;
  const Value &x = g.values.at(n.inputs[0]), &y = g.values.at(n.output);
  if (x.dtype != y.dtype || (x.dtype != HostType::F16 && x.dtype != HostType::BF16 && x.dtype != HostType::F32 &&
                             x.dtype != HostType::I32 && x.dtype != HostType::I64))
    return false;
  auto numel = [](const std::vector<int64_t> &s) {
    return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
  };
  const HostType dtype = x.dtype; // x and y dangle once addValue grows g.values
  const int64_t total = numel(x.shape), eps = elemsPerStick(deviceFormatOrInt(dtype, "node %" + y.name + " = reshape"));
  if (total <= 0 || total != numel(y.shape) || reshapeKeepsDeviceBytes(x.shape, y.shape, eps))
    return false;
  const int64_t L = x.shape.empty() ? 1 : x.shape.back(), Lo = y.shape.empty() ? 1 : y.shape.back();
  if (L == Lo && !x.shape.empty() && !y.shape.empty()) {
    auto ref = commonRefinement({x.shape.begin(), x.shape.end() - 1}, {y.shape.begin(), y.shape.end() - 1});
    if (ref && ref->dims.size() + 1 <= 4)
      return false; // one stick-reordering restickify (at most 4 dims)
  }
  if ((x.shape.size() == 2 && y.shape.size() == 2) &&
      (y.shape[0] % x.shape[0] == 0 || x.shape[0] % y.shape[0] == 0))
    return false; // one lane-moving kernel
  // x -> [R, L] (whole sticks) -> [R', L'] (lanes move; through [1, R*L] when neither row
  // count divides the other) -> y (whole sticks).
  const int out = n.output, in = n.inputs[0];
  if (x.shape.size() > 4 || y.shape.size() > 4) { // through the shapes of at most 3 dims with the same bytes
    const std::vector<int64_t> cx = canonicalShape(x.shape), cy = canonicalShape(y.shape);
    int a = cx == x.shape ? in : g.addValue(g.freshName(y.name + "_rs"), cx, dtype);
    if (a != in)
      nodes.push_back({"reshape", {in}, a, {}, {}});
    int b = cy == g.values[out].shape ? out : g.addValue(g.freshName(g.values[out].name + "_rs"), cy, dtype);
    Node mid{"reshape", {a}, b, {}, {}};
    if (!expandLaneMovingReshape(g, mid, nodes))
      nodes.push_back(mid);
    if (b != out)
      nodes.push_back({"reshape", {b}, out, {}, {}});
    return true;
  }
  std::vector<std::vector<int64_t>> chain{x.shape, {total / L, L}};
  if (L != Lo && (total / Lo) % (total / L) != 0 && (total / L) % (total / Lo) != 0)
    chain.push_back({1, total});
  chain.push_back({total / Lo, Lo});
  chain.push_back(y.shape);
  chain.erase(std::unique(chain.begin(), chain.end()), chain.end());
  int cur = in;
  const std::string base = y.name;
  for (size_t i = 1; i < chain.size(); ++i) {
    const bool last = i + 1 == chain.size();
    int v = last ? out : g.addValue(g.freshName(base + "_rs"), chain[i], dtype);
    nodes.push_back({"reshape", {cur}, v, {}, {}});
    cur = v;
  }
  return true;
}

} // namespace

void expandLaneMovingReshapes(Graph &g) {
  std::vector<Node> nodes;
  for (const Node &n : g.nodes)
    if (!expandLaneMovingReshape(g, n, nodes))
      nodes.push_back(n);
  g.nodes = std::move(nodes);
}

KernelDraft reshapeKernel(const Graph &g, const Node &n, size_t index, int maxCores) {
  const Value &in = g.values.at(n.inputs.at(0)), &out = g.values[n.output];
  const std::string where = "node %" + out.name + " = reshape";
  if (in.dtype != out.dtype)
    throw Error(where + ": reshape keeps the dtype");
  const DataFormat fmt = deviceFormatOrInt(in.dtype, where);
  const int64_t eps = elemsPerStick(fmt);
  if (in.shape.size() > 4 || out.shape.size() > 4) { // the same reshape on shapes of <= 3 dims with the same bytes
    Graph shadow = g;
    shadow.values[n.inputs[0]].shape = canonicalShape(in.shape);
    shadow.values[n.output].shape = canonicalShape(out.shape);
    return reshapeKernel(shadow, n, index, maxCores);
  }
  if (!reshapeKeepsDeviceBytes(in.shape, out.shape, eps)) {
    if (auto kd = stickReorderingReshape(in, out, n.inputs[0], n.output, index, maxCores, fmt))
      return *kd;
    if (auto kd = laneMovingReshape(in, out, n.inputs[0], n.output, index, maxCores, fmt))
      return *kd;
    throw Unsupported("reshape of [" + shapeText(in.shape) + "] to [" + shapeText(out.shape) +
                      "] that moves elements between sticks (" + where + ")");
  }
  // The same bytes: a copy over the input's dims, written to the output's buffer.
  Graph shadow = g;
  int copy = shadow.addValue(out.name, in.shape, in.dtype);
  Node clone{"clone", {n.inputs[0]}, copy, {}};
  KernelDraft kd = pointwiseKernel(shadow, clone, index, maxCores);
  for (int &v : kd.tensorValues)
    if (v == copy)
      v = n.output;
  return kd;
}

} // namespace spyre::frontend::detail
