// spyre-opt: runs frontend passes on graph-IR text and prints the graph after them (the stage
// tests in tests/lit drive it). Reads a file or stdin; `//` and `#` comment lines are blanked
// (kept as empty lines, so error positions are lines of the input file).
//
//   spyre-opt --pass=dead-code,decompose in.graph     graph passes (passes.h), in order
//   spyre-opt --pass=work-division in.graph           the graph after a pass inside compileGraph
//   spyre-opt --compile in.graph                      compileGraph: graph after every pass, the
//                                                     JobPlan and each launch's SuperDSC JSON
//   --split-input-file: cases separated by `// -----` lines, each run alone; an error is printed
//   for its case and the next case runs (exit 1 when any failed).
#include "spyre/frontend/compiler.h"
#include "spyre/frontend/graph.h"
#include "spyre/frontend/passes.h"
#include "spyre/isa/error.h"
#include "spyre/isa/file_io.h"
#include "spyre/tools/command_line.h"
#include <algorithm>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

namespace po = boost::program_options;
using namespace spyre;
using namespace spyre::frontend;

namespace {

struct OptOptions {
  std::vector<std::string> passes;
  bool compile = false;
  bool golden = false; ///< print each case as `// cores=N`, the graph before, `// after P:`, after
  int beam = kLayoutBeamWidth;
  CompileOptions compileOptions;
};

using GraphPass = std::function<void(Graph &, const OptOptions &)>;

/// The graph-to-graph passes of passes.h, by the names compileGraph's pass log uses.
const std::map<std::string, GraphPass> &graphPasses() {
  static const std::map<std::string, GraphPass> passes = {
      {"dead-code", [](Graph &g, const OptOptions &) { eliminateDeadCode(g); }},
      {"decompose", [](Graph &g, const OptOptions &) { decomposeOps(g); }},
      {"layout-propagation",
       [](Graph &g, const OptOptions &o) {
         propagateLayouts(g, o.beam, o.compileOptions.maxCores, o.compileOptions.matmulTransB);
       }},
      {"k-padding", [](Graph &g, const OptOptions &) { padMatmulK(g); }},
      {"constant-dedup", [](Graph &g, const OptOptions &) { dedupConstants(g); }},
      {"fusion", [](Graph &g, const OptOptions &) { fusePointwise(g); }},
      {"rotate-half", [](Graph &g, const OptOptions &) { fuseRotateHalf(g); }},
      {"split-heads", [](Graph &g, const OptOptions &) { fuseSplitHeads(g); }},
      {"repeat-heads", [](Graph &g, const OptOptions &) { fuseRepeatHeads(g); }},
      {"returned-copies", [](Graph &g, const OptOptions &) { dropReturnedCopies(g); }},
      {"row-fusion", [](Graph &g, const OptOptions &) { fuseRows(g); }},
      {"matmul-fusion", [](Graph &g, const OptOptions &) { fuseMatmulEpilogues(g); }},
  };
  return passes;
}

/// Passes that run inside compileGraph only; their input is the pipeline's graph before them.
const std::vector<std::string> kPipelinePasses = {"work-division", "lx-planning", "memory-planning", "bundling"};

bool isPipelinePass(const std::string &p) {
  return std::find(kPipelinePasses.begin(), kPipelinePasses.end(), p) != kPipelinePasses.end();
}

std::string allPassNames() {
  std::string s;
  for (const auto &[name, pass] : graphPasses())
    s += " " + name;
  for (const auto &p : kPipelinePasses)
    s += " " + p;
  return s;
}

/// `text` with every line that starts (after blanks) with `//` or `#` emptied.
std::string blankComments(const std::string &text) {
  std::string out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t f = line.find_first_not_of(" \t");
    bool comment = f != std::string::npos && (line.compare(f, 2, "//") == 0 || line[f] == '#');
    out += (comment ? std::string() : line) + "\n";
  }
  return out;
}

/// The graph before and after the pipeline pass `pass` of compileGraph.
std::pair<std::string, std::string> pipelineStep(const std::string &pass, const Graph &g, const OptOptions &o) {
  std::vector<PassSnapshot> log;
  CompileOptions co = o.compileOptions;
  co.passLog = &log;
  compileGraph(g, co);
  for (size_t i = 1; i < log.size(); ++i)
    if (log[i].pass == pass)
      return {log[i - 1].graph, log[i].graph};
  throw Error("pass " + pass + " is not in compileGraph's pass log (is it enabled?)");
}

std::string compileReport(const Graph &g, const OptOptions &o) {
  std::vector<PassSnapshot> log;
  CompileOptions co = o.compileOptions;
  co.passLog = &log;
  isa::JobPlan plan = compileGraph(g, co);
  std::string r;
  for (const PassSnapshot &p : log)
    r += "# graph after " + p.pass + "\n" + p.graph + "\n";
  r += "# JobPlan\n" + plan.summary();
  for (const auto &l : plan.launches)
    r += "\n# " + l.sdscFile + " (bundle " + std::to_string(l.bundle) + ")\n" + l.sdscJson + "\n";
  return r;
}

/// One case: parse, run, and the text to print. Throws on any error.
std::string runCase(const std::string &text, const std::string &source, const OptOptions &o) {
  Graph g = parseGraph(blankComments(text), source);
  if (o.compile)
    return compileReport(g, o);
  std::string before = printGraph(g), after;
  std::string label;
  if (o.passes.size() == 1 && isPipelinePass(o.passes[0])) {
    label = o.passes[0];
    std::tie(before, after) = pipelineStep(label, g, o);
  } else {
    for (const auto &p : o.passes) {
      auto it = graphPasses().find(p);
      if (it == graphPasses().end())
        throw Error(isPipelinePass(p) ? "pass " + p + " runs inside compileGraph and must be the only --pass"
                                      : "unknown pass '" + p + "'; known:" + allPassNames());
      it->second(g, o);
      g.verify();
      label += (label.empty() ? "" : ",") + p;
    }
    after = printGraph(g);
  }
  // The printed text parses back to the same text (notes included).
  if (printGraph(parseGraph(after, "<" + label + " output>")) != after)
    throw Error("the graph after " + label + " does not print back to the same text");
  if (!o.golden)
    return after;
  return "\n// -----\n// cores=" + std::to_string(o.compileOptions.maxCores) + "\n" + before + "// after " + label +
         ":\n" + after;
}

/// Runs every case of `text` (one, or `// -----`-separated ones); false when any failed.
bool runAll(const std::string &text, const std::string &source, bool split, const OptOptions &o) {
  std::vector<std::string> cases{""};
  if (split) {
    // A case keeps the lines before it as empty lines, so positions are lines of the file.
    std::istringstream in(text);
    std::string line;
    int lines = 0;
    while (std::getline(in, line)) {
      ++lines;
      if (line.rfind("// -----", 0) == 0)
        cases.push_back(std::string(static_cast<size_t>(lines), '\n'));
      else
        cases.back() += line + "\n";
    }
  } else {
    cases[0] = text;
  }
  bool ok = true;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (split && blankComments(cases[i]).find_first_not_of(" \t\n") == std::string::npos)
      continue;
    try {
      std::cout << runCase(cases[i], source, o) << std::flush;
    } catch (const std::exception &e) {
      std::cout << std::flush;
      std::cerr << "error: " << e.what() << "\n";
      ok = false;
    }
    if (split && !o.golden)
      std::cout << "// -----\n";
  }
  return ok;
}

bool onOff(const po::variables_map &vm, const char *name) {
  std::string v = vm[name].as<std::string>();
  if (v != "on" && v != "off")
    throw Error(std::string("bad --") + name + " '" + v + "' (on, off)");
  return v == "on";
}

} // namespace

int main(int argc, char **argv) {
  po::options_description opts("spyre-opt [options] [input.graph | -]\n\n"
                               "Runs frontend passes on a graph-IR text (stdin without an input) and prints the\n"
                               "graph after them. Options");
  opts.add_options()("help,h", "show this help")(
      "pass", po::value<std::string>()->default_value(""),
      "comma-separated passes, run in order: dead-code decompose rotate-half split-heads repeat-heads returned-copies layout-propagation k-padding constant-dedup row-fusion matmul-fusion fusion; or one "
      "of work-division lx-planning memory-planning bundling (the graph after it inside compileGraph)")(
      "compile", "run compileGraph: the graph after every pass, the JobPlan and the SuperDSC of each launch")(
      "split-input-file", "cases separated by '// -----' lines, each run alone")(
      "golden", "print each case as tests/golden/passes/ does: '// cores=N', the graph before, '// after P:', after")(
      "cores", po::value<int>()->default_value(32), "simulated cores (CompileOptions::maxCores)")(
      "lx-planning", po::value<std::string>()->default_value("on"), "LX planning: on or off")(
      "pad-matmul-k", po::value<std::string>()->default_value("off"), "matmul K padding inside compileGraph: on or off")(
      "matmul-transb", po::value<std::string>()->default_value("on"), "matmuls read B sticked on K: on or off")(
      "split-reductions", po::value<std::string>()->default_value("off"), "split stick-dim reductions: on or off")(
      "fusion", po::value<std::string>()->default_value("on"), "pointwise fusion inside compileGraph: on or off")(
      "layout-beam", po::value<int>()->default_value(kLayoutBeamWidth), "layout search beam width (1 = greedy)")(
      "input", po::value<std::string>()->default_value("-"), "input file, - for stdin");
  po::positional_options_description pos;
  pos.add("input", 1);
  po::variables_map vm;
  if (auto exit = tools::parseCommandLine("spyre-opt", argc, argv, opts, vm, &pos))
    return *exit;
  try {
    OptOptions o;
    std::stringstream passes(vm["pass"].as<std::string>());
    for (std::string p; std::getline(passes, p, ',');)
      if (!p.empty())
        o.passes.push_back(p);
    o.compile = vm.count("compile") > 0;
    o.golden = vm.count("golden") > 0;
    if (o.compile == !o.passes.empty())
      throw Error("give either --pass or --compile");
    o.beam = vm["layout-beam"].as<int>();
    o.compileOptions.maxCores = vm["cores"].as<int>();
    o.compileOptions.lxPlanning = onOff(vm, "lx-planning");
    o.compileOptions.padMatmulK = onOff(vm, "pad-matmul-k");
    o.compileOptions.matmulTransB = onOff(vm, "matmul-transb");
    o.compileOptions.splitReductions = onOff(vm, "split-reductions");
    o.compileOptions.fusion = onOff(vm, "fusion");
    std::string input = vm["input"].as<std::string>();
    // The bounded reader: a regular file (or stdin) of at most 256 MiB.
    std::string text;
    if (input == "-") {
      text = isa::readStdin();
      input = "<stdin>";
    } else {
      text = isa::readInputFile(input);
    }
    return runAll(text, input, vm.count("split-input-file") > 0, o) ? 0 : 1;
  } catch (const std::exception &e) {
    std::cerr << "spyre-opt: " << e.what() << "\n";
    return 1;
  }
}
