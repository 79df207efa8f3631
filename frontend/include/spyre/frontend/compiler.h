// Graph -> SuperDSC bundles + JobPlan: the frontend's passes in torch-spyre's order: verify, dead
// code, decompositions, layout propagation, matmul K padding (opt-in), constant dedup (passes.h),
// then one kernel per op with generic stick layouts and work division (passes 1-3), LX planning,
// memory planning, SuperDSC emission, bundling.
#pragma once
#include "spyre/frontend/graph.h"
#include "spyre/frontend/lx_planner.h"
#include "spyre/frontend/passes.h"
#include "spyre/isa/env.h"
#include "spyre/isa/job_plan.h"
#include <string>

namespace spyre::frontend {

/// The frontend's options. The defaults are the library's; only boundary code (python/csrc, the
/// bench) reads the environment, through fromEnv.
struct CompileOptions {
  int maxCores = 32;       ///< SENCORES
  std::string dumpDir;     ///< if set: graph.txt, passes.txt, sdsc_N.json, bundle_N.mlir (and bundle.mlir when there is one bundle), lx_plan.txt are written there
  /// LX planning (LX_PLANNING, default on): intermediates stay in LX between kernels.
  bool lxPlanning = true;
  /// LX bytes per core the plan may use; the rest of the usable 1,677,721 B stays free for
  /// the kernels' own DMA staging (our choice: 256 KiB, 2048 sticks, for staging).
  int64_t lxPlanBytes = (kLxUsableBytes - (256 << 10)) / kLxAlign * kLxAlign;
  /// Matmul K padding as a graph rewrite (SPYRE_PAD_MATMUL_K=1; default off, see passes.h).
  bool padMatmulK = false;
  /// Matmuls read a transposed second operand as stored, sticked on K (`transb`: the PE array
  /// transposes its tiles), instead of a restickify kernel before them (SPYRE_MATMUL_TRANSB,
  /// default on: work division splits N before M so each core transposes only its own slice,
  /// once; a 2-layer Llama runs 16 fewer kernels and less host time. Off: torch-spyre's
  /// restickify; docs/performance.md).
  bool matmulTransB = true;
  /// A sum, mean or exx2 over the stick dim whose kept dims leave cores idle also splits the
  /// stick dim over them, wherever it has 512 sticks per core (SPYRE_SPLIT_REDUCTIONS=1;
  /// default off: only past work-division pass 1's 256 MiB span, since the serial ring chain
  /// and the split's staging measured slower; docs/frontend-passes.md).
  bool splitReductions = false;
  /// Pointwise fusion (SPYRE_FUSION, default on): chains of elementwise ops become one kernel
  /// whose intermediates stay in registers (passes.h fusePointwise).
  bool fusion = true;
  /// If set: receives the graph text after each pass (also passes.txt in dumpDir).
  std::vector<PassSnapshot> *passLog = nullptr;
  /// The layout search's beam width (SPYRE_LAYOUT_BEAM, 1..4096; 1 = greedy).
  int layoutBeamWidth = kLayoutBeamWidth;

  /// The defaults overridden by SENCORES (1..32; anything else throws
  /// Unsupported("invalid SENCORES value N (expected an integer in 1..32)")), LX_PLANNING, SPYRE_PAD_MATMUL_K,
  /// SPYRE_MATMUL_TRANSB, SPYRE_SPLIT_REDUCTIONS, SPYRE_FUSION (flags) and SPYRE_LAYOUT_BEAM; an invalid value
  /// throws naming the variable and the accepted values.
  static CompileOptions fromEnv(const spyre::Env &env);
};

/// True when the generic stick layouts of the contiguous shapes `from` and `to` (`eps` elements
/// per stick) put every element at the same device bytes, padding included: the reshape is
/// zero-copy (compileGraph aliases the buffer, or copies it once for a graph output).
bool reshapeKeepsDeviceBytes(const std::vector<int64_t> &from, const std::vector<int64_t> &to, int64_t eps);

isa::JobPlan compileGraph(const Graph &g, const CompileOptions &opts = {});

/// torch-spyre work division pass 3 for one op: splits per iteration dim given the
/// stick-adjusted sizes (only `outputDims` may be split). Product <= maxCores; never uneven.
std::vector<int64_t> divideWork(const std::vector<int64_t> &adjustedSizes, const std::vector<bool> &outputDims,
                                int maxCores);

} // namespace spyre::frontend
