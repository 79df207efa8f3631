// spyre-jit-bench's command line (options.cpp).
#pragma once
#include "bench.h"
#include <boost/program_options.hpp>

namespace spyre::bench {

namespace po = boost::program_options;

/// --shape 4096x1024 -> {4096, 1024}; throws Error on a malformed shape.
std::vector<int64_t> parseShape(const std::string &s);
/// Every option of spyre-jit-bench, with its help text.
po::options_description commandLine();
/// The Options of a run from the parsed command line; throws Error on a bad value.
Options optionsFrom(const po::variables_map &vm);

} // namespace spyre::bench
