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

} // namespace spyre::isa
