// The kernel verifier: proves, before anything runs, that a kernel only touches memory it owns
// and keeps the DMA/barrier protocol. Exact, because trip counts are static: it dry-runs the
// scalar part of every core's program (see docs/isa.md, "Verifier").
#pragma once
#include "spyre/isa/program.h"
#include <cstdint>
#include <vector>

namespace spyre::isa {

/// Throws spyre::Error with one message for the first violated rule, naming the kernel, core,
/// listing line (Instr::line, 0 when generated), mnemonic and operand. `argBytes[i]` is the size
/// of the buffer bound to k.args[i]; `lxBytes` the LX bytes a kernel may use (default: the
/// usable 1,677,721 B, 2 MiB minus torch-spyre's 20 % reserve).
///
/// Rules: kernel has 1..32 cores, each covered by exactly one `.core` range; one size per
/// argument; registers, tokens, arguments and format suffixes valid; no write to r0; per-core
/// tables have an entry per core; loop counts >= 0; DMA shape entries >= 1; `bar` only at the
/// top level; every core reaches the same number of barriers; every LX access (ld/st, every
/// DMA row) inside [0, lxBytes) and 128-byte aligned; every DMA row inside its argument's
/// [0, argBytes[i]); no token reissued while outstanding; no wait on a token not issued in the
/// phase; every token waited before its phase ends; no 64-bit overflow in address arithmetic;
/// no access to LX an outstanding dma.in fills and no write to LX an outstanding dma.out reads.
void verifyKernel(const Kernel &k, const std::vector<uint64_t> &argBytes,
                  int64_t lxBytes = 1677721);

} // namespace spyre::isa
