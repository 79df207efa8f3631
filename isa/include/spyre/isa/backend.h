// The backend compiler (the role of torch-spyre's proprietary dxp_standalone): one SuperDSC ->
// one Kernel of per-core programs in the modelled ISA.
#pragma once
#include "spyre/isa/program.h"
#include "spyre/isa/superdsc.h"

namespace spyre::isa {

/// SPYRE_MULTICAST: "0" turns multicast DMA off (comparisons of the timing model).
bool multicastFromEnv();

struct BackendOptions {
  int64_t lxBytes = 1677721; ///< usable LX per core
  /// Double-buffered staging: split each core's sweep into at least this many blocks (where
  /// the extents allow), so DMA of one block overlaps compute of another. 0 = let the timing
  /// model choose: 1, 2, 4 and 8 are compiled and the lowest scheduled time wins (more
  /// blocks only if at least 2 % faster).
  int pipelineBlocks = 0;
  /// Loads that every core of an aligned run of 2..8 cores makes identically (a matmul's
  /// weight block under an M split) become one multicast per cohort (dma.mc). Off: each core
  /// streams its own copy (SPYRE_MULTICAST=0 turns it off for comparisons).
  bool multicast = multicastFromEnv();
};

/// Kernel argument i is the tensor whose start address lies in segment i (arguments are bound to
/// DDR buffers at launch). Throws spyre::Unsupported for ops/forms not implemented yet and
/// spyre::Error (naming the SuperDSC and field) for inconsistent descriptors.
Kernel compileSuperDsc(const SuperDsc &s, const BackendOptions &opts = {});

/// The op's lowering reads and writes LX-resident (memOrg_ lx) operands in place and honours
/// lxReservedBytes_: the elementwise and reduction lowerings on the SFP.
bool supportsLxResidentOperands(const std::string &opFuncName);

/// Device bytes of one tensor of the SuperDSC (its full tiled extent, all cores).
int64_t sdscTensorBytes(const SuperDsc &s, const SdscTensor &t);

} // namespace spyre::isa
