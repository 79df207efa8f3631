// Integer divisors, shared by the frontend's work division and the backend's block choices.
#pragma once
#include <cstdint>
#include <vector>

namespace spyre {

/// The divisors of n >= 1 in ascending order, in O(sqrt n) (a dim can be billions long).
inline std::vector<int64_t> divisorsOf(int64_t n) {
  std::vector<int64_t> lo, hi;
  for (int64_t d = 1; d <= n / d; ++d)
    if (n % d == 0) {
      lo.push_back(d);
      if (d != n / d)
        hi.push_back(n / d);
    }
  lo.insert(lo.end(), hi.rbegin(), hi.rend());
  return lo;
}

} // namespace spyre
