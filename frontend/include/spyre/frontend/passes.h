// The frontend's graph-to-graph passes (one per file in frontend/lib), in torch-spyre's order
// (notes §4.3): dead code -> decompositions (one op per kernel) -> matmul K padding -> constant
// dedup. Work division, LX planning and memory planning follow inside compileGraph; they write
// their decisions into the graph as node notes (`{cores=.., splits=[..]}`, `{lx=..}`,
// `{buffer=..}`), so every pass has a text form before and after (compileGraph's pass log,
// SPYRE_DUMP_DIR's passes.txt, tests/golden/passes/).
#pragma once
#include "spyre/frontend/graph.h"
#include <string>
#include <vector>

namespace spyre::frontend {

/// The graph text after one pass.
struct PassSnapshot {
  std::string pass;
  std::string graph;
};

/// dead_code.cpp: removes nodes whose value no graph output depends on (every op is pure).
void eliminateDeadCode(Graph &g);

/// decompose.cpp: rewrites ops that are not one kernel's worth into ops that are:
///   select(%x, dim=d, index=i) -> slice(dim=d, start=i, end=i+1), then a permute (d = 0, rank
///     >= 3) or transpose (d = last, rank >= 2) that moves the size-1 dim where the squeezed
///     shape's generic layout has the same device bytes, then a zero-copy reshape;
///   constant_pad_nd(%x, pad=[l_last, r_last, l_prev, r_prev, ..], value=v) -> on dims before the
///     last: full(value=v) : [] and copy_into(%full, %x, offsets=[..]) (a fill of the output, then
///     a copy of x into a view of it); on the last dim: cat(full(value=v) : [.., l], x,
///     full(value=v) : [.., r]) (cat's copies merge the sticks the parts share).
/// Negative pads (cropping) are Unsupported.
void decomposeOps(Graph &g);

/// k_padding.cpp: each matmul whose K is not a multiple of the 64-element stick gets both
/// operands padded with zeros to the next multiple (copy_into of a zero constant), torch-spyre's
/// insert_bmm_padding made visible. Off by default (CompileOptions::padMatmulK): the backend
/// pads K inside LX for free (zero B rows, masked A lanes), which saves the two copy kernels.
void padMatmulK(Graph &g);

/// constant_dedup.cpp: `full` nodes with the same value, dtype and shape become one, and all
/// constants move to the front of the graph (torch-spyre's dedup_and_promote_constants). A
/// constant that is a graph output is left alone.
void dedupConstants(Graph &g);

} // namespace spyre::frontend
