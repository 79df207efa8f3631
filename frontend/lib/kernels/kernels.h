// Internal to spyre_frontend: the kernel builders, one file per op class in this folder. Each
// drafts the SuperDSC(s) of one graph node (ops.def names the node's class) with the helpers of
// kernel_draft.h.
#pragma once
#include "kernel_draft.h"
#include <map>
#include <optional>

namespace spyre::frontend::detail {

/// Reductions (reduction.cpp): which dims of a rank-`rank` input n reduces (dims=[..], none =
/// all), and the input shape with those dims kept as 1 (the shape whose generic layout the
/// reduction kernel writes).
std::vector<bool> reducedDims(const Node &n, size_t rank, const std::string &where);
std::vector<int64_t> keepdimShape(const std::vector<int64_t> &in, const std::vector<bool> &reduced);

/// Pass 3's "then at most one reduction dim" for stick reductions that add partials (sum, mean,
/// exx2; reduction.cpp): when the kept dims leave cores idle and a core would span more than
/// 256 MiB of `input` (or `always`: CompileOptions::splitReductions), the stick dim is split
/// too, by the largest divisor of its stick count that fits; 1 = no split.
int64_t stickReductionSplit(const std::vector<int64_t> &splits, const std::vector<bool> &reduced,
                            const std::vector<int64_t> &adjusted, const SpanTensor &input, bool addsPartials,
                            bool always, int maxCores);
/// Cores in stick-fast order (c = g * ks + j): the partners of a ring chain are neighbours.
void stickFastCores(isa::SuperDsc &s);

/// Elementwise ops (pointwise.cpp): add, exp, clone, expand, where, ... (OpInfo::isElementwise).
bool isPointwiseOp(const std::string &op);
KernelDraft pointwiseKernel(const Graph &g, const Node &n, size_t index, int maxCores);
/// fused.cpp: the drafts of a fusion group's members (pointwise kernels, graph order) as one
/// fused SuperDSC (SuperDsc::fusedOps); nullopt when they do not share one walk (iteration
/// space, work division) or need more than the kernel's segments.
std::optional<KernelDraft> fusedKernel(const Graph &g, const std::vector<int> &members,
                                       const std::vector<KernelDraft> &drafts, size_t index);

// One kernel each: reductionKernel (reduction.cpp), matmulKernel (matmul.cpp), convertKernel
// (to_dtype, convert.cpp), transposeKernel (transpose.cpp).
KernelDraft reductionKernel(const Graph &g, const Node &n, size_t index, int maxCores, bool splitReductions);
/// convert.cpp: the SuperDSC opFunc of a to_dtype from device format fi to fo ("identity",
/// "fp32toint32", ...); pointwiseKernel drafts an fp32 <-> int32 one of a fusion group with it.
const char *convertOpFunc(DataFormat fi, DataFormat fo);
KernelDraft matmulKernel(const Graph &g, const Node &n, size_t index, int maxCores);
/// The output batch dims of a matmul of x [.., M, K] and y [.., K, N] (without kvrep): x's for a
/// 2-d y; else, with equal ranks, per dim the common extent or the other's where one is 1
/// (broadcast). nullopt for any other batch broadcasting.
std::optional<std::vector<int64_t>> matmulBatch(const std::vector<int64_t> &xs, const std::vector<int64_t> &ys);
/// matmul.cpp: a matmul-fusion group (passes.h fuseMatmulEpilogues; drafts: the matmul's, then
/// its chain's pointwise ones) as one SuperDSC (docs/superdsc.md §6.11): computeOp_ 0 the
/// batchmatmul (pt), then one entry per chain op reading Result-op<k>, the extra operands
/// (ldsIdx 3.., a full tensor in the OUTPUT layout class or a row vector in LAYOUT4) and
/// constants; the last entry writes the output (ldsIdx 2). nullopt for a K-split matmul or an
/// operand read as a view.
std::optional<KernelDraft> matmulEpilogueKernel(const Graph &g, const std::vector<int> &members,
                                                const std::vector<KernelDraft> &drafts, size_t index);
KernelDraft convertKernel(const Graph &g, const Node &n, size_t index, int maxCores);
KernelDraft transposeKernel(const Graph &g, const Node &n, size_t index, int maxCores);

// reshape_ops.cpp: a reshape whose generic layouts put every element at the same device bytes
// (reshapeKeepsDeviceBytes, compiler.h) is a copy of the buffer, one that keeps the last dim a
// stick-reordering restickify, a 2-d one that moves lanes a SuperDSC `reshape`.
KernelDraft reshapeKernel(const Graph &g, const Node &n, size_t index, int maxCores);
/// Restickify insertion for reshapes no single kernel does (lanes move and the tensors are not
/// 2-d with one row count dividing the other, or the leading dims have no common refinement):
/// each becomes a chain x -> [R, L] -> [R', L'] -> y of reshapes that are one kernel each. Runs
/// after layout propagation, on device shapes (a reshape the chosen layouts make free is left
/// alone).
void expandLaneMovingReshapes(Graph &g);
/// int_transpose.cpp: each int32/int64 transpose, and permute moving the stick dim, becomes
/// four byte fields moved as fp16 through the PE array and added back (bit-exact).
void splitIntTransposes(Graph &g);

// scan.cpp: cumsum(%x, dim=d), prefix sums along one dim.
KernelDraft scanKernel(const Graph &g, const Node &n, size_t index, int maxCores);

// gather.cpp: embedding(%table, %indices), rows of a table by integer indices (dma.gather).
KernelDraft embeddingKernel(const Graph &g, const Node &n, size_t index, int maxCores);
// gather.cpp: index_copy(%self, %indices, %source), rows written at integer indices (dma.scatter).
KernelDraft indexCopyKernel(const Graph &g, const Node &n, size_t index, int maxCores);

// Op builders in layernorm_ops.cpp.
KernelDraft layerNormKernel(const Graph &g, const Node &n, size_t index, int maxCores, bool splitReductions);
/// A row-fusion group exx2 / layernormscale / layernormnorm (passes.h fuseRows) as one
/// row-fused SuperDSC (docs/superdsc.md §6.10): whole rows per core, computeOp_ exx2 (a row
/// reduction), layernormscale (a row op), layernormnorm (per stick, the output). nullopt when
/// the members are not that triple or its rows do not fit the row walk.
std::optional<KernelDraft> layerNormFusedKernel(const Graph &g, const std::vector<int> &members, size_t index,
                                                int maxCores);

// Op builders in data_ops.cpp.
KernelDraft sliceKernel(const Graph &g, const Node &n, size_t index, int maxCores);
KernelDraft permuteKernel(const Graph &g, const Node &n, size_t index, int maxCores);
/// rotate_half(%x) (made by fuseRotateHalf): one SuperDSC `rotatehalf` (docs/superdsc.md §6.12).
KernelDraft rotateHalfKernel(const Graph &g, const Node &n, size_t index, int maxCores);
/// The operands of a whole-tensor copy (data_ops.cpp): Tensor0 (value `in`, layout class
/// inType) -> Tensor1 (value `out`, outType), scale 1 on every dim, both in `fmt`, placed per
/// core by `perCore`.
void addCopyOperands(KernelDraft &kd, int in, int out, DataFormat fmt, const char *inType, const char *outType,
                     const std::vector<int64_t> &perCore);
/// One identity copy per operand into its part of the output (numbered from `index`).
std::vector<KernelDraft> catKernels(const Graph &g, const Node &n, size_t index, int maxCores);
/// full(value=v): the identity SuperDSC with a constant operand (a fill).
KernelDraft fullKernel(const Graph &g, const Node &n, size_t index, int maxCores);
/// copy_into(%fill, %x, offsets=[..]): the fill broadcast to the output, then x copied into the
/// output's view at offsets (the stick dim whole: offset 0, x's full width).
std::vector<KernelDraft> copyIntoKernels(const Graph &g, const Node &n, size_t index, int maxCores);

/// Slices read as views (kernel_drafting.cpp): the slices whose every consumer can read them in
/// place (not graph outputs, along a row dim, each consumer an elementwise op whose output has
/// the slice's shape, so the operand is not broadcast); slice output value -> slice node.
std::map<int, const Node *> foldableSlices(const Graph &g);
/// Rewrites kd's operands that are foldable slices into views of the sliced tensors.
void readSlicesAsViews(const Graph &g, const std::map<int, const Node *> &slices, KernelDraft &kd);

} // namespace spyre::frontend::detail
