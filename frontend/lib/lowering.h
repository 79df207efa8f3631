// Internal to spyre_frontend: the state compileGraph's steps after the graph passes share (the
// graph in device shapes, its drafted kernels, the plans), and the steps themselves, one file
// each. compiler.cpp runs them in order and logs the graph text after each.
#pragma once
#include "kernels/kernels.h"
#include "lx_planning.h"
#include "spyre/frontend/compiler.h"
#include "spyre/frontend/passes.h"
#include "spyre/isa/job_plan.h"
#include <map>
#include <string>
#include <vector>

namespace spyre::frontend::detail {

struct Lowering {
  Graph g;                                     ///< after the graph passes; the steps add notes
  isa::JobPlan plan;                           ///< buffers, then launches
  std::map<int, int> bufferOf;                 ///< value id -> plan.buffers index
  std::vector<KernelDraft> drafts;             ///< in launch order
  std::vector<int> nodeOfDraft;                ///< drafts[i] is a kernel of g.nodes[nodeOfDraft[i]]
  std::map<int, int> aliasOf;                  ///< zero-copy value -> the value whose buffer it reads
  std::map<int, const Node *> viewSlices;      ///< slices read as views (no kernel)
  LxPlanningResult lx;                         ///< LX-resident values
  BundlingResult bundling;

  explicit Lowering(Graph graph) : g(std::move(graph)) {}
  /// The value whose buffer holds v's bytes (v itself unless it aliases).
  int root(int v) const;
  /// v's buffer, created (of `kind`, host tensor `index`) on first use.
  int bufferFor(int v, isa::BufferSpec::Kind kind, int index);
};

/// memory_planning.cpp: the graph inputs' and outputs' buffers (an output that is an input
/// aliases it).
void assignGraphBuffers(Lowering &l);
/// kernel_drafting.cpp: split into one kernel per node with generic stick layouts and work
/// division (passes 1-3); zero-copy reshapes / clones alias, foldable slices become views.
/// Notes `cores`, `splits`, `alias`, `view`.
void draftKernels(Lowering &l, const CompileOptions &opts);
/// lx_planning.cpp: planLxResidency when opts.lxPlanning; notes `lx`; lx_plan.txt in dumpDir.
void planLx(Lowering &l, const CompileOptions &opts);
/// memory_planning.cpp: planMemory over the intermediates; notes `buffer`.
void planBuffers(Lowering &l);
/// emission.cpp: SuperDSC JSON and one launch per draft binding its segments to buffers
/// (sdsc_N.json in dumpDir).
void emitLaunches(Lowering &l, const std::string &dumpDir);
/// bundling.cpp: bundleLaunches; notes `bundle`.
void bundleKernels(Lowering &l);
/// dump.cpp: bundle_N.mlir (bundle.mlir for one bundle) and passes.txt in dumpDir.
void writeDumpFiles(const Lowering &l, const std::vector<PassSnapshot> &log, const std::string &dumpDir);
/// dump.cpp: writes text to path or throws Error.
void writeFile(const std::string &path, const std::string &text);

} // namespace spyre::frontend::detail
