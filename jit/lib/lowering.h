// ISA -> LLVM IR. One function per (core program, phase):
//   void @<name>(ptr %core /*CoreState*/, ptr %ddr, ptr %argbase /*i64[]*/)
#pragma once
#include "spyre/isa/program.h"
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <memory>
#include <string>

namespace spyre::jit {

std::string phaseSymbol(const isa::Kernel &k, size_t program, size_t phase);
std::string phaseSymbol(const std::string &kernelName, size_t program, size_t phase);
/// A phase with nothing but `bar`/`wait` (no-ops in the functional model) gets no function;
/// kernels with one program per core have many (e.g. 480 of 482 phases of a K-split matmul).
bool phaseIsEmpty(const isa::CoreProgram &p, std::pair<size_t, size_t> range);
/// A module holding the phase functions of `k` (verified).
std::unique_ptr<llvm::Module> lowerKernel(const isa::Kernel &k, llvm::LLVMContext &ctx);
/// The runtime helpers of the out-of-line lowering (same semantics as the interpreter).
extern "C" void spyre_jit_ld(uint32_t fmt, float *v, const uint8_t *p);
extern "C" void spyre_jit_st(uint32_t fmt, const float *v, uint8_t *p);
extern "C" void spyre_jit_ld_pad(uint32_t fmt, float *v, const uint8_t *p, int64_t n, float fill);
/// The DMA row copies of dma.in/dma.mc (mode kDmaToLx) and dma.out (kDmaOut: memcpy;
/// kDmaStreamOut: non-temporal stores for rows whose DDR start is 64-byte aligned, then a store
/// fence). Both tiers call it: inline copy loops cost 1-2 ms of O2 code generation per DMA
/// instruction and run no faster (the copies are memcpy either way).
constexpr int32_t kDmaOut = 0, kDmaToLx = 1, kDmaStreamOut = 2;
extern "C" void spyre_jit_dma(uint8_t *lx, uint8_t *ddr, int64_t n0, int64_t n1, int64_t run, int64_t lxS0,
                              int64_t lxS1, int64_t ddrS0, int64_t ddrS1, int32_t mode);
extern "C" void spyre_jit_pt_mm(uint8_t *C, const uint8_t *A, const uint8_t *B, int64_t M, int64_t N, int64_t K,
                                int32_t acc);
/// This host thread's fp32 mirror of LX (one float per DL16 lane, at float index = LX byte
/// offset / 2), where the O2 tier keeps the decoded B tiles of pt.mm (lower_pt.cpp).
extern "C" float *spyre_jit_decoded_lx();
/// 1 if this host thread's mirror holds the decode of lx[off, off + bytes) as it is now: the
/// last decode recorded there covered the range and the bytes it decoded equal these (whichever
/// core, phase or kernel decoded them). The cores of a multicast cohort stage the same B at the
/// same LX offsets, so each decode serves the cohort's later cores on this thread.
extern "C" int32_t spyre_jit_b_reuse(const uint8_t *lx, int64_t off, int64_t bytes);
/// Records that the mirror now holds the decode of lx[off, off + bytes): a copy of those bytes if
/// `keep` (another core may stage the same B), else only that the thread's record is void.
extern "C" void spyre_jit_b_decoded(const uint8_t *lx, int64_t off, int64_t bytes, int32_t keep);
extern "C" void spyre_jit_pt_out(uint8_t *D, const uint8_t *C, int64_t M, int64_t N);
extern "C" void spyre_jit_pt_tr(uint8_t *D, const uint8_t *S, int64_t R, int64_t C);
/// How a kernel is lowered (JitOptions holds the user's choices; the engine maps them here).
struct LowerOptions {
  /// The O0 tier: vector registers stay in CoreState; ld/st/ld.pad, SFP, DMA and PT
  /// instructions call the helpers above and spyre_sfp_apply.
  bool outOfLine = false;
  /// The O2 engine: top-level loop nests become calls of external generic-nest functions
  /// (generic_nests.h), compiled by lowerGenericNestInto into their own modules.
  bool genericNests = false;
  /// A pt.mm whose B a multicast cohort may share asks spyre_jit_b_reuse for the host thread's
  /// last decode before decoding (lower_pt.cpp); off, every invocation decodes its own B.
  bool shareDecodedB = true;
  /// A pt.mm of at most this many rows that is the only read of its B decodes B in registers
  /// (lower_pt.cpp); -1: one register block of the host's micro-kernel, 0: never.
  int64_t tinyMRows = -1;
};
/// Adds the phase functions of `k` to `m` (several kernels with distinct names may share one
/// module); call verifyLowered(m) when done.
void lowerKernelInto(const isa::Kernel &k, llvm::Module &m, const LowerOptions &opts = {});
struct NestUse;
/// Adds the function of generic nest `use` (of kernel `k`) to `m`.
void lowerGenericNestInto(const isa::Kernel &k, const NestUse &use, llvm::Module &m);
void verifyLowered(const llvm::Module &m);

} // namespace spyre::jit
