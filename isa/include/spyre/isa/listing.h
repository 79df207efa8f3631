// The listing: the debugging text form of a kernel. print(parse(text)) == text for printed text.
#pragma once
#include "spyre/isa/program.h"
#include <string>
#include <string_view>

namespace spyre::isa {

std::string printKernel(const Kernel &k);
std::string printInstr(const Instr &i, const Kernel &k, int indent = 4);
/// Throws spyre::Error "<source>:<line>:<col>: expected ..., got ..." on malformed input.
Kernel parseKernel(std::string_view text, std::string_view source = "<listing>");

/// Operand text as the listing prints it, the one operand printer (listing, verifier and
/// interpreter messages): lx[r2+0x100], lx[r2-0x80], ddr[a+r1], shape=(1,1,2) (with
/// ddr.stride / lx.stride when not dense).
std::string lxText(const LxAddr &a);
std::string ddrText(const DdrAddr &a, const Kernel &k);
std::string shapeText(const DmaShape &d);
/// 0x1f, -0x80 (every int64 value, INT64_MIN included).
std::string hexText(int64_t v);

} // namespace spyre::isa
