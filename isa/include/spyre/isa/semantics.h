// Lane semantics of SFP instructions, shared by the interpreter and (as the specification the
// JIT's vector IR must reproduce bit for bit) by the JIT. Every dl16 result is rounded to DL16.
#pragma once
#include "spyre/isa/dl16.h"
#include "spyre/isa/program.h"

namespace spyre::isa {

inline float roundTo(Format f, float x) { return f == Format::DL16 ? dl16::round(x) : x; }

/// Value of one lane of a unary/binary SFP op before format rounding.
inline float laneOp(Opcode op, float a, float b) {
  switch (op) {
  case Opcode::Add: return a + b;
  case Opcode::Sub: return a - b;
  case Opcode::Mul: return a * b;
  case Opcode::Neg: return -a;
  case Opcode::Abs: return dl16::bitsFloat(dl16::floatBits(a) & 0x7FFFFFFFu);
  case Opcode::Relu: return a > 0.0f ? a : 0.0f;
  default: return 0.0f;
  }
}

} // namespace spyre::isa
