// Bundling, the last pass: consecutive launches share a SuperDSC bundle while its graph input /
// output tensors fit the kernel-argument segments. See passes.h.
#include "lowering.h"
#include "spyre/frontend/passes.h"
#include "spyre/isa/error.h"
#include "spyre/isa/superdsc.h"
#include <algorithm>
#include <set>

namespace spyre::frontend {

BundlingResult bundleLaunches(isa::JobPlan &plan) {
  BundlingResult r;
  for (const isa::BufferSpec &b : plan.buffers)
    r.pool = r.pool || b.kind == isa::BufferSpec::Kind::Intermediate;
  // Segment 0 goes to the pool when there is one; of the rest, torch-spyre keeps one spare
  // (_max_bundle_tensors = len(SEGMENT_OFFSETS) - (2 if pool else 1)).
  r.maxIoTensors = kMaxBundleSegments - (r.pool ? 2 : 1);

  std::set<int> io; // the current bundle's graph input / output buffers
  for (size_t li = 0; li < plan.launches.size(); ++li) {
    isa::KernelLaunch &l = plan.launches[li];
    if (l.argBuffers.size() > static_cast<size_t>(isa::kMaxLabeledDs))
      throw Error("bundling: " + l.sdscFile + " has " + std::to_string(l.argBuffers.size()) +
                  " tensor arguments, more than the backend's " + std::to_string(isa::kMaxLabeledDs) +
                  " labeledDs per DSC");
    std::set<int> mine;
    bool pool = false;
    for (int b : l.argBuffers) {
      if (b < 0)
        continue; // LX-resident: no segment
      if (plan.buffers.at(b).kind == isa::BufferSpec::Kind::Intermediate)
        pool = true;
      else
        mine.insert(b);
    }
    std::set<int> joined = io;
    joined.insert(mine.begin(), mine.end());
    // The first launch of a bundle always goes in, even over the limit: it cannot be split
    // further, and its segments are bounded by the labeledDs check above.
    if (r.bundles.empty() || static_cast<int>(joined.size()) > r.maxIoTensors) {
      r.bundles.push_back({static_cast<int>(li), 0, {}, false});
      joined = mine;
    }
    Bundle &cur = r.bundles.back();
    ++cur.numLaunches;
    cur.usesPool = cur.usesPool || pool;
    io = std::move(joined);
    cur.ioBuffers.assign(io.begin(), io.end());
    l.bundle = static_cast<int>(r.bundles.size()) - 1;
  }
  return r;
}

std::string BundlingResult::summary() const {
  std::string s = "at most " + std::to_string(maxIoTensors) + " graph input / output tensors per bundle (" +
                  (pool ? "the intermediate pool takes a segment" : "no intermediate pool") + ")\n";
  for (size_t i = 0; i < bundles.size(); ++i) {
    const Bundle &b = bundles[i];
    s += "bundle_" + std::to_string(i) + ".mlir: sdsc_" + std::to_string(b.firstLaunch);
    if (b.numLaunches > 1)
      s += "..sdsc_" + std::to_string(b.firstLaunch + b.numLaunches - 1);
    s += ", io buffers";
    for (int buf : b.ioBuffers)
      s += " " + std::to_string(buf);
    if (b.ioBuffers.empty())
      s += " none";
    if (b.usesPool)
      s += " + pool";
    if (static_cast<int>(b.ioBuffers.size()) > maxIoTensors)
      s += " (one kernel over the limit: a bundle of its own)";
    s += "\n";
  }
  return s;
}

namespace detail {

void bundleKernels(Lowering &l) {
  l.bundling = bundleLaunches(l.plan);
  for (size_t ni = 0; ni < l.g.nodes.size(); ++ni) {
    std::vector<double> bundles;
    for (size_t k = 0; k < l.drafts.size(); ++k)
      if (l.nodeOfDraft[k] == static_cast<int>(ni))
        bundles.push_back(l.plan.launches[k].bundle);
    if (bundles.size() == 1)
      l.g.nodes[ni].notes["bundle"] = Attr(bundles[0]);
    else if (!bundles.empty())
      l.g.nodes[ni].notes["bundle"] = Attr(bundles);
  }
}

} // namespace detail

} // namespace spyre::frontend
