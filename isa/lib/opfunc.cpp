#include "spyre/isa/opfunc.h"
#include <algorithm>

namespace spyre::isa {

const std::vector<OpFuncInfo> &allOpFuncs() {
  static const std::vector<OpFuncInfo> t = {
#define OPFUNC(N, C, A, U) {N, OpClass::C, A, ExUnit::U, std::nullopt},
#define POINTWISE(N, A, U, O) {N, OpClass::Pointwise, A, ExUnit::U, Opcode::O},
#include "spyre/isa/opfuncs.def"
#undef POINTWISE
#undef OPFUNC
  };
  return t;
}

const OpFuncInfo *findOpFunc(std::string_view name) {
  const auto &t = allOpFuncs();
  auto it = std::find_if(t.begin(), t.end(), [&](const OpFuncInfo &f) { return f.name == name; });
  return it == t.end() ? nullptr : &*it;
}

const char *opClassName(OpClass c) {
  switch (c) {
  case OpClass::Pointwise: return "pointwise";
  case OpClass::Reduction: return "reduction";
  case OpClass::Matmul: return "matmul";
  case OpClass::Convert: return "convert";
  case OpClass::Transpose: return "transpose";
  case OpClass::LaneReshape: return "lane-reshape";
  case OpClass::Gather: return "gather";
  case OpClass::Scan: return "scan";
  }
  return "?";
}

} // namespace spyre::isa
