// Work division passes 1-3 (see work_division.h; torch-spyre notes §4.5).
#include "spyre/frontend/compiler.h"
#include "spyre/frontend/work_division.h"
#include "spyre/isa/divisors.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <cmath>
#include <functional>

namespace spyre::frontend {

namespace {

int64_t product(const std::vector<int64_t> &v) {
  int64_t p = 1;
  for (int64_t x : v)
    p *= x;
  return p;
}

} // namespace

int64_t largestDivisor(int64_t n, int64_t limit) {
  for (int64_t s = std::min(n, limit); s >= 1; --s)
    if (n % s == 0)
      return s;
  return 1;
}

int64_t perCoreSpan(const SpanTensor &t, const std::vector<int64_t> &splits) {
  // From the first byte a core touches to its last: the outermost dim where the core's slice
  // is longer than one contributes its per-core extent, every inner dim its whole extent.
  int64_t bytes = 128;
  bool outer = true;
  for (auto [var, extent] : t.dims) {
    int64_t s = var >= 0 ? splits.at(var) : 1;
    int64_t per = (extent + s - 1) / s;
    if (outer) {
      if (per <= 1)
        continue;
      outer = false;
      bytes *= per;
      continue;
    }
    bytes *= extent;
  }
  return bytes;
}

std::vector<int64_t> spanReduction(const std::vector<int64_t> &sizes, const std::vector<bool> &isReduction,
                                   const std::vector<SpanTensor> &tensors, int maxCores) {
  std::vector<int64_t> commit(sizes.size(), 1);
  for (const SpanTensor &t : tensors) {
    if (perCoreSpan(t, commit) <= kMaxSpanBytes)
      continue;
    // Walk the device dims outer -> inner; each dim indexed by a variable may be split.
    for (size_t k = 0; k < t.dims.size() && perCoreSpan(t, commit) > kMaxSpanBytes; ++k) {
      int var = t.dims[k].first;
      if (var < 0 || t.dims[k].second <= 1)
        continue;
      const int64_t others = product(commit) / commit[var];
      int64_t bestFit = 0, bestFitSpan = -1, smallest = 0, smallestSpan = -1;
      for (int64_t s : divisorsOf(sizes[var])) {
        if (s < commit[var] || s % commit[var] != 0 || others * s > maxCores)
          continue;
        std::vector<int64_t> trial = commit;
        trial[var] = s;
        int64_t span = perCoreSpan(t, trial);
        if (span <= kMaxSpanBytes && span > bestFitSpan)
          bestFit = s, bestFitSpan = span; // the largest span within the limit: fewest cores
        if (smallestSpan < 0 || span < smallestSpan)
          smallest = s, smallestSpan = span;
      }
      if (bestFit)
        commit[var] = bestFit;
      else if (smallest)
        commit[var] = smallest; // still over the limit: split as far as cores allow, go inward
    }
  }
  int reductionSplits = 0;
  for (size_t v = 0; v < sizes.size(); ++v)
    reductionSplits += isReduction[v] && commit[v] > 1;
  if (reductionSplits > 1)
    throw Unsupported("work division: keeping every core's span within 256 MiB would split " +
                      std::to_string(reductionSplits) + " reduction dims (at most one may be split)");
  return commit;
}

int64_t unevenSplit(int64_t n, int64_t limit) {
  const int64_t c = std::max<int64_t>(1, std::min(n, limit));
  const int64_t q = (n + c - 1) / c; // every slice but the last
  return (n + q - 1) / q;
}

int64_t largestShare(const std::vector<int64_t> &sizes, const std::vector<int64_t> &splits) {
  int64_t p = 1;
  for (size_t d = 0; d < sizes.size(); ++d)
    p *= (sizes[d] + splits[d] - 1) / splits[d];
  return p;
}

std::vector<int64_t> distributeWork(const std::vector<int64_t> &sizes, const std::vector<bool> &isReduction,
                                    const std::vector<int64_t> &commits, int maxCores, bool splitReduction,
                                    bool allowUneven) {
  std::vector<int64_t> splits = commits;
  int64_t remaining = maxCores / product(commits);
  std::vector<size_t> order;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (!isReduction[i])
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  for (size_t d : order) {
    // A dim pass 1 committed splits evenly (its commit is a lower bound on its cores).
    int64_t extra = allowUneven && commits[d] == 1 ? unevenSplit(sizes[d], remaining)
                                                   : largestDivisor(sizes[d] / commits[d], remaining);
    splits[d] = commits[d] * extra;
    remaining /= extra;
  }
  if (allowUneven) {
    std::vector<int64_t> even = distributeWork(sizes, isReduction, commits, maxCores, splitReduction, false);
    // Kept only where it shrinks the largest core's share: an even split that is as good keeps
    // its simpler kernel (one program; LX-resident operands).
    return largestShare(sizes, splits) < largestShare(sizes, even) ? splits : even;
  }
  bool reductionCommitted = false;
  for (size_t i = 0; i < sizes.size(); ++i)
    reductionCommitted |= isReduction[i] && commits[i] > 1;
  if (splitReduction && remaining > 1 && !reductionCommitted) {
    int best = -1;
    int64_t bestSplit = 1;
    for (size_t i = 0; i < sizes.size(); ++i)
      if (isReduction[i]) {
        int64_t s = largestDivisor(sizes[i], remaining);
        if (s > bestSplit)
          best = static_cast<int>(i), bestSplit = s;
      }
    if (best >= 0)
      splits[best] = bestSplit;
  }
  return splits;
}

int64_t MatmulSplit::cores() const { return product(batch) * m * n * k; }

double matmulCostUs(const MatmulProblem &p, const MatmulSplit &s) {
  const double B = static_cast<double>(product(p.batch)), M = static_cast<double>(p.M),
               N = static_cast<double>(p.N), K = static_cast<double>(p.K);
  const double cores = static_cast<double>(s.cores()), b = static_cast<double>(product(s.batch));
  const double ptPasses = std::max(1.0, (M / static_cast<double>(s.m)) / 8.0);
  const double ptEff = std::min(1.0, std::sqrt(ptPasses / 8.0));
  const double compute = (B * M * N * K / cores) / (1.536e6 * ptEff);
  const double hbm = (B * M * K + B * K * N + B * M * N) * 2.0 / 204.8e3 *
                     std::max(1.0, static_cast<double>(std::max(s.m, s.n)) / 8.0);
  const double psum = static_cast<double>(s.k - 1) * B * M * N * 1.4e-4;
  const double tie = ptPasses >= 8.0 ? 0.0 : std::log2(8.0 / ptPasses) * 50.0;
  return (compute + hbm + psum + tie) * std::pow(b, 1.4);
}

namespace {

// Calls visit(split, used) for every split of the batch dims over at most maxCores cores
// (split.batch set; used = their product); visit fills in m, n and k.
void forEachBatchSplit(const MatmulProblem &p, int maxCores,
                       const std::function<void(MatmulSplit &, int64_t)> &visit) {
  MatmulSplit cur;
  cur.batch.assign(p.batch.size(), 1);
  std::function<void(size_t, int64_t)> level = [&](size_t i, int64_t used) {
    if (i == p.batch.size()) {
      visit(cur, used);
      return;
    }
    for (int64_t bs : divisorsOf(p.batch[i]))
      if (used * bs <= maxCores) {
        cur.batch[i] = bs;
        level(i + 1, used * bs);
      }
  };
  level(0, 1);
}

void keepCheapest(std::optional<MatmulSplit> &best, MatmulSplit &cur, const MatmulProblem &costed) {
  cur.costUs = matmulCostUs(costed, cur);
  if (!best || cur.costUs < best->costUs)
    best = cur;
}

} // namespace

std::optional<MatmulSplit> costModelMatmulDivision(const MatmulProblem &p, int maxCores, bool pass1Committed,
                                                   int64_t pass3Cores) {
  if (pass1Committed)
    return std::nullopt;
  // Exactly one row dim private to one input (M); batch dims of a shared 2-d weight are a
  // second such dim.
  if (!p.batch.empty() && !p.batchInBothInputs)
    return std::nullopt;
  const int64_t nSticks = (p.N + 63) / 64, kSticks = (p.K + 63) / 64;
  std::optional<MatmulSplit> best;
  forEachBatchSplit(p, maxCores, [&](MatmulSplit &cur, int64_t used) {
    for (int64_t m : divisorsOf(p.M))
      for (int64_t n : divisorsOf(nSticks))
        for (int64_t k : divisorsOf(kSticks)) {
          if (used * m * n * k > maxCores)
            continue;
          cur.m = m, cur.n = n, cur.k = k;
          keepCheapest(best, cur, p);
        }
  });
  if (!best || best->cores() < pass3Cores)
    return std::nullopt;
  return best;
}

std::optional<MatmulSplit> unevenMatmulDivision(const MatmulProblem &p, int maxCores) {
  if (!p.batch.empty() && !p.batchInBothInputs)
    return std::nullopt;
  const int64_t nSticks = (p.N + 63) / 64;
  std::optional<MatmulSplit> best;
  forEachBatchSplit(p, maxCores, [&](MatmulSplit &cur, int64_t used) {
    for (int64_t m = 2; m <= std::min<int64_t>(p.M, maxCores / used); ++m) {
      const int64_t q = (p.M + m - 1) / m; // every slice but the last; the last is not empty
      if (p.M % m == 0 || (m - 1) * q >= p.M)
        continue;
      MatmulProblem padded = p;
      padded.M = q * m; // the cost of the longest slice on every core
      for (int64_t n : divisorsOf(nSticks)) {
        if (used * m * n > maxCores)
          continue;
        cur.m = m, cur.n = n, cur.k = 1;
        keepCheapest(best, cur, padded);
      }
    }
  });
  return best;
}

std::vector<int64_t> matmulWorkDivision(const MatmulProblem &p, int maxCores) {
  const size_t nb = p.batch.size();
  const int vM = static_cast<int>(nb), vN = vM + 1, vK = vM + 2;
  const int64_t nSticks = (p.N + 63) / 64, kSticks = (p.K + 63) / 64;
  std::vector<int64_t> sizes = p.batch;
  sizes.insert(sizes.end(), {p.M, nSticks, kSticks});
  std::vector<bool> isReduction(sizes.size(), false);
  isReduction[vK] = true;
  // Generic stick layouts of x [batch.., M, K], w [(batch..), K, N], out [batch.., M, N]:
  // device dims [host 1..r-2, stick tile of host r-1, host 0], innermost one stick.
  auto generic = [](const std::vector<std::pair<int, int64_t>> &host) {
    std::vector<std::pair<int, int64_t>> dev;
    const size_t r = host.size();
    for (size_t i = 1; i + 1 < r; ++i)
      dev.push_back(host[i]);
    dev.push_back(host[r - 1]);
    if (r > 1)
      dev.push_back(host[0]);
    return dev;
  };
  std::vector<std::pair<int, int64_t>> xh, wh, oh;
  for (size_t i = 0; i < nb; ++i) {
    xh.push_back({static_cast<int>(i), p.batch[i]});
    oh.push_back({static_cast<int>(i), p.batch[i]});
    if (p.batchInBothInputs)
      wh.push_back({static_cast<int>(i), p.batch[i]});
  }
  xh.insert(xh.end(), {{vM, p.M}, {vK, kSticks}});
  wh.insert(wh.end(), {{vK, p.K}, {vN, nSticks}});
  oh.insert(oh.end(), {{vM, p.M}, {vN, nSticks}});
  std::vector<SpanTensor> tensors = {{"x", generic(xh)}, {"w", generic(wh)}, {"out", generic(oh)}};
  std::vector<int64_t> commits = spanReduction(sizes, isReduction, tensors, maxCores);
  if (p.transB)
    return transposedBDivision(p, commits, maxCores);
  std::vector<int64_t> pass3 = distributeWork(sizes, isReduction, commits, maxCores);
  bool committed = product(commits) > 1;
  auto asSplits = [](const MatmulSplit &b) {
    std::vector<int64_t> s = b.batch;
    s.insert(s.end(), {b.m, b.n, b.k});
    return s;
  };
  // torch-spyre declines the cost model's plan when it uses fewer cores than pass 3. Ours (an
  // extension, kPtFullRows): not where pass 3 gives each core fewer than 8 rows: then every core
  // loads all of its B for a part-empty PT pass, and the cost model's smaller plan measured
  // faster in simulated time (64x256x512 9.07 -> 5.51 us) as well as on the host.
  const bool ptUnderfilled = product(p.batch) == 1 && p.M / pass3[vM] < kPtFullRows;
  // There, batch dims of 1 (x [1, S, H] @ w: a model's linear) are no second row dim either.
  MatmulProblem costed = p;
  if (ptUnderfilled)
    costed.batch.clear();
  std::optional<MatmulSplit> even = costModelMatmulDivision(costed, maxCores, committed, ptUnderfilled ? 1 : product(pass3));
  if (even)
    even->batch.resize(nb, 1);
  // Our extension (superdsc.md §2): rows that no core count divides well (1151, a prime: the
  // best even row split is 1) split unevenly when that costs clearly less than the best even
  // split (torch-spyre's cost model, the longest slice on every core). Only then: the cost
  // model is coarse, and where M has a good divisor its even plans are the measured ones.
  if (!committed && largestDivisor(p.M, maxCores) * 4 < std::min<int64_t>(p.M, maxCores)) {
    const double evenCost = even ? even->costUs : [&] {
      MatmulSplit s;
      s.batch.assign(pass3.begin(), pass3.begin() + static_cast<long>(nb));
      s.m = pass3[vM], s.n = pass3[vN], s.k = pass3[vK];
      return matmulCostUs(p, s);
    }();
    if (auto uneven = unevenMatmulDivision(p, maxCores); uneven && uneven->costUs < kUnevenGain * evenCost)
      return asSplits(*uneven);
  }
  return even ? asSplits(*even) : pass3;
}

std::vector<int64_t> transposedBDivision(const MatmulProblem &p, const std::vector<int64_t> &commits, int maxCores) {
  const size_t nb = p.batch.size(), vM = nb, vN = nb + 1, vK = nb + 2;
  std::vector<int64_t> sizes = p.batch;
  sizes.insert(sizes.end(), {p.M, (p.N + 63) / 64, (p.K + 63) / 64});
  // Own B: N and, when B has them, the batch dims. Shared B: M and x's own batch dims.
  std::vector<bool> sharesB(sizes.size(), !p.batchInBothInputs), notOwn(sizes.size());
  sharesB[vM] = true;
  sharesB[vN] = sharesB[vK] = false;
  for (size_t d = 0; d < sizes.size(); ++d)
    notOwn[d] = sharesB[d] || d == vK;
  std::vector<int64_t> own = distributeWork(sizes, notOwn, commits, maxCores, /*splitReduction=*/false);
  std::vector<bool> notShared(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d)
    notShared[d] = !sharesB[d];
  // Uneven only where M is the one dim sharing B (the kernel splits only M unevenly).
  const bool onlyM = p.batch.empty() || p.batchInBothInputs;
  // Where M is the only dim left to split, no finer than kTransBMinRows rows per core: more
  // cores would each transpose and decode the same B slice.
  int cores = maxCores;
  if ((onlyM || product(p.batch) == 1) && commits[vM] == 1) { // x [1, S, H] @ w.t(): batch dims of 1
    const int64_t ownCores = product(own);
    const int64_t mCap = std::max<int64_t>(1, p.M / kTransBMinRows);
    cores = static_cast<int>(ownCores * std::min<int64_t>(maxCores / ownCores, mCap));
  }
  return distributeWork(sizes, notShared, own, cores, /*splitReduction=*/false, onlyM);
}

} // namespace spyre::frontend

namespace spyre::frontend {

SpanTensor genericSpanTensor(std::string name, const std::vector<int> &iterDims, const std::vector<int64_t> &extents) {
  SpanTensor t;
  t.name = std::move(name);
  const size_t k = iterDims.size();
  if (k == 0)
    return t; // one stick
  // Generic stick layout, outer -> inner: [d1 .. d(k-2), tiles of d(k-1), d0] (then the stick).
  for (size_t j = 1; j + 1 < k; ++j)
    t.dims.push_back({iterDims[j], extents[j]});
  if (k > 1)
    t.dims.push_back({iterDims[k - 1], extents[k - 1]});
  t.dims.push_back({iterDims[0], extents[0]});
  return t;
}

std::vector<int64_t> stickAdjusted(std::vector<int64_t> shape, int64_t eps) {
  if (!shape.empty())
    shape.back() = (shape.back() + eps - 1) / eps;
  return shape;
}

SpanTensor genericSpanTensor(std::string name, const std::vector<int> &iterDims, std::vector<int64_t> shape,
                             int64_t eps) {
  return genericSpanTensor(std::move(name), iterDims, stickAdjusted(std::move(shape), eps));
}

std::vector<int> identityDims(size_t rank) {
  std::vector<int> d(rank);
  for (size_t i = 0; i < rank; ++i)
    d[i] = static_cast<int>(i);
  return d;
}

std::vector<int64_t> divideWorkWithSpan(const std::vector<int64_t> &adjustedSizes, const std::vector<bool> &splittable,
                                        const std::vector<SpanTensor> &tensors, int maxCores, bool allowUneven) {
  std::vector<bool> fixed(splittable.size());
  for (size_t i = 0; i < splittable.size(); ++i)
    fixed[i] = !splittable[i];
  std::vector<int64_t> commits = spanReduction(adjustedSizes, fixed, tensors, maxCores);
  // A dim the op's kernel keeps on one core cannot take a commit: the span stays over the limit
  // there, as torch-spyre's warn_if_per_core_overflow allows (its kernels would split it).
  for (size_t i = 0; i < commits.size(); ++i)
    if (fixed[i])
      commits[i] = 1;
  return distributeWork(adjustedSizes, fixed, commits, maxCores, /*splitReduction=*/false, allowUneven);
}

std::pair<std::vector<int64_t>, int64_t>
divideRowsThenStick(const std::vector<int64_t> &adjustedSizes, const std::vector<bool> &splittable,
                    const std::vector<SpanTensor> &tensors, int maxCores,
                    const std::function<int64_t(const std::vector<int64_t> &)> &stickSplitOf) {
  auto splits = divideWorkWithSpan(adjustedSizes, splittable, tensors, maxCores, /*allowUneven=*/true);
  int64_t stickSplit = stickSplitOf(splits);
  if (stickSplit > 1) {
    splits = divideWorkWithSpan(adjustedSizes, splittable, tensors, maxCores);
    stickSplit = stickSplitOf(splits);
    if (stickSplit > 1)
      splits.back() = stickSplit;
  }
  return {splits, stickSplit};
}

std::vector<int64_t> divideWork(const std::vector<int64_t> &sizes, const std::vector<bool> &outputDims, int maxCores) {
  std::vector<bool> others(outputDims.size());
  for (size_t i = 0; i < outputDims.size(); ++i)
    others[i] = !outputDims[i];
  return distributeWork(sizes, others, std::vector<int64_t>(sizes.size(), 1), maxCores, /*splitReduction=*/false);
}

} // namespace spyre::frontend
