// Internal to spyre_frontend: what the fusion passes share (fusion.cpp: pointwise groups;
// row_fusion.cpp: row reductions with their elementwise neighbours).
#pragma once
#include "spyre/frontend/graph.h"

namespace spyre::frontend {

/// A node the fused walk can compute: an SFP elementwise op (pointwise or comparison class)
/// whose parameters (clamp bounds, ...) are compiled in, not a clone that aliases its input
/// (free anyway), on no int64 values (a comparison may read int64: int32 on the card).
bool fusibleElementwise(const Graph &g, const Node &n);
/// A to_dtype between fp32 and int32 (one stick geometry, one cvt): a member of pointwise
/// groups (fusePointwise), drafted in the group's walk (kernel_drafting.cpp).
bool fusibleConversion(const Graph &g, const Node &n);
/// Operand constants of n (scalar=, where's a= / b=): one vector register each.
int constantOperands(const Node &n);
/// The first fusion group number no node's `fused` note uses yet.
int firstFreeGroup(const Graph &g);

} // namespace spyre::frontend
