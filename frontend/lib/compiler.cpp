#include "spyre/frontend/compiler.h"
#include "kernel_draft.h"
#include "lx_planning.h"
#include "memory_planning.h"
#include "spyre/frontend/work_division.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <cmath>

namespace spyre::frontend {

using isa::BufferSpec;
using isa::JobPlan;
using isa::SuperDsc;
using isa::SdscLayout;
using isa::SdscTensor;

namespace {
bool envFlag(const char *name) {
  const char *e = std::getenv(name);
  if (!e)
    return false;
  const std::string v = e;
  return v == "1" || v == "true" || v == "on";
}
} // namespace

bool padMatmulKFromEnv() { return envFlag("SPYRE_PAD_MATMUL_K"); }
bool matmulTransBFromEnv() { return envFlag("SPYRE_MATMUL_TRANSB"); }
bool splitReductionsFromEnv() { return envFlag("SPYRE_SPLIT_REDUCTIONS"); }

int senCoresFromEnv() {
  const char *e = std::getenv("SENCORES");
  if (!e || !*e)
    return 32;
  char *end = nullptr;
  long v = std::strtol(e, &end, 10);
  if (*end != '\0' || v < 1 || v > 32)
    throw Unsupported(std::string("invalid SENCORES value ") + e);
  return static_cast<int>(v);
}

std::vector<int64_t> divideWork(const std::vector<int64_t> &sizes, const std::vector<bool> &outputDims, int maxCores) {
  std::vector<bool> others(outputDims.size());
  for (size_t i = 0; i < outputDims.size(); ++i)
    others[i] = !outputDims[i];
  return distributeWork(sizes, others, std::vector<int64_t>(sizes.size(), 1), maxCores, /*splitReduction=*/false);
}

namespace detail {

DataFormat deviceFormat(HostType t, const std::string &where) {
  switch (t) {
  case HostType::F16:
  case HostType::BF16:
  case HostType::Bool: return DataFormat::SEN169_FP16;
  case HostType::F32: return DataFormat::IEEE_FP32;
  default: throw Unsupported(std::string(dtypeShortName(t)) + " tensors in " + where);
  }
}

std::vector<std::string> dimLabels(size_t rank) {
  static const char *outer[] = {"mb", "x", "y"};
  if (rank > 4)
    throw Unsupported("ops on rank-" + std::to_string(rank) + " tensors (at most 4 dims)");
  std::vector<std::string> l;
  for (size_t i = 0; i + 1 < rank; ++i)
    l.push_back(outer[i]);
  l.push_back("out");
  return l;
}

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream f(path);
  if (!f)
    throw Error("cannot write " + path);
  f << text;
}

/// torch-spyre's core -> work slice mapping: mixed radix over the dims in order (the first dim
/// varies fastest).
std::vector<std::vector<int64_t>> coreSlices(const std::vector<int64_t> &splits, int cores) {
  std::vector<std::vector<int64_t>> out;
  for (int c = 0; c < cores; ++c) {
    std::vector<int64_t> slice(splits.size());
    int64_t div = 1;
    for (size_t d = 0; d < splits.size(); ++d) {
      slice[d] = (c / div) % splits[d];
      div *= splits[d];
    }
    out.push_back(slice);
  }
  return out;
}

KernelDraft newDraft(size_t index, std::string opFuncName, std::string exUnit, std::vector<std::string> dims,
                     std::vector<int64_t> N, std::vector<int64_t> splits, const std::string &name) {
  KernelDraft kd;
  SuperDsc &s = kd.s;
  s.name = std::to_string(index) + "_" + (name.empty() ? opFuncName : name);
  s.opFuncName = std::move(opFuncName);
  s.exUnit = std::move(exUnit);
  s.dims = std::move(dims);
  s.N = std::move(N);
  s.numCoresUsed = static_cast<int>(std::accumulate(splits.begin(), splits.end(), int64_t{1}, std::multiplies<>()));
  s.coreIdToWkSlice = coreSlices(splits, s.numCoresUsed);
  s.numWkSlicesPerDim = std::move(splits);
  return kd;
}

/// torch-spyre's generic stick layout over dim labels l (host order, stick dim last): device
/// dims [l1..l(k-2), tile(l(k-1)), l0, elem]; layoutDimOrder_ lists the non-elem dims inner ->
/// outer.
SdscLayout genericLayout(const std::vector<std::string> &l, int64_t eps) {
  size_t k = l.size();
  SdscLayout lay;
  lay.layoutDimOrder.push_back(l[0]);
  if (k > 1) {
    lay.layoutDimOrder.push_back(l[k - 1]);
    for (size_t d = k - 1; d-- > 1;)
      lay.layoutDimOrder.push_back(l[d]);
  }
  lay.stickDimOrder = {l[k - 1]};
  lay.stickSize = {eps};
  return lay;
}

/// Elements of each iteration dim one core's slice covers: dims in `stickDims` are split in
/// whole sticks of `eps` elements, the others in elements.
std::vector<int64_t> perCoreElems(const std::vector<int64_t> &N, const std::vector<int64_t> &splits,
                                  const std::vector<size_t> &stickDims, int64_t eps) {
  std::vector<int64_t> per(N.size());
  for (size_t d = 0; d < N.size(); ++d) {
    bool sticks = std::find(stickDims.begin(), stickDims.end(), d) != stickDims.end();
    per[d] = sticks ? (N[d] + eps - 1) / eps / splits[d] * eps : N[d] / splits[d];
  }
  return per;
}

/// Start addresses of tensor t on every core of s (notes §2.4): its segment (= ldsIdx) plus,
/// over its device dims (its layout class, outer -> inner), the core's slice start times the
/// dim's stride. A tensor steps perCore[d] / eps sticks along its own stick dim and perCore[d]
/// rows along any other dim (so a dim split in sticks of another tensor moves whole rows).
void placeTensor(const SuperDsc &s, SdscTensor &t, const std::vector<int64_t> &perCore) {
  const SdscLayout &lay = s.primaryDsInfo.at(t.dsType);
  const std::string &stick = lay.stickDimOrder[0];
  int64_t eps = elemsPerStick(t.dataFormat);
  struct Dim {
    int d;
    int64_t extent, alloc;
    bool isStick;
  };
  std::vector<Dim> dims;
  for (auto li = lay.layoutDimOrder.rbegin(); li != lay.layoutDimOrder.rend(); ++li) {
    int d = s.dimIndex(*li);
    bool isStick = *li == stick;
    int64_t extent = t.scale[d] != 1 ? 1 : isStick ? (s.N[d] + eps - 1) / eps : s.N[d];
    int64_t alloc = extent;
    if (t.isView() && t.scale[d] == 1 && t.maxDimSizes[d] != -1) // a view: the allocation's strides
      alloc = isStick ? (t.maxDimSizes[d] + eps - 1) / eps : t.maxDimSizes[d];
    dims.push_back({d, extent, alloc, isStick});
  }
  std::vector<int64_t> strideBytes(dims.size());
  int64_t st = kStickBytes;
  for (size_t j = dims.size(); j-- > 0;) {
    strideBytes[j] = st;
    st *= dims[j].alloc;
  }
  int64_t viewOff = 0;
  if (t.isView())
    for (size_t j = 0; j < dims.size(); ++j)
      if (t.scale[dims[j].d] == 1)
        viewOff += (dims[j].isStick ? t.offsets[dims[j].d] / eps : t.offsets[dims[j].d]) * strideBytes[j];
  t.startAddress.clear();
  for (int c = 0; c < s.numCoresUsed; ++c) {
    int64_t off = viewOff;
    for (size_t j = 0; j < dims.size(); ++j)
      if (dims[j].extent > 1)
        off += s.coreIdToWkSlice[c][dims[j].d] * (dims[j].isStick ? perCore[dims[j].d] / eps : perCore[dims[j].d]) *
               strideBytes[j] * t.stepOf(dims[j].d);
    t.startAddress.push_back(t.ldsIdx * isa::kSegmentBytes + off);
  }
}

/// The slices whose every consumer can read them as a view (see compileGraph): not graph
/// outputs, along a row dim, each consumer an elementwise op whose output has the slice's
/// shape (so the operand is not broadcast). Slice output value -> slice node.
std::map<int, const Node *> foldableSlices(const Graph &g);
/// Rewrites kd's operands that are foldable slices into views of the sliced tensors.
void readSlicesAsViews(const Graph &g, const std::map<int, const Node *> &slices, KernelDraft &kd);

struct PointwiseDesc {
  const char *opFunc;
  int tensorArity; ///< operands, tensors or constants
  bool compare;
};

const std::map<std::string, PointwiseDesc> &pointwiseOps() {
  static const std::map<std::string, PointwiseDesc> ops = {
      {"add", {"add", 2, false}},         {"sub", {"sub", 2, false}},          {"mul", {"mul", 2, false}},
      {"div", {"realdiv", 2, false}},     {"maximum", {"maximum", 2, false}},  {"minimum", {"minimum", 2, false}},
      {"eq", {"equal", 2, true}},         {"ne", {"notequal", 2, true}},       {"lt", {"lesserthan", 2, true}},
      {"le", {"lesserequal", 2, true}},   {"gt", {"greaterthan", 2, true}},    {"ge", {"greaterequal", 2, true}},
      {"where", {"where3", 3, false}},    {"neg", {"neg", 1, false}},          {"abs", {"abs", 1, false}},
      {"relu", {"relufwd", 1, false}},    {"floor", {"floor", 1, false}},      {"sqrt", {"sqrt", 1, false}},
      {"rsqrt", {"rsqrt", 1, false}},     {"reciprocal", {"reciprocal", 1, false}}, {"exp", {"exp", 1, false}},
      {"log", {"log", 1, false}},         {"tanh", {"tanh", 1, false}},        {"sigmoid", {"sigmoid", 1, false}},
      {"silu", {"silu", 1, false}},       {"gelu", {"gelufwd", 1, false}},     {"softplus", {"softplus", 1, false}},
      {"clamp", {"clip", 1, false}},      {"clone", {"identity", 1, false}},   {"expand", {"identity", 1, false}},
  };
  return ops;
}

std::map<int, const Node *> foldableSlices(const Graph &g) {
  std::map<int, const Node *> out;
  for (const Node &n : g.nodes) {
    if (n.op != "slice" || n.inputs.size() != 1)
      continue;
    const Value &x = g.values[n.inputs[0]], &y = g.values[n.output];
    const auto dim = static_cast<size_t>(attrOr(n, "dim", 0));
    if (x.shape.empty() || dim + 1 >= x.shape.size() || x.dtype != y.dtype ||
        std::find(g.outputs.begin(), g.outputs.end(), n.output) != g.outputs.end())
      continue;
    bool ok = true, used = false;
    for (const Node &c : g.nodes)
      for (int in : c.inputs)
        if (in == n.output) {
          used = true;
          ok = ok && pointwiseOps().count(c.op) && g.values[c.output].shape == y.shape;
        }
    if (ok && used)
      out[n.output] = &n;
  }
  return out;
}

void readSlicesAsViews(const Graph &g, const std::map<int, const Node *> &slices, KernelDraft &kd) {
  SuperDsc &s = kd.s;
  for (size_t i = 0; i < kd.tensorValues.size(); ++i) {
    auto it = slices.find(kd.tensorValues[i]);
    if (it == slices.end())
      continue;
    const Node &sl = *it->second;
    SdscTensor &t = s.labeledDs[i];
    const size_t r = s.dims.size(), dim = static_cast<size_t>(attrOr(sl, "dim", 0));
    const Value &x = g.values[sl.inputs[0]];
    if (x.shape.size() != r || t.isView())
      throw Error("internal: slice view of %" + x.name + " read at rank " + std::to_string(r));
    for (int sc : t.scale)
      if (sc != 1)
        throw Error("internal: broadcast read of the sliced view of %" + x.name);
    t.maxDimSizes.assign(r, -1);
    t.offsets.assign(r, 0);
    t.maxDimSizes[dim] = x.shape[dim];
    t.offsets[dim] = static_cast<int64_t>(attrOr(sl, "start", 0));
    const auto step = static_cast<int64_t>(attrOr(sl, "step", 1));
    t.steps.clear();
    if (step != 1) {
      t.steps.assign(r, 1);
      t.steps[dim] = step;
    }
    const int64_t eps = elemsPerStick(t.dataFormat);
    placeTensor(s, t, perCoreElems(s.N, s.numWkSlicesPerDim, {r - 1}, eps));
    kd.tensorValues[i] = sl.inputs[0];
  }
}

bool isPointwiseOp(const std::string &op) { return pointwiseOps().count(op) != 0; }

/// One operand of an op: a graph value or a constant.
struct Operand {
  int value = -1;
  bool isConst = false;
  std::string constName;
  double constValue = 0;
};

const char *const kLayoutLabels[] = {"OUTPUT", "KERNEL", "INPUT", "KERNEL_IDX", "LAYOUT4", "LAYOUT5", "LAYOUT6", "LAYOUT7"};

/// Builds the SuperDSC of an op whose iteration space is the output's dims. `scales[i]` is the
/// per-dim scale of tensor operand i (the output last).

double attrOr(const Node &n, const char *key, double dflt) {
  auto it = n.attrs.find(key);
  return it == n.attrs.end() ? dflt : it->second.scalar();
}

void checkAttrs(const Node &n, const std::string &where, std::initializer_list<const char *> allowed) {
  for (const auto &[k, v] : n.attrs) {
    bool ok = false;
    for (const char *a : allowed)
      ok |= k == a;
    if (k == "alpha")
      ok = v.scalar() == 1.0;
    if (!ok)
      throw Unsupported("attribute " + k + " on " + where);
  }
}

KernelDraft pointwiseKernel(const Graph &g, const Node &n, size_t index, int maxCores) {
  const Value &out = g.values[n.output];
  std::string where = "node %" + out.name + " = " + n.op;
  const PointwiseDesc &desc = pointwiseOps().at(n.op);
  // Operands in op order.
  std::vector<Operand> ops;
  if (n.op == "where") {
    checkAttrs(n, where, {"a", "b"});
    size_t next = 0;
    auto take = [&]() {
      if (next >= n.inputs.size())
        throw Error(where + ": missing tensor operand");
      Operand o;
      o.value = n.inputs[next++];
      return o;
    };
    ops.push_back(take());
    for (const char *key : {"a", "b"}) {
      if (n.attrs.count(key)) {
        Operand o;
        o.isConst = true;
        o.constName = std::string("where_") + key;
        o.constValue = n.attrs.at(key).scalar();
        ops.push_back(o);
      } else {
        ops.push_back(take());
      }
    }
    if (next != n.inputs.size())
      throw Error(where + ": too many tensor operands");
  } else {
    if (n.op == "softplus")
      checkAttrs(n, where, {"beta", "threshold"});
    else if (n.op == "clamp")
      checkAttrs(n, where, {"min", "max"});
    else if (n.op == "gelu")
      checkAttrs(n, where, {"approximate"});
    else
      checkAttrs(n, where, {"scalar"});
    for (int v : n.inputs) {
      Operand o;
      o.value = v;
      ops.push_back(o);
    }
    if (n.attrs.count("scalar")) {
      Operand o;
      o.isConst = true;
      o.constName = "scalar";
      o.constValue = n.attrs.at("scalar").scalar();
      ops.push_back(o);
    }
  }
  if (static_cast<int>(ops.size()) != desc.tensorArity)
    throw Error(where + ": expected " + std::to_string(desc.tensorArity) + " operand(s), got " +
                std::to_string(ops.size()));

  // dtypes: compares produce bool from two equal input dtypes; where takes a bool condition.
  HostType computeType = out.dtype;
  if (desc.compare) {
    if (out.dtype != HostType::Bool)
      throw Error(where + ": a comparison produces bool, not " + std::string(dtypeShortName(out.dtype)));
    computeType = ops[0].isConst ? g.values[ops[1].value].dtype : g.values[ops[0].value].dtype;
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].isConst)
      continue;
    HostType t = g.values[ops[i].value].dtype;
    HostType expect = (n.op == "where" && i == 0) ? HostType::Bool : computeType;
    if (t != expect)
      throw Unsupported("mixed dtypes in " + where + " (operand %" + g.values[ops[i].value].name + " is " +
                        std::string(dtypeShortName(t)) + ", expected " + std::string(dtypeShortName(expect)) + ")");
  }
  DataFormat outFmt = deviceFormat(out.dtype, where);
  for (const auto &o : ops)
    if (!o.isConst && elemsPerStick(deviceFormat(g.values[o.value].dtype, where)) != elemsPerStick(outFmt))
      throw Unsupported("operands with different stick geometry in " + where + " (" +
                        std::string(dtypeShortName(g.values[o.value].dtype)) + " -> " +
                        std::string(dtypeShortName(out.dtype)) + ")");

  std::vector<int64_t> N = out.shape.empty() ? std::vector<int64_t>{1} : out.shape;
  for (int64_t d : N)
    if (d == 0)
      throw Unsupported("empty tensors in " + where);
  size_t r = N.size();
  auto labels = dimLabels(r);
  int64_t eps = elemsPerStick(outFmt);

  // Broadcasting: scale 1 where the operand spans the dim, -1 where it is broadcast.
  auto scalesOf = [&](int v) {
    const auto &sh = g.values[v].shape;
    if (sh.size() > r)
      throw Error(where + ": operand %" + g.values[v].name + " has more dims than the output");
    std::vector<int> sc(r, 1);
    for (size_t d = 0; d < r; ++d) {
      if (d + sh.size() < r) { // a leading dim the operand does not have (its layout omits it)
        sc[d] = -1;
        continue;
      }
      int64_t e = sh[d + sh.size() - r];
      if (e == N[d])
        sc[d] = 1;
      else if (e == 1)
        sc[d] = -1;
      else
        throw Error(where + ": operand %" + g.values[v].name + " cannot broadcast to the output shape");
    }
    return sc;
  };

  std::vector<int64_t> adjusted = stickAdjusted(N, eps);
  // Work division passes 1 and 3: no core may span more than 256 MiB of any operand.
  std::vector<SpanTensor> spans;
  auto spanOf = [&](const std::string &name, size_t k, const std::vector<int> &sc) {
    std::vector<int> dims;
    std::vector<int64_t> ext;
    for (size_t d = r - std::min(k, r); d < r; ++d) {
      dims.push_back(sc[d] == 1 ? static_cast<int>(d) : -1);
      ext.push_back(sc[d] == 1 ? adjusted[d] : 1);
    }
    spans.push_back(genericSpanTensor(name, dims, ext));
  };
  for (const auto &o : ops)
    if (!o.isConst)
      spanOf(g.values[o.value].name, g.values[o.value].shape.size(), scalesOf(o.value));
  spanOf(out.name, r, std::vector<int>(r, 1));
  auto splits = divideWorkWithSpan(adjusted, std::vector<bool>(r, true), spans, maxCores);

  KernelDraft kd = newDraft(index, desc.opFunc, "sfp", labels, N, splits);
  SuperDsc &s = kd.s;
  // Generic stick layout of a rank-k tensor whose dims are the op's last k dims: device dims
  // [o1..o(k-2), tile(o(k-1)), o0, elem]; layoutDimOrder_ lists the non-elem dims inner -> outer.
  auto layoutFor = [&](size_t k) {
    k = std::max<size_t>(k, 1);
    return genericLayout(std::vector<std::string>(labels.end() - static_cast<long>(k), labels.end()), eps);
  };

  std::vector<int> tensorOps; // operand index of each tensor, then the output
  std::vector<std::vector<int>> scales;
  std::vector<SdscLayout> layouts;
  for (size_t i = 0; i < ops.size(); ++i)
    if (!ops[i].isConst) {
      tensorOps.push_back(static_cast<int>(i));
      scales.push_back(scalesOf(ops[i].value));
      layouts.push_back(layoutFor(g.values[ops[i].value].shape.size()));
    }
  scales.push_back(std::vector<int>(r, 1));
  layouts.push_back(layoutFor(r));
  // Layout classes: tensors with the same dim order and scales share a label; torch-spyre names
  // classes in order of appearance starting with OUTPUT, so the output is visited first.
  std::map<std::pair<std::vector<std::string>, std::vector<int>>, std::string> labelOf;
  std::vector<std::string> dsType(scales.size());
  for (size_t i = scales.size(); i-- > 0;) {
    auto key = std::make_pair(layouts[i].layoutDimOrder, scales[i]);
    if (!labelOf.count(key)) {
      std::string label = kLayoutLabels[labelOf.size()];
      labelOf[key] = label;
      s.primaryDsInfo[label] = layouts[i];
    }
    dsType[i] = labelOf[key];
  }

  const std::vector<int64_t> perCore = perCoreElems(N, splits, {r - 1}, eps);
  auto place = [&](int ldsIdx, const std::vector<int> &sc, DataFormat fmt) {
    SdscTensor t;
    t.ldsIdx = ldsIdx;
    t.dsName = "Tensor" + std::to_string(ldsIdx);
    t.dsType = dsType[ldsIdx];
    t.scale = sc;
    t.dataFormat = fmt;
    placeTensor(s, t, perCore);
    s.labeledDs.push_back(t);
  };
  for (size_t ti = 0; ti < tensorOps.size(); ++ti) {
    int v = ops[tensorOps[ti]].value;
    place(static_cast<int>(ti), scales[ti], deviceFormat(g.values[v].dtype, where));
    kd.tensorValues.push_back(v);
  }
  place(static_cast<int>(tensorOps.size()), scales.back(), outFmt);
  kd.tensorValues.push_back(n.output);
  int ti = 0;
  for (const auto &o : ops) {
    if (o.isConst) {
      s.inputs.push_back(-1);
      s.inputConsts.push_back(o.constName);
      s.constants[o.constName] = o.constValue;
    } else {
      s.inputs.push_back(ti++);
      s.inputConsts.push_back("");
    }
  }
  s.outputs.push_back(ti);
  if (n.op == "softplus") {
    s.constants["softplusBeta"] = attrOr(n, "beta", 1.0);
    s.constants["softplusThresh"] = attrOr(n, "threshold", 20.0);
  } else if (n.op == "clamp") {
    if (n.attrs.count("min"))
      s.constants["clipMin"] = n.attrs.at("min").scalar();
    if (n.attrs.count("max"))
      s.constants["clipMax"] = n.attrs.at("max").scalar();
  } else if (n.op == "gelu") {
    s.constants["geluTanh"] = attrOr(n, "approximate", 0.0) != 0.0 ? 1.0 : 0.0;
  }
  return kd;
}

/// Shape with the reduced dims kept as 1 (the layout a reduction writes).
std::vector<int64_t> keepdimShape(const std::vector<int64_t> &in, const std::vector<bool> &reduced) {
  std::vector<int64_t> k = in;
  for (size_t d = 0; d < k.size(); ++d)
    if (reduced[d])
      k[d] = 1;
  return k;
}

std::vector<bool> reducedDims(const Node &n, size_t rank, const std::string &where) {
  std::vector<bool> red(rank, false);
  auto it = n.attrs.find("dims");
  if (it == n.attrs.end() || it->second.values.empty()) {
    std::fill(red.begin(), red.end(), true);
    return red;
  }
  for (double dv : it->second.values) {
    int64_t d = static_cast<int64_t>(dv);
    if (d < 0)
      d += static_cast<int64_t>(rank);
    if (d < 0 || d >= static_cast<int64_t>(rank) || static_cast<double>(static_cast<int64_t>(dv)) != dv)
      throw Error(where + ": reduction dim " + std::to_string(dv) + " out of range for rank " + std::to_string(rank));
    red[d] = true;
  }
  return red;
}

int64_t stickReductionSplit(const std::vector<int64_t> &splits, const std::vector<bool> &reduced,
                            const std::vector<int64_t> &adjusted, const SpanTensor &input, bool addsPartials,
                            bool always, int maxCores) {
  const size_t r = reduced.size();
  if (!addsPartials || r == 0 || !reduced[r - 1] || std::count(reduced.begin(), reduced.end(), true) != 1)
    return 1;
  const int64_t used = std::accumulate(splits.begin(), splits.end(), int64_t{1}, std::multiplies<>());
  const int64_t room = maxCores / used;
  // By default only where a core's input span would exceed pass 1's 256 MiB: elsewhere the
  // serial ring chain (one hop per phase) and the LX the split stages (which keeps the graph's
  // LX-resident tensors out) cost more than the parallel sweep saves (layer norm over 1151 x
  // 8192: 674.5 -> 1072 us simulated). `always` (CompileOptions::splitReductions) splits
  // wherever cores are idle.
  if (!always && perCoreSpan(input, splits) <= kMaxSpanBytes)
    return 1;
  // Even then not for a few sticks per core: the ring phases and barriers cost more than they
  // save (a softmax over 129 columns stays unsplit).
  const int64_t sticks = std::accumulate(adjusted.begin(), adjusted.end(), int64_t{1}, std::multiplies<>());
  constexpr int64_t kMinSticksPerCore = 512;
  if (sticks / used < kMinSticksPerCore)
    return 1;
  return largestDivisor(adjusted[r - 1], room);
}

void stickFastCores(SuperDsc &s) {
  const size_t r = s.dims.size();
  const int64_t ks = s.numWkSlicesPerDim[r - 1];
  std::vector<int64_t> rest = s.numWkSlicesPerDim;
  rest[r - 1] = 1;
  const auto outer = coreSlices(rest, s.numCoresUsed / static_cast<int>(ks));
  for (int c = 0; c < s.numCoresUsed; ++c) {
    s.coreIdToWkSlice[c] = outer[static_cast<size_t>(c / ks)];
    s.coreIdToWkSlice[c][r - 1] = c % ks;
  }
}

KernelDraft reductionKernel(const Graph &g, const Node &n, size_t index, int maxCores, bool splitReductions) {
  const Value &out = g.values[n.output];
  std::string where = "node %" + out.name + " = " + n.op;
  checkAttrs(n, where, {"dims", "keepdim"});
  if (n.inputs.size() != 1)
    throw Error(where + ": a reduction takes one tensor operand");
  const Value &in = g.values[n.inputs[0]];
  if (in.dtype != out.dtype)
    throw Unsupported("reductions that change dtype (" + where + ")");
  if (in.dtype != HostType::F16 && in.dtype != HostType::BF16 && in.dtype != HostType::F32)
    throw Unsupported(std::string(dtypeShortName(in.dtype)) + " reductions (" + where + ")");
  DataFormat fmt = deviceFormat(in.dtype, where);
  int64_t eps = elemsPerStick(fmt);
  std::vector<int64_t> N = in.shape.empty() ? std::vector<int64_t>{1} : in.shape;
  for (int64_t d : N)
    if (d == 0)
      throw Unsupported("empty tensors in " + where);
  size_t r = N.size();
  auto red = reducedDims(n, in.shape.size(), where);
  if (in.shape.empty())
    red = {true};
  auto labels = dimLabels(r);
  std::vector<int64_t> adjusted = stickAdjusted(N, eps);
  std::vector<bool> splittable(r);
  std::vector<int> inDims(r), outDims(r);
  std::vector<int64_t> outExt(r);
  for (size_t d = 0; d < r; ++d) {
    splittable[d] = !red[d];
    inDims[d] = static_cast<int>(d);
    outDims[d] = red[d] ? -1 : static_cast<int>(d);
    outExt[d] = red[d] ? 1 : adjusted[d];
  }
  auto splits = divideWorkWithSpan(
      adjusted, splittable,
      {genericSpanTensor(in.name, inDims, adjusted), genericSpanTensor(out.name, outDims, outExt)}, maxCores);
  bool stickReduced = red[r - 1];
  const char *base = n.op == "sum" ? "sum" : n.op == "mean" ? "mean" : n.op == "amax" ? "max" : "min";
  const int64_t stickSplit = stickReductionSplit(splits, red, adjusted, genericSpanTensor(in.name, inDims, adjusted),
                                                 n.op == "sum" || n.op == "mean", splitReductions, maxCores);
  if (stickSplit > 1)
    splits[r - 1] = stickSplit;

  KernelDraft kd = newDraft(index, std::string(base) + (stickReduced ? "" : "nonstick"), "sfp", labels, N, splits);
  SuperDsc &s = kd.s;
  if (stickSplit > 1)
    stickFastCores(s);
  SdscLayout layout = genericLayout(labels, eps);
  std::vector<int> inScale(r, 1), outScale(r, 1);
  for (size_t d = 0; d < r; ++d)
    if (red[d])
      outScale[d] = d == r - 1 ? -2 : -1;
  s.primaryDsInfo["OUTPUT"] = layout;
  s.primaryDsInfo["KERNEL"] = layout;
  const std::vector<int64_t> perCore = perCoreElems(N, splits, {r - 1}, eps);
  auto place = [&](int ldsIdx, const std::vector<int> &sc, const char *type) {
    SdscTensor t;
    t.ldsIdx = ldsIdx;
    t.dsName = "Tensor" + std::to_string(ldsIdx);
    t.dsType = type;
    t.scale = sc;
    t.dataFormat = fmt;
    placeTensor(s, t, perCore);
    s.labeledDs.push_back(t);
  };
  place(0, inScale, "KERNEL");
  place(1, outScale, "OUTPUT");
  s.inputs = {0, 1}; // torch-spyre: a reduction accumulates into its output
  s.inputConsts = {"", ""};
  s.outputs = {1};
  kd.tensorValues = {n.inputs[0], n.output};
  return kd;
}

KernelDraft matmulKernel(const Graph &g, const Node &n, size_t index, int maxCores) {
  const Value &out = g.values[n.output];
  std::string where = "node %" + out.name + " = " + n.op;
  checkAttrs(n, where, {"transb"});
  if (n.inputs.size() != 2)
    throw Error(where + ": matmul takes two tensor operands");
  // transb=1: the second operand is y^T as stored, [.., N, K] in its generic layout (sticked on
  // K); the kernel transposes its tiles in the PE array instead of a restickify kernel before it.
  const bool transB = n.attrs.count("transb") && n.attrs.at("transb").scalar() != 0;
  const Value &a = g.values[n.inputs[0]], &b = g.values[n.inputs[1]];
  for (const Value *v : {&a, &b, &out})
    if (v->dtype != HostType::F16 && v->dtype != HostType::BF16)
      throw Unsupported(std::string(dtypeShortName(v->dtype)) + " matmul (" + where + "); fp16/bf16 only");
  if (a.shape.size() < 2 || b.shape.size() < 2)
    throw Unsupported("matmul of rank < 2 operands (" + where + ")");
  size_t ra = a.shape.size(), rb = b.shape.size(), ro = out.shape.size();
  int64_t M = a.shape[ra - 2], K = a.shape[ra - 1], N = b.shape[transB ? rb - 2 : rb - 1];
  const int64_t bK = b.shape[transB ? rb - 1 : rb - 2];
  if (bK != K)
    throw Error(where + ": inner dims differ (" + std::to_string(K) + " vs " + std::to_string(bK) + ")");
  if (ro != ra || out.shape[ro - 2] != M || out.shape[ro - 1] != N)
    throw Error(where + ": output shape does not match [.., M, N]");
  if (ra > 4)
    throw Unsupported("matmul with more than 2 batch dims (" + where + ")");
  std::vector<int64_t> batchShape(a.shape.begin(), a.shape.end() - 2);
  if (rb != 2) {
    if (rb != ra || !std::equal(batchShape.begin(), batchShape.end(), b.shape.begin()))
      throw Unsupported("matmul batch broadcasting other than a 2-d weight (" + where + ")");
  }
  // Dims: batch..., M, N, K labelled as torch-spyre: the last of [ki kj y x mb out in].
  static const char *all[] = {"ki", "kj", "y", "x", "mb", "out", "in"};
  size_t r = batchShape.size() + 3;
  std::vector<std::string> labels(all + 7 - r, all + 7);
  std::vector<int64_t> N_ = batchShape;
  N_.push_back(M);
  N_.push_back(N);
  N_.push_back(K);
  int64_t eps = 64;
  // Work division passes 1-3 (span limit, matmul cost model, largest divisors); a K split's
  // partial sums travel over the ring between adjacent cores.
  std::vector<int64_t> splits = matmulWorkDivision({batchShape, rb != 2, M, N, K}, maxCores);
  if (transB && (splits.back() > 1 || N % 64 != 0))
    throw Unsupported("matmul with transb=1 and " +
                      (N % 64 ? "N = " + std::to_string(N) + " not a multiple of 64" : std::string("a K split")) +
                      " (" + where + "); transpose the second operand first");

  KernelDraft kd = newDraft(index, "batchmatmul", "pt", labels, N_, splits);
  SuperDsc &s = kd.s;
  const int cores = s.numCoresUsed;
  // K-fast core order (SPYRE_CORE_ID_K_FAST_EMISSION): K partners sit on adjacent cores.
  s.coreIdToWkSlice.clear();
  for (int c = 0; c < cores; ++c) {
    std::vector<int64_t> slice(r);
    slice[r - 1] = c % splits[r - 1];
    int64_t div = splits[r - 1];
    for (size_t d = 0; d + 1 < r; ++d) {
      slice[d] = (c / div) % splits[d];
      div *= splits[d];
    }
    s.coreIdToWkSlice.push_back(slice);
  }
  // Each tensor's generic layout over its own dims (labels), e.g. x [.., M, K] -> (.., mb, in).
  auto layoutOver = [&](const std::vector<std::string> &l) { return genericLayout(l, eps); };
  std::vector<std::string> batchLabels(labels.begin(), labels.end() - 3);
  auto withBatch = [&](bool hasBatch, std::vector<std::string> tail) {
    std::vector<std::string> l = hasBatch ? batchLabels : std::vector<std::string>{};
    l.insert(l.end(), tail.begin(), tail.end());
    return l;
  };
  std::vector<std::string> xl = withBatch(true, {"mb", "in"}),
                           yl = withBatch(rb != 2, transB ? std::vector<std::string>{"out", "in"}
                                                          : std::vector<std::string>{"in", "out"}),
                           ol = withBatch(true, {"mb", "out"});
  s.primaryDsInfo["INPUT"] = layoutOver(xl);
  s.primaryDsInfo["KERNEL"] = layoutOver(yl);
  s.primaryDsInfo["OUTPUT"] = layoutOver(ol);
  const std::vector<int64_t> perCore = perCoreElems(N_, splits, {r - 2, r - 1}, eps); // N and K in sticks
  auto place = [&](int ldsIdx, const char *type, const std::vector<std::string> &tl) {
    SdscTensor t;
    t.ldsIdx = ldsIdx;
    t.dsName = "Tensor" + std::to_string(ldsIdx);
    t.dsType = type;
    t.dataFormat = DataFormat::SEN169_FP16;
    t.scale.assign(r, -1);
    for (const auto &l : tl)
      t.scale[std::find(labels.begin(), labels.end(), l) - labels.begin()] = 1;
    placeTensor(s, t, perCore);
    s.labeledDs.push_back(t);
  };
  place(0, "INPUT", xl);
  place(1, "KERNEL", yl);
  place(2, "OUTPUT", ol);
  s.inputs = {0, 1};
  s.inputConsts = {"", ""};
  s.outputs = {2};
  kd.tensorValues = {n.inputs[0], n.inputs[1], n.output};
  return kd;
}

KernelDraft convertKernel(const Graph &g, const Node &n, size_t index, int maxCores) {
  const Value &out = g.values[n.output];
  std::string where = "node %" + out.name + " = " + n.op;
  checkAttrs(n, where, {});
  if (n.inputs.size() != 1)
    throw Error(where + ": to_dtype takes one tensor operand");
  const Value &in = g.values[n.inputs[0]];
  if (in.shape != out.shape)
    throw Error(where + ": to_dtype keeps the shape");
  DataFormat fi = deviceFormat(in.dtype, where), fo = deviceFormat(out.dtype, where);
  if (in.dtype == HostType::Bool || out.dtype == HostType::Bool)
    throw Unsupported("bool conversions (" + where + ")");
  std::vector<int64_t> N = in.shape.empty() ? std::vector<int64_t>{1} : in.shape;
  for (int64_t d : N)
    if (d == 0)
      throw Unsupported("empty tensors in " + where);
  size_t r = N.size();
  auto labels = dimLabels(r);
  std::vector<bool> splittable(r, true);
  splittable[r - 1] = false; // dtype ops keep the stick dim on one core
  auto splits = divideWorkWithSpan(N, splittable,
                                   {genericSpanTensor(in.name, identityDims(r), N, elemsPerStick(fi)),
                                    genericSpanTensor(out.name, identityDims(r), N, elemsPerStick(fo))},
                                   maxCores);
  KernelDraft kd = newDraft(index, fi == fo ? "identity" : fi == DataFormat::SEN169_FP16 ? "dl16tofp32" : "fp32todl16", "sfp",
                            labels, N, splits);
  SuperDsc &s = kd.s;
  s.primaryDsInfo["OUTPUT"] = genericLayout(labels, elemsPerStick(fo));
  if (fi != fo)
    s.primaryDsInfo["KERNEL"] = genericLayout(labels, elemsPerStick(fi));
  // The stick dim is never split here (slice 0), so its split unit does not matter.
  const std::vector<int64_t> perCore = perCoreElems(N, splits, {r - 1}, elemsPerStick(fo));
  auto place = [&](int ldsIdx, DataFormat f, const char *type) {
    SdscTensor t;
    t.ldsIdx = ldsIdx;
    t.dsName = "Tensor" + std::to_string(ldsIdx);
    t.dsType = type;
    t.scale.assign(r, 1);
    t.dataFormat = f;
    placeTensor(s, t, perCore);
    s.labeledDs.push_back(t);
  };
  place(0, fi, fi == fo ? "OUTPUT" : "KERNEL");
  place(1, fo, "OUTPUT");
  s.inputs = {0};
  s.inputConsts = {""};
  s.outputs = {1};
  kd.tensorValues = {n.inputs[0], n.output};
  return kd;
}

KernelDraft transposeKernel(const Graph &g, const Node &n, size_t index, int maxCores) {
  const Value &out = g.values[n.output];
  std::string where = "node %" + out.name + " = " + n.op;
  checkAttrs(n, where, {});
  if (n.inputs.size() != 1)
    throw Error(where + ": transpose takes one tensor operand");
  const Value &in = g.values[n.inputs[0]];
  size_t r = in.shape.size();
  if (r < 2 || r > 4)
    throw Unsupported("transpose of a rank-" + std::to_string(r) + " tensor (" + where + ")");
  std::vector<int64_t> expect = in.shape;
  std::swap(expect[r - 1], expect[r - 2]);
  if (out.shape != expect || out.dtype != in.dtype)
    throw Error(where + ": transpose swaps the last two dims");
  if (in.dtype != HostType::F16 && in.dtype != HostType::BF16)
    throw Unsupported(std::string(dtypeShortName(in.dtype)) + " transpose (" + where + "); fp16/bf16 only");
  for (int64_t d : in.shape)
    if (d == 0)
      throw Unsupported("empty tensors in " + where);
  static const char *batchNames[] = {"y", "x"};
  std::vector<std::string> labels(batchNames + (4 - r), batchNames + 2);
  labels.push_back("mb");
  labels.push_back("out");
  const std::vector<int64_t> &N = in.shape;
  const int64_t CT = (N[r - 1] + 63) / 64;
  std::vector<int64_t> adjusted = N;
  adjusted[r - 1] = CT;
  std::vector<bool> splittable(r, true);
  splittable[r - 2] = false; // rows stay on one core
  std::vector<int> outDims = identityDims(r);
  std::swap(outDims[r - 1], outDims[r - 2]);
  auto splits = divideWorkWithSpan(adjusted, splittable,
                                   {genericSpanTensor(in.name, identityDims(r), in.shape, 64),
                                    genericSpanTensor(out.name, outDims, out.shape, 64)},
                                   maxCores);
  KernelDraft kd = newDraft(index, "transpose", "pt", labels, N, splits);
  SuperDsc &s = kd.s;
  std::vector<std::string> outLabels(labels.begin(), labels.end() - 2);
  outLabels.push_back("out");
  outLabels.push_back("mb");
  s.primaryDsInfo["INPUT"] = genericLayout(labels, 64);
  s.primaryDsInfo["OUTPUT"] = genericLayout(outLabels, 64);
  // Per-core start addresses: batch slices and the core's first C tile (input: tiles; output:
  // rows of the C dim).
  const std::vector<int64_t> perCore = perCoreElems(N, splits, {r - 1}, 64);
  auto place = [&](int ldsIdx, const char *type) {
    SdscTensor t;
    t.ldsIdx = ldsIdx;
    t.dsName = "Tensor" + std::to_string(ldsIdx);
    t.dsType = type;
    t.dataFormat = DataFormat::SEN169_FP16;
    t.scale.assign(r, 1);
    placeTensor(s, t, perCore);
    s.labeledDs.push_back(t);
  };
  place(0, "INPUT");
  place(1, "OUTPUT");
  s.inputs = {0};
  s.inputConsts = {""};
  s.outputs = {1};
  kd.tensorValues = {n.inputs[0], n.output};
  return kd;
}

} // namespace detail

using namespace detail;

namespace {
/// SPYRE_DUMP_DIR's passes.txt: the graph after each frontend pass, then what each decided.
std::string passesReport(const Graph &g, const std::vector<PassSnapshot> &log, const std::vector<KernelDraft> &drafts,
                         const std::vector<int> &nodeOfDraft, const std::map<int, int> &aliasOf,
                         const LxPlanningResult &lx, const JobPlan &plan, const BundlingResult &bundling) {
  std::string r;
  for (const PassSnapshot &p : log)
    r += "# graph after " + p.pass + "\n" + p.graph + "\n";
  r += "# split: one kernel per node (zero-copy reshapes alias their input's buffer)\n";
  for (const auto &[v, src] : aliasOf)
    r += "%" + g.values[v].name + " = reshape(%" + g.values[src].name + "): alias, no kernel\n";
  r += "\n# work division: kernel, node, dims = size / splits, cores\n";
  for (size_t i = 0; i < drafts.size(); ++i) {
    const isa::SuperDsc &s = drafts[i].s;
    r += s.name + " %" + g.values[g.nodes.at(nodeOfDraft.at(i)).output].name + ":";
    for (size_t d = 0; d < s.dims.size(); ++d)
      r += " " + s.dims[d] + "=" + std::to_string(s.N[d]) + "/" + std::to_string(s.numWkSlicesPerDim[d]);
    r += ", " + std::to_string(s.numCoresUsed) + " cores\n";
  }
  r += "\n# LX planning (size per core, live kernels, address)\n" + (lx.summary.empty() ? "none\n" : lx.summary);
  r += "\n# memory planning and emission (JobPlan; launch args: buffer index, lx = LX-resident)\n" + plan.summary();
  r += "\n# bundling\n" + bundling.summary();
  return r;
}
} // namespace

JobPlan compileGraph(const Graph &input, const CompileOptions &opts) {
  input.verify();
  if (opts.maxCores < 1 || opts.maxCores > 32)
    throw Unsupported("invalid SENCORES value " + std::to_string(opts.maxCores));
  if (!opts.dumpDir.empty()) {
    std::filesystem::create_directories(opts.dumpDir);
    writeFile(opts.dumpDir + "/graph.txt", printGraph(input));
  }
  // Graph-to-graph passes (passes.h); each leaves its text in the pass log.
  Graph g = input;
  std::vector<PassSnapshot> log;
  const bool logPasses = opts.passLog || !opts.dumpDir.empty();
  auto snapshot = [&](const char *pass) {
    if (logPasses)
      log.push_back({pass, printGraph(g)});
  };
  eliminateDeadCode(g);
  snapshot("dead-code");
  decomposeOps(g);
  g.verify();
  snapshot("decompose");
  propagateLayouts(g, layoutBeamWidthFromEnv(), opts.maxCores, opts.matmulTransB);
  detail::expandLaneMovingReshapes(g);
  g.verify();
  snapshot("layout-propagation");
  if (opts.padMatmulK) {
    padMatmulK(g);
    g.verify();
    snapshot("k-padding");
  }
  dedupConstants(g);
  g.verify();
  snapshot("constant-dedup");

  JobPlan plan;
  // After layout propagation every value's shape is its device shape, whose generic layout
  // holds its bytes; a buffer records the host shape and the SpyreTensorLayout that maps it
  // (what a graph output's host tensor is read through).
  auto layoutOfValue = [&](int v) { return deviceTensorLayout(g, v); };
  std::map<int, int> bufferOf; // value id -> buffer
  auto bufferFor = [&](int v, BufferSpec::Kind kind, int index) {
    auto it = bufferOf.find(v);
    if (it != bufferOf.end())
      return it->second;
    const Value &val = g.values[v];
    BufferSpec b;
    b.name = val.name;
    b.kind = kind;
    b.index = index;
    b.hostShape = hostShapeOf(g, v);
    b.hostType = val.dtype;
    b.layout = layoutOfValue(v);
    plan.buffers.push_back(b);
    bufferOf[v] = static_cast<int>(plan.buffers.size()) - 1;
    return bufferOf[v];
  };
  for (size_t i = 0; i < g.inputs.size(); ++i)
    plan.inputs.push_back(bufferFor(g.inputs[i], BufferSpec::Kind::Input, static_cast<int>(i)));
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    int v = g.outputs[i];
    auto inIt = std::find(g.inputs.begin(), g.inputs.end(), v);
    bool isInput = inIt != g.inputs.end();
    plan.outputAliasesInput.push_back(isInput ? static_cast<int>(inIt - g.inputs.begin()) : -1);
    plan.outputs.push_back(isInput ? bufferOf[v] : bufferFor(v, BufferSpec::Kind::Output, static_cast<int>(i)));
  }

  // Split to one op per kernel, layout, work division: one drafted SuperDSC per node.
  // A reshape that keeps every element's device bytes is zero-copy: its value aliases its
  // input's buffer and no kernel runs (a graph output gets its own buffer: a copy kernel).
  std::map<int, int> aliasOf;
  auto root = [&](int v) {
    for (auto it = aliasOf.find(v); it != aliasOf.end(); it = aliasOf.find(v))
      v = it->second;
    return v;
  };
  // A slice along a row dim (not the stick dim) keeps every stick offset-free: when each of its
  // consumers is an elementwise op that reads it at the op's own shape, the consumers read a
  // view of the sliced tensor's buffer (maxDimSizes_ / offsets_ / steps_) and no slice kernel
  // runs. Otherwise (a graph output, a broadcast read, another op) the slice is a copy.
  const std::map<int, const Node *> viewSlices = foldableSlices(g);
  std::vector<KernelDraft> drafts;
  std::vector<int> nodeOfDraft;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node &n = g.nodes[ni];
    const Value &out = g.values[n.output];
    std::string where = "node %" + out.name + " = " + n.op;
    if (viewSlices.count(n.output))
      continue;
    // Values are immutable, so an internal clone (e.g. .contiguous() after a materialised
    // permute) aliases its input as well.
    if ((n.op == "reshape" || (n.op == "clone" && n.attrs.empty())) && n.inputs.size() == 1 &&
        std::find(g.outputs.begin(), g.outputs.end(), n.output) == g.outputs.end()) {
      const Value &in = g.values[n.inputs[0]];
      if (in.dtype == out.dtype &&
          reshapeKeepsDeviceBytes(in.shape, out.shape, elemsPerStick(deviceFormat(in.dtype, where)))) {
        aliasOf[n.output] = n.inputs[0];
        continue;
      }
    }
    KernelDraft kd;
    if (pointwiseOps().count(n.op)) {
      kd = pointwiseKernel(g, n, drafts.size(), opts.maxCores);
      readSlicesAsViews(g, viewSlices, kd);
    } else if (n.op == "sum" || n.op == "mean" || n.op == "amax" || n.op == "amin")
      kd = reductionKernel(g, n, drafts.size(), opts.maxCores, opts.splitReductions);
    else if (n.op == "matmul")
      kd = matmulKernel(g, n, drafts.size(), opts.maxCores);
    else if (n.op == "to_dtype")
      kd = convertKernel(g, n, drafts.size(), opts.maxCores);
    else if (n.op == "transpose")
      kd = transposeKernel(g, n, drafts.size(), opts.maxCores);
    else if (isLayerNormOp(n.op))
      kd = layerNormKernel(g, n, drafts.size(), opts.maxCores, opts.splitReductions);
    else if (n.op == "slice")
      kd = sliceKernel(g, n, drafts.size(), opts.maxCores);
    else if (n.op == "reshape")
      kd = reshapeKernel(g, n, drafts.size(), opts.maxCores);
    else if (n.op == "permute")
      kd = permuteKernel(g, n, drafts.size(), opts.maxCores);
    else if (n.op == "full")
      kd = fullKernel(g, n, drafts.size(), opts.maxCores);
    else if (n.op == "cat" || n.op == "copy_into") {
      // Several copies (numbered in launch order, after every earlier draft).
      for (KernelDraft &part : n.op == "cat" ? catKernels(g, n, drafts.size(), opts.maxCores)
                                             : copyIntoKernels(g, n, drafts.size(), opts.maxCores)) {
        drafts.push_back(std::move(part));
        nodeOfDraft.push_back(static_cast<int>(ni));
      }
      continue;
    } else
      throw Unsupported("op '" + n.op + "' (" + where + ")");
    drafts.push_back(std::move(kd));
    nodeOfDraft.push_back(static_cast<int>(ni));
  }
  // Kernels see an alias through its own shape; its bytes live in the root value's buffer.
  for (KernelDraft &kd : drafts)
    for (int &v : kd.tensorValues)
      v = root(v);
  // The split / layout / work-division decisions as notes: each node's kernels and their cores.
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    Node &n = g.nodes[ni];
    std::vector<double> cores;
    const isa::SuperDsc *only = nullptr;
    for (size_t k = 0; k < drafts.size(); ++k)
      if (nodeOfDraft[k] == static_cast<int>(ni)) {
        cores.push_back(drafts[k].s.numCoresUsed);
        only = &drafts[k].s;
      }
    if (aliasOf.count(n.output))
      n.notes["alias"] = Attr(1.0);
    else if (viewSlices.count(n.output))
      n.notes["view"] = Attr(1.0);
    else if (cores.size() == 1)
      n.notes["cores"] = Attr(cores[0]);
    else if (!cores.empty())
      n.notes["cores"] = Attr(cores);
    if (cores.size() == 1)
      n.notes["splits"] = Attr(std::vector<double>(only->numWkSlicesPerDim.begin(), only->numWkSlicesPerDim.end()));
  }
  snapshot("work-division");

  // LX planning: intermediates that stay in the cores' LX between kernels (no DDR buffer).
  LxPlanningResult lx;
  if (opts.lxPlanning)
    lx = planLxResidency(g, drafts, nodeOfDraft, opts.lxPlanBytes);
  if (!opts.dumpDir.empty() && opts.lxPlanning)
    writeFile(opts.dumpDir + "/lx_plan.txt", lx.summary);
  for (Node &n : g.nodes)
    if (auto it = lx.address.find(n.output); it != lx.address.end())
      n.notes["lx"] = Attr(static_cast<double>(it->second));
  snapshot("lx-planning");

  // Memory planning: intermediates whose kernel ranges [first, last] do not overlap share one
  // DDR buffer (memory_planning.cpp).
  planMemory(g, drafts, lx.lxValues, bufferOf, plan, layoutOfValue,
             [&](int v) { return bufferFor(v, BufferSpec::Kind::Intermediate, 0); });
  for (Node &n : g.nodes)
    if (auto it = bufferOf.find(root(n.output)); it != bufferOf.end())
      n.notes["buffer"] = Attr(static_cast<double>(it->second));
  snapshot("memory-planning");

  // Emission: SuperDSC JSON + launches binding kernel arguments (segments) to buffers.
  for (size_t ni = 0; ni < drafts.size(); ++ni) {
    const KernelDraft &kd = drafts[ni];
    isa::KernelLaunch launch;
    for (int v : kd.tensorValues) {
      if (lx.lxValues.count(v)) {
        launch.argBuffers.push_back(-1); // LX-resident: no DDR buffer behind this segment
        continue;
      }
      auto outIt = std::find(g.outputs.begin(), g.outputs.end(), v);
      bool isGraphOut = outIt != g.outputs.end();
      launch.argBuffers.push_back(bufferFor(v, isGraphOut ? BufferSpec::Kind::Output : BufferSpec::Kind::Intermediate,
                                            isGraphOut ? static_cast<int>(outIt - g.outputs.begin()) : 0));
    }
    launch.sdscFile = "sdsc_" + std::to_string(ni) + ".json";
    launch.sdscJson = isa::writeSuperDsc(kd.s).dump(2);
    // The backend reads what we wrote: parse the text, never hand the in-memory struct over.
    launch.sdsc = isa::parseSuperDscText(launch.sdscJson, launch.sdscFile);
    if (!opts.dumpDir.empty())
      writeFile(opts.dumpDir + "/" + launch.sdscFile, launch.sdscJson + "\n");
    plan.launches.push_back(std::move(launch));
  }

  // Bundling (bundling.cpp), last: consecutive launches share a bundle while its graph input /
  // output tensors fit the kernel-argument segments. Each node notes its kernels' bundles.
  const BundlingResult bundling = bundleLaunches(plan);
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    std::vector<double> bundles;
    for (size_t k = 0; k < drafts.size(); ++k)
      if (nodeOfDraft[k] == static_cast<int>(ni))
        bundles.push_back(plan.launches[k].bundle);
    if (bundles.size() == 1)
      g.nodes[ni].notes["bundle"] = Attr(bundles[0]);
    else if (!bundles.empty())
      g.nodes[ni].notes["bundle"] = Attr(bundles);
  }
  snapshot("bundling");
  if (!opts.dumpDir.empty()) {
    // A directory reused from an earlier compile must not keep its bundle files.
    for (const auto &e : std::filesystem::directory_iterator(opts.dumpDir)) {
      const std::string name = e.path().filename().string();
      if (name == "bundle.mlir" || (name.rfind("bundle_", 0) == 0 && e.path().extension() == ".mlir"))
        std::filesystem::remove(e.path());
    }
    // One sequencing file per bundle, naming its SuperDSC files in launch order; the
    // sdsc_N.json files themselves stay side by side in the dump directory.
    std::vector<std::vector<std::string>> files(bundling.bundles.size());
    for (const isa::KernelLaunch &l : plan.launches)
      files[l.bundle].push_back(l.sdscFile);
    for (size_t b = 0; b < files.size(); ++b)
      writeFile(opts.dumpDir + "/bundle_" + std::to_string(b) + ".mlir", isa::writeBundleMlir(files[b]));
    // torch-spyre's single-bundle name, for tools that read one bundle.mlir per directory.
    if (files.size() == 1)
      writeFile(opts.dumpDir + "/bundle.mlir", isa::writeBundleMlir(files[0]));
    writeFile(opts.dumpDir + "/passes.txt", passesReport(g, log, drafts, nodeOfDraft, aliasOf, lx, plan, bundling));
  }
  if (opts.passLog)
    *opts.passLog = std::move(log);
  return plan;
}

} // namespace spyre::frontend

namespace spyre::isa {
std::string JobPlan::summary() const {
  std::string s;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const auto &b = buffers[i];
    const char *kind = b.kind == BufferSpec::Kind::Input ? "input" : b.kind == BufferSpec::Kind::Output ? "output" : "intermediate";
    s += "buffer " + std::to_string(i) + " %" + b.name + " " + kind + " " + b.layout.str() + "\n";
  }
  for (const auto &l : launches) {
    s += "launch " + l.sdscFile + " (" + l.sdsc.opFuncName + ", " + std::to_string(l.sdsc.numCoresUsed) + " cores) args";
    for (int b : l.argBuffers)
      s += b < 0 ? std::string(" lx") : " " + std::to_string(b);
    s += ", bundle " + std::to_string(l.bundle) + "\n";
  }
  return s;
}
} // namespace spyre::isa
