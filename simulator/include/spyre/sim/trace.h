// SPYRE_TRACE=file.json (TraceOptions::fromEnv, at the boundary): a Chrome / Perfetto trace of *simulated* device time. Every
// Executable::run appends its launches: one slice per kernel on a "kernels" track (with the
// launch overhead and each BSP phase nested in it), and on one track per (core, unit) the busy
// time of DMA, LSU, SFP, PT (and RING when used) in each phase, from the static timing report
// (isa/timing.h), laid out in simulated µs. Units of a core overlap inside a phase, as in the
// model's overlapped mode; a phase lasts as long as its busiest unit on any core. Kernels follow
// each other on one simulated clock that starts at 0 in each process; collectives
// (recordCollective) take their modelled link time on a track of their own on the same clock.
//
// The file is rewritten when the first launch of the process is recorded and stays valid JSON
// after every launch (the closing "]}" is rewritten on each append). Open it in
// https://ui.perfetto.dev or chrome://tracing.
#pragma once
#include "spyre/isa/env.h"
#include "spyre/isa/program.h"
#include "spyre/sim/engine.h"
#include <memory>
#include <string>

namespace spyre::sim::trace {

/// What the boundary configures (tracing is off until then).
struct TraceOptions {
  std::string path; ///< "" = no trace
  /// SPYRE_TRACE=file.json.
  static TraceOptions fromEnv(const spyre::Env &env);
};
/// Sets the trace path from `o` (as setPath).
void configure(const TraceOptions &o);

/// True when launches are being recorded: a trace path is configured (configure or setPath)
/// and no Pause is alive.
bool enabled();
/// Sets the trace path ("" turns tracing off). Starts a new file on the next launch.
void setPath(const std::string &path);
std::string path();
/// While a Pause object lives, launches are not recorded (benchmarks trace one run, not all).
struct Pause {
  Pause();
  ~Pause();
  Pause(const Pause &) = delete;
  Pause &operator=(const Pause &) = delete;
};
/// A label stored in the args of the following kernel slices (e.g. the benchmark workload).
void setLabel(const std::string &label);

/// Records one launch of `kernel` (whose prepared form is `prepared`, the cache key of its
/// timing report) that took `hostMs` on the host. Called by Executable::run.
void recordLaunch(const isa::Kernel &kernel, const std::shared_ptr<const PreparedKernel> &prepared, double hostMs);

/// Records a collective (torch.distributed on spyre tensors) of `simulatedUs` modelled link
/// time as a slice named `kind` on a "collectives" track at the current clock, which it
/// advances (collectives do not overlap kernels in the model). `args` is a JSON object body
/// (`"bytes":…,…`) or "".
void recordCollective(const std::string &kind, double simulatedUs, const std::string &args);

/// Simulated µs recorded so far in this process (the trace's clock).
double clockUs();

} // namespace spyre::sim::trace
