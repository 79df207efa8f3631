#include "spyre/frontend/compiler.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>

namespace spyre::frontend {

using isa::BufferSpec;
using isa::JobPlan;
using isa::SuperDsc;

int senCoresFromEnv() {
  const char *e = std::getenv("SENCORES");
  if (!e || !*e)
    return 32;
  char *end = nullptr;
  long v = std::strtol(e, &end, 10);
  if (*end != '\0' || v < 1 || v > 32)
    throw Unsupported(std::string("invalid SENCORES value ") + e);
  return static_cast<int>(v);
}

std::vector<int64_t> divideWork(const std::vector<int64_t> &sizes, const std::vector<bool> &outputDims, int maxCores) {
  std::vector<int64_t> splits(sizes.size(), 1);
  std::vector<size_t> order;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (outputDims[i])
      order.push_back(i);
  // Decreasing adjusted size; stable so equal sizes keep dim order.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  int64_t remaining = maxCores;
  for (size_t d : order) {
    int64_t best = 1;
    for (int64_t s = std::min<int64_t>(remaining, sizes[d]); s >= 1; --s)
      if (sizes[d] % s == 0) {
        best = s;
        break;
      }
    splits[d] = best;
    remaining /= best;
  }
  return splits;
}

namespace {

struct OpDesc {
  const char *opFunc;
  int arity;
};

const std::map<std::string, OpDesc> &supportedOps() {
  static const std::map<std::string, OpDesc> ops = {
      {"add", {"add", 2}}, {"sub", {"sub", 2}}, {"mul", {"mul", 2}},     {"relu", {"relufwd", 1}},
      {"neg", {"neg", 1}}, {"abs", {"abs", 1}}, {"clone", {"identity", 1}},
  };
  return ops;
}

DataFormat deviceFormat(HostType t, const std::string &where) {
  switch (t) {
  case HostType::F16:
  case HostType::BF16: return DataFormat::SEN169_FP16;
  case HostType::F32: return DataFormat::IEEE_FP32;
  default: throw Unsupported(std::string(dtypeShortName(t)) + " tensors in " + where);
  }
}

std::vector<std::string> dimLabels(size_t rank) {
  static const char *outer[] = {"mb", "x", "y"};
  if (rank > 4)
    throw Unsupported("pointwise ops on rank-" + std::to_string(rank) + " tensors (at most 4 dims)");
  std::vector<std::string> l;
  for (size_t i = 0; i + 1 < rank; ++i)
    l.push_back(outer[i]);
  l.push_back("out");
  return l;
}

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream f(path);
  if (!f)
    throw Error("cannot write " + path);
  f << text;
}

} // namespace

JobPlan compileGraph(const Graph &g, const CompileOptions &opts) {
  g.verify();
  if (opts.maxCores < 1 || opts.maxCores > 32)
    throw Unsupported("invalid SENCORES value " + std::to_string(opts.maxCores));
  if (!opts.dumpDir.empty()) {
    std::filesystem::create_directories(opts.dumpDir);
    writeFile(opts.dumpDir + "/graph.txt", printGraph(g));
  }
  JobPlan plan;
  std::map<int, int> bufferOf; // value id -> buffer
  auto bufferFor = [&](int v, BufferSpec::Kind kind, int index) {
    auto it = bufferOf.find(v);
    if (it != bufferOf.end())
      return it->second;
    const Value &val = g.values[v];
    BufferSpec b;
    b.name = val.name;
    b.kind = kind;
    b.index = index;
    b.hostShape = val.shape;
    b.hostType = val.dtype;
    b.layout = SpyreTensorLayout(val.shape, deviceFormat(val.dtype, "%" + val.name));
    plan.buffers.push_back(b);
    bufferOf[v] = static_cast<int>(plan.buffers.size()) - 1;
    return bufferOf[v];
  };
  for (size_t i = 0; i < g.inputs.size(); ++i)
    plan.inputs.push_back(bufferFor(g.inputs[i], BufferSpec::Kind::Input, static_cast<int>(i)));
  // Outputs that are produced by nodes get Output buffers (allocated per run for the caller).
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    int v = g.outputs[i];
    bool isInput = std::find(g.inputs.begin(), g.inputs.end(), v) != g.inputs.end();
    plan.outputAliasesInput.push_back(isInput ? static_cast<int>(std::find(g.inputs.begin(), g.inputs.end(), v) - g.inputs.begin()) : -1);
    plan.outputs.push_back(isInput ? bufferOf[v] : bufferFor(v, BufferSpec::Kind::Output, static_cast<int>(i)));
  }

  std::vector<std::string> files;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node &n = g.nodes[ni];
    const Value &out = g.values[n.output];
    std::string where = "node %" + out.name + " = " + n.op;
    auto it = supportedOps().find(n.op);
    if (it == supportedOps().end())
      throw Unsupported("op '" + n.op + "' (" + where + ")");
    const OpDesc &desc = it->second;
    if (static_cast<int>(n.inputs.size()) != desc.arity)
      throw Error(where + ": expected " + std::to_string(desc.arity) + " tensor operand(s), got " +
                  std::to_string(n.inputs.size()));
    for (const auto &[k, v] : n.attrs)
      if (!(k == "alpha" && v.scalar() == 1.0))
        throw Unsupported("attribute " + k + " on " + where);
    for (int i : n.inputs) {
      if (g.values[i].shape != out.shape)
        throw Unsupported("broadcasting between " + std::to_string(g.values[i].shape.size()) + "-d %" +
                          g.values[i].name + " and the output of " + where);
      if (deviceFormat(g.values[i].dtype, where) != deviceFormat(out.dtype, where) || g.values[i].dtype != out.dtype)
        throw Unsupported("mixed dtypes in " + where + " (" + std::string(dtypeShortName(g.values[i].dtype)) +
                          " and " + std::string(dtypeShortName(out.dtype)) + ")");
    }
    DataFormat fmt = deviceFormat(out.dtype, where);
    int64_t eps = elemsPerStick(fmt);

    // Iteration space: the output dims (rank 0 is one element).
    std::vector<int64_t> N = out.shape.empty() ? std::vector<int64_t>{1} : out.shape;
    for (int64_t d : N)
      if (d == 0)
        throw Unsupported("empty tensors in " + where);
    auto labels = dimLabels(N.size());
    size_t r = N.size();
    std::vector<int64_t> adjusted = N;
    adjusted[r - 1] = (N[r - 1] + eps - 1) / eps; // stick dim counted in sticks
    auto splits = divideWork(adjusted, std::vector<bool>(r, true), opts.maxCores);
    int cores = static_cast<int>(std::accumulate(splits.begin(), splits.end(), int64_t{1}, std::multiplies<>()));

    SuperDsc s;
    s.name = std::to_string(ni) + "_" + desc.opFunc;
    s.opFuncName = desc.opFunc;
    s.exUnit = "sfp";
    s.dims = labels;
    s.N = N;
    s.numWkSlicesPerDim = splits;
    s.numCoresUsed = cores;
    for (int c = 0; c < cores; ++c) {
      std::vector<int64_t> slice(r);
      int64_t div = 1;
      for (size_t d = 0; d < r; ++d) {
        slice[d] = (c / div) % splits[d];
        div *= splits[d];
      }
      s.coreIdToWkSlice.push_back(slice);
    }
    // Generic stick layout: device dims [o1..o(r-2), tile(o(r-1)), o0, elem]; layoutDimOrder_
    // lists the non-elem device dims inner -> outer.
    isa::SdscLayout layout;
    if (r == 1) {
      layout.layoutDimOrder = {labels[0]};
    } else {
      layout.layoutDimOrder.push_back(labels[0]);
      layout.layoutDimOrder.push_back(labels[r - 1]);
      for (size_t d = r - 1; d-- > 1;)
        layout.layoutDimOrder.push_back(labels[d]);
    }
    layout.stickDimOrder = {labels[r - 1]};
    layout.stickSize = {eps};
    s.primaryDsInfo["OUTPUT"] = layout;
    // Device dim sizes/strides (outer -> inner) to place each core's slice (notes §2.4).
    std::vector<std::pair<int, int64_t>> ddims; // iter dim, size
    for (auto li = layout.layoutDimOrder.rbegin(); li != layout.layoutDimOrder.rend(); ++li) {
      int d = static_cast<int>(std::find(labels.begin(), labels.end(), *li) - labels.begin());
      ddims.push_back({d, static_cast<size_t>(d) == r - 1 ? adjusted[d] : N[d]});
    }
    std::vector<int64_t> strideBytes(ddims.size());
    int64_t st = kStickBytes;
    for (size_t j = ddims.size(); j-- > 0;) {
      strideBytes[j] = st;
      st *= ddims[j].second;
    }
    std::vector<int> operands = n.inputs;
    operands.push_back(n.output);
    isa::KernelLaunch launch;
    for (size_t a = 0; a < operands.size(); ++a) {
      isa::SdscTensor t;
      t.ldsIdx = static_cast<int>(a);
      t.dsName = "Tensor" + std::to_string(a);
      t.dsType = "OUTPUT";
      t.scale.assign(r, 1);
      t.dataFormat = fmt;
      for (int c = 0; c < cores; ++c) {
        int64_t off = 0;
        for (size_t j = 0; j < ddims.size(); ++j)
          off += s.coreIdToWkSlice[c][ddims[j].first] * (ddims[j].second / splits[ddims[j].first]) * strideBytes[j];
        t.startAddress.push_back(a * isa::kSegmentBytes + off);
      }
      s.labeledDs.push_back(t);
      bool isGraphOut = std::find(g.outputs.begin(), g.outputs.end(), operands[a]) != g.outputs.end();
      int buf = bufferFor(operands[a], isGraphOut ? BufferSpec::Kind::Output : BufferSpec::Kind::Intermediate,
                          isGraphOut ? static_cast<int>(std::find(g.outputs.begin(), g.outputs.end(), operands[a]) - g.outputs.begin()) : 0);
      launch.argBuffers.push_back(buf);
    }
    for (size_t a = 0; a + 1 < operands.size(); ++a)
      s.inputs.push_back(static_cast<int>(a));
    s.outputs.push_back(static_cast<int>(operands.size() - 1));

    launch.sdscFile = "sdsc_" + std::to_string(ni) + ".json";
    launch.sdscJson = isa::writeSuperDsc(s).dump(2);
    // The backend reads what we wrote: parse the text, never hand the in-memory struct over.
    launch.sdsc = isa::parseSuperDscText(launch.sdscJson, launch.sdscFile);
    if (!opts.dumpDir.empty())
      writeFile(opts.dumpDir + "/" + launch.sdscFile, launch.sdscJson + "\n");
    files.push_back(launch.sdscFile);
    plan.launches.push_back(std::move(launch));
  }
  if (!opts.dumpDir.empty())
    writeFile(opts.dumpDir + "/bundle.mlir", isa::writeBundleMlir(files));
  return plan;
}

} // namespace spyre::frontend

namespace spyre::isa {
std::string JobPlan::summary() const {
  std::string s;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const auto &b = buffers[i];
    const char *kind = b.kind == BufferSpec::Kind::Input ? "input" : b.kind == BufferSpec::Kind::Output ? "output" : "intermediate";
    s += "buffer " + std::to_string(i) + " %" + b.name + " " + kind + " " + b.layout.str() + "\n";
  }
  for (const auto &l : launches) {
    s += "launch " + l.sdscFile + " (" + l.sdsc.opFuncName + ", " + std::to_string(l.sdsc.numCoresUsed) + " cores) args";
    for (int b : l.argBuffers)
      s += " " + std::to_string(b);
    s += "\n";
  }
  return s;
}
} // namespace spyre::isa
