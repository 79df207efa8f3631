// The lowerings of the backend compiler, one per SuperDSC op class (isa/opfuncs.def;
// backend_<class>.cpp), and what each tells the capability queries. backend.cpp dispatches to
// them on the op class of the table.
#pragma once
#include "backend_common.h"
#include "spyre/isa/opfunc.h"

namespace spyre::backend::detail {

// backend_pointwise.cpp: elementwise ops on the SFP (layer norm's layernormscale /
// layernormnorm included); hands stick-changing restickifies to compileTranspose and
// lane-moving views to compileLaneShift.
Kernel compilePointwise(const SuperDsc &s, const BackendOptions &opts);

// backend_row_fused.cpp: a fused kernel with row reductions (the pointwise walk, row passes):
// the LX one row of its staged tensors needs.
int64_t rowFusedMinStagingBytes(const SuperDsc &s);

// backend_reduce.cpp: sum / mean / max / min (stick and nonstick forms) and exx2.
Kernel compileReduction(const SuperDsc &s, const BackendOptions &opts);
/// exx2 / sum / mean with the stick dim split over cores (partials summed on the ring).
bool isStickSplitReduction(const SuperDsc &s);

// backend_layernorm.cpp: the stick-split reductions.
Kernel compileStickSplitReduction(const SuperDsc &s, const BackendOptions &opts);
int64_t stickSplitStagingBytes(const SuperDsc &s);

// backend_matmul.cpp: matmul / batchmatmul on the PT array, with an epilogue when fused
// (docs/superdsc.md §6.11; backend_matmul_epilogue.cpp).
inline bool isFusedMatmul(const SuperDsc &s) {
  return s.isFused() && s.fusedOps[0].opFuncName == "batchmatmul";
}
Kernel compileMatmul(const SuperDsc &s, const BackendOptions &opts);
int64_t matmulMinStagingBytes(const SuperDsc &s);
bool matmulLxResidentOk(const SuperDsc &s, int ldsIdx);

// backend_convert.cpp: dl16tofp32 / fp32todl16.
Kernel compileConvert(const SuperDsc &s, const BackendOptions &opts);
/// LX the conversion needs to stage its operands when ldsIdx `residentIdx` is LX-resident
/// (-1: none).
int64_t convertMinStagingBytes(const SuperDsc &s, int residentIdx);

// backend_transpose.cpp: transpose / swap and stick-changing restickifies through the PE array.
Kernel compileTranspose(const SuperDsc &s, const BackendOptions &opts);

// backend_reshape.cpp: the lane-moving reshape (ldu / stu).
Kernel compileLaneReshape(const SuperDsc &s, const BackendOptions &opts);
int64_t laneReshapeMinStagingBytes(const SuperDsc &s);

// backend_data.cpp: a view whose stick dim starts inside a stick, copied through the PE array.
Kernel compileLaneShift(const SuperDsc &s, const BackendOptions &opts);

// backend_gather.cpp: embedding, rows of a table by int32 indices (dma.gather).
Kernel compileGather(const SuperDsc &s, const BackendOptions &opts);
Kernel compileIndexCopy(const SuperDsc &s, const BackendOptions &opts);
Kernel compileScan(const SuperDsc &s, const BackendOptions &opts);

} // namespace spyre::backend::detail
