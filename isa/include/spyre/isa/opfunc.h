// The SuperDSC opFunc table (opfuncs.def) as data: the op class, arity and execution unit of
// every computeOp_.opFuncName this simulator implements.
#pragma once
#include "spyre/isa/program.h"
#include <optional>
#include <string_view>
#include <vector>

namespace spyre::isa {

enum class OpClass : uint8_t { Pointwise, Reduction, Matmul, Convert, Transpose, LaneReshape, Gather, Scan };
enum class ExUnit : uint8_t { Sfp, Pt, Any };

struct OpFuncInfo {
  std::string_view name;
  OpClass cls;
  int arity;                   ///< input operands (tensors or constants)
  ExUnit unit;                 ///< the computeOp_ exUnit its lowering requires
  std::optional<Opcode> sfpOp; ///< Pointwise: the SFP instruction of its elementwise walk
};

/// Every row of opfuncs.def, in table order.
const std::vector<OpFuncInfo> &allOpFuncs();
/// The row of `name`, or nullptr when the table has none.
const OpFuncInfo *findOpFunc(std::string_view name);
const char *opClassName(OpClass c);

} // namespace spyre::isa
