// SPYRE_DUMP_DIR's files: the bundles' sequencing files and passes.txt (lowering.h).
#include "lowering.h"
#include "spyre/isa/error.h"
#include <filesystem>
#include <fstream>

namespace spyre::frontend::detail {

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream f(path);
  if (!f)
    throw Error("cannot write " + path);
  f << text;
}

namespace {
/// SPYRE_DUMP_DIR's passes.txt: the graph after each frontend pass, then what each decided.
std::string passesReport(const Graph &g, const std::vector<PassSnapshot> &log, const std::vector<KernelDraft> &drafts,
                         const std::vector<int> &nodeOfDraft, const std::map<int, int> &aliasOf,
                         const LxPlanningResult &lx, const isa::JobPlan &plan, const BundlingResult &bundling) {
  std::string r;
  for (const PassSnapshot &p : log)
    r += "# graph after " + p.pass + "\n" + p.graph + "\n";
  r += "# split: one kernel per node (zero-copy reshapes alias their input's buffer)\n";
  for (const auto &[v, src] : aliasOf)
    r += "%" + g.values[v].name + " = reshape(%" + g.values[src].name + "): alias, no kernel\n";
  r += "\n# work division: kernel, node, dims = size / splits, cores\n";
  for (size_t i = 0; i < drafts.size(); ++i) {
    const isa::SuperDsc &s = drafts[i].s;
    r += s.name + " %" + g.values[g.nodes.at(nodeOfDraft.at(i)).output].name + ":";
    for (size_t d = 0; d < s.dims.size(); ++d)
      r += " " + s.dims[d] + "=" + std::to_string(s.N[d]) + "/" + std::to_string(s.numWkSlicesPerDim[d]);
    r += ", " + std::to_string(s.numCoresUsed) + " cores\n";
  }
  r += "\n# LX planning (size per core, live kernels, address)\n" + (lx.summary.empty() ? "none\n" : lx.summary);
  r += "\n# memory planning and emission (JobPlan; launch args: buffer index, lx = LX-resident)\n" + plan.summary();
  r += "\n# bundling\n" + bundling.summary();
  return r;
}
} // namespace

void writeDumpFiles(const Lowering &l, const std::vector<PassSnapshot> &log, const std::string &dumpDir) {
  // A directory reused from an earlier compile must not keep its bundle files.
  for (const auto &e : std::filesystem::directory_iterator(dumpDir)) {
    const std::string name = e.path().filename().string();
    if (name == "bundle.mlir" || (name.rfind("bundle_", 0) == 0 && e.path().extension() == ".mlir"))
      std::filesystem::remove(e.path());
  }
  // One sequencing file per bundle, naming its SuperDSC files in launch order; the
  // sdsc_N.json files themselves stay side by side in the dump directory.
  std::vector<std::vector<std::string>> files(l.bundling.bundles.size());
  for (const isa::KernelLaunch &k : l.plan.launches)
    files[k.bundle].push_back(k.sdscFile);
  for (size_t b = 0; b < files.size(); ++b)
    writeFile(dumpDir + "/bundle_" + std::to_string(b) + ".mlir", isa::writeBundleMlir(files[b]));
  // torch-spyre's single-bundle name, for tools that read one bundle.mlir per directory.
  if (files.size() == 1)
    writeFile(dumpDir + "/bundle.mlir", isa::writeBundleMlir(files[0]));
  writeFile(dumpDir + "/passes.txt",
            passesReport(l.g, log, l.drafts, l.nodeOfDraft, l.aliasOf, l.lx, l.plan, l.bundling));
}

} // namespace spyre::frontend::detail
