// Internal to the backend: the pieces of a fused kernel's per-stick body (docs/superdsc.md
// §6.9, §6.10), shared by the pointwise fused walk (backend_fused.cpp) and the row-fused walk
// (backend_row_fused.cpp): the external tensors, vector register allocation, operand loads,
// one op's instruction and its stores.
#pragma once
#include "pointwise_plan.h"
#include <map>
#include <set>

namespace spyre::backend::detail {

/// Register allocation over v0..v15, reference counted (an identity shares its operand's
/// register): a register is free again after the last use of every value in it.
class VectorRegisters {
public:
  explicit VectorRegisters(const SuperDsc &s) : s_(s) {}
  int take();
  void share(int r) { ++users_[r]; }
  void release(int r) { --users_[r]; }

private:
  const SuperDsc &s_;
  int users_[16] = {};
};

/// A value of the body: its register and format.
struct FusedValue {
  int reg = -1;
  Format fmt = Format::None;
};

/// The values of one body being emitted: what is in a register now (by ldsIdx for an external
/// input, fusedResultRef(k) for op k's result), the op after which each is dead, and results
/// that are read back from their output's LX block instead of recomputed (walk tensor index).
struct FusedBodyState {
  std::map<int, FusedValue> live;
  std::map<int, size_t> lastUse;
  std::map<int, int> reloadFrom;
  /// Results kept in the row scratch (docs/superdsc.md §6.10; PointwisePlan::keepRows):
  /// scratchStore: ref -> byte offset from the scratch register, stored when computed (the
  /// value's format is then recorded in `scratch`); scratch: ref -> (offset, format), loaded
  /// when read.
  std::map<int, int64_t> scratchStore;
  std::map<int, std::pair<int64_t, Format>> scratch;
};

/// Emits the ops of a fused SuperDSC into bodies; constructed once per plan, it checks and
/// places the external tensors (p.out, p.moreOuts, p.ins) and reserves the constants' registers.
class FusedOps {
public:
  FusedOps(const SuperDsc &s, PointwisePlan &p);
  VectorRegisters regs;

  /// The opcode of computeOp_ entry k, checked against opfuncs.def (a pointwise SFP op with
  /// its arity, not the layer-norm, restickify or int/float cvt ops).
  Opcode opcode(size_t k) const;
  /// Register value of operand i of op k: live, reloaded from an output's LX block, or an
  /// external input loaded (and splat if its stick is broadcast) on its first use.
  FusedValue operand(size_t k, size_t i, FusedBodyState &st, std::vector<Instr> &body);
  /// The format op k computes in, from its operand values (constants not yet filled in).
  Format computeFormat(size_t k, Opcode code, const std::vector<FusedValue> &src) const;
  /// The constant operands of op k: their registers, set once before the walk (p.fusedConsts).
  void constants(size_t k, Format fmt, std::vector<FusedValue> &src);
  /// Frees the operands of op k used for the last time in this body.
  void retire(size_t k, FusedBodyState &st);
  /// Op k on its operand values into a fresh register (an identity shares its operand's).
  FusedValue apply(size_t k, Opcode code, Format fmt, const std::vector<FusedValue> &src, FusedBodyState &st,
                   std::vector<Instr> &body);
  /// Stores op k's result to each of its outputs.
  void store(size_t k, Opcode code, FusedValue result, std::vector<Instr> &body) const;
  /// The whole pointwise op k: operands, constants, the op, stores (if `stores`), and its
  /// result kept live while a later op of this body reads it.
  void emitPointwise(size_t k, FusedBodyState &st, std::vector<Instr> &body, bool stores = true);
  /// Walk tensor index (r10 + index) of ldsIdx, or -1.
  int tensorIndex(int ldsIdx) const {
    auto it = tensorIndex_.find(ldsIdx);
    return it == tensorIndex_.end() ? -1 : it->second;
  }
  /// The TensorGeom of walk tensor index i.
  const TensorGeom &geomOf(int i) const;
  std::string opWhere(size_t k) const;

private:
  const SuperDsc &s_;
  PointwisePlan &p_;
  std::string w_;
  std::map<int, int> tensorIndex_;                 ///< ldsIdx -> index among the walk's tensors
  std::map<std::pair<size_t, size_t>, int> constReg_; ///< (op, operand) -> register
  std::set<std::pair<size_t, size_t>> constSet_;      ///< constants already in p.fusedConsts
  bool splatStick_ = false;
};

} // namespace spyre::backend::detail
