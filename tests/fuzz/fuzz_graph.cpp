// Graph text -> parseGraph -> frontend compileGraph (graph -> SuperDSC bundles + JobPlan) ->
// backend compileJobPlan (every kernel compiled, verified against its buffers and timed). Also
// checks print(parse(print(g))) == print(g). Once the frontend accepted a graph, the backend
// may only refuse it with Unsupported: a spyre::Error there means the frontend emitted a
// SuperDSC the backend calls inconsistent, or the backend a kernel the verifier rejects.
#include "fuzz_common.h"
#include "spyre/backend/backend.h"
#include "spyre/frontend/compiler.h"
#include "spyre/frontend/graph.h"
#include <cstdint>

using namespace spyre;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  frontend::Graph g;
  if (!fuzz::accepted([&] { g = frontend::parseGraph(text, "fuzz.graph"); }))
    return 0;
  const std::string printed = frontend::printGraph(g);
  fuzz::checkRoundTrip(printed, "g", [](const std::string &text) {
    return frontend::printGraph(frontend::parseGraph(text, "printed.graph"));
  });

  isa::JobPlan plan;
  if (!fuzz::accepted([&] { plan = frontend::compileGraph(g); }))
    return 0;
  try {
    backend::compileJobPlan(plan);
  } catch (const Unsupported &) {
  } catch (const Error &e) {
    fuzz::finding(std::string("the backend rejects what the frontend emitted: ") + e.what() + "\n" + printed);
  } catch (const std::exception &e) {
    fuzz::finding(std::string("undocumented exception ") + typeid(e).name() + ": " + e.what());
  }
  return 0;
}
