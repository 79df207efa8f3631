// The JIT's DL16 unary tables: one row of 2^18 fp32 entries per unary SFP op whose DL16
// inputs a kernel may look up instead of computing (lower_sfp.cpp), filled from the
// interpreter's own isa::sfpApply, so a lookup gives exactly what the instruction gives.
#pragma once
#include "spyre/isa/error.h"
#include "spyre/isa/program.h"
#include <llvm/ExecutionEngine/Orc/Core.h>
#include <memory>
#include <string>

namespace spyre::jit {

/// Unary SFP ops on DL16 values, rounded to DL16, by table (lower_sfp.cpp,
/// FunctionLowering::unaryByTable): rows kUnaryTableOps (exp, sigmoid, silu, tanh, gelu,
/// gelu.erf); the entry of a DL16 value x (an fp32 value whose low 14 bits are 0) is at index
/// bits(x) >> 14 and holds what isa::sfpApply gives for x. JIT code names row k as the symbol
/// unaryTableSymbol(k); the engine defines it on the first lookup (unaryTableGenerator), filling the
/// row then (1–10 ms each, libm rows the slowest), so a process pays only for the ops its
/// kernels use. Entries no DL16 value maps to stay 0 and their pages untouched.
inline constexpr unsigned kUnaryTableBits = 18;
inline constexpr isa::Opcode kUnaryTableOps[] = {isa::Opcode::Exp,  isa::Opcode::Sigmoid, isa::Opcode::Silu,
                                                 isa::Opcode::Tanh, isa::Opcode::Gelu,    isa::Opcode::GeluErf};
inline constexpr unsigned kUnaryTableRows = sizeof kUnaryTableOps / sizeof kUnaryTableOps[0];
inline std::string unaryTableSymbol(unsigned row) { return "spyre_jit_dl16_unary_" + std::to_string(row); }
/// The row of `op`, one of kUnaryTableOps.
inline unsigned unaryTableRowOf(isa::Opcode op) {
  for (unsigned row = 0; row < kUnaryTableRows; ++row)
    if (kUnaryTableOps[row] == op)
      return row;
  throw spyre::Error("internal error: " + std::string(isa::opInfo(op).mnemonic) + " has no DL16 unary table");
}
/// Row `row`, filled on the first call (thread-safe).
const float *unaryTableRow(unsigned row);

/// An ORC definition generator for a JITDylib that defines the rows' symbols on their first
/// lookup (filling the row then).
std::unique_ptr<llvm::orc::DefinitionGenerator> unaryTableGenerator();

} // namespace spyre::jit
