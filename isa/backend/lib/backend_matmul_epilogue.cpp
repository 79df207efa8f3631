// The epilogue of a fused matmul (our extension, docs/superdsc.md §6.11): computeOp_ 0 is the
// batchmatmul, the entries after it are pointwise ops on its result (Result-op0), extra tensors
// (a full [.., M, N] operand or a row vector over N) and constants. The matmul lowering
// (backend_matmul.cpp) runs them on each output block in LX after pt.out and before the
// write-back: pt.out has already rounded the fp32 accumulator to DL16, which is exactly what
// the unfused chain reads back from DDR, and every SFP result is rounded to its format, so the
// fused kernel computes the unfused chain's values bit for bit.
//
// The per-stick body is the pointwise fused kernels' (fused_body.h FusedOps) over a view of
// the DSC without its K dim: the extra operands are its inputs, the matmul's output its output,
// and Result-op0 is read from the output's stick (the block's D).
#include "fused_body.h"
#include "matmul_pt.h"

namespace spyre::backend::detail {

std::array<int, 3> matmulOperands(const SuperDsc &s) {
  if (isFusedMatmul(s)) {
    const SdscComputeOp &mm = s.fusedOps[0];
    if (mm.inputs.size() != 2 || mm.inputs[0] < 0 || mm.inputs[1] < 0 || s.outputs.size() != 1)
      throw Error(where(s) + ": a fused batchmatmul reads two tensors and its kernel writes one output");
    return {mm.inputs[0], mm.inputs[1], s.outputs[0]};
  }
  if (s.inputs.size() != 2 || s.outputs.size() != 1 || s.inputs[0] < 0 || s.inputs[1] < 0)
    throw Error(where(s) + ": expected two input tensors and one output");
  return {s.inputs[0], s.inputs[1], s.outputs[0]};
}

MatmulEpilogue planMatmulEpilogue(const SuperDsc &s) {
  MatmulEpilogue ep;
  if (!isFusedMatmul(s))
    return ep;
  const std::string w = where(s);
  const auto [xIdx, yIdx, oIdx] = matmulOperands(s);
  const int dK = s.dimIndex("in"), dM = s.dimIndex("mb"), dN = s.dimIndex("out");
  if (dK < 0 || dM < 0 || dN < 0)
    throw Error(w + ": a matmul needs dims mb (M), out (N) and in (K) in N_");
  if (s.fusedOps.back().outputs != std::vector<int>{oIdx})
    throw Error(w + ": the last computeOp_ of a fused batchmatmul writes its output, the others none");
  for (size_t k = 0; k + 1 < s.fusedOps.size(); ++k)
    if (!s.fusedOps[k].outputs.empty())
      throw Error(w + ": the last computeOp_ of a fused batchmatmul writes its output, the others none");
  // The extra tensors: every input but x and y.
  for (int idx : s.inputs) {
    if (idx == xIdx || idx == yIdx)
      continue;
    const SdscTensor &t = s.tensor(idx);
    if (t.scale[dK] == 1)
      throw Error(w + ": epilogue operand " + t.dsName + " spans K");
    MatmulEpilogue::Operand o;
    o.ldsIdx = idx;
    o.g = tensorGeom(s, t, "out");
    if (!o.g.stickPresent || o.g.fmt != Format::DL16)
      throw Unsupported("epilogue operand " + t.dsName + " broadcast on N or not DL16 in " + s.name);
    o.full = o.g.spans(dM) || t.scale[dM] == 1;
    for (size_t d = 0; d < s.dims.size(); ++d)
      if (static_cast<int>(d) != dN && static_cast<int>(d) != dK && !o.full && t.scale[d] == 1 && s.N[d] > 1)
        throw Unsupported("epilogue operand " + t.dsName + " that spans a batch dim but not M in " + s.name);
    ep.operands.push_back(o);
  }
  // The DSC the body is emitted for: no K dim, the extra operands in, the matmul's output out.
  SuperDsc e;
  e.name = s.name;
  e.opFuncName = isa::kFusedOpFunc;
  e.exUnit = "sfp";
  for (size_t d = 0; d < s.dims.size(); ++d) {
    if (static_cast<int>(d) == dK)
      continue;
    e.dims.push_back(s.dims[d]);
    e.N.push_back(s.N[d]);
    e.numWkSlicesPerDim.push_back(s.numWkSlicesPerDim[d]);
  }
  e.numCoresUsed = s.numCoresUsed;
  for (const auto &slice : s.coreIdToWkSlice) {
    std::vector<int64_t> v;
    for (size_t d = 0; d < slice.size(); ++d)
      if (static_cast<int>(d) != dK)
        v.push_back(slice[d]);
    e.coreIdToWkSlice.push_back(v);
  }
  e.primaryDsInfo = s.primaryDsInfo;
  for (const SdscTensor &t : s.labeledDs) {
    if (t.ldsIdx == xIdx || t.ldsIdx == yIdx)
      continue;
    SdscTensor u = t;
    u.scale.erase(u.scale.begin() + dK);
    if (u.isView())
      throw Unsupported("a view as an epilogue operand in " + s.name);
    e.labeledDs.push_back(u);
  }
  for (const MatmulEpilogue::Operand &o : ep.operands) {
    e.inputs.push_back(o.ldsIdx);
    e.inputConsts.push_back("");
  }
  e.outputs = {oIdx};
  e.constants = s.constants;
  e.constantArgs = s.constantArgs;
  e.fusedOps = s.fusedOps;
  if (!e.constantArgs.empty())
    throw Unsupported("runtime scalar constants in the epilogue of " + s.name);

  PointwisePlan p;
  FusedOps ops(e, p);
  // v12 / v13 (lane mask) and v15 (DL16 zero) are the matmul's; v14 stays free.
  for (int r : {12, 13, 14, 15})
    ops.regs.share(r);
  FusedBodyState st;
  for (size_t k = 1; k < e.fusedOps.size(); ++k)
    for (int in : e.fusedOps[k].inputs) {
      if (in == xIdx || in == yIdx)
        throw Error(w + ": computeOp_ " + std::to_string(k) + " reads the matmul's own operand " +
                    s.tensor(in).dsName);
      if (in != -1)
        st.lastUse[in] = k;
    }
  st.reloadFrom[isa::fusedResultRef(0)] = static_cast<int>(ep.operands.size());
  for (size_t k = 1; k < e.fusedOps.size(); ++k) {
    ops.emitPointwise(k, st, ep.body);
    ep.ops += (k > 1 ? "," : "") + e.fusedOps[k].opFuncName;
  }
  for (const PointwisePlan::Const &c : p.fusedConsts) {
    if (c.arg >= 0 || c.fmt == Format::I32)
      throw Unsupported("a runtime or int32 constant in the epilogue of " + s.name);
    ep.consts.push_back({c.value, c.fmt, c.reg});
  }
  return ep;
}

} // namespace spyre::backend::detail
