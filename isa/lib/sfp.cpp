// Reference semantics of the SFP instructions (see semantics.h). exp, sigmoid and silu use our
// own branch-free fp32 exp (expApprox below: Cody-Waite range reduction, degree-6 polynomial,
// max error 3 ulp against libm's expf over [-87, 88], results below 2^-126 flush to zero), and
// tanh, erf and both gelus our own branch-free tanh and erf built on it (tanhApprox, erfApprox:
// max error 2 / 3 ulp), so the 64-lane loops vectorise and the JIT inlines the same operations
// (jit/lib/lower_sfp.cpp). log, sin, cos, tan and log1p (softplus) use the host's libm in fp32
// (glibc: < 1 ulp). Both engines call this one implementation for the libm ops, so they are
// bit-identical on any host.
#include "spyre/isa/semantics.h"
#include <cstring>

namespace spyre::isa {
namespace {

constexpr int L = kLanes;

/// exp(x) in fp32, branch-free so a loop over lanes vectorises. NaN in, canonical NaN out.
inline float expApprox(float x) {
  const float hi = 88.72283f, lo = -87.33654f; // beyond: inf / 0 (no subnormal results)
  float xc = x > hi ? hi : (x < lo ? lo : x);
  float t = xc * 1.44269504f;
  float n = (t + 12582912.0f) - 12582912.0f; // round to nearest (|t| < 2^22)
  float r = xc - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t e = static_cast<int32_t>(n) + 127;
  uint32_t scaleBits = static_cast<uint32_t>(e < 1 ? 1 : e) << 23;
  float scale;
  std::memcpy(&scale, &scaleBits, 4);
  float y = p * scale;
  y = x > hi ? INFINITY : y;
  y = x < lo ? 0.0f : y;
  return x != x ? dl16::bitsFloat(kCanonicalNaN) : y;
}

/// |x| with x's sign bit cleared; copySign(m, x): m's magnitude with x's sign (bit operations,
/// so they vectorise and keep -0).
inline float absBits(float x) { return dl16::bitsFloat(dl16::floatBits(x) & 0x7FFFFFFFu); }
inline float copySign(float m, float x) {
  return dl16::bitsFloat((dl16::floatBits(m) & 0x7FFFFFFFu) | (dl16::floatBits(x) & 0x80000000u));
}

/// tanh(x) in fp32, branch-free. |x| < 0.625: x + x z P(z) with z = x^2 and P a degree-4
/// least-squares fit of (tanh x - x) / x^3 over z in [0, 0.39]; otherwise
/// sign(x) (1 - 2 / (exp(2|x|) + 1)) with expApprox (1 for 2|x| beyond exp's range). Max error
/// 1.6 ulp against tanh in double (tests/cpp/isa/sfp_math_test.cpp). NaN in, canonical NaN out.
inline float tanhApprox(float x) {
  const float ax = absBits(x), z = x * x;
  float p = -0.006099896039813757f;
  p = p * z + 0.021000126376748085f;
  p = p * z + -0.05385182052850723f;
  p = p * z + 0.13332779705524445f;
  p = p * z + -0.333333283662796f;
  const float small = x + x * z * p;
  const float big = 1.0f - 2.0f / (expApprox(ax + ax) + 1.0f);
  const float r = copySign(ax < 0.625f ? small : big, x); // also tanh(-0) = -0
  return x != x ? dl16::bitsFloat(kCanonicalNaN) : r;
}

/// erf(x) in fp32, branch-free. |x| < 1: x P(x^2), P a degree-6 least-squares fit of erf(x) / x;
/// 1 <= |x| < 3.92: sign(x) (1 - exp(Q(|x| - 2.5))), Q a degree-8 fit of log(erfc) (erfc
/// varies over seven decades there; its log is smooth); beyond, +-1 (erfc(3.92) < 2^-25). Max
/// error 2.6 ulp against erf in double. NaN in, canonical NaN out.
inline float erfApprox(float x) {
  const float ax = absBits(x), z = x * x;
  float p = 7.851449481677264e-05f;
  p = p * z + -0.0008009445737116039f;
  p = p * z + 0.0051882402040064335f;
  p = p * z + -0.026853764429688454f;
  p = p * z + 0.1128358393907547f;
  p = p * z + -0.3761262595653534f;
  p = p * z + 1.1283791065216064f;
  const float small = x * p;
  const float u = (ax < 3.92f ? ax : 3.92f) - 2.5f;
  float q = 1.6313521200572723e-06f;
  q = q * u + -1.3278356163937133e-05f;
  q = q * u + 7.733519305475056e-05f;
  q = q * u + -0.0004202467098366469f;
  q = q * u + 0.0021652213763445616f;
  q = q * u + -0.010858423076570034f;
  q = q * u + -0.9438936710357666f;
  q = q * u + -5.352680683135986f;
  q = q * u + -7.806815147399902f;
  const float big = copySign(ax >= 3.92f ? 1.0f : 1.0f - expApprox(q), x);
  const float r = ax < 1.0f ? small : big;
  return x != x ? dl16::bitsFloat(kCanonicalNaN) : r;
}

inline float geluTanh(float x) { return 0.5f * x * (1.0f + tanhApprox(0.7978845608028654f * (x + 0.044715f * x * x * x))); }
inline float geluErf(float x) { return 0.5f * x * (1.0f + erfApprox(x * 0.7071067811865476f)); }

int32_t bitsI(float f) {
  int32_t i;
  std::memcpy(&i, &f, 4);
  return i;
}
float fromI(int32_t i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}

float unary(Opcode op, float x, float i0, float i1) {
  switch (op) {
  case Opcode::Neg: return -x;
  case Opcode::Abs: return dl16::bitsFloat(dl16::floatBits(x) & 0x7FFFFFFFu);
  case Opcode::Relu: return x > 0.0f || x != x ? x : 0.0f; // NaN propagates (torch's relu)
  case Opcode::Floor: return std::floor(x);
  case Opcode::Sqrt: return std::sqrt(x);
  case Opcode::Rsqrt: return 1.0f / std::sqrt(x);
  case Opcode::Recip: return 1.0f / x;
  case Opcode::Exp: return expApprox(x);
  case Opcode::Log: return std::log(x);
  case Opcode::Tanh: return tanhApprox(x);
  case Opcode::Sin: return std::sin(x);
  case Opcode::Cos: return std::cos(x);
  case Opcode::Tan: return std::tan(x);
  case Opcode::Erf: return erfApprox(x);
  case Opcode::Sigmoid: return 1.0f / (1.0f + expApprox(-x));
  case Opcode::Gelu: return geluTanh(x);
  case Opcode::GeluErf: return geluErf(x);
  case Opcode::Silu: return x / (1.0f + expApprox(-x));
  case Opcode::Softplus: return x * i0 > i1 ? x : std::log1p(std::exp(x * i0)) / i0;
  case Opcode::Clip: return nanMin(nanMax(x, i0), i1);
  default: return 0.0f;
  }
}

float binary(Opcode op, float a, float b) {
  switch (op) {
  case Opcode::Add: return a + b;
  case Opcode::Sub: return a - b;
  case Opcode::Mul: return a * b;
  case Opcode::Div: return a / b;
  case Opcode::Max: return nanMax(a, b);
  case Opcode::Min: return nanMin(a, b);
  case Opcode::Eq: return a == b ? 1.0f : 0.0f;
  case Opcode::Ne: return a != b ? 1.0f : 0.0f;
  case Opcode::Lt: return a < b ? 1.0f : 0.0f;
  case Opcode::Le: return a <= b ? 1.0f : 0.0f;
  case Opcode::Gt: return a > b ? 1.0f : 0.0f;
  case Opcode::Ge: return a >= b ? 1.0f : 0.0f;
  default: return 0.0f;
  }
}

int32_t binaryI(Opcode op, int32_t a, int32_t b) {
  uint32_t ua = static_cast<uint32_t>(a), ub = static_cast<uint32_t>(b);
  switch (op) {
  case Opcode::Add: return static_cast<int32_t>(ua + ub);
  case Opcode::Sub: return static_cast<int32_t>(ua - ub);
  case Opcode::Mul: return static_cast<int32_t>(ua * ub);
  case Opcode::Max: return a > b ? a : b;
  case Opcode::Min: return a < b ? a : b;
  case Opcode::Eq: return a == b;
  case Opcode::Ne: return a != b;
  case Opcode::Lt: return a < b;
  case Opcode::Le: return a <= b;
  case Opcode::Gt: return a > b;
  case Opcode::Ge: return a >= b;
  case Opcode::Neg: return static_cast<int32_t>(0u - ua);
  case Opcode::Abs: return a < 0 ? static_cast<int32_t>(0u - ua) : a;
  case Opcode::And: return static_cast<int32_t>(ua & ub);
  case Opcode::Or: return static_cast<int32_t>(ua | ub);
  case Opcode::Xor: return static_cast<int32_t>(ua ^ ub);
  default: return 0;
  }
}

} // namespace

bool isSfp(Opcode op) { return opInfo(op).unit == Unit::Sfp; }

float sfpExp(float x) { return expApprox(x); }
float sfpTanh(float x) { return tanhApprox(x); }
float sfpErf(float x) { return erfApprox(x); }

void sfpApply(Opcode op, Format fmt, float *d, float *d2, const float *a, const float *b, const float *c, float i0,
              float i1) {
  float out[L];
  switch (op) {
  case Opcode::Bcast: {
    float x = roundTo(fmt, i0);
    for (int l = 0; l < L; ++l)
      d[l] = x;
    return;
  }
  case Opcode::Splat: {
    float x = a[static_cast<int>(i0) & (L - 1)];
    for (int l = 0; l < L; ++l)
      d[l] = x;
    return;
  }
  case Opcode::Iota:
    for (int l = 0; l < L; ++l)
      d[l] = fmt == Format::I32 ? fromI(l) : static_cast<float>(l);
    return;
  case Opcode::Scan: {
    // Inclusive prefix sum in lane order over the stick's lanes (fp32 or wrapping int32).
    int n = fmt == Format::DL16 ? L : L / 2;
    float acc = 0.0f;
    uint32_t iacc = 0;
    for (int l = 0; l < L; ++l) {
      if (l >= n) {
        out[l] = 0.0f;
      } else if (fmt == Format::I32) {
        iacc += static_cast<uint32_t>(bitsI(a[l]));
        out[l] = fromI(static_cast<int32_t>(iacc));
      } else {
        acc += a[l];
        out[l] = roundTo(fmt, acc);
      }
    }
    std::memcpy(d, out, sizeof out);
    return;
  }
  case Opcode::Widen: {
    float even[L] = {}, odd[L] = {};
    for (int l = 0; l < L / 2; ++l) {
      even[l] = a[2 * l];
      odd[l] = a[2 * l + 1];
    }
    std::memcpy(d, even, sizeof even);
    std::memcpy(d2, odd, sizeof odd);
    return;
  }
  case Opcode::Unpack: {
    float lo[L] = {}, hi[L] = {};
    for (int l = 0; l < L / 2; ++l) {
      lo[l] = a[l];
      hi[l] = a[L / 2 + l];
    }
    std::memcpy(d, lo, sizeof lo);
    std::memcpy(d2, hi, sizeof hi);
    return;
  }
  case Opcode::Pack:
    for (int l = 0; l < L / 2; ++l) {
      out[l] = dl16::round(a[l]);
      out[L / 2 + l] = dl16::round(b[l]);
    }
    std::memcpy(d, out, sizeof out);
    return;
  case Opcode::Narrow:
    for (int l = 0; l < L / 2; ++l) {
      out[2 * l] = dl16::round(a[l]);
      out[2 * l + 1] = dl16::round(b[l]);
    }
    std::memcpy(d, out, sizeof out);
    return;
  case Opcode::Cvt:
    for (int l = 0; l < L; ++l)
      out[l] = fmt == Format::I32 ? fromI(satToI32(a[l])) : static_cast<float>(bitsI(a[l]));
    std::memcpy(d, out, sizeof out);
    return;
  case Opcode::Sel:
    // operands: vd, vm (= a), va (= b), vb (= c)
    for (int l = 0; l < L; ++l)
      out[l] = fmt == Format::I32 ? (bitsI(a[l]) != 0 ? b[l] : c[l]) : (a[l] != 0.0f ? b[l] : c[l]);
    std::memcpy(d, out, sizeof out);
    return;
  case Opcode::Fma:
    for (int l = 0; l < L; ++l)
      out[l] = roundTo(fmt, std::fma(a[l], b[l], c[l]));
    std::memcpy(d, out, sizeof out);
    return;
  case Opcode::Rsum:
  case Opcode::Rmax:
  case Opcode::Rmin: {
    // Pairwise halving tree over the stick's lanes: x[i] (op)= x[i + s] for s = n/2 .. 1.
    int n = fmt == Format::DL16 ? L : L / 2;
    if (fmt == Format::I32) {
      int32_t xi[L];
      for (int l = 0; l < L; ++l)
        xi[l] = bitsI(a[l]);
      const Opcode bop = op == Opcode::Rsum ? Opcode::Add : op == Opcode::Rmax ? Opcode::Max : Opcode::Min;
      for (int s = n / 2; s >= 1; s /= 2)
        for (int i = 0; i < s; ++i)
          xi[i] = binaryI(bop, xi[i], xi[i + s]);
      for (int l = 0; l < L; ++l)
        d[l] = l < n ? fromI(xi[0]) : 0.0f;
      return;
    }
    float x[L];
    std::memcpy(x, a, sizeof x);
    for (int s = n / 2; s >= 1; s /= 2)
      for (int i = 0; i < s; ++i)
        x[i] = op == Opcode::Rsum ? x[i] + x[i + s] : op == Opcode::Rmax ? nanMax(x[i], x[i + s]) : nanMin(x[i], x[i + s]);
    float r = roundTo(fmt, x[0]);
    for (int l = 0; l < L; ++l)
      d[l] = l < n ? r : 0.0f;
    return;
  }
  default: break;
  }
  // exp-based ops get straight lane loops (no per-lane switch) so they vectorise.
  if (op == Opcode::Exp || op == Opcode::Sigmoid || op == Opcode::Silu) {
    float e[L];
    for (int l = 0; l < L; ++l)
      e[l] = expApprox(op == Opcode::Exp ? a[l] : -a[l]);
    if (op == Opcode::Sigmoid)
      for (int l = 0; l < L; ++l)
        e[l] = 1.0f / (1.0f + e[l]);
    else if (op == Opcode::Silu)
      for (int l = 0; l < L; ++l)
        e[l] = a[l] / (1.0f + e[l]);
    for (int l = 0; l < L; ++l)
      out[l] = roundTo(fmt, e[l]);
    std::memcpy(d, out, sizeof out);
    return;
  }
  // So do tanh, erf and the gelus (one function per loop, no per-lane switch).
  if (op == Opcode::Tanh || op == Opcode::Erf || op == Opcode::Gelu || op == Opcode::GeluErf) {
    switch (op) {
    case Opcode::Tanh: for (int l = 0; l < L; ++l) out[l] = roundTo(fmt, tanhApprox(a[l])); break;
    case Opcode::Erf: for (int l = 0; l < L; ++l) out[l] = roundTo(fmt, erfApprox(a[l])); break;
    case Opcode::Gelu: for (int l = 0; l < L; ++l) out[l] = roundTo(fmt, geluTanh(a[l])); break;
    default: for (int l = 0; l < L; ++l) out[l] = roundTo(fmt, geluErf(a[l])); break;
    }
    std::memcpy(d, out, sizeof out);
    return;
  }
  const OpInfo &info = opInfo(op);
  bool isBinary = info.operands == "V,V,V";
  if (fmt == Format::I32) {
    for (int l = 0; l < L; ++l)
      out[l] = fromI(binaryI(op, bitsI(a[l]), isBinary ? bitsI(b[l]) : 0));
  } else if (isBinary) {
    for (int l = 0; l < L; ++l)
      out[l] = roundTo(fmt, binary(op, a[l], b[l]));
  } else {
    for (int l = 0; l < L; ++l)
      out[l] = roundTo(fmt, unary(op, a[l], i0, i1));
  }
  std::memcpy(d, out, sizeof out);
}

} // namespace spyre::isa

extern "C" void spyre_sfp_apply(uint32_t op, uint32_t fmt, float *d, float *d2, const float *a, const float *b,
                                const float *c, float imm0, float imm1) {
  spyre::isa::sfpApply(static_cast<spyre::isa::Opcode>(op), static_cast<spyre::isa::Format>(fmt), d, d2, a, b, c,
                       imm0, imm1);
}
