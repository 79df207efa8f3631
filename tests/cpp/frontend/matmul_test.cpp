// matmul through frontend, backend (PT) and both engines against a double reference.
#include "plan_runner.h"
#include "spyre/frontend/compiler.h"
#include "spyre/backend/backend.h"
#include "spyre/isa/dl16.h"
#include "spyre/isa/timing.h"
#include "spyre/jit/jit_engine.h"
#include "spyre/sim/device_memory.h"
#include "spyre/sim/executable.h"
#include "spyre/sim/host_transfer.h"
#include <cmath>
#include <cstdlib>
#include <gtest/gtest.h>
#include <random>

using namespace spyre;
using namespace spyre::frontend;
using V = std::vector<int64_t>;

namespace {
using test::numel;

/// The output shape of a @ b: a's batch dims, M, N.
V matmulShape(const V &as, const V &bs) {
  V os(as.begin(), as.end() - 2);
  os.push_back(as[as.size() - 2]);
  os.push_back(bs.back());
  return os;
}

isa::JobPlan compileMatmul(const V &as, const V &bs, int cores) {
  Graph g;
  int x = g.addInput("a", as, HostType::F16), y = g.addInput("b", bs, HostType::F16);
  g.outputs = {g.addNode("matmul", {x, y}, "c", matmulShape(as, bs), HostType::F16)};
  return compileGraph(g, {cores, ""});
}

/// a @ b in double, row-major, b either 2-d (shared) or batched like a.
std::vector<double> referenceMatmul(const V &as, const V &bs, const std::vector<float> &a, const std::vector<float> &b) {
  const size_t ra = as.size(), rb = bs.size();
  const int64_t M = as[ra - 2], K = as[ra - 1], N = bs[rb - 1], B = numel(V(as.begin(), as.end() - 2));
  std::vector<double> c(B * M * N, 0.0);
  for (int64_t bi = 0; bi < B; ++bi)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k)
          c[bi * M * N + i * N + n] +=
              static_cast<double>(a[bi * M * K + i * K + k]) * b[(rb == 2 ? 0 : bi * K * N) + k * N + n];
  return c;
}

std::vector<float> runMatmul(sim::Engine &engine, int cores, const V &as, const V &bs, const std::vector<float> &a,
                             const std::vector<float> &b, const backend::BackendOptions &opts = {}) {
  isa::JobPlan plan = compileMatmul(as, bs, cores);
  test::PlanRunner r(plan, engine, 2, opts);
  r.setInput(0, a);
  r.setInput(1, b);
  // Poison the output so unwritten elements show.
  int ob = plan.outputs[0];
  std::memset(r.device(ob), 0x7f, plan.buffers[ob].layout.deviceBytes());
  r.run();
  std::vector<float> out = r.output(0);
  return out;
}
} // namespace

TEST(Matmul, ShapesBatchesAndCoreCounts) {
  struct Case {
    V a, b;
  };
  std::vector<Case> cases = {{{67, 255}, {255, 129}}, {{64, 64}, {64, 64}},       {{5, 1}, {1, 70}},
                             {{2, 33, 70}, {2, 70, 100}}, {{3, 17, 99}, {99, 65}}, {{2, 2, 9, 64}, {2, 2, 64, 130}},
                             {{128, 512}, {512, 256}}, {{1, 8192}, {8192, 128}}, {{4, 1000}, {1000, 64}}};
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  std::mt19937 gen(3);
  std::normal_distribution<float> nd(0, 1);
  for (const auto &c : cases) {
    const int64_t K = c.a.back(), N = c.b.back();
    std::vector<float> a(numel(c.a)), b(numel(c.b));
    for (auto &v : a)
      v = dl16::round(dl16::halfToFloat(dl16::floatToHalf(nd(gen))));
    for (auto &v : b)
      v = dl16::round(dl16::halfToFloat(dl16::floatToHalf(nd(gen))));
    const std::vector<double> ref = referenceMatmul(c.a, c.b, a, b);
    for (int cores : {1, 7, 32}) {
      auto ri = runMatmul(*interp, cores, c.a, c.b, a, b);
      auto rj = runMatmul(jit, cores, c.a, c.b, a, b);
      ASSERT_EQ(ri, rj) << "K " << K << " N " << N << " cores " << cores;
      for (size_t e = 0; e < ref.size(); ++e)
        ASSERT_NEAR(ri[e], ref[e], 0.01 * (1 + std::fabs(ref[e])) + 0.002 * std::sqrt(K))
            << "K " << K << " N " << N << " at output element " << e;
    }
  }
}

TEST(Matmul, BadShapesAreReported) {
  Graph g;
  int x = g.addInput("a", {4, 8}, HostType::F16), y = g.addInput("b", {9, 4}, HostType::F16);
  g.outputs = {g.addNode("matmul", {x, y}, "c", {4, 4}, HostType::F16)};
  EXPECT_THROW(compileGraph(g), Error);
  Graph h;
  int p = h.addInput("a", {4, 8}, HostType::F32), q = h.addInput("b", {8, 4}, HostType::F32);
  h.outputs = {h.addNode("matmul", {p, q}, "c", {4, 4}, HostType::F32)};
  EXPECT_THROW(compileGraph(h), Unsupported);
}

TEST(Transpose, LastTwoDimsBothEnginesAndCoreCounts) {
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  std::mt19937 gen(8);
  std::normal_distribution<float> nd(0, 1);
  // {100, 300} and {2, 70, 200} on 1 core: several column tiles per core, double-buffered.
  for (V shape : {V{64, 64}, V{67, 129}, V{3, 100, 70}, V{2, 2, 5, 200}, V{130, 1}, V{100, 300}, V{2, 70, 200}}) {
    size_t r = shape.size();
    V os = shape;
    std::swap(os[r - 1], os[r - 2]);
    std::vector<float> x(numel(shape));
    for (auto &v : x)
      v = dl16::round(dl16::halfToFloat(dl16::floatToHalf(nd(gen))));
    for (int cores : {1, 7, 32}) {
      Graph g;
      int a = g.addInput("a", shape, HostType::F16);
      g.outputs = {g.addNode("transpose", {a}, "t", os, HostType::F16)};
      isa::JobPlan plan = compileGraph(g, {cores, ""});
      if (cores == 1 && shape[r - 1] >= 192)
        EXPECT_NE(backend::compileSuperDsc(plan.launches[0].sdsc).comment.find("double-buffered column tiles"),
                  std::string::npos);
      for (sim::Engine *e : {static_cast<sim::Engine *>(interp.get()), static_cast<sim::Engine *>(&jit)}) {
        test::PlanRunner run(plan, *e);
        run.setInput(0, x);
        run.run();
        std::vector<float> out = run.output(0);
        int64_t R = shape[r - 2], C = shape[r - 1], B = numel(shape) / (R * C);
        for (int64_t b = 0; b < B; ++b)
          for (int64_t i = 0; i < R; ++i)
            for (int64_t j = 0; j < C; ++j)
              ASSERT_EQ(out[b * R * C + j * R + i], x[b * R * C + i * C + j])
                  << e->name() << " cores " << cores << " shape rank " << r << " at " << b << "," << i << "," << j;
      }
    }
  }
}

TEST(Matmul, DoubleBufferedRowBlocksMatchReference) {
  // Enough rows per core for several row blocks: A block i+1 is fetched and D block i-1
  // written back while block i is on the PT. K not a stick multiple (masked last tile), N
  // padded, a batch dim.
  struct Case {
    V a, b;
    int cores;
  };
  std::vector<Case> cases = {{{2, 256, 200}, {2, 200, 130}, 1}, {{600, 1000}, {1000, 70}, 2}, {{512, 128}, {128, 256}, 4}};
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  std::mt19937 gen(5);
  std::uniform_int_distribution<int> small(-4, 4);
  for (const auto &c : cases) {
    isa::JobPlan plan = compileMatmul(c.a, c.b, c.cores);
    ASSERT_EQ(plan.launches.size(), 1u);
    isa::Kernel k = backend::compileSuperDsc(plan.launches[0].sdsc);
    EXPECT_NE(k.comment.find("double-buffered"), std::string::npos) << k.comment;
    // Small integers / 4: every product and partial sum is exact in fp32 and the result in DL16
    // for these K, so the reference is exact.
    std::vector<float> a(numel(c.a)), b(numel(c.b));
    for (auto &v : a)
      v = small(gen) / 4.0f;
    for (auto &v : b)
      v = small(gen) / 4.0f;
    auto ri = runMatmul(*interp, c.cores, c.a, c.b, a, b);
    auto rj = runMatmul(jit, c.cores, c.a, c.b, a, b);
    ASSERT_EQ(ri, rj);
    const std::vector<double> ref = referenceMatmul(c.a, c.b, a, b);
    for (size_t e = 0; e < ref.size(); ++e)
      ASSERT_EQ(ri[e], dl16::round(static_cast<float>(ref[e]))) << "cores " << c.cores << " at output element " << e;
  }
}

TEST(Matmul, SharedOperandBlocksArriveByMulticast) {
  // M = 256 over 32 cores (8 rows each): the cores of an N slice load the same B blocks; M = 16 (N split):
  // every core loads the same A rows. One multicast per cohort of 8 (torch-spyre's
  // _COHORT_LIMIT). Exact small-integer data; identical results with multicast off
  // (BackendOptions::multicast off, SPYRE_MULTICAST=0: every core streams its own copy).
  struct Case {
    V a, b;
    const char *shared;
    uint64_t savedBytes; ///< DDR the multicast saves: (32 - 4) copies of the shared operand
  };
  const Case cases[] = {{{256, 256}, {256, 64}, "B multicast to 8 cores", 28u * 256 * 64 * 2},
                        {{16, 256}, {256, 4096}, "A multicast to 8 cores", 28u * 16 * 256 * 2}};
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  std::mt19937 gen(9);
  std::uniform_int_distribution<int> small(-4, 4);
  for (const Case &c : cases) {
    isa::JobPlan plan = compileMatmul(c.a, c.b, 32);
    ASSERT_EQ(plan.launches.size(), 1u);
    backend::BackendOptions off;
    off.multicast = false;
    isa::Kernel mc = backend::compileSuperDsc(plan.launches[0].sdsc),
                plain = backend::compileSuperDsc(plan.launches[0].sdsc, off);
    EXPECT_NE(mc.comment.find(c.shared), std::string::npos) << mc.comment;
    EXPECT_EQ(plain.comment.find("multicast"), std::string::npos) << plain.comment;
    isa::TimingReport tm = isa::timeKernel(mc, isa::HardwareConfig{}), tp = isa::timeKernel(plain, isa::HardwareConfig{});
    EXPECT_EQ(tp.ddrBytes - tm.ddrBytes, c.savedBytes) << mc.comment;
    EXPECT_LT(tm.scheduledUs, tp.scheduledUs);

    std::vector<float> a(numel(c.a)), b(numel(c.b));
    for (auto &v : a)
      v = small(gen) / 4.0f;
    for (auto &v : b)
      v = small(gen) / 4.0f;
    auto ri = runMatmul(*interp, 32, c.a, c.b, a, b);
    auto rj = runMatmul(jit, 32, c.a, c.b, a, b);
    ASSERT_EQ(ri, rj);
    const std::vector<double> ref = referenceMatmul(c.a, c.b, a, b);
    for (size_t e = 0; e < ref.size(); ++e)
      ASSERT_EQ(ri[e], dl16::round(static_cast<float>(ref[e]))) << "output element " << e;
    auto rOff = runMatmul(jit, 32, c.a, c.b, a, b, off);
    EXPECT_EQ(rOff, rj);
  }
}

TEST(Matmul, SecondOperandStickedOnKIsTransposedInThePeArray) {
  // matmul(a, w, transb=1) = a @ w^T with w stored [.., N, K] (a linear weight, attention's K):
  // no restickify kernel; the backend stages w's rows and transposes them with pt.tr. K not a
  // stick multiple: w = 1 / w0 has inf in its padded lanes (1 / 0), which must not reach the
  // sums (0 * inf = NaN). Batched w, multicast under an M split.
  struct Case {
    V a, w;
    int cores;
  };
  const Case cases[] = {{{64, 256}, {1024, 256}, 32}, {{33, 100}, {128, 100}, 7}, {{2, 3, 64, 80}, {2, 3, 64, 80}, 32},
                        {{300, 64}, {192, 64}, 4}};
  auto interp = sim::makeInterpreter();
  jit::JitEngine jit;
  std::mt19937 gen(13);
  std::uniform_int_distribution<int> small(-4, 4);
  for (const Case &c : cases) {
    const size_t r = c.w.size();
    V bs = c.w; // the logical second operand [.., K, N]
    std::swap(bs[r - 1], bs[r - 2]);
    Graph g;
    int x = g.addInput("a", c.a, HostType::F16), w0 = g.addInput("w0", c.w, HostType::F16);
    int y = g.addNode("reciprocal", {w0}, "w", c.w, HostType::F16);
    g.outputs = {g.addNode("matmul", {x, y}, "c", matmulShape(c.a, bs), HostType::F16, {{"transb", Attr(1.0)}})};
    isa::JobPlan plan = compileGraph(g, {c.cores, ""});
    ASSERT_EQ(plan.launches.size(), 2u) << "reciprocal and matmul, no transpose kernel";
    isa::Kernel k = backend::compileSuperDsc(plan.launches[1].sdsc);
    EXPECT_NE(k.comment.find("y sticked on K"), std::string::npos) << k.comment;

    std::vector<float> a(numel(c.a)), w(numel(c.w)), b(numel(bs));
    for (auto &v : a)
      v = small(gen) / 4.0f;
    std::vector<float> w0v(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      w0v[i] = std::ldexp(small(gen) < 0 ? -1.0f : 1.0f, small(gen) / 2); // powers of two: 1 / w0 exact
      w[i] = 1.0f / w0v[i];
    }
    // b = w^T per batch index, for the reference.
    const int64_t N = c.w[r - 2], K = c.w[r - 1];
    for (int64_t i = 0; i < numel(c.w); ++i) {
      const int64_t bi = i / (N * K), n = i / K % N, kk = i % K;
      b[bi * K * N + kk * N + n] = w[i];
    }
    std::vector<std::vector<float>> results;
    for (sim::Engine *e : {static_cast<sim::Engine *>(interp.get()), static_cast<sim::Engine *>(&jit)}) {
      test::PlanRunner run(plan, *e);
      run.setInput(0, a);
      run.setInput(1, w0v);
      run.run();
      results.push_back(run.output(0));
    }
    ASSERT_EQ(results[0], results[1]);
    const std::vector<double> ref = referenceMatmul(c.a, bs, a, b);
    for (size_t e = 0; e < ref.size(); ++e)
      ASSERT_EQ(results[0][e], dl16::round(static_cast<float>(ref[e]))) << "cores " << c.cores << " element " << e;
  }
  // N not a stick multiple: a clear Unsupported (the frontend transposes such weights first).
  Graph g;
  int x = g.addInput("a", {8, 64}, HostType::F16), y = g.addInput("w", {100, 64}, HostType::F16);
  g.outputs = {g.addNode("matmul", {x, y}, "c", {8, 100}, HostType::F16, {{"transb", Attr(1.0)}})};
  try {
    compileGraph(g, {32, ""});
    ADD_FAILURE() << "expected Unsupported";
  } catch (const Unsupported &e) {
    EXPECT_NE(std::string(e.what()).find("N = 100 not a multiple of 64"), std::string::npos) << e.what();
  }
}
