// Internal to spyre_frontend: the helpers every op builder (kernels.h) uses to draft one SuperDSC
// (dim labels, generic stick layouts, torch-spyre's core -> slice mapping and start-address
// placement, attribute checks against the op table).
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

/// The operand lists of a draft with labeledDs_ 0 = input, 1 = output: the graph values behind them.
void setUnaryOperands(KernelDraft &kd, int inValue, int outValue);

DataFormat deviceFormat(HostType t, const std::string &where);
/// deviceFormat, with int32 and int64 values in IEEE_INT32 (int64 narrowed, as torch-spyre):
/// buffers and the ops that move integers (embedding indices); compute ops take deviceFormat.
DataFormat deviceFormatOrInt(HostType t, const std::string &where);
/// torch-spyre's positional dim labels: [mb, x, y][:rank-1] + [out].
std::vector<std::string> dimLabels(size_t rank);
/// Mixed-radix core -> work slice mapping (the first dim varies fastest).
std::vector<std::vector<int64_t>> coreSlices(const std::vector<int64_t> &splits, int cores);
/// coreIdToWkSlice_ with the unevenly split dims (adjusted[d] % splits[d] != 0) varying slowest,
/// so the cores with a shorter last slice are one run at the end (one extra program each run).
void unevenDimsSlowest(isa::SuperDsc &s, const std::vector<int64_t> &adjusted);
/// A draft's SuperDSC header: op and unit, dims and sizes, the work division (cores = the product
/// of `splits`, torch-spyre's core -> slice map) and the name "<index>_<name>" (name defaults to
/// the op).
KernelDraft newDraft(size_t index, std::string opFuncName, std::string exUnit, std::vector<std::string> dims,
                     std::vector<int64_t> N, std::vector<int64_t> splits, const std::string &name = "");
/// Generic stick layout over dim labels l (host order, stick dim last).
isa::SdscLayout genericLayout(const std::vector<std::string> &l, int64_t eps);
/// Elements of each iteration dim one core covers (dims in stickDims split in whole sticks; an
/// uneven split: all cores but the last, which covers less).
std::vector<int64_t> perCoreElems(const std::vector<int64_t> &N, const std::vector<int64_t> &splits,
                                  const std::vector<size_t> &stickDims, int64_t eps);
/// Per-core start addresses of t (segment = ldsIdx) from its layout class and perCore; a view
/// (t.maxDimSizes / t.offsets set) steps with its allocation's strides from its first stick.
void placeTensor(const isa::SuperDsc &s, isa::SdscTensor &t, const std::vector<int64_t> &perCore);
/// Appends labeledDs entry `ldsIdx` ("Tensor<ldsIdx>", dsType `type`, format f) spanning the
/// iteration dims `present` of `dims` (scale 1 there, -1 elsewhere), placed by placeTensor.
void addTensor(isa::SuperDsc &s, int ldsIdx, DataFormat f, const char *type, const std::vector<std::string> &dims,
               const std::vector<std::string> &present, const std::vector<int64_t> &perCore);
double attrOr(const Node &n, const char *key, double dflt);
/// Unsupported for any attribute not in `allowed` (alpha=1 is always accepted).
void checkAttrs(const Node &n, const std::string &where, std::initializer_list<const char *> allowed);
/// The same against the attributes ops.def lists for n's op.
void checkAttrs(const Node &n, const std::string &where);

/// A node with one tensor operand, as its builder sees it: `where` ("node %out = op") names it in
/// messages; the attributes are checked against ops.def and the operand count is one.
/// Unsupported("empty tensors in <where>") if a dim of `shape` is 0.
void requireNonEmpty(const std::vector<int64_t> &shape, const std::string &where);
/// An op's iteration sizes: `shape`, or {1} for a 0-d tensor; requireNonEmpty.
std::vector<int64_t> iterationSizes(const std::vector<int64_t> &shape, const std::string &where);

struct UnaryNode {
  const Value &in, &out;
  std::string where;
};
UnaryNode unaryNode(const Graph &g, const Node &n, const char *opName);

} // namespace spyre::frontend::detail
