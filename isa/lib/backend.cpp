// Backend compiler entry: dispatches a SuperDSC to the lowering of its op class.
#include "spyre/isa/backend.h"
#include "backend_common.h"
#include "spyre/isa/timing.h"
#include <cstdlib>

namespace spyre::isa {
namespace detail {
bool isPointwiseOp(const std::string &opFunc);
Kernel compilePointwise(const SuperDsc &s, const BackendOptions &opts);
bool isReductionOp(const std::string &opFunc);
Kernel compileReduction(const SuperDsc &s, const BackendOptions &opts);
bool isMatmulOp(const std::string &opFunc);
Kernel compileMatmul(const SuperDsc &s, const BackendOptions &opts);
bool isConvertOp(const std::string &opFunc);
Kernel compileConvert(const SuperDsc &s, const BackendOptions &opts);
bool isTransposeOp(const std::string &opFunc);
Kernel compileTranspose(const SuperDsc &s, const BackendOptions &opts);
bool isLaneReshapeOp(const std::string &opFunc);
Kernel compileLaneReshape(const SuperDsc &s, const BackendOptions &opts);
} // namespace detail

int64_t sdscTensorBytes(const SuperDsc &s, const SdscTensor &t) {
  return detail::tensorGeom(s, t, s.primaryDsInfo.at(t.dsType).stickDimOrder[0], /*allowView=*/true).bytes;
}

bool supportsLxResidentOperands(const std::string &op) {
  if (op == "ReStickifyOpHBM" || op == "layernormscale" || op == "layernormnorm" || op == "exx2")
    return false;
  return detail::isPointwiseOp(op) || detail::isReductionOp(op);
}

namespace {

Kernel compileOne(const SuperDsc &s, const BackendOptions &opts);

/// The block count of a double-buffered sweep trades DMA start-ups against overlap; the
/// timing model settles it per kernel. More blocks must win by kMargin: below that the model's
/// own error dominates, and every extra block costs instructions (and, on the host, another
/// pass over resident operands, e.g. B tiles decoded again by each pt.mm).
Kernel compileBestSchedule(const SuperDsc &s, const BackendOptions &opts) {
  const HardwareConfig hw;
  Kernel best;
  double bestUs = 0;
  for (int blocks : {1, 2, 4, 8}) {
    BackendOptions o = opts;
    o.pipelineBlocks = blocks;
    Kernel k = compileOne(s, o);
    double us = scheduledKernelUs(k, hw);
    constexpr double kMargin = 0.02;
    if (blocks == 1 || us < bestUs * (1 - kMargin)) {
      best = std::move(k);
      bestUs = us;
    }
  }
  return best;
}

Kernel compileOne(const SuperDsc &s, const BackendOptions &opts) {
  if (opts.pipelineBlocks == 0 && (detail::isPointwiseOp(s.opFuncName) || detail::isReductionOp(s.opFuncName) ||
                                   detail::isMatmulOp(s.opFuncName) || detail::isConvertOp(s.opFuncName)))
    return compileBestSchedule(s, opts);
  if (detail::isPointwiseOp(s.opFuncName))
    return detail::compilePointwise(s, opts);
  if (detail::isReductionOp(s.opFuncName))
    return detail::compileReduction(s, opts);
  if (detail::isMatmulOp(s.opFuncName))
    return detail::compileMatmul(s, opts);
  if (detail::isConvertOp(s.opFuncName))
    return detail::compileConvert(s, opts);
  if (detail::isTransposeOp(s.opFuncName))
    return detail::compileTranspose(s, opts);
  if (detail::isLaneReshapeOp(s.opFuncName))
    return detail::compileLaneReshape(s, opts);
  throw Unsupported("SuperDSC op '" + s.opFuncName + "' in " + s.name);
}

} // namespace

namespace {

/// Sizes beyond the card are malformed input, not work: reject them before any lowering does
/// arithmetic (or loops) over them.
void checkSizes(const SuperDsc &s) {
  unsigned __int128 elems = 1;
  for (size_t d = 0; d < s.N.size(); ++d) {
    elems *= static_cast<unsigned __int128>(std::max<int64_t>(s.N[d], 1));
    if (elems * 4 > HardwareConfig::kDdrCapacityBytes)
      throw Error(detail::where(s) + ": N_ describes more than the card's 128 GiB of DDR (at dim " + s.dims[d] + " = " +
                  std::to_string(s.N[d]) + ")");
  }
  for (const SdscTensor &t : s.labeledDs) {
    unsigned __int128 alloc = 1;
    for (size_t d = 0; d < t.maxDimSizes.size(); ++d) {
      alloc *= static_cast<unsigned __int128>(std::max<int64_t>(t.maxDimSizes[d] == -1 ? s.N[d] : t.maxDimSizes[d], 1));
      if (alloc * 4 > HardwareConfig::kDdrCapacityBytes)
        throw Error(detail::where(s) + ": maxDimSizes_ of " + t.dsName + " describe more than the card's 128 GiB of DDR");
    }
  }
}

} // namespace

bool multicastFromEnv() {
  const char *e = std::getenv("SPYRE_MULTICAST");
  return !(e && std::string(e) == "0");
}

Kernel compileSuperDsc(const SuperDsc &s, const BackendOptions &opts) {
  checkSizes(s);
  // Only the SFP lowerings stage above lxReservedBytes_ (and read/write memOrg_ lx operands).
  if (s.lxReservedBytes > 0 && !supportsLxResidentOperands(s.opFuncName))
    throw Unsupported("lxReservedBytes_ (LX-resident tensors live across the kernel) in " + s.opFuncName +
                      " kernel " + s.name);
  return compileOne(s, opts);
}

} // namespace spyre::isa
