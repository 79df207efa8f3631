// spyre-isa-dump: print the per-core ISA listings and static timing of SuperDSC files, bundle
// directories or listings; or generate docs/isa.md from the instruction table.
#include "spyre/backend/backend.h"
#include "spyre/isa/file_io.h"
#include "spyre/isa/hardware_config.h"
#include "spyre/isa/isa_doc.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/superdsc.h"
#include "spyre/isa/timing.h"
#include "spyre/isa/verifier.h"
#include "spyre/tools/command_line.h"
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace spyre;

/// Every input goes through the bounded reader: regular files of at most 256 MiB, errors naming
/// the path as given (`x/sdsc_0.json: not a regular file (a FIFO)`).
static std::string readFile(const fs::path &p) { return isa::readInputFile(p.string()); }

static void dumpKernel(const isa::Kernel &k, const isa::HardwareConfig &hw, bool timing) {
  std::cout << isa::printKernel(k);
  if (timing)
    std::cout << "\n" << isa::timeKernel(k, hw).summary() << "\n";
}

/// A listing names no argument sizes, so its DDR accesses are checked against `argBytes` (one
/// size per .args name; empty: 1 TiB buffers); every other rule (LX bounds, tokens, barriers,
/// ring pairing...) is checked exactly.
static isa::Kernel readListing(const fs::path &p, const std::vector<uint64_t> &argBytes = {}) {
  isa::Kernel k = isa::parseKernel(readFile(p), p.string());
  if (!argBytes.empty() && argBytes.size() != k.args.size())
    throw Error(p.string() + ": --arg-bytes gives " + std::to_string(argBytes.size()) + " sizes for " +
                std::to_string(k.args.size()) + " arguments");
  isa::verifyKernel(k, argBytes.empty() ? std::vector<uint64_t>(k.args.size(), uint64_t{1} << 40) : argBytes);
  return k;
}

/// --arg-bytes 4096,4096
static std::vector<uint64_t> parseArgBytes(const std::string &s) {
  std::vector<uint64_t> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, ',');) {
    size_t used = 0;
    try {
      out.push_back(std::stoull(part, &used, 0));
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != part.size())
      throw Error("bad --arg-bytes '" + s + "' (expected sizes in bytes, e.g. 4096,4096)");
  }
  return out;
}

/// The listings named by `inputs` (files, or directories whose *.lst files are taken in name
/// order), shown in docs/isa.md by their path from `tests/` on.
static std::vector<isa::DocKernel> docKernels(const std::vector<std::string> &inputs) {
  std::vector<fs::path> files;
  for (const auto &in : inputs) {
    fs::path p(in);
    if (fs::is_directory(p)) {
      std::vector<fs::path> dir;
      for (const auto &e : fs::directory_iterator(p))
        if (e.path().extension() == ".lst")
          dir.push_back(e.path());
      std::sort(dir.begin(), dir.end());
      files.insert(files.end(), dir.begin(), dir.end());
    } else {
      files.push_back(p);
    }
  }
  std::vector<isa::DocKernel> out;
  for (const auto &f : files) {
    std::string shown = f.generic_string();
    size_t t = shown.rfind("tests/");
    out.push_back({t == std::string::npos ? f.filename().string() : shown.substr(t), readListing(f)});
  }
  return out;
}

/// `namedBy`: the sequencing file that named `p` (empty for a command-line input or a directory
/// listing), added to a read error so that a bad sdsc_filename points back to its bundle.
static void dumpSdsc(const fs::path &p, const std::string &namedBy, const backend::BackendOptions &opts,
                     const isa::HardwareConfig &hw, bool timing) {
  std::string text;
  try {
    text = readFile(p);
  } catch (const Error &e) {
    if (namedBy.empty())
      throw;
    throw Error(std::string(e.what()) + " (named in " + namedBy + ")");
  }
  isa::SuperDsc s = isa::parseSuperDscText(text, p.string());
  for (const auto &w : s.warnings)
    std::cerr << "spyre-isa-dump: warning: " << w << "\n";
  std::cout << "; ---- " << p.string() << "\n";
  dumpKernel(backend::compileSuperDsc(s, opts), hw, timing);
}

int main(int argc, char **argv) {
  po::options_description opts("spyre-isa-dump [options] <sdsc.json | bundle dir | bundle.mlir | listing.lst>...\n\n"
                               "Prints the per-core ISA listing the backend compiler produces for each\n"
                               "SuperDSC (a bundle directory is read in bundle.mlir, else bundle_0.mlir,\n"
                               "bundle_1.mlir, .. order) and its static\n"
                               "per-core/per-unit cycle summary. Options");
  opts.add_options()("help,h", "show this help")("no-timing", "print listings only")(
      "doc", "print docs/isa.md (generated from the instruction table) and exit; listing inputs (or\n"
                  "directories of *.lst) become its section on hand-written kernels and their timing")(
      "arg-bytes", po::value<std::string>(),
      "listing inputs: the byte size of each .args argument, comma separated (default 1 TiB each)")(
      "input", po::value<std::vector<std::string>>(), "inputs");
  po::positional_options_description pos;
  pos.add("input", -1);
  po::variables_map vm;
  if (auto exit = tools::parseCommandLine("spyre-isa-dump", argc, argv, opts, vm, &pos))
    return *exit;
  try {
    const Env env(&std::getenv);
    const isa::HardwareConfig hw = isa::HardwareConfig::fromEnv(env);
    const backend::BackendOptions backendOpts = backend::BackendOptions::fromEnv(env);
    if (vm.count("doc")) {
      std::cout << isa::generateIsaDoc(
          hw, docKernels(vm.count("input") ? vm["input"].as<std::vector<std::string>>() : std::vector<std::string>{}));
      return 0;
    }
    if (!vm.count("input")) {
      std::cerr << "spyre-isa-dump: no input given\n" << opts << "\n";
      return 2;
    }
    bool timing = !vm.count("no-timing");
    std::vector<uint64_t> argBytes = vm.count("arg-bytes") ? parseArgBytes(vm["arg-bytes"].as<std::string>())
                                                           : std::vector<uint64_t>{};
    for (const auto &in : vm["input"].as<std::vector<std::string>>()) {
      fs::path p(in);
      if (fs::is_directory(p)) {
        fs::path bundle = p / "bundle.mlir";
        std::vector<std::pair<std::string, std::string>> files; // (file, the bundle naming it)
        if (fs::exists(bundle)) {
          for (auto &name : isa::parseBundleMlir(readFile(bundle), bundle.string()))
            files.emplace_back(std::move(name), bundle.string());
        } else if (fs::exists(p / "bundle_0.mlir")) {
          // The frontend's dump of a graph split into several bundles: bundle_0, bundle_1, ..
          for (int b = 0; fs::exists(p / ("bundle_" + std::to_string(b) + ".mlir")); ++b) {
            fs::path f = p / ("bundle_" + std::to_string(b) + ".mlir");
            for (auto &name : isa::parseBundleMlir(readFile(f), f.string()))
              files.emplace_back(std::move(name), f.string());
          }
        } else {
          for (const auto &e : fs::directory_iterator(p))
            if (e.path().extension() == ".json" && e.path().filename().string().rfind("sdsc_", 0) == 0)
              files.emplace_back(e.path().filename().string(), "");
          std::sort(files.begin(), files.end());
          if (files.empty())
            throw Error(p.string() + ": no bundle.mlir and no sdsc_*.json files");
        }
        for (const auto &[f, namedBy] : files)
          dumpSdsc(p / f, namedBy, backendOpts, hw, timing);
      } else if (p.extension() == ".mlir") {
        // One bundle's sequencing file: its SuperDSC files sit next to it.
        for (const auto &f : isa::parseBundleMlir(readFile(p), p.string()))
          dumpSdsc(p.parent_path() / f, p.string(), backendOpts, hw, timing);
      } else if (p.extension() == ".lst") {
        dumpKernel(readListing(p, argBytes), hw, timing);
      } else {
        dumpSdsc(p, "", backendOpts, hw, timing);
      }
    }
  } catch (const std::exception &e) {
    std::cerr << "spyre-isa-dump: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
