// SuperDSC emission: JSON text and one launch per drafted kernel (lowering.h).
#include "lowering.h"
#include <algorithm>

namespace spyre::frontend::detail {

void emitLaunches(Lowering &l, const std::string &dumpDir) {
  const Graph &g = l.g;
  for (size_t ni = 0; ni < l.drafts.size(); ++ni) {
    const KernelDraft &kd = l.drafts[ni];
    isa::KernelLaunch launch;
    for (int v : kd.tensorValues) {
      if (l.lx.lxValues.count(v)) {
        launch.argBuffers.push_back(-1); // LX-resident: no DDR buffer behind this segment
        continue;
      }
      auto outIt = std::find(g.outputs.begin(), g.outputs.end(), v);
      bool isGraphOut = outIt != g.outputs.end();
      launch.argBuffers.push_back(
          l.bufferFor(v, isGraphOut ? isa::BufferSpec::Kind::Output : isa::BufferSpec::Kind::Intermediate,
                      isGraphOut ? static_cast<int>(outIt - g.outputs.begin()) : 0));
    }
    launch.sdscFile = "sdsc_" + std::to_string(ni) + ".json";
    launch.sdscJson = isa::writeSuperDsc(kd.s).dump(2);
    // The backend reads what we wrote: parse the text, never hand the in-memory struct over.
    launch.sdsc = isa::parseSuperDscText(launch.sdscJson, launch.sdscFile);
    if (!dumpDir.empty())
      writeFile(dumpDir + "/" + launch.sdscFile, launch.sdscJson + "\n");
    l.plan.launches.push_back(std::move(launch));
  }
}

} // namespace spyre::frontend::detail
