#include "spyre/isa/job_plan.h"

namespace spyre::isa {
std::string JobPlan::summary() const {
  std::string s;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const auto &b = buffers[i];
    const char *kind = b.kind == BufferSpec::Kind::Input ? "input" : b.kind == BufferSpec::Kind::Output ? "output" : "intermediate";
    s += "buffer " + std::to_string(i) + " %" + b.name + " " + kind + " " + b.layout.str() + "\n";
  }
  if (numScalars > 0)
    s += "scalars " + std::to_string(numScalars) + "\n";
  for (const auto &l : launches) {
    s += "launch " + l.sdscFile + " (" + l.sdsc.opFuncName + ", " + std::to_string(l.sdsc.numCoresUsed) + " cores) args";
    for (int b : l.argBuffers)
      s += b < 0 ? std::string(" lx") : " " + std::to_string(b);
    s += ", bundle " + std::to_string(l.bundle) + "\n";
  }
  return s;
}
} // namespace spyre::isa
