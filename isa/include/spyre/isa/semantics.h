// The lane semantics of every SFP instruction: *the* definition. The interpreter executes SFP
// instructions through sfpApply; the JIT either emits IR proven identical by the differential
// tests (add, compares, selects, ...) or calls spyre_sfp_apply itself (transcendentals,
// reductions), so both engines agree bit for bit.
#pragma once
#include "spyre/isa/dl16.h"
#include "spyre/isa/program.h"
#include <cmath>
#include <cstdint>

namespace spyre::isa {

/// The one NaN an f32 SFP result can hold: hosts differ in the NaN they produce (x86's default
/// NaN is negative, libm wrappers return a positive one), so every arithmetic f32 result is
/// canonicalised. Pure moves (sel, splat, widen, ld/st) keep bits as they are.
constexpr uint32_t kCanonicalNaN = 0x7FC00000u;

/// Rounds an arithmetic result to its format: DL16 rounding, or NaN canonicalisation for f32.
inline float roundTo(Format f, float x) {
  if (f == Format::DL16)
    return dl16::round(x);
  return x != x ? dl16::bitsFloat(kCanonicalNaN) : x;
}

inline float nanMax(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return dl16::bitsFloat(kCanonicalNaN);
  return a > b ? a : b;
}
inline float nanMin(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return dl16::bitsFloat(kCanonicalNaN);
  return a < b ? a : b;
}
/// fp32 -> int32 toward zero, saturating, NaN -> 0 (LLVM's fptosi.sat).
inline int32_t satToI32(float x) {
  if (std::isnan(x))
    return 0;
  if (x >= 2147483648.0f)
    return INT32_MAX;
  if (x <= -2147483648.0f)
    return INT32_MIN;
  return static_cast<int32_t>(x);
}

/// Applies SFP opcode `op` in format `fmt` to whole registers (64 lanes each). `d` may alias any
/// source. For Widen, `d` receives vd0 and `d2` vd1; elsewhere d2 is unused.
void sfpApply(Opcode op, Format fmt, float *d, float *d2, const float *a, const float *b, const float *c, float imm0,
              float imm1);

/// True for SFP opcodes (executed by sfpApply).
bool isSfp(Opcode op);

/// The SFP's exp in fp32 (what exp/sigmoid/silu use): max 3 ulp from libm's expf (tests/cpp/isa/sfp_math_test.cpp).
float sfpExp(float x);
/// The SFP's tanh and erf in fp32 (what tanh/erf/gelu/gelu.erf use): max 2 / 3 ulp from tanh / erf in double.
float sfpTanh(float x);
float sfpErf(float x);

/// PT semantics on LX tiles (pt.cpp; layouts as instructions.def documents them):
/// pt.mm C (+)= A x B in fp32 with one fma per k in order; pt.out D = DL16(C); pt.tr D = S^T.
void ptMm(uint8_t *C, const uint8_t *A, const uint8_t *B, int64_t M, int64_t N, int64_t K, bool acc);
void ptOut(uint8_t *D, const uint8_t *C, int64_t M, int64_t N);
void ptTr(uint8_t *D, const uint8_t *S, int64_t R, int64_t C);

} // namespace spyre::isa

/// C entry point the JIT calls for SFP ops it does not inline.
extern "C" void spyre_sfp_apply(uint32_t op, uint32_t fmt, float *d, float *d2, const float *a, const float *b,
                                const float *c, float imm0, float imm1);
