// The command line of the drivers (spyre-isa-dump, spyre-opt, spyre-jit-bench): parsing with
// Boost.Program_options and the usage-error and --help exits they share. Header-only; target
// spyre_tool_cli.
#pragma once
#include <boost/program_options.hpp>
#include <iostream>
#include <optional>
#include <string_view>

namespace spyre::tools {

namespace po = boost::program_options;

/// Parses argv into `vm` (positional arguments as `pos` assigns them; none without it).
/// Returns the exit code when the tool is done: 2 after a usage error ("<tool>: <what>" and the
/// options on stderr), 0 after --help (the options on stdout); std::nullopt to go on.
inline std::optional<int> parseCommandLine(std::string_view tool, int argc, char **argv,
                                           const po::options_description &opts, po::variables_map &vm,
                                           const po::positional_options_description *pos = nullptr) {
  try {
    po::command_line_parser parser(argc, argv);
    parser.options(opts);
    if (pos)
      parser.positional(*pos);
    po::store(parser.run(), vm);
    po::notify(vm);
  } catch (const po::error &e) {
    std::cerr << tool << ": " << e.what() << "\n" << opts << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  return std::nullopt;
}

} // namespace spyre::tools
