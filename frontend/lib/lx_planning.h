// Internal to spyre_frontend: the LX planning pass over a graph's drafted kernels (torch-spyre
// `scratchpad_planning`, notes §4.7), between work division and SuperDSC emission.
#pragma once
#include "kernels/kernels.h"
#include "spyre/frontend/lx_planner.h"
#include <map>
#include <set>
#include <string>
#include <vector>

namespace spyre::frontend::detail {

struct LxPlanningResult {
  std::set<int> lxValues; ///< graph values that live only in LX (no DDR buffer)
  std::map<int, int64_t> address; ///< their LX address (the same on every core)
  std::string summary;    ///< one line per candidate buffer (LxPlan::summary), "" if none
};

/// Decides which intermediate values stay in LX and rewrites the drafts: their tensors become
/// memOrg_ lx at the planned address on every core, and every kernel's lxReservedBytes covers the
/// LX-resident tensors live across it. drafts[i] is a kernel of g.nodes[nodeOfDraft[i]] (a
/// cat drafts several; a zero-copy reshape none).
///
/// A value is a candidate (torch-spyre's eligibility filter, extended) when it is not a graph
/// input or output; its producer is one of OP_OUTPUT_GOOD_FOR_LX_REUSE (amax, sum, exp, sub,
/// mul, mean, add, rsqrt) or, our extension, exx2, layernormscale, layernormnorm, matmul or
/// to_dtype; it is read at least once; every kernel during its lifetime stages above the
/// reserved LX (backend::supportsLxReservation, given the LX the plan leaves free) and every kernel
/// touching it reads / writes it in place (backend::supportsLxResidentOperand: not a matmul's y, a
/// K-split matmul, a transpose, ...); and there is no core-division mismatch: producer and
/// every consumer see the same per-core view (same cores, per-core start offsets and per-core
/// extents). exp, sub, add and rsqrt may take over the slot of an input whose last use they
/// are (same size).
LxPlanningResult planLxResidency(const Graph &g, std::vector<KernelDraft> &drafts,
                                 const std::vector<int> &nodeOfDraft, int64_t capacity = kLxUsableBytes);

} // namespace spyre::frontend::detail
