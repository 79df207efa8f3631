// Internal to spyre_frontend: the memory planning pass (torch-spyre's memory_planning over the
// intermediate pool), between LX planning and SuperDSC emission.
#pragma once
#include "kernels/kernels.h"
#include "spyre/isa/job_plan.h"
#include <functional>
#include <map>
#include <set>

namespace spyre::frontend::detail {

/// Gives every value the drafts touch that is neither LX-resident nor already in `bufferOf` (graph
/// inputs and outputs) a DDR buffer of `plan`: values whose kernel ranges [first use, last use]
/// do not overlap share one (best fit over pool slots, a slot as large as its largest value; a
/// kernel's inputs and output never share). `newBuffer(v)` creates an intermediate buffer for v
/// and records it in bufferOf; a shared buffer is named after its values (`%a|c`).
void planMemory(const Graph &g, const std::vector<KernelDraft> &drafts, const std::set<int> &lxValues,
                std::map<int, int> &bufferOf, isa::JobPlan &plan, const std::function<SpyreTensorLayout(int)> &layoutOf,
                const std::function<int(int)> &newBuffer);

} // namespace spyre::frontend::detail
