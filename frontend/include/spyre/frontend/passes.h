// The frontend's graph-to-graph passes (one per file in frontend/lib), in torch-spyre's order
// (notes §4.3): dead code -> decompositions (one op per kernel) -> layout propagation -> matmul
// K padding -> constant dedup. Work division, LX planning, memory planning and (last) bundling
// follow inside compileGraph; they write their decisions into the graph as node notes
// (`{cores=.., splits=[..]}`, `{lx=..}`, `{buffer=..}`, `{bundle=..}`), so every pass has a text
// form before and after (compileGraph's pass log, SPYRE_DUMP_DIR's passes.txt,
// tests/golden/passes/).
#pragma once
#include "spyre/frontend/graph.h"
#include "spyre/isa/job_plan.h"
#include "spyre/isa/layout.h"
#include <map>
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
/// dead_code.cpp: removes the nodes i with erase[i] (one entry per node), keeping the others'
/// order. Rewriting passes call it for the nodes their rewrite left unread.
void eraseNodes(Graph &g, const std::vector<bool> &erase);

/// dead_code.cpp: a returned copy (a clone node the graph returns once, e.g. HF's KV-cache
/// copies, or a returned no-op decomposeOps made a clone) needs no kernel where the graph can
/// return its input instead: a fresh buffer (the output of a pointwise, comparison, reduction,
/// matmul or convert node) that is not returned itself nor shared by a returned view. Graph
/// inputs, aliases and values returned twice keep their copy. Runs after the head passes (a
/// head split turns the permute under HF's returned v into a matmul). Returns the copies dropped.
int dropReturnedCopies(Graph &g);

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

/// layout_propagation.cpp. A device layout: for each dim of a device shape, the host dim it
/// holds or -1 (a unit dim the host shape lacks); the bytes are the generic stick layout of the
/// device shape (torch-spyre's SpyreTensorLayout dim_order). The identity is the generic layout
/// of the host shape.
using DimMap = std::vector<int>;
DimMap identityDimMap(size_t rank);
/// The device shape of a host shape in map m.
std::vector<int64_t> deviceShapeOf(const std::vector<int64_t> &host, const DimMap &m);
/// After propagateLayouts a value's shape is its device shape; its producer's `layout=[..]`
/// note (absent: identity) maps it to the host shape. These read the note.
DimMap valueDimMap(const Graph &g, int v);
std::vector<int64_t> hostShapeOf(const Graph &g, int v);
/// The SpyreTensorLayout of value v's buffer: the generic layout of its device shape, stepping
/// the host strides of the dims it holds (what a graph output's host tensor is read through).
SpyreTensorLayout deviceTensorLayout(const Graph &g, int v);

/// torch-spyre's beam width for the layout search (CompileOptions::layoutBeamWidth, 1 = greedy).
inline constexpr int kLayoutBeamWidth = 64;

struct LayoutSearchResult {
  double cost = 0;      ///< sticks read and written by the kernels plus the restickifies' cost
  int restickifies = 0; ///< restickify kernels inserted
};

/// layout_propagation.cpp: chooses every value's device layout by a beam search minimising
/// restickify and stick traffic cost (pointwise ops and reductions run in their operands' map,
/// transpose / permute are zero-copy relabels, reshapes read order-keeping maps whose bytes fit,
/// everything else is generic), then rewrites the graph in device shapes: notes `layout=[..]`
/// (non-identity maps), `relabel=1` (a transpose / permute turned into a zero-copy reshape) and
/// `restickify=1` (an inserted transpose / permute where a consumer needs another map than its
/// producer gives, once per value and map). Graph outputs keep their map (their buffer carries
/// it). With `matmulTransB` a matmul may read its second operand sticked on K (attribute
/// transb=1) where the kernel can for `maxCores` cores. Unsupported where a restickify would
/// move the stick dim of an fp32 tensor (the PE array is fp16/bf16 only) and no cheaper layout
/// avoids it.
LayoutSearchResult propagateLayouts(Graph &g, int beamWidth = kLayoutBeamWidth, int maxCores = 32,
                                    bool matmulTransB = false);

/// k_padding.cpp: each matmul whose K is not a multiple of the 64-element stick gets both
/// operands padded with zeros to the next multiple (copy_into of a zero constant), torch-spyre's
/// insert_bmm_padding made visible. Off by default (CompileOptions::padMatmulK): the backend
/// pads K inside LX for free (zero B rows, masked A lanes), which saves the two copy kernels.
void padMatmulK(Graph &g);

/// constant_dedup.cpp: `full` nodes with the same value, dtype and shape become one, and all
/// constants move to the front of the graph (torch-spyre's dedup_and_promote_constants). A
/// constant that is a graph output is left alone.
void dedupConstants(Graph &g);

/// fusion.cpp: pointwise fusion. Connected elementwise nodes (pointwise and comparison ops,
/// not clone) with the same output shape, layout and stick geometry form a group, noted
/// `fused=<group>` on each member (groups of one are not noted); kernel drafting makes each
/// group one SuperDSC (our fused extension, docs/superdsc.md §6.9) that keeps its
/// intermediates in registers and stores only the members' values read outside the group or
/// returned. Greedy in graph order: a node joins the group of its first operand's producer
/// that it may join: no node outside the group before it reads a group value (the fused kernel
/// runs at its last member), external inputs plus outputs fit the 7 kernel segments, and
/// external inputs + constants + members fit the 16 vector registers. Returns the number of
/// groups. CompileOptions::fusion (SPYRE_FUSION, default on) runs it.
int fusePointwise(Graph &g);

/// rotate_half.cpp: RoPE's rotate_half. cat(neg(slice(x, dim=-1, h, 2h)), slice(x, dim=-1, 0, h),
/// dim=-1) with x's last dim 2h (fp16/bf16), each slice read only by the neg / the cat and the
/// neg only by the cat, becomes one rotate_half(%x) node (one kernel instead of six: the
/// slices, the neg and the cat's copies with their lane shifts). Runs after decomposeOps, before
/// layout propagation (the new node takes the generic layout).
/// CompileOptions::fusion (SPYRE_FUSION) runs it. Returns the number of rewrites.
int fuseRotateHalf(Graph &g);

/// split_heads.cpp: attention's head split of a projection, permute(reshape(x @ w.t()),
/// [0, 2, 1, 3]) from x [B, S, K] and a linear weight w [H * D, K] (fp16/bf16, D a multiple of
/// 64, the matmul and the reshape read only by the pattern), becomes one matmul of
/// reshape(x) [B, 1, S, K] and transpose(w) with `heads=H`: head h multiplies x by w's rows
/// h * D .. h * D + D - 1 (read as stored) and writes [B, H, S, D] directly, without the
/// permute's restickify kernel (q, k and v of every attention layer). Runs after
/// decomposeOps, before layout propagation. CompileOptions::fusion (SPYRE_FUSION) runs it.
/// Returns the number of rewrites.
int fuseSplitHeads(Graph &g);

/// repeat_heads.cpp: grouped-query attention's head repeat (HF's repeat_kv, sdpa's GQA:
/// reshape(clone(expand(reshape(k)))) from [B, Hkv, S, D] to [B, Hkv * r, S, D]) read only by
/// batched matmuls, directly or through a transpose of the last two dims, becomes no node: each
/// matmul reads k itself with kvrep=r (its head h reads k's head h / r). Removes the three copy
/// kernels per k / v. Runs after decomposeOps, before layout propagation.
/// CompileOptions::fusion (SPYRE_FUSION) runs it. Returns the number of rewrites.
int fuseRepeatHeads(Graph &g);

/// row_fusion.cpp: row fusion (runs before fusePointwise). A row reduction (sum, mean, amax,
/// amin of a float tensor over its last, stick dim, keepdim) and the elementwise nodes around
/// it over the same rows form a group, noted `fused=<group>` like fusePointwise's: stick ops
/// (output shape [.., C]: softmax's x - max, exp, / sum), reductions of them, and row ops
/// (output shape [.., 1], reading only the group's row values and constants: + eps, rsqrt).
/// Kernel drafting makes each group one row-fused SuperDSC (docs/superdsc.md §6.10): rows split
/// over the cores, each core reads its rows once and writes the results once. Greedy in graph
/// order with fusePointwise's rules (plus: one row of every tensor it stages fits a quarter
/// of LX); a group without a reduction, or whose row values are read outside it or returned,
/// is dropped (its nodes are left to fusePointwise). Returns the number of groups.
int fuseRows(Graph &g);

/// matmul_fusion.cpp: matmul epilogue fusion (runs after fuseRows, before fusePointwise). A
/// matmul (fp16/bf16) and the chain of elementwise nodes that consumes only its value form a
/// group, noted `fused=<group>`: each member's value feeds exactly the next member (and is
/// not returned; the last member's value may be), every member has the matmul's output shape,
/// dtype and layout, and its other operands are full [.., M, N] tensors or row vectors [N]
/// broadcast over M (a bias), at most 4 of them (7 segments), with its constants compiled in;
/// constants + operands fit 10 vector registers. Bias add, activation, residual add, scalar
/// mul, SwiGLU's silu(x @ w1) * (x @ w3) (the second matmul's value is an operand). Kernel
/// drafting makes each group one SuperDSC (docs/superdsc.md §6.11) whose matmul runs the
/// chain on each output block in LX; a K-split matmul keeps its own kernel (its chain is
/// fused pointwise). Returns the number of groups.
int fuseMatmulEpilogues(Graph &g);

/// bundling.cpp: torch-spyre's spyre_fuse_nodes. A SuperDSC bundle addresses its DDR tensors
/// through the 7 kernel-argument segments of 16 GiB; torch-spyre lets one bundle reference at
/// most kMaxBundleSegments - 1 = 6 graph input / output tensors, 5 when the graph has an
/// intermediate pool (the pool takes segment 0). Here the pool is memory planning's DDR
/// intermediates (BufferSpec::Kind::Intermediate): when the plan has one, it counts as one
/// tensor of every bundle, whether or not the bundle touches it (torch-spyre decides per graph,
/// `V.graph.pool_size > 0`). LX-resident arguments need no segment and do not count.
inline constexpr int kMaxBundleSegments = 7;

struct Bundle {
  int firstLaunch = 0, numLaunches = 0;
  std::vector<int> ioBuffers; ///< the distinct graph input / output buffers it reads or writes
  bool usesPool = false;      ///< it reads or writes a DDR intermediate
};

struct BundlingResult {
  int maxIoTensors = 6; ///< 6, or 5 with a pool
  bool pool = false;
  std::vector<Bundle> bundles;
  std::string summary() const; ///< one line per bundle (passes.txt)
};

/// Groups plan.launches, in order, greedily into bundles: a launch joins the current bundle
/// while the bundle's distinct graph input / output buffers stay within maxIoTensors, else it
/// starts the next one. A launch over the limit alone gets a bundle of its own (what bounds a
/// single kernel is the backend's 8 labeledDs per DSC; a launch with more arguments is an
/// Error). Sets each launch's `bundle`.
BundlingResult bundleLaunches(isa::JobPlan &plan);

} // namespace spyre::frontend
