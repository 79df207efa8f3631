// spyre-jit-bench's command line (options.cpp).
#pragma once
#include "bench.h"
#include <boost/program_options.hpp>

namespace spyre::bench {

namespace po = boost::program_options;

/// Largest --shape dimension (larger ones cannot fit the card whatever the others are).
constexpr int64_t kMaxShapeDim = int64_t{1} << 40;
/// --shape 4096x1024 -> {4096, 1024}; throws Error on a malformed shape (digits only, each in
/// 1..kMaxShapeDim), naming the option and the value.
std::vector<int64_t> parseShape(const std::string &s);
/// Throws Error `bad --shape '<text>': the op's tensor [..] needs more than 17179869184 bytes
/// (...)` when a tensor of the single-op graph `g` built from --shape exceeds one kernel
/// argument's 16 GiB segment.
void checkShapeFits(const frontend::Graph &g, const std::string &shapeText);
/// Every option of spyre-jit-bench, with its help text.
po::options_description commandLine();
/// The Options of a run from the parsed command line; throws Error on a bad value.
Options optionsFrom(const po::variables_map &vm);

} // namespace spyre::bench
