// The backend compiler (the role of torch-spyre's proprietary dxp_standalone): one SuperDSC ->
// one Kernel of per-core programs in the modelled ISA; a JobPlan -> its kernels, verified and
// timed (what the simulator runs); and the capability queries the frontend asks while planning.
#pragma once
#include "spyre/isa/compiled_kernel.h"
#include "spyre/isa/env.h"
#include "spyre/isa/hardware_config.h"
#include "spyre/isa/job_plan.h"
#include "spyre/isa/program.h"
#include "spyre/isa/superdsc.h"
#include <vector>

namespace spyre::backend {

struct BackendOptions {
  int64_t lxBytes = 1677721; ///< usable LX per core
  /// Double-buffered staging: split each core's sweep into at least this many blocks (where
  /// the extents allow), so DMA of one block overlaps compute of another. 0 = let the timing
  /// model choose: 1, 2, 4 and 8 are compiled and the lowest scheduled time wins (more
  /// blocks only if at least 2 % faster).
  int pipelineBlocks = 0;
  /// Loads that every core of an aligned run of 2..8 cores makes identically (a matmul's
  /// weight block under an M split) become one multicast per cohort (dma.mc). Off: each core
  /// streams its own copy (for comparisons of the timing model).
  bool multicast = true;

  /// Defaults, with SPYRE_MULTICAST (a flag, default on) setting `multicast`.
  static BackendOptions fromEnv(const spyre::Env &env);
};

/// Kernel argument i is the tensor whose start address lies in segment i (arguments are bound to
/// DDR buffers at launch). Throws spyre::Unsupported for ops/forms not implemented yet (an
/// opFuncName not in isa/opfuncs.def among them) and spyre::Error (naming the SuperDSC and
/// field) for inconsistent descriptors.
isa::Kernel compileSuperDsc(const isa::SuperDsc &s, const BackendOptions &opts = {});

/// Every launch of a JobPlan compiled, verified against its argument buffers (the JIT trusts
/// the kernels' addresses) and timed on `hw`.
struct CompiledJob {
  std::vector<isa::CompiledKernel> kernels; ///< one per plan launch, in plan order
  double compileMs = 0;                     ///< host time of compiling, verifying and timing
};
CompiledJob compileJobPlan(const isa::JobPlan &plan, const BackendOptions &opts = {},
                           const isa::HardwareConfig &hw = {});

/// The kernel can run while LX-resident tensors of the graph occupy LX [0, lxReservedBytes_)
/// and at least `stagingBytes` of LX remain above them: its lowering stages there and reads /
/// writes its own memOrg_ lx operands in place. True for the SFP elementwise and reduction
/// walks (layer norm's exx2 / layernormscale / layernormnorm included), dtype ops and matmuls
/// whose smallest blocks fit in `stagingBytes`; false for lowerings that stage from LX 0 (a
/// transpose or stick-changing restickify through the PE array, a lane-moving slice, an exx2
/// split over the ring).
bool supportsLxReservation(const isa::SuperDsc &s, int64_t stagingBytes);

/// Operand `ldsIdx` of s (placed in DDR) may instead be LX-resident: the core's slice held
/// densely in the tensor's own dim order at one LX address on every core. Besides
/// supportsLxReservation: no view, and for a matmul only x or the output, without a K split
/// (every core of a K chain reads a different K range of x and writes the same output tile),
/// the output's rows contiguous; for a dtype op only when a whole per-core row range fits the
/// staging of the other operand (the resident operand is walked without blocking).
bool supportsLxResidentOperand(const isa::SuperDsc &s, int ldsIdx, int64_t stagingBytes);

/// A fused SuperDSC with row reductions (docs/superdsc.md §6.10) that the backend lowers: its
/// ops are a valid row-fused chain that fits the 16 vector registers and one row of every
/// staged tensor fits LX. False (not an error) where it does not: the frontend then drafts the
/// members' own kernels.
bool supportsRowFused(const isa::SuperDsc &s);

/// Device bytes of one tensor of the SuperDSC (its full tiled extent, all cores).
int64_t sdscTensorBytes(const isa::SuperDsc &s, const isa::SdscTensor &t);

} // namespace spyre::backend
