// Elementwise ops: one SuperDSC over the output's dims, operands broadcast by scale -1.
#include "kernels.h"
#include "spyre/frontend/ops.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace spyre::frontend::detail {

using isa::SdscLayout;
using isa::SdscTensor;
using isa::SuperDsc;

namespace {

/// One operand of an op: a graph value or a constant.
struct Operand {
  int value = -1;
  bool isConst = false;
  std::string constName;
  double constValue = 0;
  int constArg = -1; ///< a runtime scalar ($k): SuperDSC constantInfo_ argIdx_
};

const char *const kLayoutLabels[] = {"OUTPUT", "KERNEL", "INPUT", "KERNEL_IDX", "LAYOUT4", "LAYOUT5", "LAYOUT6", "LAYOUT7"};

/// n's operands in op order: its tensors and the constants that stand for missing ones
/// (`scalar=v`; where's `a=v` / `b=v`). Their count is the op's maxInputs in ops.def.
std::vector<Operand> pointwiseOperands(const Node &n, const OpInfo &op, const std::string &where) {
  checkAttrs(n, where);
  std::vector<Operand> ops;
  auto constant = [&](const char *key, std::string name) {
    Operand o;
    o.isConst = true;
    o.constName = std::move(name);
    const Attr &a = n.attrs.at(key);
    if (a.isRuntime())
      o.constArg = a.param;
    else
      o.constValue = a.scalar();
    ops.push_back(o);
  };
  if (op.id == OpId::Where) {
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
      if (n.attrs.count(key))
        constant(key, std::string("where_") + key);
      else
        ops.push_back(take());
    }
    if (next != n.inputs.size())
      throw Error(where + ": too many tensor operands");
  } else {
    for (int v : n.inputs) {
      Operand o;
      o.value = v;
      ops.push_back(o);
    }
    if (n.attrs.count("scalar"))
      constant("scalar", "scalar");
  }
  if (static_cast<int>(ops.size()) != op.maxInputs)
    throw Error(where + ": expected " + std::to_string(op.maxInputs) + " operand(s), got " +
                std::to_string(ops.size()));
  return ops;
}

/// int64 values live as int32 on the card (torch-spyre narrows them): one compute type.
HostType narrowed(HostType t) { return t == HostType::I64 ? HostType::I32 : t; }

/// The output's device format after the dtype rules: a comparison produces bool (or, after
/// decomposeOps, 0 / 1 in its operands' dtype) from two equal input dtypes, where takes a bool
/// condition (or, after decomposeOps, 0 / 1 in the values' dtype), every other operand has the
/// output's dtype and stick geometry. int64 counts as int32.
DataFormat checkedOutputFormat(const Graph &g, const Node &n, const OpInfo &op, const std::vector<Operand> &ops,
                               const std::string &where) {
  const Value &out = g.values[n.output];
  HostType computeType = narrowed(out.dtype);
  if (op.id == OpId::ToDtype) // a conversion in a fusion group's walk: one stick geometry
    computeType = narrowed(g.values[ops[0].value].dtype);
  if (op.cls == OpClass::Comparison) {
    computeType = narrowed(ops[0].isConst ? g.values[ops[1].value].dtype : g.values[ops[0].value].dtype);
    if (out.dtype != HostType::Bool && narrowed(out.dtype) != computeType)
      throw Error(where + ": a comparison produces bool, not " + std::string(dtypeShortName(out.dtype)));
  }
  if ((op.id == OpId::BitwiseAnd || op.id == OpId::BitwiseOr || op.id == OpId::BitwiseXor) &&
      computeType != HostType::I32)
    throw Unsupported(std::string(op.name) + " of " + std::string(dtypeShortName(out.dtype)) + " in " + where +
                      " (int32 / int64 only; bool masks use minimum / maximum / ne)");
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].isConst) {
      if (computeType == HostType::I32 && ops[i].constValue != std::floor(ops[i].constValue))
        throw Unsupported("a non-integer constant " + std::to_string(ops[i].constValue) + " with int operands in " +
                          where);
      continue;
    }
    HostType t = narrowed(g.values[ops[i].value].dtype);
    HostType expect = computeType;
    if (op.id == OpId::Where && i == 0 && t != computeType)
      expect = HostType::Bool;
    if (t != expect)
      throw Unsupported("mixed dtypes in " + where + " (operand %" + g.values[ops[i].value].name + " is " +
                        std::string(dtypeShortName(t)) + ", expected " + std::string(dtypeShortName(expect)) + ")");
  }
  DataFormat outFmt = deviceFormatOrInt(out.dtype, where);
  for (const auto &o : ops)
    if (!o.isConst && elemsPerStick(deviceFormatOrInt(g.values[o.value].dtype, where)) != elemsPerStick(outFmt))
      throw Unsupported("operands with different stick geometry in " + where + " (" +
                        std::string(dtypeShortName(g.values[o.value].dtype)) + " -> " +
                        std::string(dtypeShortName(out.dtype)) + ")");
  return outFmt;
}

/// The op's own SuperDSC constants (softplus, clamp, gelu).
void addOpConstants(const Node &n, const OpInfo &op, SuperDsc &s) {
  if (op.id == OpId::Softplus) {
    s.constants["softplusBeta"] = attrOr(n, "beta", 1.0);
    s.constants["softplusThresh"] = attrOr(n, "threshold", 20.0);
  } else if (op.id == OpId::Clamp) {
    // A bound may be a runtime scalar ($k): its constant is the launch's scalar argument k.
    for (auto [key, name] : {std::pair{"min", "clipMin"}, std::pair{"max", "clipMax"}}) {
      auto it = n.attrs.find(key);
      if (it == n.attrs.end())
        continue;
      if (it->second.isRuntime()) {
        s.constants[name] = 0.0;
        s.constantArgs[name] = it->second.param;
      } else {
        s.constants[name] = it->second.scalar();
      }
    }
  } else if (op.id == OpId::Gelu) {
    s.constants["geluTanh"] = attrOr(n, "approximate", 0.0) != 0.0 ? 1.0 : 0.0;
  }
}

} // namespace

bool isPointwiseOp(const std::string &op) {
  const OpInfo *o = findOp(op);
  return o && o->isElementwise();
}

KernelDraft pointwiseKernel(const Graph &g, const Node &n, size_t index, int maxCores) {
  const Value &out = g.values[n.output];
  std::string where = "node %" + out.name + " = " + n.op;
  const OpInfo &op = opInfo(n.op);
  const std::vector<Operand> ops = pointwiseOperands(n, op, where);
  const DataFormat outFmt = checkedOutputFormat(g, n, op, ops, where);

  std::vector<int64_t> N = iterationSizes(out.shape, where);
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
  auto splits = divideWorkWithSpan(adjusted, std::vector<bool>(r, true), spans, maxCores, /*allowUneven=*/true);

  const std::string opFunc = op.id == OpId::ToDtype
                                 ? convertOpFunc(deviceFormatOrInt(g.values[n.inputs[0]].dtype, where), outFmt)
                                 : std::string(op.opFunc);
  KernelDraft kd = newDraft(index, opFunc, "sfp", labels, N, splits);
  SuperDsc &s = kd.s;
  unevenDimsSlowest(s, adjusted);
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
    place(static_cast<int>(ti), scales[ti], deviceFormatOrInt(g.values[v].dtype, where));
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
      if (o.constArg >= 0)
        s.constantArgs[o.constName] = o.constArg;
    } else {
      s.inputs.push_back(ti++);
      s.inputConsts.push_back("");
    }
  }
  s.outputs.push_back(ti);
  addOpConstants(n, op, s);
  return kd;
}

} // namespace spyre::frontend::detail
