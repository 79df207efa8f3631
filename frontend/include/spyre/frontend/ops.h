// Queries over the graph-IR op table (ops.def): an op's id, operand bounds, class (which kernel
// builder drafts it), SuperDSC opFunc and accepted attributes.
#pragma once
#include <string_view>

namespace spyre::frontend {

/// Which kernel builder drafts an op (frontend/lib/kernels/), or Decomposed: rewritten by
/// decomposeOps before kernels are drafted.
enum class OpClass {
  Pointwise,  ///< elementwise, output dtype = the operands' (where: a bool condition)
  Comparison, ///< elementwise with a bool output
  Reduction,
  Matmul,
  Convert,
  Transpose,
  Slice,
  Permute,
  Reshape,
  Full,
  Cat,
  CopyInto,
  LayerNorm,
  Gather,     ///< rows of a table by integer indices (embedding) or written at them (index_copy)
  Scan,       ///< prefix sums along a dim (cumsum)
  RotateHalf, ///< RoPE's rotate_half over the last dim (one lane-moving kernel, kernels/data_ops.cpp)
  Decomposed,
};

enum class OpId {
#define OP(Id, name, minIn, maxIn, cls, opFunc, attrs) Id,
#include "spyre/frontend/ops.def"
#undef OP
};

struct OpInfo {
  OpId id;
  std::string_view name;
  int minInputs, maxInputs; ///< tensor operands; maxInputs -1 = no bound
  OpClass cls;
  std::string_view opFunc; ///< "" where the builder chooses it
  std::string_view attrs;  ///< accepted attribute keys, space separated
  /// True when `key` is one of attrs.
  bool allowsAttr(std::string_view key) const;
  /// Elementwise: Pointwise or Comparison.
  bool isElementwise() const { return cls == OpClass::Pointwise || cls == OpClass::Comparison; }
};

/// The row of `name`, or nullptr for an op the table does not have.
const OpInfo *findOp(std::string_view name);
/// The row of `name`; throws spyre::Unsupported("op 'name'") for an op the table does not have.
const OpInfo &opInfo(std::string_view name);
/// True when `name` is op `id` (false for an unknown name).
bool isOp(std::string_view name, OpId id);
/// True when `name` is an op of class `cls` (false for an unknown name).
bool isOpClass(std::string_view name, OpClass cls);

} // namespace spyre::frontend
