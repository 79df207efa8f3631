// Internal to spyre_frontend: the helpers every op builder uses to draft one SuperDSC (dim labels,
// generic stick layouts, torch-spyre's core -> slice mapping and start-address placement), and
// the op builders that live outside compiler.cpp.
#pragma once
#include "spyre/frontend/graph.h"
#include "spyre/frontend/work_division.h"
#include "spyre/isa/superdsc.h"
#include <initializer_list>
#include <string>
#include <vector>

namespace spyre::frontend::detail {

/// One SuperDSC and the graph value behind each of its labeledDs_ (ldsIdx order).
struct KernelDraft {
  isa::SuperDsc s;
  std::vector<int> tensorValues;
};

DataFormat deviceFormat(HostType t, const std::string &where);
/// torch-spyre's positional dim labels: [mb, x, y][:rank-1] + [out].
std::vector<std::string> dimLabels(size_t rank);
/// Mixed-radix core -> work slice mapping (the first dim varies fastest).
std::vector<std::vector<int64_t>> coreSlices(const std::vector<int64_t> &splits, int cores);
/// A draft's SuperDSC header: op and unit, dims and sizes, the work division (cores = the product
/// of `splits`, torch-spyre's core -> slice map) and the name "<index>_<name>" (name defaults to
/// the op).
KernelDraft newDraft(size_t index, std::string opFuncName, std::string exUnit, std::vector<std::string> dims,
                     std::vector<int64_t> N, std::vector<int64_t> splits, const std::string &name = "");
/// Generic stick layout over dim labels l (host order, stick dim last).
isa::SdscLayout genericLayout(const std::vector<std::string> &l, int64_t eps);
/// Elements of each iteration dim one core covers (dims in stickDims split in whole sticks).
std::vector<int64_t> perCoreElems(const std::vector<int64_t> &N, const std::vector<int64_t> &splits,
                                  const std::vector<size_t> &stickDims, int64_t eps);
/// Per-core start addresses of t (segment = ldsIdx) from its layout class and perCore; a view
/// (t.maxDimSizes / t.offsets set) steps with its allocation's strides from its first stick.
void placeTensor(const isa::SuperDsc &s, isa::SdscTensor &t, const std::vector<int64_t> &perCore);
double attrOr(const Node &n, const char *key, double dflt);
/// Unsupported for any attribute not in `allowed` (alpha=1 is always accepted).
void checkAttrs(const Node &n, const std::string &where, std::initializer_list<const char *> allowed);

/// Reductions (compiler.cpp): which dims of a rank-`rank` input n reduces (dims=[..], none =
/// all), and the input shape with those dims kept as 1 (the shape whose generic layout the
/// reduction kernel writes).
std::vector<bool> reducedDims(const Node &n, size_t rank, const std::string &where);
std::vector<int64_t> keepdimShape(const std::vector<int64_t> &in, const std::vector<bool> &reduced);

/// Pass 3's "then at most one reduction dim" for stick reductions that add partials (sum, mean,
/// exx2; compiler.cpp): when the kept dims leave cores idle and a core would span more than
/// 256 MiB of `input` (or `always`: CompileOptions::splitReductions), the stick dim is split
/// too, by the largest divisor of its stick count that fits; 1 = no split.
int64_t stickReductionSplit(const std::vector<int64_t> &splits, const std::vector<bool> &reduced,
                            const std::vector<int64_t> &adjusted, const SpanTensor &input, bool addsPartials,
                            bool always, int maxCores);
/// Cores in stick-fast order (c = g * ks + j): the partners of a ring chain are neighbours.
void stickFastCores(isa::SuperDsc &s);

/// Elementwise ops (compiler.cpp): add, exp, clone, expand, where, ...
bool isPointwiseOp(const std::string &op);
KernelDraft pointwiseKernel(const Graph &g, const Node &n, size_t index, int maxCores);

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

// Op builders in layernorm_ops.cpp.
bool isLayerNormOp(const std::string &op);
KernelDraft layerNormKernel(const Graph &g, const Node &n, size_t index, int maxCores, bool splitReductions);

// Op builders in data_ops.cpp.
KernelDraft sliceKernel(const Graph &g, const Node &n, size_t index, int maxCores);
KernelDraft permuteKernel(const Graph &g, const Node &n, size_t index, int maxCores);
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

} // namespace spyre::frontend::detail
