// The scheduled replay of the timing model (internal to spyre_isa).
//
// timing.cpp computes two bounds per phase (units overlapped perfectly, units serialised). The
// *scheduled* time (the one reported as the kernel's simulated time)
// replays each core's instruction stream in order against the units' availability, so it sees
// what the bounds cannot: a compute block that waits for its DMA, a DMA that waits for the
// compute that fills its buffer. Per core: a sequencer issues in program order (scalar ops and
// waits advance it; loop entries cost one scalar op); LSU, SFP, PT and ring instructions start
// when the sequencer reaches them and their unit is free, and occupy the unit for their cost
// (units pipeline: no register dependencies are modelled, as in the overlapped bound); one DMA
// engine runs DMAs in issue order, each starting when issued, when the engine is free and when
// every compute unit has drained (the LX it reads or overwrites is then final); a DMA's token
// completes when the DMA does; `wait` holds the sequencer until its tokens complete. A phase
// ends when every unit and the DMA engine are idle. Double-buffered staging (prefetch block
// i+1 before computing block i) is what brings this close to the overlapped bound; a
// synchronous DMA per block lands it near the serial one.
// Loops are replayed iteration by iteration until the state (every unit's free time, clamped
// to the sequencer's time) advances by the same vector twice in a row; then the remaining
// iterations are skipped by extrapolation, and the jump is verified by replaying the next
// iteration (it must advance by the same vector again, else half the jump is tried). Timing
// depends only on the program's structure (trip counts and shapes are immediates), so one
// replay per distinct core program suffices. A phase that replays more than 2^20 instructions
// (a deep loop nest, never a generated kernel) times its remaining loops in closed form: the
// n-th max-plus power of the body's matrix.
#pragma once
#include "spyre/isa/hardware_config.h"
#include "spyre/isa/program.h"
#include "spyre/isa/timing.h"
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace spyre::isa::detail {

/// The scheduled replay of one core's phase (file comment).
class Scheduler {
public:
  Scheduler(const HardwareConfig &hw, int activeCores) : hw_(hw), activeCores_(activeCores) {}

  /// Cycles from phase start until every unit of the core is idle. With `rec`, the units'
  /// busy intervals are appended to it (at most `maxPerUnit` slices per unit; later work is
  /// merged into the last slice).
  double phase(const std::vector<Instr> &body, size_t begin, size_t end, int phaseIndex = 0,
               std::vector<TimelineSlice> *rec = nullptr, size_t maxPerUnit = 64) {
    t_.fill(0.0);
    rec_ = rec;
    phase_ = phaseIndex;
    maxPerUnit_ = maxPerUnit;
    perUnit_.fill(0);
    last_.fill(-1);
    busy_.fill(0);
    steps_ = 0;
    for (size_t i = begin; i < end; ++i)
      step(body[i]);
    rec_ = nullptr;
    return *std::max_element(t_.begin(), t_.end());
  }

  bool approximate() const { return approximate_; }

private:
  enum : int { Seq, Lsu, Sfp, Pt, Ring, Dma, Tok0, NumComp = Tok0 + kNumTokens };
  using State = std::array<double, NumComp>;
  static constexpr int kUnitsRecorded = 6; // Seq .. Dma

  const HardwareConfig &hw_;
  int activeCores_;
  State t_{};
  bool approximate_ = false;
  // Timeline recording (trace): slices per unit, index of each unit's last slice.
  std::vector<TimelineSlice> *rec_ = nullptr;
  int phase_ = 0;
  size_t maxPerUnit_ = 64;
  std::array<size_t, kUnitsRecorded> perUnit_{};
  std::array<long, kUnitsRecorded> last_{};
  std::array<double, kUnitsRecorded> busy_{}; ///< busy cycles per unit (recording only)

  static TimelineUnit timelineUnit(int u) {
    switch (u) {
    case Lsu: return TimelineUnit::Lsu;
    case Sfp: return TimelineUnit::Sfp;
    case Pt: return TimelineUnit::Pt;
    case Ring: return TimelineUnit::Ring;
    case Dma: return TimelineUnit::Dma;
    default: return TimelineUnit::Sequencer;
    }
  }

  /// Records [start, end) on unit u. Compute slices that continue the unit's last one (same
  /// name, no gap) extend it; past the cap everything extends the last slice.
  void record(int u, double start, double end, const std::string &what, bool mergeable, uint64_t count = 1) {
    if (!rec_ || end <= start)
      return;
    long li = last_[u];
    if (li >= 0) {
      TimelineSlice &l = (*rec_)[static_cast<size_t>(li)];
      bool contiguous = start <= l.end + 1e-9;
      if ((mergeable && contiguous && l.what == what) || perUnit_[u] >= maxPerUnit_) {
        l.end = std::max(l.end, end);
        l.count += count;
        if (perUnit_[u] >= maxPerUnit_ && l.what != what)
          l.what = "(more work, merged)";
        return;
      }
    }
    last_[u] = static_cast<long>(rec_->size());
    ++perUnit_[u];
    rec_->push_back({phase_, timelineUnit(u), start, end, what, count});
  }

  double corelets() const { return hw_.corelets; }

  void unit(int u, double cost, const char *what = nullptr) {
    double start = std::max(t_[u], t_[Seq]);
    t_[u] = start + cost;
    if (rec_) {
      busy_[u] += cost;
      record(u, start, t_[u], what ? what : "busy", true);
    }
  }

  /// The unit and cycles of a compute instruction (LSU, SFP, PT, ring classes); -1 for others.
  int computeCost(const Instr &in, double &cost, const char *&what) const {
    const double c = corelets();
    switch (opInfo(in.op).timing) {
    case TimingClass::Lsu: cost = 1.0 / (hw_.lsuSticksPerCycle * c), what = "ld/st"; return Lsu;
    case TimingClass::Sfp: cost = 1.0 / (hw_.sfpSticksPerCycle * c), what = "sfp"; return Sfp;
    case TimingClass::SfpTrans:
      cost = hw_.transcendentalCyclesPerStick / (hw_.sfpSticksPerCycle * c), what = "sfp";
      return Sfp;
    case TimingClass::Pt:
      cost = static_cast<double>(in.imm) * static_cast<double>(in.imms[0]) * static_cast<double>(in.imms[1]) /
             hw_.ptMacsPerCycle;
      what = "pt.mm";
      return Pt;
    case TimingClass::PtOut:
      cost = static_cast<double>(in.imm) * static_cast<double>(in.imms[0] / 64) / (hw_.sfpSticksPerCycle * c);
      what = "pt.out";
      return Sfp;
    case TimingClass::Ring:
      cost = static_cast<double>(in.imm) * 128 / hw_.ringBytesPerCyclePerHop, what = "ring";
      return Ring;
    default: return -1;
    }
  }
  double dmaCost(const Instr &in) const {
    return hw_.nsToCycles(hw_.dmaStartupNs) +
           static_cast<double>(dmaDdrBytes(in)) / hw_.ddrBytesPerCyclePerCore(activeCores_);
  }

  void step(const Instr &in) {
    ++steps_;
    double cost = 0;
    const char *what = nullptr;
    if (int u = computeCost(in, cost, what); u >= 0) {
      unit(u, cost, what);
      return;
    }
    switch (opInfo(in.op).timing) {
    case TimingClass::Scalar:
      t_[Seq] += hw_.scalarCycles;
      if (in.op == Opcode::Loop)
        loop(in);
      return;
    case TimingClass::Dma: {
      double start = std::max({t_[Seq], t_[Dma], t_[Lsu], t_[Sfp], t_[Pt], t_[Ring]});
      t_[Dma] = start + dmaCost(in);
      if (rec_) {
        char what[64];
        std::snprintf(what, sizeof what, "%s %lld sticks -> t%d", std::string(opInfo(in.op).mnemonic).c_str(),
                      static_cast<long long>(in.dma.sticks()), in.outToken);
        busy_[Dma] += t_[Dma] - start;
        record(Dma, start, t_[Dma], what, false);
      }
      if (in.outToken >= 0 && in.outToken < kNumTokens)
        t_[Tok0 + in.outToken] = t_[Dma];
      return;
    }
    case TimingClass::Sync: {
      double issued = t_[Seq];
      for (int tok : in.tokens)
        if (tok >= 0 && tok < kNumTokens)
          t_[Seq] = std::max(t_[Seq], t_[Tok0 + tok]);
      if (rec_ && t_[Seq] > issued + 1e-9)
        record(Seq, issued, t_[Seq], "wait (stalled on DMA)", false);
      t_[Seq] += hw_.waitCycles;
      return;
    }
    case TimingClass::Barrier: return; // phases are split by the caller
    default: return;                   // compute classes: above
    }
  }

  /// A unit free before the sequencer's time is as good as free at it: clamping loses nothing
  /// and makes states comparable across iterations.
  void clamp() {
    for (int i = 1; i < NumComp; ++i)
      t_[i] = std::max(t_[i], t_[Seq]);
  }

  static bool near(double a, double b, double scale) { return std::abs(a - b) <= 1e-9 * std::max(1.0, scale); }

  static bool sameStep(const State &a, const State &b, const State &c) {
    for (int i = 0; i < NumComp; ++i)
      if (!near(b[i] - a[i], c[i] - b[i], std::abs(c[i])))
        return false;
    return true;
  }

  void body(const Instr &l) {
    for (const Instr &in : l.body)
      step(in);
    clamp();
  }

  /// b - a == d within rounding.
  static bool stepIs(const State &a, const State &b, const State &d) {
    for (int i = 0; i < NumComp; ++i)
      if (!near(b[i] - a[i], d[i], std::abs(b[i])))
        return false;
    return true;
  }

  void loop(const Instr &l) {
    const int64_t n = l.imm;
    if (n <= 0)
      return;
    clamp();
    // Past kExactSteps replayed instructions in this phase (never for the kernels we generate:
    // a deep nest replays a few bodies per level, a cost exponential in the depth), loops are
    // timed in closed form instead: the replay only takes maxima and adds costs, so a body is a
    // max-plus linear map of the state and n iterations are its n-th power (repeated squaring,
    // O(log n) per loop). Exact up to rounding, and without extrapolation or timeline slices.
    if (steps_ > kExactSteps) {
      t_ = apply(power(l), t_);
      return;
    }
    replayLoop(l, n);
  }

  // ---- max-plus closed form: out[i] = max_j (m[i][j] + in[j]); kNone = no dependency ---------
  using Mat = std::array<State, NumComp>;
  static constexpr double kNone = -std::numeric_limits<double>::infinity();
  std::map<const Instr *, Mat> powers_;

  static Mat identity() {
    Mat m;
    for (int i = 0; i < NumComp; ++i) {
      m[i].fill(kNone);
      m[i][i] = 0;
    }
    return m;
  }
  /// a after b.
  static Mat compose(const Mat &a, const Mat &b) {
    Mat m;
    for (int i = 0; i < NumComp; ++i) {
      m[i].fill(kNone);
      for (int k = 0; k < NumComp; ++k)
        if (a[i][k] != kNone)
          for (int j = 0; j < NumComp; ++j)
            m[i][j] = std::max(m[i][j], a[i][k] + b[k][j]);
    }
    return m;
  }
  static State apply(const Mat &m, const State &x) {
    State y;
    for (int i = 0; i < NumComp; ++i) {
      y[i] = kNone;
      for (int j = 0; j < NumComp; ++j)
        y[i] = std::max(y[i], m[i][j] + x[j]);
    }
    return y;
  }
  static void maxRow(State &row, const State &other) {
    for (int j = 0; j < NumComp; ++j)
      row[j] = std::max(row[j], other[j]);
  }
  static void addRow(State &row, double c) {
    for (double &v : row)
      v += c;
  }
  static void clampForms(Mat &f) {
    for (int i = 1; i < NumComp; ++i)
      maxRow(f[i], f[Seq]);
  }
  /// step(), on the state as forms of the loop body's entry state.
  void stepForms(const Instr &in, Mat &f) {
    double cost = 0;
    const char *what = nullptr;
    if (int u = computeCost(in, cost, what); u >= 0) {
      maxRow(f[u], f[Seq]);
      addRow(f[u], cost);
      return;
    }
    switch (opInfo(in.op).timing) {
    case TimingClass::Scalar:
      addRow(f[Seq], hw_.scalarCycles);
      if (in.op == Opcode::Loop && in.imm > 0) {
        clampForms(f);
        f = compose(power(in), f);
      }
      return;
    case TimingClass::Dma:
      for (int u : {Seq, Lsu, Sfp, Pt, Ring})
        maxRow(f[Dma], f[u]);
      addRow(f[Dma], dmaCost(in));
      if (in.outToken >= 0 && in.outToken < kNumTokens)
        f[Tok0 + in.outToken] = f[Dma];
      return;
    case TimingClass::Sync:
      for (int tok : in.tokens)
        if (tok >= 0 && tok < kNumTokens)
          maxRow(f[Seq], f[Tok0 + tok]);
      addRow(f[Seq], hw_.waitCycles);
      return;
    default: return;
    }
  }
  /// All n iterations of a loop (entered clamped): the n-th power of its body, once per loop.
  const Mat &power(const Instr &l) {
    if (auto it = powers_.find(&l); it != powers_.end())
      return it->second;
    Mat body = identity();
    for (const Instr &in : l.body)
      stepForms(in, body);
    clampForms(body);
    Mat result = identity();
    for (uint64_t n = static_cast<uint64_t>(l.imm); n > 0; n >>= 1) {
      if (n & 1)
        result = compose(body, result);
      body = compose(body, body);
    }
    return powers_.emplace(&l, result).first->second;
  }

  void replayLoop(const Instr &l, const int64_t n) {
    State prev2{}, prev1 = t_;
    auto busyPrev1 = busy_;
    int have = 1; // history entries (prev1, prev2) that are valid
    int64_t done = 0, replayed = 0;
    while (done < n) {
      const auto busyBefore = busy_;
      body(l);
      ++done;
      ++replayed;
      busyPrev1 = busyBefore;
      if (have == 2 && done < n && sameStep(prev2, prev1, t_)) {
        State d;
        for (int i = 0; i < NumComp; ++i)
          d[i] = t_[i] - prev1[i];
        // Skip k iterations, then replay one: it must advance by d again.
        bool jumped = false;
        for (int64_t k = n - done - 1; k >= 1 && !jumped; k /= 2) {
          State save = t_, at;
          for (int i = 0; i < NumComp; ++i)
            at[i] = save[i] + static_cast<double>(k) * d[i];
          // Recording: the skipped iterations become one slice per unit that advanced.
          const size_t recSize = rec_ ? rec_->size() : 0;
          const auto perUnit = perUnit_;
          const auto last = last_;
          const auto busy = busy_;
          if (rec_) {
            for (int u = Lsu; u <= Dma; ++u) {
              double perIter = busy_[u] - busyPrev1[u];
              if (perIter <= 0)
                continue;
              char what[96];
              std::snprintf(what, sizeof what, "%lld loop iterations (extrapolated, %.0f%% busy)",
                            static_cast<long long>(k), 100.0 * std::min(1.0, perIter * k / (at[u] - save[u])));
              busy_[u] += perIter * static_cast<double>(k);
              record(u, save[u], at[u], what, false, static_cast<uint64_t>(k));
            }
          }
          t_ = at;
          body(l);
          if (stepIs(at, t_, d)) {
            done += k + 1;
            prev2 = at;
            prev1 = t_;
            jumped = true;
          } else {
            t_ = save;
            if (rec_) {
              rec_->resize(recSize);
              perUnit_ = perUnit;
              last_ = last;
              busy_ = busy;
            }
          }
        }
        if (jumped)
          continue;
      }
      if (replayed > kMaxReplayed && done < n) {
        // No regime that survives a jump: extrapolate the last step, flagged as approximate.
        for (int i = 0; i < NumComp; ++i)
          t_[i] += static_cast<double>(n - done) * (t_[i] - prev1[i]);
        approximate_ = true;
        return;
      }
      prev2 = prev1;
      prev1 = t_;
      have = std::min(have + 1, 2);
    }
  }
  static constexpr int64_t kMaxReplayed = 4096;
  static constexpr uint64_t kExactSteps = uint64_t{1} << 20;
  uint64_t steps_ = 0; ///< instructions replayed in this phase
};

} // namespace spyre::isa::detail
