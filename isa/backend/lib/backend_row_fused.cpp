// Row-fused kernels (our SuperDSC extension, docs/superdsc.md §6.10): a fused kernel whose
// computeOp_ also lists row reductions (sum, mean, max, min along the stick dim). Every value
// is one of three kinds:
//   stick  a full-width value (an external tensor, or a pointwise op reading one), computed
//          per stick;
//   reduce a row reduction of a stick value: accumulated per stick, one value per row after
//          the row's sticks (broadcast along the row when read: every lane holds it);
//   row    a pointwise op on row values and constants only (mean + eps, rsqrt), once per row.
// A value is available in pass p: stick values in the pass of their last operand, reductions
// one pass after theirs. So softmax max(x) | exp(x - m), sum | exp(x - m) / s has 3 passes
// over the row's sticks, all in LX (the stick dim is whole in every block): each row is read
// from DDR once and written once. A stick value of an earlier pass is read back from its
// output's LX block if it is stored, else recomputed (bit-identical: the same instructions).
//
// Numerics: a reduction accumulates its operand stick by stick in fp32 in row order, masks
// the padded lanes of the last stick with the identity (what ld.pad gives the single-op
// reduction), scales a mean by 1/count, and reduces the lanes in the operand's format: the
// single-op reduction kernel's arithmetic, so results equal the unfused chain bit for bit.
//
// Layer norm as torch-spyre runs it (exx2 / layernormscale / layernormnorm, fp32 statistics)
// is one such kernel too: exx2 is a reduction with two fp32 accumulators (x and fma(x, x, acc)
// per lane) and two row values, E[x] and E[x^2], made as the single-op exx2 makes its EXX2
// stick (scale by 1/count, fold a DL16 register's halves, rsum in fp32; then splat to all 64
// lanes); layernormscale is a row op reading both (rsqrt(relu(E[x^2] - E[x]^2) + eps) in
// fp32); layernormnorm a stick op ((x - E[x]) * rstd, then fma with w and b, all fp32, rounded
// once by the store). These are backend_reduce.cpp's and backend_pointwise.cpp's instructions
// on the same values (a lane of a stored EXX2 / rstd stick splat is every lane of the row
// value), so the kernel equals the three single-op kernels bit for bit.
#include "fused_body.h"
#include "lowerings.h"
#include <algorithm>
#include <cstdint>

namespace spyre::backend::detail {
namespace {

enum class Kind { Stick, Reduce, Row };

/// The row reductions a row-fused kernel takes (opFuncName of a computeOp_ entry).
bool isRowReduction(const std::string &op) {
  return op == "sum" || op == "mean" || op == "max" || op == "min" || op == "exx2";
}

/// Layer norm's row op (on exx2's row values) and stick op: their own instructions.
bool isLayerNormOp(const std::string &op) { return op == "layernormscale" || op == "layernormnorm"; }

/// What each op is and when its value is available, checked.
struct RowSchedule {
  std::vector<Kind> kind;
  std::vector<int> pass;
  int numPasses = 1;
  /// The pass a value can be read in (stick values: theirs; reductions: the next).
  int avail(size_t k) const { return kind[k] == Kind::Reduce ? pass[k] + 1 : pass[k]; }
};

RowSchedule schedule(const SuperDsc &s, FusedOps &ops) {
  const std::string w = where(s);
  RowSchedule r;
  const size_t n = s.fusedOps.size();
  r.kind.resize(n);
  r.pass.assign(n, 0);
  for (size_t k = 0; k < n; ++k) {
    const SdscComputeOp &op = s.fusedOps[k];
    bool stickOperand = false;
    int p = 0;
    for (int ref : op.inputs) {
      if (ref >= 0) {
        stickOperand = true; // an external tensor is read per stick
      } else if (ref <= -2) {
        const int j = fusedResultIndex(ref);
        if (j >= static_cast<int>(k))
          throw Error(w + ": computeOp_ " + std::to_string(k) + " reads the result of a later op");
        p = std::max(p, r.avail(static_cast<size_t>(j)));
        stickOperand = stickOperand || r.kind[j] == Kind::Stick;
      }
    }
    if (isRowReduction(op.opFuncName)) {
      if (op.inputs.size() != 1 || op.inputs[0] == -1)
        throw Error(w + ": computeOp_ " + std::to_string(k) + " (" + op.opFuncName + ") reduces one tensor or result");
      if (!stickOperand)
        throw Error(w + ": computeOp_ " + std::to_string(k) + " (" + op.opFuncName +
                    ") reduces a row value (one per row) again");
      if (!op.outputs.empty())
        throw Unsupported("a row reduction stored as a tensor in the row-fused kernel " + ops.opWhere(k));
      r.kind[k] = Kind::Reduce;
    } else if (isLayerNormOp(op.opFuncName)) {
      // layernormscale(exx2); layernormnorm(x, exx2, layernormscale, w, b) (w, b: tensors or
      // constants).
      const bool scale = op.opFuncName == "layernormscale";
      auto resultOf = [&](size_t i, const char *name) {
        const int ref = i < op.inputs.size() ? op.inputs[i] : -1;
        return ref <= -2 && s.fusedOps[fusedResultIndex(ref)].opFuncName == name;
      };
      if (op.inputs.size() != (scale ? 1u : 5u) || !resultOf(scale ? 0 : 1, "exx2") ||
          (!scale &&
           (op.inputs[0] < 0 || !resultOf(2, "layernormscale") || op.inputs[3] <= -2 || op.inputs[4] <= -2)))
        throw Unsupported("a " + op.opFuncName + " other than layer norm's own in the row-fused kernel " +
                          ops.opWhere(k));
      r.kind[k] = scale ? Kind::Row : Kind::Stick;
      if (scale && !op.outputs.empty())
        throw Unsupported("a row value stored as a tensor in the row-fused kernel " + ops.opWhere(k));
    } else {
      ops.opcode(k); // checked
      for (int ref : op.inputs)
        if (ref <= -2 && (s.fusedOps[fusedResultIndex(ref)].opFuncName == "exx2" ||
                          s.fusedOps[fusedResultIndex(ref)].opFuncName == "layernormscale"))
          throw Unsupported("an exx2 / layernormscale value read by " + ops.opWhere(k));
      r.kind[k] = stickOperand ? Kind::Stick : Kind::Row;
      if (r.kind[k] == Kind::Row && !op.outputs.empty())
        throw Unsupported("a row value stored as a tensor in the row-fused kernel " + ops.opWhere(k));
    }
    r.pass[k] = p;
    r.numPasses = std::max(r.numPasses, p + 1);
  }
  return r;
}

/// Builds the passes of the plan.
class RowPassBuilder {
public:
  RowPassBuilder(const SuperDsc &s, PointwisePlan &p) : s_(s), p_(p), ops_(s, p), r_(schedule(s, ops_)) {}
  void build();

private:
  void setup();
  /// keepRows: the stick values read in a later pass than theirs that are not stored go to
  /// the row scratch (one row each) instead of being recomputed there.
  void chooseKept();
  /// The ops the stick loop of pass P runs: those of pass P, and the stick values of earlier
  /// passes they read that are not stored (recomputed); a stored one is read back from its
  /// output's LX block (reloadFrom: result ref -> walk tensor index).
  std::vector<bool> needed(int P, std::map<int, int> *reloadFrom) const;
  /// The stick loop's body of pass P; masked: the reductions see the identity in the padded
  /// lanes of the row's last stick.
  std::vector<Instr> body(int P, bool masked);
  /// layernormscale (prelude) and layernormnorm (stick loop): backend_pointwise.cpp's
  /// instructions on the row values.
  void layerNormScale(size_t k, std::vector<Instr> &out);
  void layerNormNorm(size_t k, FusedBodyState &st, std::vector<Instr> &out);
  Opcode combineOf(size_t k) const;
  float identityOf(size_t k) const;

  const SuperDsc &s_;
  PointwisePlan &p_;
  FusedOps ops_;
  RowSchedule r_;
  int maskReg_ = -1, invCountReg_ = -1;
  std::map<std::string, int> identityReg_; ///< per reduction kind
  std::map<size_t, int> acc_;              ///< accumulators of the current pass
  std::map<size_t, Format> accFmt_;        ///< the format of each reduction's operand
  std::map<int, FusedValue> rowVal_;       ///< row values computed so far (by result ref)
  std::map<size_t, int> sq_;               ///< exx2's second accumulator, then E[x^2] (by op)
  std::map<size_t, int> lnConst_;          ///< layernormnorm's constant w / b of this pass (operand)
  std::map<size_t, int64_t> kept_;         ///< stick values kept in the row scratch: op -> offset
  std::map<size_t, Format> keptFmt_;       ///< their formats, once computed
  int64_t validLanes_ = 0;
};

Opcode RowPassBuilder::combineOf(size_t k) const {
  const std::string &op = s_.fusedOps[k].opFuncName;
  return op == "max" ? Opcode::Max : op == "min" ? Opcode::Min : Opcode::Add;
}

float RowPassBuilder::identityOf(size_t k) const {
  const std::string &op = s_.fusedOps[k].opFuncName;
  return op == "max" ? -INFINITY : op == "min" ? INFINITY : 0.0f;
}

/// The kernel's constant registers for the reductions: the lane mask of a row's last stick
/// (lane < valid lanes), the identities, 1/count for a mean.
void RowPassBuilder::setup() {
  const int sd = s_.dimIndex(p_.stickDim);
  // The walk's dim order is the output's device order with the stick dim moved innermost (in
  // the generic layout the stick tiles are outside the rows): a block holds whole rows, and
  // each tensor's block stays dense in LX in that order (its DMA box strides do the rest).
  p_.outTensor = p_.out;
  auto &dims = p_.out.dims;
  auto it = std::find_if(dims.begin(), dims.end(), [&](const TensorDim &d) { return d.iterDim == sd; });
  if (it == dims.end())
    throw Unsupported("a row-fused kernel whose output does not span its stick dim in " + s_.name);
  std::rotate(it, it + 1, dims.end());
  if (s_.numWkSlicesPerDim[sd] != 1)
    throw Unsupported("splitting the reduced stick dim " + p_.stickDim + " over cores in " + s_.name);
  const int64_t count = s_.N[sd];
  validLanes_ = count % elemsPerStick(p_.out.t->dataFormat);
  p_.scratchRowBytes = (count + elemsPerStick(p_.out.t->dataFormat) - 1) / elemsPerStick(p_.out.t->dataFormat) * kStickBytes;
  std::vector<Instr> &in = p_.rowSetup;
  for (size_t k = 0; k < s_.fusedOps.size(); ++k) {
    if (r_.kind[k] != Kind::Reduce)
      continue;
    const std::string &op = s_.fusedOps[k].opFuncName;
    if ((op == "mean" || op == "exx2") && invCountReg_ < 0) {
      invCountReg_ = ops_.regs.take();
      in.push_back(vbcast(Format::F32, invCountReg_, 1.0f / static_cast<float>(count)));
    }
    const std::string combine = op == "mean" || op == "exx2" ? "sum" : op;
    if (validLanes_ == 0 || identityReg_.count(combine))
      continue;
    const int reg = ops_.regs.take();
    identityReg_[combine] = reg;
    in.push_back(vbcast(Format::F32, reg, identityOf(k)));
    if (maskReg_ < 0) {
      maskReg_ = ops_.regs.take();
      const int lanes = ops_.regs.take();
      in.push_back(vop(Opcode::Iota, Format::F32, maskReg_));
      in.push_back(vbcast(Format::F32, lanes, static_cast<float>(validLanes_)));
      in.push_back(vop(Opcode::Lt, Format::F32, maskReg_, maskReg_, lanes));
      ops_.regs.release(lanes);
    }
  }
}

void RowPassBuilder::layerNormScale(size_t k, std::vector<Instr> &out) {
  // backend_pointwise.cpp's layernormscale: E[x]^2, E[x^2] - that, relu, + eps, rsqrt.
  const int ref = s_.fusedOps[k].inputs[0];
  const int m = rowVal_.at(ref).reg, q = sq_.at(static_cast<size_t>(fusedResultIndex(ref)));
  // eps is set here, per row, not once per kernel: every operand of the row's rstd is then
  // visibly uniform in the row walk's loop nest (the JIT holds it in one host register).
  const int t = ops_.regs.take(), r = ops_.regs.take(), e = ops_.regs.take();
  auto eps = s_.constants.find("op" + std::to_string(k) + "_eps");
  out.push_back(vbcast(Format::F32, e, eps == s_.constants.end() ? 0.0f : static_cast<float>(eps->second)));
  out.push_back(vop(Opcode::Mul, Format::F32, t, m, m));
  out.push_back(vop(Opcode::Sub, Format::F32, t, q, t));
  out.push_back(vop(Opcode::Relu, Format::F32, t, t));
  out.push_back(vop(Opcode::Add, Format::F32, t, t, e));
  out.push_back(vop(Opcode::Rsqrt, Format::F32, r, t));
  ops_.regs.release(t);
  ops_.regs.release(e);
  rowVal_[fusedResultRef(static_cast<int>(k))] = {r, Format::F32};
}

void RowPassBuilder::layerNormNorm(size_t k, FusedBodyState &st, std::vector<Instr> &out) {
  // backend_pointwise.cpp's layernormnorm: (x - mean) * rstd, fma with w and b, all fp32; the
  // store rounds once.
  const SdscComputeOp &op = s_.fusedOps[k];
  std::vector<FusedValue> src(op.inputs.size());
  for (size_t i : {size_t{0}, size_t{3}, size_t{4}})
    if (op.inputs[i] != -1)
      src[i] = ops_.operand(k, i, st, out);
    else
      src[i] = {lnConst_.at(i), Format::F32};
  const int m = rowVal_.at(op.inputs[1]).reg, rstd = rowVal_.at(op.inputs[2]).reg;
  ops_.retire(k, st);
  const int t = ops_.regs.take();
  out.push_back(vop(Opcode::Sub, Format::F32, t, src[0].reg, m));
  out.push_back(vop(Opcode::Mul, Format::F32, t, t, rstd));
  out.push_back(vop(Opcode::Fma, Format::F32, t, t, src[3].reg, src[4].reg));
  if (st.lastUse.count(fusedResultRef(static_cast<int>(k))))
    throw Unsupported("a layernormnorm value read again in the row-fused kernel " + ops_.opWhere(k));
  for (int o : op.outputs) {
    const int ti = ops_.tensorIndex(o);
    if (ti < static_cast<int>(s_.inputs.size()))
      throw Error(where(s_) + ": computeOp_ " + std::to_string(k) + " writes a tensor that is not an output");
    const TensorGeom &g = ops_.geomOf(ti);
    if (g.fmt != src[0].fmt)
      throw Unsupported("a layernormnorm result stored in another format than x in " + ops_.opWhere(k));
    out.push_back(vst(g.fmt, t, 10 + ti));
  }
  ops_.regs.release(t);
}

std::vector<bool> RowPassBuilder::needed(int P, std::map<int, int> *reloadFrom) const {
  const size_t n = s_.fusedOps.size();
  std::vector<bool> need(n, false);
  for (size_t k = n; k-- > 0;) {
    need[k] = need[k] || (r_.kind[k] != Kind::Row && r_.pass[k] == P);
    if (!need[k])
      continue;
    for (int ref : s_.fusedOps[k].inputs) {
      if (ref > -2)
        continue;
      const size_t j = static_cast<size_t>(fusedResultIndex(ref));
      if (r_.kind[j] != Kind::Stick || r_.pass[j] == P || kept_.count(j))
        continue;
      if (!s_.fusedOps[j].outputs.empty()) {
        if (reloadFrom)
          (*reloadFrom)[ref] = ops_.tensorIndex(s_.fusedOps[j].outputs[0]);
      } else {
        need[j] = true;
      }
    }
  }
  return need;
}

std::vector<Instr> RowPassBuilder::body(int P, bool masked) {
  const size_t n = s_.fusedOps.size();
  FusedBodyState st;
  const std::vector<bool> need = needed(P, &st.reloadFrom);
  for (const auto &[j, off] : kept_) {
    const int ref = fusedResultRef(static_cast<int>(j));
    if (r_.pass[j] == P)
      st.scratchStore[ref] = off;
    else if (r_.pass[j] < P && keptFmt_.count(j))
      st.scratch[ref] = {off, keptFmt_.at(j)};
  }
  for (const auto &[ref, v] : rowVal_)
    st.live[ref] = v; // held for the whole pass: no last use here
  for (size_t k = 0; k < n; ++k)
    if (need[k])
      for (int ref : s_.fusedOps[k].inputs)
        if (ref != -1 && !rowVal_.count(ref))
          st.lastUse[ref] = k;
  std::vector<Instr> out;
  for (size_t k = 0; k < n; ++k) {
    if (!need[k])
      continue;
    if (r_.kind[k] == Kind::Stick && s_.fusedOps[k].opFuncName == "layernormnorm") {
      if (r_.pass[k] != P)
        throw Unsupported("a layernormnorm value read in a later pass in " + ops_.opWhere(k));
      layerNormNorm(k, st, out);
      continue;
    }
    if (r_.kind[k] == Kind::Stick) {
      ops_.emitPointwise(k, st, out, /*stores=*/r_.pass[k] == P);
      if (auto sc = st.scratch.find(fusedResultRef(static_cast<int>(k))); sc != st.scratch.end())
        keptFmt_[k] = sc->second.second;
      continue;
    }
    FusedValue v = ops_.operand(k, 0, st, out);
    accFmt_[k] = v.fmt;
    if (v.fmt == Format::I32)
      throw Unsupported("int32 row reductions in the row-fused kernel " + ops_.opWhere(k));
    int src = v.reg, tmp = -1;
    if (masked) {
      const std::string &op = s_.fusedOps[k].opFuncName;
      tmp = ops_.regs.take();
      out.push_back(vop(Opcode::Sel, Format::F32, tmp, maskReg_, v.reg,
                        identityReg_.at(op == "mean" || op == "exx2" ? "sum" : op)));
      src = tmp;
    }
    ops_.retire(k, st);
    out.push_back(vop(combineOf(k), Format::F32, acc_.at(k), acc_.at(k), src));
    if (sq_.count(k)) // exx2: the square sum, one fma per lane (backend_reduce.cpp)
      out.push_back(vop(Opcode::Fma, Format::F32, sq_.at(k), src, src, sq_.at(k)));
    if (tmp >= 0)
      ops_.regs.release(tmp);
  }
  return out;
}

void RowPassBuilder::chooseKept() {
  if (!p_.keepRows)
    return;
  const size_t n = s_.fusedOps.size();
  for (size_t k = 0; k < n; ++k)
    for (int ref : s_.fusedOps[k].inputs) {
      if (ref > -2 || r_.kind[k] == Kind::Row)
        continue;
      const size_t j = static_cast<size_t>(fusedResultIndex(ref));
      if (r_.kind[j] == Kind::Stick && r_.pass[k] > r_.pass[j] && s_.fusedOps[j].outputs.empty() && !kept_.count(j)) {
        kept_[j] = static_cast<int64_t>(kept_.size()) * p_.scratchRowBytes;
      }
    }
  p_.scratchRows = static_cast<int>(kept_.size());
}

void RowPassBuilder::build() {
  setup();
  chooseKept();
  const size_t n = s_.fusedOps.size();
  // The last pass that reads each row value (in its prelude or, also by a recomputed op, in
  // its stick loop): its register is free after that pass.
  std::map<int, int> lastPass;
  for (int P = 0; P < r_.numPasses; ++P) {
    const std::vector<bool> need = needed(P, nullptr);
    for (size_t k = 0; k < n; ++k)
      if (need[k] || (r_.kind[k] == Kind::Row && r_.pass[k] == P))
        for (int ref : s_.fusedOps[k].inputs)
          if (ref <= -2 && r_.kind[fusedResultIndex(ref)] != Kind::Stick)
            lastPass[ref] = std::max(lastPass[ref], P);
  }
  for (int P = 0; P < r_.numPasses; ++P) {
    PointwisePlan::RowPass rp;
    // Prelude: the row ops of this pass, on row values and constants.
    for (size_t k = 0; k < n; ++k) {
      if (r_.kind[k] != Kind::Row || r_.pass[k] != P)
        continue;
      FusedBodyState st;
      for (const auto &[ref, v] : rowVal_)
        st.live[ref] = v;
      const int ref = fusedResultRef(static_cast<int>(k));
      if (s_.fusedOps[k].opFuncName == "layernormscale") {
        layerNormScale(k, rp.prelude);
        continue;
      }
      st.lastUse[ref] = SIZE_MAX; // kept: a row value
      ops_.emitPointwise(k, st, rp.prelude, /*stores=*/false);
      rowVal_[ref] = st.live.at(ref);
    }
    // layernormnorm's constant weight / bias (1, 0): set per row like eps (layerNormScale).
    for (size_t k = 0; k < n; ++k)
      if (s_.fusedOps[k].opFuncName == "layernormnorm" && r_.pass[k] == P)
        for (size_t i : {size_t{3}, size_t{4}})
          if (s_.fusedOps[k].inputs[i] == -1) {
            lnConst_[i] = ops_.regs.take();
            const double value = s_.constants.at(s_.fusedOps[k].inputConsts.at(i));
            rp.prelude.push_back(vbcast(Format::F32, lnConst_[i], static_cast<float>(value)));
          }
    // Accumulators of this pass's reductions.
    acc_.clear();
    for (size_t k = 0; k < n; ++k)
      if (r_.kind[k] == Kind::Reduce && r_.pass[k] == P) {
        acc_[k] = ops_.regs.take();
        rp.init.push_back(vbcast(Format::F32, acc_[k], identityOf(k)));
        if (s_.fusedOps[k].opFuncName == "exx2") {
          sq_[k] = ops_.regs.take();
          rp.init.push_back(vbcast(Format::F32, sq_[k], identityOf(k)));
        }
      }
    rp.body = body(P, false);
    if (validLanes_ != 0 && !acc_.empty())
      rp.lastBody = body(P, true);
    // Finish: scale a mean, reduce the lanes in the operand's format (every lane = the value).
    for (const auto &[k, reg] : acc_) {
      const Format fmt = accFmt_.at(k);
      if (sq_.count(k)) {
        // exx2 (backend_reduce.cpp finishStick): scale both sums, fold a DL16 register's 64
        // lanes into 32 fp32 lanes, reduce in fp32: E[x] (the row value) and E[x^2].
        for (int acc : {reg, sq_.at(k)}) {
          rp.finish.push_back(vop(Opcode::Mul, Format::F32, acc, acc, invCountReg_));
          if (fmt == Format::DL16) {
            const int lo = ops_.regs.take(), hi = ops_.regs.take();
            rp.finish.push_back(vop(Opcode::Unpack, Format::None, lo, hi, acc));
            rp.finish.push_back(vop(Opcode::Add, Format::F32, acc, lo, hi));
            ops_.regs.release(lo);
            ops_.regs.release(hi);
          }
          rp.finish.push_back(vop(Opcode::Rsum, Format::F32, acc, acc));
          // rsum.f32 fills lanes 0..31: every lane of a DL16 row (what the single-op
          // layernormnorm's splat of the stored statistic gives).
          if (fmt == Format::DL16)
            rp.finish.push_back(vop(Opcode::Splat, Format::F32, acc, acc));
        }
        rowVal_[fusedResultRef(static_cast<int>(k))] = {reg, Format::F32};
        continue;
      }
      if (s_.fusedOps[k].opFuncName == "mean")
        rp.finish.push_back(vop(Opcode::Mul, Format::F32, reg, reg, invCountReg_));
      const Opcode red = combineOf(k) == Opcode::Max ? Opcode::Rmax : combineOf(k) == Opcode::Min ? Opcode::Rmin : Opcode::Rsum;
      rp.finish.push_back(vop(red, fmt, reg, reg));
      rowVal_[fusedResultRef(static_cast<int>(k))] = {reg, fmt};
    }
    // Row values read for the last time in this pass (or never) free their registers.
    for (auto it = rowVal_.begin(); it != rowVal_.end();) {
      auto lp = lastPass.find(it->first);
      if (lp == lastPass.end() || lp->second <= P) {
        ops_.regs.release(it->second.reg);
        if (const size_t j = static_cast<size_t>(fusedResultIndex(it->first)); sq_.count(j)) {
          ops_.regs.release(sq_.at(j));
          sq_.erase(j);
        }
        it = rowVal_.erase(it);
      } else {
        ++it;
      }
    }
    for (const auto &[i, reg] : lnConst_)
      ops_.regs.release(reg);
    lnConst_.clear();
    p_.rowPasses.push_back(std::move(rp));
  }
  p_.computeFmt = p_.out.fmt;
}

} // namespace

bool isRowFused(const SuperDsc &s) {
  for (const SdscComputeOp &op : s.fusedOps)
    if (isRowReduction(op.opFuncName))
      return true;
  return false;
}

void checkRowFusedOperands(const SuperDsc &s, PointwisePlan &p) { RowPassBuilder(s, p).build(); }

int64_t rowFusedMinStagingBytes(const SuperDsc &s) {
  if (!isRowFused(s))
    return 0;
  PointwisePlan p;
  checkRowFusedOperands(s, p);
  planSlices(s, p);
  int64_t bytes = 0; // one row of every staged tensor
  for (const TensorGeom *g : p.tensors)
    if (!g->t->inLx)
      bytes += p.tensorBlockBytes(*g, p.J - 1, p.len[p.J - 1]);
  return bytes;
}

} // namespace spyre::backend::detail

namespace spyre::backend {

bool supportsRowFused(const isa::SuperDsc &s) {
  try {
    detail::PointwisePlan p;
    detail::checkRowFusedOperands(s, p);
    detail::planSlices(s, p);
    BackendOptions opts;
    detail::planBlocking(s, opts, p);
    return true;
  } catch (const Unsupported &) {
    return false;
  }
}

} // namespace spyre::backend
