// Backend compiler entry: dispatches a SuperDSC to the lowering of its op class (the row of its
// opFuncName in isa/opfuncs.def) and answers the capability queries the same way.
#include "spyre/backend/backend.h"
#include "lowerings.h"
#include "spyre/isa/timing.h"
#include "spyre/isa/verifier.h"
#include <chrono>
#include <iterator>

namespace spyre::backend {

using isa::OpClass;

int64_t sdscTensorBytes(const SuperDsc &s, const SdscTensor &t) {
  return detail::tensorGeom(s, t, s.primaryDsInfo.at(t.dsType).stickDimOrder[0], /*allowView=*/true).bytes;
}

namespace {

/// A pointwise kernel that goes through the PE array instead of the SFP walk: a restickify that
/// changes the stick dim (compileTranspose) or a view whose stick dim starts inside a stick
/// (compileLaneShift). Both stage from LX 0.
bool pointwiseLeavesSfpWalk(const SuperDsc &s) {
  if (s.opFuncName == "ReStickifyOpHBM" && !s.inputs.empty() && s.inputs[0] >= 0 && !s.outputs.empty() &&
      s.primaryDsInfo.at(s.tensor(s.inputs[0]).dsType).stickDimOrder !=
          s.primaryDsInfo.at(s.tensor(s.outputs[0]).dsType).stickDimOrder)
    return true;
  for (const SdscTensor &t : s.labeledDs) {
    if (!t.isView())
      continue;
    const SdscLayout &l = s.primaryDsInfo.at(t.dsType);
    const int sd = s.dimIndex(l.stickDimOrder.at(0));
    if (sd >= 0 && t.scale.at(sd) == 1 && t.offsets.at(sd) % l.stickSize.at(0) != 0)
      return true;
  }
  return false;
}

} // namespace

bool supportsLxReservation(const SuperDsc &s, int64_t stagingBytes) {
  if (detail::isFusedMatmul(s))
    return detail::matmulMinStagingBytes(s) <= stagingBytes;
  if (s.isFused()) // the pointwise walk (backend_fused.cpp, backend_row_fused.cpp)
    return !pointwiseLeavesSfpWalk(s) && detail::rowFusedMinStagingBytes(s) <= stagingBytes;
  const isa::OpFuncInfo *f = isa::findOpFunc(s.opFuncName);
  if (!f)
    return false;
  switch (f->cls) {
  case OpClass::Pointwise:
    return !pointwiseLeavesSfpWalk(s);
  case OpClass::Reduction:
    return !detail::isStickSplitReduction(s) || detail::stickSplitStagingBytes(s) <= stagingBytes;
  case OpClass::Matmul:
    return detail::matmulMinStagingBytes(s) <= stagingBytes;
  case OpClass::Convert:
    return detail::convertMinStagingBytes(s, /*residentIdx=*/-1) <= stagingBytes;
  case OpClass::LaneReshape:
    return detail::laneReshapeMinStagingBytes(s) <= stagingBytes;
  case OpClass::Transpose:
    return false; // pt.tr tiles padded to 64 rows, staged from LX 0
  case OpClass::Gather:
  case OpClass::Scan:
    return true; // stages above the reservation
  }
  return false;
}

bool supportsLxResidentOperand(const SuperDsc &s, int ldsIdx, int64_t stagingBytes) {
  if (!supportsLxReservation(s, stagingBytes))
    return false;
  const SdscTensor &t = s.tensor(ldsIdx);
  if (t.isView() || detail::isFusedMatmul(s)) // a fused matmul stages every operand
    return false;
  if (s.isFused())
    return true;
  switch (isa::findOpFunc(s.opFuncName)->cls) {
  case OpClass::Matmul:
    return detail::matmulLxResidentOk(s, ldsIdx);
  case OpClass::Convert:
    return detail::convertMinStagingBytes(s, ldsIdx) <= stagingBytes;
  case OpClass::LaneReshape:
  case OpClass::Gather:
  case OpClass::Scan:
    return false; // they stage their operands through DDR boxes
  case OpClass::Reduction:
    return !detail::isStickSplitReduction(s); // a stick split stages through DDR boxes
  case OpClass::Pointwise:
  case OpClass::Transpose:
    return true;
  }
  return true;
}

namespace {

/// The op's row of opfuncs.def; an opFunc the table does not list is Unsupported.
const isa::OpFuncInfo &opFuncOf(const SuperDsc &s) {
  // A fused kernel (our extension) is the pointwise walk over several ops: no row of its own.
  static const isa::OpFuncInfo kFused{isa::kFusedOpFunc, OpClass::Pointwise, 0, isa::ExUnit::Sfp, std::nullopt};
  if (detail::isFusedMatmul(s)) // docs/superdsc.md §6.11: the matmul lowering with an epilogue
    return *isa::findOpFunc("batchmatmul");
  if (s.isFused())
    return kFused;
  const isa::OpFuncInfo *f = isa::findOpFunc(s.opFuncName);
  if (!f)
    throw Unsupported("SuperDSC op '" + s.opFuncName + "' in " + s.name + " (not in isa/opfuncs.def)");
  return *f;
}

/// The lowerings whose double-buffered sweeps take a block count (BackendOptions::pipelineBlocks).
bool hasPipelinedSweeps(OpClass c) {
  return c == OpClass::Pointwise || c == OpClass::Reduction || c == OpClass::Matmul || c == OpClass::Convert;
}

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
  const OpClass cls = opFuncOf(s).cls;
  if (opts.pipelineBlocks == 0 && hasPipelinedSweeps(cls))
    return compileBestSchedule(s, opts);
  // The lowering of each op class, in OpClass order.
  using Lowering = Kernel (*)(const SuperDsc &, const BackendOptions &);
  static constexpr Lowering kLowerings[] = {detail::compilePointwise, detail::compileReduction,
                                            detail::compileMatmul,    detail::compileConvert,
                                            detail::compileTranspose, detail::compileLaneReshape,
                                            detail::compileGather,    detail::compileScan};
  static_assert(std::size(kLowerings) == static_cast<size_t>(OpClass::Scan) + 1);
  if (static_cast<size_t>(cls) >= std::size(kLowerings))
    throw Unsupported("SuperDSC op class " + std::string(isa::opClassName(cls)) + " of " + s.opFuncName);
  return kLowerings[static_cast<size_t>(cls)](s, opts);
}

} // namespace

namespace {

/// Sizes beyond the card are malformed input, not work: reject them before any lowering does
/// arithmetic (or loops) over them. What must fit is the tensors (every dim a tensor spans, the
/// allocation's extent for a view), together: the iteration space of a matmul or a gather is
/// far larger than its operands and is not memory.
void checkSizes(const SuperDsc &s) {
  constexpr unsigned __int128 kCap = HardwareConfig::kDdrCapacityBytes;
  unsigned __int128 total = 0;
  for (const SdscTensor &t : s.labeledDs) {
    unsigned __int128 bytes = 4;
    for (size_t d = 0; d < s.N.size() && d < t.scale.size(); ++d) {
      if (t.scale[d] != 1)
        continue;
      const int64_t n = t.isView() && t.maxDimSizes[d] != -1 ? t.maxDimSizes[d] : s.N[d];
      bytes *= static_cast<unsigned __int128>(std::max<int64_t>(n, 1));
      if (bytes > kCap)
        throw Error(detail::where(s) + ": " + t.dsName + " spans more than the card's 128 GiB of DDR (at dim " +
                    s.dims[d] + " = " + std::to_string(n) + ")");
    }
    total += bytes;
  }
  if (total > kCap)
    throw Error(detail::where(s) + ": its tensors together need more than the card's 128 GiB of DDR");
}

} // namespace

BackendOptions BackendOptions::fromEnv(const spyre::Env &env) {
  BackendOptions o;
  o.multicast = env.flag("SPYRE_MULTICAST", o.multicast);
  return o;
}

Kernel compileSuperDsc(const SuperDsc &s, const BackendOptions &opts) {
  checkSizes(s);
  // Only some lowerings stage above lxReservedBytes_ (and read/write memOrg_ lx operands).
  if (s.lxReservedBytes > 0 && !supportsLxReservation(s, opts.lxBytes - s.lxReservedBytes))
    throw Unsupported("lxReservedBytes_ (LX-resident tensors live across the kernel) in " + s.opFuncName +
                      " kernel " + s.name);
  // Runtime constants (launch scalar arguments) are read by the pointwise walk only.
  if (!s.constantArgs.empty() && opFuncOf(s).cls != OpClass::Pointwise)
    throw Unsupported("runtime scalar constants ('" + s.constantArgs.begin()->first + "') in " + s.opFuncName +
                      " kernel " + s.name);
  return compileOne(s, opts);
}

CompiledJob compileJobPlan(const isa::JobPlan &plan, const BackendOptions &opts, const isa::HardwareConfig &hw) {
  CompiledJob job;
  for (const auto &l : plan.launches) {
    auto t0 = std::chrono::steady_clock::now();
    isa::CompiledKernel ck;
    ck.kernel = compileSuperDsc(l.sdsc, opts);
    // Every generated kernel must pass the verifier before an engine sees it: the JIT trusts
    // its addresses.
    std::vector<uint64_t> argBytes;
    for (int b : l.argBuffers) // -1: an LX-resident operand, no DDR behind its segment
      argBytes.push_back(b < 0 ? 0 : static_cast<uint64_t>(plan.buffers[b].layout.deviceBytes()));
    isa::verifyKernel(ck.kernel, argBytes);
    isa::TimingReport rep = isa::timeKernel(ck.kernel, hw);
    ck.simulatedUs = rep.scheduledUs;
    ck.timing = rep.summary();
    job.compileMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    job.kernels.push_back(std::move(ck));
  }
  return job;
}

} // namespace spyre::backend
