// compileGraph: the frontend's steps in order (compiler.h), the graph text logged after each.
#include "spyre/frontend/compiler.h"
#include "lowering.h"
#include "spyre/isa/error.h"
#include <filesystem>

namespace spyre::frontend {

using detail::Lowering;

namespace {
/// The graph text after each step, when a pass log or a dump directory wants it.
class PassLog {
public:
  explicit PassLog(const CompileOptions &opts) : on_(opts.passLog || !opts.dumpDir.empty()) {}
  void operator()(const char *pass, const Graph &g) {
    if (on_)
      log_.push_back({pass, printGraph(g)});
  }
  std::vector<PassSnapshot> &entries() { return log_; }

private:
  bool on_;
  std::vector<PassSnapshot> log_;
};
} // namespace

isa::JobPlan compileGraph(const Graph &input, const CompileOptions &opts) {
  input.verify();
  if (opts.maxCores < 1 || opts.maxCores > 32)
    throw Unsupported("invalid SENCORES value " + std::to_string(opts.maxCores) + " (expected an integer in 1..32)");
  if (!opts.dumpDir.empty()) {
    std::filesystem::create_directories(opts.dumpDir);
    detail::writeFile(opts.dumpDir + "/graph.txt", printGraph(input));
  }
  PassLog log(opts);
  // Graph-to-graph passes (passes.h).
  Graph g = input;
  eliminateDeadCode(g);
  log("dead-code", g);
  decomposeOps(g);
  g.verify();
  log("decompose", g);
  propagateLayouts(g, opts.layoutBeamWidth, opts.maxCores, opts.matmulTransB);
  detail::expandLaneMovingReshapes(g);
  g.verify();
  log("layout-propagation", g);
  if (opts.padMatmulK) {
    padMatmulK(g);
    g.verify();
    log("k-padding", g);
  }
  dedupConstants(g);
  g.verify();
  log("constant-dedup", g);

  // Kernels and plans (lowering.h); each step writes its decisions into the graph as notes.
  Lowering l(std::move(g));
  detail::assignGraphBuffers(l);
  detail::draftKernels(l, opts);
  log("work-division", l.g);
  detail::planLx(l, opts);
  log("lx-planning", l.g);
  detail::planBuffers(l);
  log("memory-planning", l.g);
  detail::emitLaunches(l, opts.dumpDir);
  detail::bundleKernels(l);
  log("bundling", l.g);
  if (!opts.dumpDir.empty())
    detail::writeDumpFiles(l, log.entries(), opts.dumpDir);
  if (opts.passLog)
    *opts.passLog = std::move(log.entries());
  return std::move(l.plan);
}

} // namespace spyre::frontend
