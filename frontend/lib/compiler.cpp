// compileGraph: the frontend's steps in order (compiler.h), the graph text logged after each.
#include "spyre/frontend/compiler.h"
#include "lowering.h"
#include "spyre/isa/error.h"
#include <algorithm>
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

/// A value with a zero-size dimension holds no elements: no pass or kernel builder handles it
/// (work division, layouts and LX planning divide by dimensions), so the graph is rejected before
/// any of them runs. torch_spyre computes such ops without a kernel before they reach here.
void rejectEmptyValues(const Graph &g) {
  auto empty = [](const Value &v) {
    return std::any_of(v.shape.begin(), v.shape.end(), [](int64_t d) { return d == 0; });
  };
  auto type = [](const Value &v) {
    std::string s = std::string(dtypeShortName(v.dtype)) + "[";
    for (size_t i = 0; i < v.shape.size(); ++i)
      s += (i ? ", " : "") + std::to_string(v.shape[i]);
    return s + "]";
  };
  // Lines of printGraph's text: the header (the inputs) is line 1, node i is line i + 2.
  for (int i : g.inputs)
    if (empty(g.values[i]))
      throw Unsupported("empty tensor %" + g.values[i].name + ": " + type(g.values[i]) +
                        " (<graph>:1, graph input): zero-size dimensions are not compiled");
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Value &v = g.values[g.nodes[i].output];
    if (empty(v))
      throw Unsupported("empty tensor %" + v.name + ": " + type(v) + " (<graph>:" +
                        std::to_string(i + 2) + ", node %" + v.name + " = " + g.nodes[i].op +
                        "): zero-size dimensions are not compiled");
  }
}
} // namespace

isa::JobPlan compileGraph(const Graph &input, const CompileOptions &opts) {
  input.verify();
  rejectEmptyValues(input);
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
  if (opts.fusion) {
    fuseRotateHalf(g);
    g.verify();
    log("rotate-half", g);
    fuseSplitHeads(g);
    g.verify();
    log("split-heads", g);
    fuseRepeatHeads(g);
    g.verify();
    log("repeat-heads", g);
  }
  dropReturnedCopies(g);
  g.verify();
  log("returned-copies", g);
  propagateLayouts(g, opts.layoutBeamWidth, opts.maxCores, opts.matmulTransB);
  detail::expandLaneMovingReshapes(g);
  detail::splitIntTransposes(g);
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
  if (opts.fusion) {
    fuseRows(g);
    log("row-fusion", g);
    fuseMatmulEpilogues(g);
    log("matmul-fusion", g);
    fusePointwise(g);
    log("fusion", g);
  }

  // Kernels and plans (lowering.h); each step writes its decisions into the graph as notes.
  Lowering l(std::move(g));
  // Every run passes the input graph's runtime scalars, also those of nodes dead code removed.
  l.plan.numScalars = numRuntimeScalars(input);
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
