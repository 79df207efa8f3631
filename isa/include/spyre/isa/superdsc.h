// SuperDSC: torch-spyre's one-op-per-JSON kernel descriptor (SPYRE.md §4, notes §2). This is the
// in-memory model plus JSON read/write with torch-spyre's field names. Parse errors name the
// file and the JSON path ("sdsc_0.json: /0_add/dscs_/0/add/N_/mb_: expected an integer").
#pragma once
#include "spyre/isa/data_format.h"
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace spyre::isa {

using ojson = nlohmann::ordered_json;

/// Kernel argument i lives at segment base i * 16 GiB (torch-spyre SEGMENT_OFFSETS).
constexpr uint64_t kSegmentBytes = 1ull << 34;
constexpr int kMaxSegments = 7;
constexpr int kMaxLabeledDs = 8;
constexpr int kMaxSdscCores = 32;                      ///< numCoresUsed_
constexpr int kMaxSdscDims = 8;                        ///< N_ dimensions
constexpr int64_t kMaxSdscDimSize = int64_t{1} << 40;  ///< each N_, maxDimSizes_, offsets_, steps_

struct SdscLayout {
  std::vector<std::string> layoutDimOrder; ///< non-stick device dims, inner -> outer
  std::vector<std::string> stickDimOrder;  ///< the stick dim label
  std::vector<int64_t> stickSize;          ///< elements per stick
};

struct SdscTensor {
  int ldsIdx = 0;
  std::string dsName;             ///< "Tensor0"
  std::string dsType;             ///< layout class label: OUTPUT/INPUT/KERNEL/...
  std::vector<int> scale;         ///< per iteration dim: 1, -1 (absent/reduced), -2 (stick-reduced)
  DataFormat dataFormat = DataFormat::SEN169_FP16;
  bool inLx = false;              ///< memOrg_ lx only (LX-resident, same offset on every core)
  std::vector<uint64_t> startAddress; ///< per core (segment base + slice offset, or LX offset)
  /// A view of a larger allocation (slice / cat), per iteration dim in N_ order; empty = the
  /// tensor is exactly N_. maxDimSizes[d]: the allocation's extent in elements (-1 = N_[d]);
  /// offsets[d]: the view's first element. JSON: the allocate node's maxDimSizes_ and offsets_,
  /// both in layoutDimOrder_ order. Start addresses include the offsets (on the stick dim
  /// rounded down to a whole stick).
  std::vector<int64_t> maxDimSizes, offsets;
  /// Our extension (JSON `steps_` in the allocate node, layoutDimOrder_ order, written when
  /// some step is not 1): view element i of dim d is allocation element offsets[d] + i *
  /// steps[d] (a strided slice). Empty = all 1. Only on views; not on the stick dim.
  std::vector<int64_t> steps;
  bool isView() const { return !maxDimSizes.empty(); }
  int64_t stepOf(int d) const { return steps.empty() ? 1 : steps[static_cast<size_t>(d)]; }
};

/// One entry of a fused kernel's computeOp_ (our extension, docs/superdsc.md §6.9).
struct SdscComputeOp {
  std::string opFuncName;               ///< a pointwise opFunc of opfuncs.def
  /// Operands: a labeledDs_ ldsIdx, -1 for a constant (inputConsts[i], JSON "Constant-<name>"),
  /// or fusedResultRef(k) for the result of entry k < this one (JSON "Result-op<k>").
  std::vector<int> inputs;
  std::vector<std::string> inputConsts;
  std::vector<int> outputs;             ///< ldsIdx the result is stored to (empty: kept in a register)
};
/// The operand code of the result of fused entry k.
constexpr int fusedResultRef(int k) { return -2 - k; }
constexpr int fusedResultIndex(int ref) { return -2 - ref; }
/// The DSC key (opFuncName) of a fused kernel.
inline constexpr const char *kFusedOpFunc = "fused";

struct SuperDsc {
  std::string name;                        ///< top-level key, e.g. "0_add"
  std::string opFuncName;                  ///< computeOp_.opFuncName
  std::string exUnit = "sfp";              ///< pt | sfp
  std::vector<std::string> dims;           ///< iteration dim labels in order (N_ keys)
  std::vector<int64_t> N;                  ///< iteration sizes
  std::vector<int64_t> numWkSlicesPerDim;  ///< per dim
  int numCoresUsed = 1;
  std::vector<std::vector<int64_t>> coreIdToWkSlice; ///< [core][dim]
  std::map<std::string, SdscLayout> primaryDsInfo;
  std::vector<SdscTensor> labeledDs;
  /// ldsIdx of computeOp_ inputs / outputs. An input of -1 is a constant operand named by
  /// inputConsts[i] (written "Constant-<name>" in inputLabeledDs, value in constantInfo_).
  std::vector<int> inputs, outputs;
  std::vector<std::string> inputConsts;
  std::map<std::string, double> constants; ///< constantInfo_ (name -> value)
  /// Our extension (constantInfo_ entry field `argIdx_`): constants that are the launch's scalar
  /// argument k, known only at run time (name -> k); their `constants` value is 0 and unused.
  std::map<std::string, int> constantArgs;
  /// Our extension (JSON `lxReservedBytes_`, written when > 0): LX [0, n) holds LX-resident
  /// tensors of the graph that are live across this kernel; the kernel touches it only through
  /// its own memOrg_ lx operands and stages everything else above it.
  int64_t lxReservedBytes = 0;
  /// Our extension: a fused pointwise kernel (opFuncName "fused") computes these ops in order
  /// per element, intermediates in registers; `inputs` / `outputs` then list its external
  /// tensors (ldsIdx, first use order) and the constants of entry k are named "op<k>_<name>".
  std::vector<SdscComputeOp> fusedOps;
  bool isFused() const { return !fusedOps.empty(); }
  /// Parser notes that are not errors: fields of torch-spyre's schema objects that we do not
  /// know (`<file>: <pointer>: unknown field (ignored)`). Not written back.
  std::vector<std::string> warnings;

  int dimIndex(const std::string &label) const;
  const SdscTensor &tensor(int ldsIdx) const;
};

ojson writeSuperDsc(const SuperDsc &s);
SuperDsc parseSuperDsc(const ojson &j, const std::string &file);
SuperDsc parseSuperDscText(const std::string &text, const std::string &file);

/// The sequencing file of a bundle (torch-spyre's bundle.mlir form).
std::string writeBundleMlir(const std::vector<std::string> &sdscFiles);
std::vector<std::string> parseBundleMlir(const std::string &text, const std::string &file);

} // namespace spyre::isa
