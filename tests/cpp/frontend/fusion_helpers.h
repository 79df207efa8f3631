// Shared by the fusion tests (fusion_test.cpp, row_fusion_test.cpp): compiling with and
// without fusion, counting fused launches, hostile inputs and bit-exact comparison.
#pragma once
#include "spyre/frontend/compiler.h"
#include "spyre/frontend/graph.h"
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace spyre::test {

/// "[a, b, c]": a shape as the graph text writes it.
inline std::string shapeText(const std::vector<int64_t> &s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i)
    t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

inline isa::JobPlan compile(const std::string &text, bool fusion, int cores = 8) {
  frontend::CompileOptions o;
  o.maxCores = cores;
  o.fusion = fusion;
  return frontend::compileGraph(frontend::parseGraph(text), o);
}

inline int fusedLaunches(const isa::JobPlan &p) {
  int n = 0;
  for (const auto &l : p.launches)
    n += l.sdsc.isFused() ? 1 : 0;
  return n;
}

/// Values that exercise rounding, overflow (exp of 40 is past DL16's 8.6e9) and signed zeros.
inline std::vector<float> hostileValues(size_t n, std::mt19937 &g) {
  std::uniform_real_distribution<float> d(-6, 6);
  const float special[] = {0.0f, -0.0f, 40.0f, -40.0f, 1e-3f, 60000.0f, -60000.0f, 0.5f};
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = i % 7 == 3 ? special[(i / 7) % 8] : d(g);
  return v;
}

inline bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace spyre::test
