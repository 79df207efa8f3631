// Every SFP instruction x format on the interpreter and the JIT from identical register state
// (special-value-heavy lanes): the whole CoreState must match byte for byte. Plus random SFP
// programs, and scalar references for a few ops that do not go through sfpApply in the test.
#include "spyre/isa/dl16.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/semantics.h"
#include "spyre/jit/jit_engine.h"
#include "spyre/sim/engine.h"
#include <array>
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <random>

using namespace spyre;
using namespace spyre::isa;

namespace {

float specialValue(std::mt19937 &g) {
  static const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 2.0f, 3.0f, -3.5f, 1e-5f, -1e-5f, 65504.0f,
                                   8.6e9f, -8.6e9f, 1e-30f, INFINITY, -INFINITY, NAN, 1.0f + 1.0f / 1024,
                                   0.1f, 88.7f, -88.7f, 100.0f, -100.0f, 20.0f, 1e38f, 7.0f};
  std::uniform_int_distribution<int> pick(0, 3);
  if (pick(g) == 0)
    return specials[std::uniform_int_distribution<size_t>(0, std::size(specials) - 1)(g)];
  float x = std::normal_distribution<float>(0, 4)(g);
  return pick(g) == 1 ? dl16::round(x) : x;
}

void randomState(sim::CoreState &cs, std::mt19937 &g) {
  std::memset(&cs, 0, offsetof(sim::CoreState, lx));
  for (auto &reg : cs.v)
    for (float &x : reg)
      x = specialValue(g);
  // Some registers hold int32 lane patterns.
  for (int l = 0; l < kLanes; ++l) {
    int32_t i = static_cast<int32_t>(g());
    std::memcpy(&cs.v[15][l], &i, 4);
  }
}

std::vector<uint8_t> stateBytes(const sim::CoreState &cs) {
  auto *b = reinterpret_cast<const uint8_t *>(&cs);
  return std::vector<uint8_t>(b, b + offsetof(sim::CoreState, lx));
}

/// Runs phase 0 of core 0 of `k` on both engines from the same state; returns (interp, jit).
std::pair<sim::CoreState, sim::CoreState> runBoth(const Kernel &k, const sim::CoreState &init, sim::Engine &jit) {
  static std::vector<uint8_t> lx(sim::kLxBytes);
  auto interp = sim::makeInterpreter();
  sim::CoreState a = init, b = init;
  a.lx = b.lx = lx.data();
  sim::LaunchArgs args;
  interp->prepare(k)->runPhase(0, 0, a, args);
  jit.prepare(k)->runPhase(0, 0, b, args);
  return {a, b};
}

/// "v3 lane 7: 0x7fc00000 vs 0xffc00000" for the first differing register lane.
std::string firstDifference(const sim::CoreState &a, const sim::CoreState &b) {
  for (int i = 0; i < kNumSRegs; ++i)
    if (a.r[i] != b.r[i])
      return "r" + std::to_string(i) + ": " + std::to_string(a.r[i]) + " vs " + std::to_string(b.r[i]);
  for (int v = 0; v < kNumVRegs; ++v)
    for (int l = 0; l < kLanes; ++l) {
      uint32_t x, y;
      std::memcpy(&x, &a.v[v][l], 4);
      std::memcpy(&y, &b.v[v][l], 4);
      if (x != y) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "v%d lane %d: 0x%08x (interp) vs 0x%08x (jit)", v, l, x, y);
        return buf;
      }
    }
  return "no register difference";
}

Instr sfpInstr(const OpInfo &info, Format f, std::mt19937 &g) {
  Instr in;
  in.op = info.op;
  in.fmt = f;
  std::uniform_int_distribution<int> reg(0, kNumVRegs - 1);
  for (int &v : in.v)
    v = reg(g);
  if ((info.op == Opcode::Widen || info.op == Opcode::Unpack) && in.v[0] == in.v[1])
    in.v[1] = (in.v[0] + 1) % kNumVRegs;
  in.fimm = specialValue(g);
  in.fimm2 = specialValue(g);
  if (info.op == Opcode::Softplus) {
    in.fimm = std::uniform_real_distribution<float>(0.5f, 2.0f)(g);
    in.fimm2 = 20.0f;
  }
  return in;
}

std::vector<Format> formatsOf(const OpInfo &info) {
  std::vector<Format> f;
  if (info.formats == FMT_NONE)
    f.push_back(Format::None);
  if (info.formats & FMT_DL16)
    f.push_back(Format::DL16);
  if (info.formats & FMT_F32)
    f.push_back(Format::F32);
  if (info.formats & FMT_I32)
    f.push_back(Format::I32);
  return f;
}

Kernel oneCore(std::vector<Instr> body) {
  Kernel k;
  k.name = "sfp";
  k.numCores = 1;
  k.programs.push_back({0, 0, std::move(body)});
  return k;
}

} // namespace

TEST(SfpDifferential, EveryInstructionAndFormat) {
  jit::JitEngine jit;
  std::mt19937 g(42);
  // All instructions in one kernel per format keeps JIT time low; each runs from a fresh,
  // random state through its own phase.
  int count = 0;
  for (const auto &info : allOps()) {
    if (info.unit != Unit::Sfp)
      continue;
    for (Format f : formatsOf(info)) {
      for (int trial = 0; trial < 4; ++trial) {
        sim::CoreState init;
        randomState(init, g);
        Kernel k = oneCore({sfpInstr(info, f, g)});
        auto [a, b] = runBoth(k, init, jit);
        ASSERT_EQ(stateBytes(a), stateBytes(b)) << printKernel(k);
        ++count;
      }
    }
  }
  EXPECT_GT(count, 150);
}

TEST(SfpDifferential, RandomPrograms) {
  jit::JitEngine jit;
  std::mt19937 g(7);
  std::vector<const OpInfo *> sfp;
  for (const auto &info : allOps())
    if (info.unit == Unit::Sfp)
      sfp.push_back(&info);
  for (int p = 0; p < 40; ++p) {
    std::vector<Instr> body;
    for (int i = 0; i < 120; ++i) {
      const OpInfo &info = *sfp[g() % sfp.size()];
      auto fmts = formatsOf(info);
      body.push_back(sfpInstr(info, fmts[g() % fmts.size()], g));
    }
    sim::CoreState init;
    randomState(init, g);
    Kernel k = oneCore(body);
    auto [a, b] = runBoth(k, init, jit);
    ASSERT_EQ(stateBytes(a), stateBytes(b)) << "program " << p << ", " << firstDifference(a, b) << "\n"
                                            << printKernel(k);
  }
}


TEST(SfpSemantics, ScalarReferences) {
  // Independent scalar expectations for ops whose semantics are easy to state.
  float a[kLanes], b[kLanes], c[kLanes], d[kLanes], d2[kLanes];
  std::mt19937 g(3);
  for (int l = 0; l < kLanes; ++l) {
    a[l] = dl16::round(std::normal_distribution<float>(0, 3)(g));
    b[l] = dl16::round(std::normal_distribution<float>(0, 3)(g));
    c[l] = dl16::round(std::normal_distribution<float>(0, 3)(g));
  }
  sfpApply(Opcode::Mul, Format::DL16, d, nullptr, a, b, nullptr, 0, 0);
  for (int l = 0; l < kLanes; ++l)
    EXPECT_EQ(d[l], dl16::toFloat(dl16::fromFloat(a[l] * b[l])));
  sfpApply(Opcode::Gt, Format::DL16, d, nullptr, a, b, nullptr, 0, 0);
  for (int l = 0; l < kLanes; ++l)
    EXPECT_EQ(d[l], a[l] > b[l] ? 1.0f : 0.0f);
  sfpApply(Opcode::Sel, Format::DL16, d, nullptr, d, a, b, 0, 0);
  for (int l = 0; l < kLanes; ++l)
    EXPECT_EQ(d[l], a[l] > b[l] ? a[l] : b[l]);
  sfpApply(Opcode::Rsum, Format::DL16, d, nullptr, a, nullptr, nullptr, 0, 0);
  double sum = 0;
  for (int l = 0; l < kLanes; ++l)
    sum += a[l];
  EXPECT_NEAR(d[0], sum, std::fabs(sum) * 0.004 + 0.01);
  for (int l = 1; l < kLanes; ++l)
    EXPECT_EQ(d[l], d[0]);
  sfpApply(Opcode::Rmax, Format::F32, d, nullptr, a, nullptr, nullptr, 0, 0);
  EXPECT_EQ(d[0], *std::max_element(a, a + 32));
  EXPECT_EQ(d[40], 0.0f);
  sfpApply(Opcode::Exp, Format::DL16, d, nullptr, a, nullptr, nullptr, 0, 0);
  for (int l = 0; l < kLanes; ++l)
    EXPECT_EQ(d[l], dl16::round(sfpExp(a[l])));
  sfpApply(Opcode::Clip, Format::F32, d, nullptr, a, nullptr, nullptr, -1.0f, 2.0f);
  for (int l = 0; l < kLanes; ++l)
    EXPECT_EQ(d[l], std::min(std::max(a[l], -1.0f), 2.0f));
  sfpApply(Opcode::Widen, Format::None, d, d2, a, nullptr, nullptr, 0, 0);
  for (int l = 0; l < 32; ++l) {
    EXPECT_EQ(d[l], a[2 * l]);
    EXPECT_EQ(d2[l], a[2 * l + 1]);
  }
  float back[kLanes];
  sfpApply(Opcode::Narrow, Format::None, back, nullptr, d, d2, nullptr, 0, 0);
  for (int l = 0; l < kLanes; ++l)
    EXPECT_EQ(back[l], a[l]);
  float big[kLanes];
  for (int l = 0; l < kLanes; ++l)
    big[l] = l == 0 ? NAN : l == 1 ? 3e9f : l == 2 ? -3e9f : -2.7f;
  int32_t iv[kLanes];
  sfpApply(Opcode::Cvt, Format::I32, reinterpret_cast<float *>(iv), nullptr, big, nullptr, nullptr, 0, 0);
  EXPECT_EQ(iv[0], 0);
  EXPECT_EQ(iv[1], INT32_MAX);
  EXPECT_EQ(iv[2], INT32_MIN);
  EXPECT_EQ(iv[3], -2);
  sfpApply(Opcode::Max, Format::F32, d, nullptr, big, a, nullptr, 0, 0);
  EXPECT_TRUE(std::isnan(d[0]));
}

// The int32 forms (compares, neg, abs, iota, stick reductions) and scan against scalar references.
TEST(SfpReference, Int32FormsAndScan) {
  auto bits = [](int32_t i) { float f; std::memcpy(&f, &i, 4); return f; };
  auto ival = [](float f) { int32_t i; std::memcpy(&i, &f, 4); return i; };
  std::mt19937 g(7);
  float a[kLanes], b[kLanes], d[kLanes];
  const int32_t edge[] = {0, 1, -1, INT32_MIN, INT32_MAX, 5, -5};
  for (int l = 0; l < kLanes; ++l) {
    int32_t x = l < 7 ? edge[l] : static_cast<int32_t>(g()) >> (l % 20);
    int32_t y = l < 7 ? edge[(l + 3) % 7] : (l % 5 == 0 ? x : static_cast<int32_t>(g()) >> (l % 20));
    a[l] = bits(x);
    b[l] = bits(y);
  }
  const std::pair<Opcode, bool (*)(int32_t, int32_t)> cmps[] = {
      {Opcode::Eq, [](int32_t x, int32_t y) { return x == y; }}, {Opcode::Ne, [](int32_t x, int32_t y) { return x != y; }},
      {Opcode::Lt, [](int32_t x, int32_t y) { return x < y; }},  {Opcode::Le, [](int32_t x, int32_t y) { return x <= y; }},
      {Opcode::Gt, [](int32_t x, int32_t y) { return x > y; }},  {Opcode::Ge, [](int32_t x, int32_t y) { return x >= y; }}};
  for (auto [op, ref] : cmps) {
    sfpApply(op, Format::I32, d, nullptr, a, b, nullptr, 0, 0);
    for (int l = 0; l < kLanes; ++l)
      EXPECT_EQ(ival(d[l]), ref(ival(a[l]), ival(b[l])) ? 1 : 0) << opInfo(op).mnemonic << " lane " << l;
  }
  const std::pair<Opcode, int32_t (*)(int32_t, int32_t)> bitwise[] = {
      {Opcode::And, [](int32_t x, int32_t y) { return x & y; }},
      {Opcode::Or, [](int32_t x, int32_t y) { return x | y; }},
      {Opcode::Xor, [](int32_t x, int32_t y) { return x ^ y; }}};
  for (auto [op, ref] : bitwise) {
    sfpApply(op, Format::I32, d, nullptr, a, b, nullptr, 0, 0);
    for (int l = 0; l < kLanes; ++l)
      EXPECT_EQ(ival(d[l]), ref(ival(a[l]), ival(b[l]))) << opInfo(op).mnemonic << " lane " << l;
  }
  sfpApply(Opcode::Neg, Format::I32, d, nullptr, a, nullptr, nullptr, 0, 0);
  EXPECT_EQ(ival(d[3]), INT32_MIN); // wraps
  EXPECT_EQ(ival(d[5]), -5);
  sfpApply(Opcode::Abs, Format::I32, d, nullptr, a, nullptr, nullptr, 0, 0);
  EXPECT_EQ(ival(d[2]), 1);
  EXPECT_EQ(ival(d[3]), INT32_MIN);
  EXPECT_EQ(ival(d[6]), 5);
  sfpApply(Opcode::Iota, Format::I32, d, nullptr, nullptr, nullptr, nullptr, 0, 0);
  for (int l = 0; l < kLanes; ++l)
    EXPECT_EQ(ival(d[l]), l);
  sfpApply(Opcode::Rsum, Format::I32, d, nullptr, a, nullptr, nullptr, 0, 0);
  uint32_t sum = 0;
  int32_t mx = INT32_MIN;
  for (int l = 0; l < 32; ++l) {
    sum += static_cast<uint32_t>(ival(a[l]));
    mx = std::max(mx, ival(a[l]));
  }
  EXPECT_EQ(ival(d[0]), static_cast<int32_t>(sum));
  EXPECT_EQ(ival(d[31]), static_cast<int32_t>(sum));
  EXPECT_EQ(d[32], 0.0f);
  sfpApply(Opcode::Rmax, Format::I32, d, nullptr, a, nullptr, nullptr, 0, 0);
  EXPECT_EQ(ival(d[0]), mx);
  sfpApply(Opcode::Scan, Format::I32, d, nullptr, a, nullptr, nullptr, 0, 0);
  uint32_t run = 0;
  for (int l = 0; l < 32; ++l) {
    run += static_cast<uint32_t>(ival(a[l]));
    EXPECT_EQ(ival(d[l]), static_cast<int32_t>(run)) << "lane " << l;
  }
  EXPECT_EQ(d[40], 0.0f);
  float x[kLanes];
  for (int l = 0; l < kLanes; ++l)
    x[l] = static_cast<float>(l % 3) - 0.5f;
  sfpApply(Opcode::Scan, Format::DL16, d, nullptr, x, nullptr, nullptr, 0, 0);
  float acc = 0;
  for (int l = 0; l < kLanes; ++l) {
    acc += x[l];
    EXPECT_EQ(d[l], dl16::round(acc)) << "lane " << l;
  }
}

TEST(SfpListing, NewInstructionsRoundTrip) {
  std::string text = ".kernel k cores=1\n.args\n.core 0\n"
                     "    fma.dl16  v0, v1, v2, v3\n"
                     "    sel.f32   v4, v5, v6, v7\n"
                     "    softplus.dl16 v1, v2, 1, 20\n"
                     "    clip.f32  v1, v2, -0.5, 6\n"
                     "    gelu.erf.dl16 v3, v4\n"
                     "    widen     v8, v9, v10\n"
                     "    narrow    v8, v9, v10\n"
                     "    cvt.i32   v11, v12\n"
                     "    add.i32   v13, v14, v15\n"
                     "    iota.f32  v2\n"
                     "    rsum.dl16 v3, v3\n"
                     "    lt.i32    v1, v2, v3\n"
                     "    iota.i32  v4\n"
                     "    scan.f32  v5, v6\n";
  EXPECT_EQ(printKernel(parseKernel(text)), text);
}

// The inlined transcendental ops (our own exp, tanh, erf and what uses them) on every DL16 code
// and on fp32 values around their range switches: the JIT's vector IR against sfpApply.
TEST(SfpDifferential, InlinedTranscendentalsOnEveryDl16Code) {
  jit::JitEngine jit;
  const Opcode ops[] = {Opcode::Exp, Opcode::Sigmoid, Opcode::Silu, Opcode::Tanh, Opcode::Erf, Opcode::Gelu,
                        Opcode::GeluErf};
  // Inputs: 1024 sticks of DL16 codes, then fp32 values walking across 0.625, 1 and 3.92.
  std::vector<std::array<float, kLanes>> sticks;
  for (uint32_t base = 0; base < 65536; base += kLanes) {
    std::array<float, kLanes> s;
    for (int l = 0; l < kLanes; ++l)
      s[l] = dl16::toFloat(static_cast<uint16_t>(base + l));
    sticks.push_back(s);
  }
  for (float edge : {0.625f, 1.0f, 3.92f, 1.1283f})
    for (float sign : {1.0f, -1.0f}) {
      std::array<float, kLanes> s;
      float x = edge;
      for (int i = 0; i < 32; ++i)
        x = std::nextafter(x, 0.0f);
      for (int l = 0; l < kLanes; ++l, x = std::nextafter(x, INFINITY))
        s[l] = sign * x;
      sticks.push_back(s);
    }
  for (Opcode op : ops)
    for (Format f : {Format::DL16, Format::F32}) {
      Instr in;
      in.op = op;
      in.fmt = f;
      in.v[0] = 1;
      in.v[1] = 0;
      Kernel k = oneCore({in});
      for (const auto &s : sticks) {
        sim::CoreState init;
        std::memset(&init, 0, offsetof(sim::CoreState, lx));
        std::memcpy(init.v[0], s.data(), sizeof(float) * kLanes);
        auto [a, b] = runBoth(k, init, jit);
        ASSERT_EQ(stateBytes(a), stateBytes(b)) << opInfo(op).mnemonic << " " << static_cast<int>(f) << ": "
                                                << firstDifference(a, b);
      }
    }
}

// The JIT keeps each vector register also without the fp32 NaN canonicalisation
// (FunctionLowering::readNaNBlind): arithmetic and DL16 stores read that form, so an x86 NaN
// (0xFFC00000 from inf - inf, or an input's payload) flows through a loop body uncanonicalised.
// Every reader that sees NaN bits — sel, st.f32, splat, the reductions, the i32 ops, the
// registers at the end of the phase — must still see the canonical NaN: random loop bodies
// over few registers, LX sticks with infinities, every register and LX byte compared.
TEST(SfpDifferential, NaNBlindReadsInLoops) {
  jit::JitEngine jit;
  std::mt19937 g(2026);
  // Payload-insensitive consumers, and readers that see NaN bits.
  const Opcode blind[] = {Opcode::Add, Opcode::Sub, Opcode::Mul, Opcode::Div, Opcode::Max, Opcode::Min,
                          Opcode::Fma, Opcode::Neg, Opcode::Abs, Opcode::Relu, Opcode::Sqrt, Opcode::Rsqrt,
                          Opcode::Recip};
  const Opcode seeing[] = {Opcode::Sel, Opcode::Splat, Opcode::Rsum, Opcode::Rmax, Opcode::Unpack,
                           Opcode::Cvt, Opcode::Exp, Opcode::Eq, Opcode::Xor};
  const char *skeleton = ".kernel nanblind cores=1\n.core 0..0\n"
                         "    li        r1, 0\n"
                         "    li        r2, 8192\n"
                         "    loop 5 {\n"
                         "        ld.dl16   v1, lx[r1]\n"
                         "        st.dl16   lx[r2], v2\n"
                         "        st.f32    lx[r2+0x80], v3\n"
                         "        addi      r1, r1, 128\n"
                         "        addi      r2, r2, 256\n"
                         "    }\n";
  std::vector<uint8_t> lx0(sim::kLxBytes, 0);
  for (size_t i = 0; i < 5 * 64; ++i) { // DL16 sticks with infinities, zeros and ones
    static const float pick[] = {INFINITY, -INFINITY, 0.0f, -0.0f, 1.0f, -2.5f, 3.0f, 1e-3f};
    uint16_t h = dl16::fromFloat(pick[g() % std::size(pick)]);
    std::memcpy(&lx0[2 * i], &h, 2);
  }
  for (int p = 0; p < 60; ++p) {
    Kernel k = parseKernel(skeleton);
    auto &body = k.programs[0].body[2].body;
    std::vector<Instr> ops;
    for (int i = 0; i < 12; ++i) {
      const bool sees = g() % 4 == 0;
      Opcode op = sees ? seeing[g() % std::size(seeing)] : blind[g() % std::size(blind)];
      const OpInfo &info = opInfo(op);
      auto fmts = formatsOf(info);
      Format f = op == Opcode::Xor || op == Opcode::Cvt ? fmts.back() : fmts[g() % fmts.size()];
      if (!sees && g() % 3 != 0)
        f = Format::F32; // mostly the fp32 chains whose NaNs are canonicalised
      Instr in = sfpInstr(info, f, g);
      for (int &v : in.v)
        v %= 6; // few registers: dense data flow through the loop's back edge
      if (op == Opcode::Unpack && in.v[0] == in.v[1])
        in.v[1] = (in.v[0] + 1) % 6;
      in.imm = static_cast<int64_t>(g() % 64);
      ops.push_back(in);
    }
    body.insert(body.begin() + 1, ops.begin(), ops.end());
    sim::CoreState init;
    randomState(init, g);
    std::vector<uint8_t> lxA = lx0, lxB = lx0;
    sim::CoreState a = init, b = init;
    a.lx = lxA.data();
    b.lx = lxB.data();
    sim::LaunchArgs args;
    sim::makeInterpreter()->prepare(k)->runPhase(0, 0, a, args);
    jit.prepare(k)->runPhase(0, 0, b, args);
    ASSERT_EQ(stateBytes(a), stateBytes(b)) << "program " << p << ", " << firstDifference(a, b) << "\n"
                                            << printKernel(k);
    ASSERT_TRUE(lxA == lxB) << "program " << p << ": LX differs\n" << printKernel(k);
  }
}
