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
#include "fused_body.h"
#include "lowerings.h"
#include <algorithm>
#include <cstdint>

namespace spyre::backend::detail {
namespace {

enum class Kind { Stick, Reduce, Row };

/// The row reductions a row-fused kernel takes (opFuncName of a computeOp_ entry).
bool isRowReduction(const std::string &op) { return op == "sum" || op == "mean" || op == "max" || op == "min"; }

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
    } else {
      ops.opcode(k); // checked
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
    if (op == "mean" && invCountReg_ < 0) {
      invCountReg_ = ops_.regs.take();
      in.push_back(vbcast(Format::F32, invCountReg_, 1.0f / static_cast<float>(count)));
    }
    if (validLanes_ == 0 || identityReg_.count(op == "mean" ? "sum" : op))
      continue;
    const int reg = ops_.regs.take();
    identityReg_[op == "mean" ? "sum" : op] = reg;
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
      out.push_back(vop(Opcode::Sel, Format::F32, tmp, maskReg_, v.reg, identityReg_.at(op == "mean" ? "sum" : op)));
      src = tmp;
    }
    ops_.retire(k, st);
    out.push_back(vop(combineOf(k), Format::F32, acc_.at(k), acc_.at(k), src));
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
      st.lastUse[ref] = SIZE_MAX; // kept: a row value
      ops_.emitPointwise(k, st, rp.prelude, /*stores=*/false);
      rowVal_[ref] = st.live.at(ref);
    }
    // Accumulators of this pass's reductions.
    acc_.clear();
    for (size_t k = 0; k < n; ++k)
      if (r_.kind[k] == Kind::Reduce && r_.pass[k] == P) {
        acc_[k] = ops_.regs.take();
        rp.init.push_back(vbcast(Format::F32, acc_[k], identityOf(k)));
      }
    rp.body = body(P, false);
    if (validLanes_ != 0 && !acc_.empty())
      rp.lastBody = body(P, true);
    // Finish: scale a mean, reduce the lanes in the operand's format (every lane = the value).
    for (const auto &[k, reg] : acc_) {
      const Format fmt = accFmt_.at(k);
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
        it = rowVal_.erase(it);
      } else {
        ++it;
      }
    }
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
