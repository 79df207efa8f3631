// Shape-generic loop nests (the O2 tier): every top-level `loop` of a compiled phase becomes its
// own function, compiled in its own module and cached on its own, with the immediates that
// change with a tensor's shape erased: loop trip counts, the immediates of li/addi/muli, every
// LX/DDR address offset and the shapes and strides of dma.in/dma.mc/dma.out. The function reads
// them from a constant table its caller passes (the fourth argument). A new shape of a known
// kernel (relu of another tensor, softmax of another row length) then finds its nests in the
// code cache and compiles only its phase functions (DMA calls and the nest calls).
//
// Not erased (stay in the identity, so a change compiles a new nest): every other field, e.g.
// ld.pad/ldu/stu lane counts (constant masks), splat lanes, tbl tables, pt.mm/pt.out/pt.tr
// sizes (specialised micro-kernels), ring sizes, gather/scatter shapes, and whether each dma.out
// uses streaming stores (a property of the whole kernel). A nest holding an `li` whose value the
// phase group reads from a per-core table (phase_groups.h) stays inline, and so does a nest with
// pt.mm (it shares the phase's decoded-B cache and micro-kernels with the pt.mm around it; and the
// cache's invalidation reads LX write extents from DMA shapes, which are erased here).
#pragma once
#include "phase_groups.h"
#include "spyre/isa/program.h"
#include <llvm/ADT/DenseMap.h>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace spyre::jit {

/// One use of a generic nest: the nest as written, its identity (the erased nest and the
/// streaming flags of its dma.out instructions) and its erased values in the order of the table.
struct NestUse {
  const isa::Instr *nest = nullptr;
  std::string identity;
  std::vector<int64_t> params;
  int liCount = 0; ///< `li` instructions in the nest (the caller's li ordinals skip them)
  std::string symbol() const; ///< "spyre_gn_<hash of identity>"
};

/// The top-level loops of phase group `g` of `k` that become generic nests, by address.
std::unordered_map<const isa::Instr *, NestUse> genericNestsOf(const isa::Kernel &k, const PhaseGroup &g);
/// Every generic nest `k` uses (all groups), one per identity, in first-use order.
std::vector<NestUse> genericNestsOf(const isa::Kernel &k);

/// The nest with its erased fields zeroed, and for each erased field of the copy (by address)
/// its index in the parameter table: what the nest's function is compiled from. Compiling from
/// zeroed fields means a lowering that read an erased field directly would bake in 0 for every
/// shape (and the differential tests would see it), never the first shape's value.
struct ErasedNest {
  isa::Instr nest;
  llvm::DenseMap<const void *, unsigned> index; ///< addresses inside `nest`: never moved
};
std::unique_ptr<ErasedNest> eraseNest(const isa::Instr &nest);

/// Whether dma.out `in` of `k` uses streaming stores (lower_dma.cpp).
bool dmaOutStreams(const isa::Kernel &k, const isa::Instr &in);

} // namespace spyre::jit
