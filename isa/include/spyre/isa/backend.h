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

/// The kernel can run while LX-resident tensors of the graph occupy LX [0, lxReservedBytes_)
/// and at least `stagingBytes` of LX remain above them: its lowering stages there and reads /
/// writes its own memOrg_ lx operands in place. True for the SFP elementwise and reduction
/// walks (layer norm's exx2 / layernormscale / layernormnorm included), dtype ops and matmuls
/// whose smallest blocks fit in `stagingBytes`; false for lowerings that stage from LX 0 (a
/// transpose or stick-changing restickify through the PE array, a lane-moving slice, an exx2
/// split over the ring).
bool supportsLxReservation(const SuperDsc &s, int64_t stagingBytes);

/// Operand `ldsIdx` of s (placed in DDR) may instead be LX-resident: the core's slice held
/// densely in the tensor's own dim order at one LX address on every core. Besides
/// supportsLxReservation: no view, and for a matmul only x or the output, without a K split
/// (every core of a K chain reads a different K range of x and writes the same output tile),
/// the output's rows contiguous; for a dtype op only when a whole per-core row range fits the
/// staging of the other operand (the resident operand is walked without blocking).
bool supportsLxResidentOperand(const SuperDsc &s, int ldsIdx, int64_t stagingBytes);

/// Device bytes of one tensor of the SuperDSC (its full tiled extent, all cores).
int64_t sdscTensorBytes(const SuperDsc &s, const SdscTensor &t);

} // namespace spyre::isa
