// JobPlan: the compiled artefact of a graph — device buffers, kernel launches and what binds to
// what. Produced by the frontend, executed by the Runtime (python/ drives it for torch tensors).
#pragma once
#include "spyre/isa/layout.h"
#include "spyre/isa/superdsc.h"
#include <string>
#include <vector>

namespace spyre::isa {

struct BufferSpec {
  enum class Kind { Input, Output, Intermediate };
  std::string name;
  Kind kind = Kind::Intermediate;
  int index = 0;                    ///< position among graph inputs / outputs
  std::vector<int64_t> hostShape;
  HostType hostType = HostType::F16;
  SpyreTensorLayout layout;
};

struct KernelLaunch {
  std::string sdscFile;             ///< "sdsc_0.json"
  SuperDsc sdsc;                    ///< as parsed back from the emitted JSON
  std::string sdscJson;             ///< the emitted text
  std::vector<int> argBuffers;      ///< kernel argument (segment) i -> buffer index; -1 = LX-resident (no buffer)
  /// The SuperDSC bundle (bundle_N.mlir) this launch belongs to; set by the frontend's bundling
  /// pass. Launches run in plan order either way: LX persists across bundles (notes §4.3).
  int bundle = 0;
};

struct JobPlan {
  std::vector<BufferSpec> buffers;
  std::vector<KernelLaunch> launches;
  std::vector<int> inputs, outputs; ///< buffer indices in graph order
  /// Output i aliases input j (no kernel writes it), -1 otherwise.
  std::vector<int> outputAliasesInput;
  /// Runtime scalars of the graph ($0 .. $(n-1) in its attributes): values every run passes
  /// (launch scalar arguments, not compile-time constants).
  int numScalars = 0;
  /// Number of bundles (launches are grouped consecutively: bundle ids never decrease).
  int numBundles() const { return launches.empty() ? 0 : launches.back().bundle + 1; }
  std::string summary() const;
};

} // namespace spyre::isa
