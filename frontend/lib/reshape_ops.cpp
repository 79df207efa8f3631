// reshape (aten view / _unsafe_view in compiled graphs). A contiguous tensor's generic stick
// layout (SpyreTensorLayout(size), device dims [d1..d(k-2), ceil(d(k-1)/eps), d0] + elements)
// often puts the elements of the reshaped tensor at exactly the same device bytes: then the
// reshape is a copy of the whole buffer (an identity SuperDSC over the input's dims whose
// output has the same bytes). Reshapes that move elements between sticks are Unsupported
// (they run as views outside the compiled partitions, restaged through the host).
#include "kernel_draft.h"
#include "spyre/frontend/compiler.h"
#include "spyre/isa/error.h"
#include <numeric>

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

std::vector<int64_t> unravel(int64_t linear, const std::vector<int64_t> &shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = linear % shape[d];
    linear /= shape[d];
  }
  return idx;
}

} // namespace
} // namespace spyre::frontend::detail

namespace spyre::frontend {

bool reshapeKeepsDeviceBytes(const std::vector<int64_t> &from, const std::vector<int64_t> &to, int64_t eps) {
  auto numel = [](const std::vector<int64_t> &s) {
    return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
  };
  if (numel(from) != numel(to) || numel(to) == 0)
    return false;
  std::vector<int64_t> a = from.empty() ? std::vector<int64_t>{1} : from;
  std::vector<int64_t> b = to.empty() ? std::vector<int64_t>{1} : to;
  const int64_t lastA = a.back(), lastB = b.back();
  // Every stick of b: its first element must start a stick of a at the same stick index, with
  // the same number of valid lanes (so padding lanes coincide as well).
  std::vector<int64_t> lead(b.begin(), b.end() - 1);
  const int64_t tiles = (lastB + eps - 1) / eps, rows = numel(lead);
  int64_t sticksA = numel(std::vector<int64_t>(a.begin(), a.end() - 1)) * ((lastA + eps - 1) / eps);
  if (sticksA != rows * tiles)
    return false;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t < tiles; ++t) {
      std::vector<int64_t> ib = detail::unravel(r, lead);
      ib.push_back(t * eps);
      int64_t linear = r * lastB + t * eps;
      std::vector<int64_t> ia = detail::unravel(linear, a);
      detail::StickPos pb = detail::stickOf(b, ib, eps), pa = detail::stickOf(a, ia, eps);
      int64_t validB = std::min(eps, lastB - t * eps), validA = std::min(eps, lastA - ia.back());
      if (pa.lane != 0 || pa.stick != pb.stick || validA != validB)
        return false;
    }
  return true;
}

} // namespace spyre::frontend

namespace spyre::frontend::detail {

KernelDraft reshapeKernel(const Graph &g, const Node &n, size_t index, int maxCores) {
  const Value &in = g.values.at(n.inputs.at(0)), &out = g.values[n.output];
  const std::string where = "node %" + out.name + " = reshape";
  if (in.dtype != out.dtype)
    throw Error(where + ": reshape keeps the dtype");
  const int64_t eps = elemsPerStick(deviceFormat(in.dtype, where));
  if (!reshapeKeepsDeviceBytes(in.shape, out.shape, eps))
    throw Unsupported("reshape of [" + shapeText(in.shape) + "] to [" + shapeText(out.shape) +
                      "] that moves elements between sticks (" + where + ")");
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
