// Rank reduction of ops on more than 4 dims (rank_reduction.cpp), used by decomposeOps.
#pragma once
#include "spyre/frontend/graph.h"
#include <vector>

namespace spyre::frontend::detail {

/// Appends to `out` the nodes that compute n on at most 4 dims between reshapes (zero-copy
/// where only middle dims merge) and returns true; false (nothing appended) when n has at most
/// 4 dims or cannot be reduced (its kernel builder then says Unsupported).
bool reduceRank(Graph &g, const Node &n, std::vector<Node> &out);

} // namespace spyre::frontend::detail
