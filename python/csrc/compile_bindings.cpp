// torch_spyre._C compile/run path: graph text -> frontend -> JobPlan -> backend -> JIT (or
// interpreter) -> runs on the simulated card against spyre tensors.
#include "compile_bindings.h"
#include "spyre/frontend/compiler.h"
#include "spyre/frontend/graph.h"
#include "spyre/frontend/ops.h"
#include "spyre/backend/backend.h"
#include "spyre/isa/hardware_config.h"
#include "spyre/isa/listing.h"
#include "spyre/jit/jit_engine.h"
#include "spyre/sim/executable.h"
#include "spyre/sim/trace.h"

#include <c10/core/DeviceGuard.h>
#include "spyre_device.h"
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace spyre::py {
namespace {

namespace pyb = pybind11;

/// The process environment, read here at the boundary: every option struct comes from it (an Env
/// looks a variable up when asked, so a variable set after start-up is seen).
const Env &processEnv() {
  static const Env env(&std::getenv);
  return env;
}

/// The simulated card's cores and the default engines, created on first use.
struct Card {
  sim::Runtime runtime;
  std::unique_ptr<sim::Engine> interp = sim::makeInterpreter();
  std::unique_ptr<jit::JitEngine> jit;
  std::mutex mu; // one kernel sequence at a time on the card
  Card() : runtime(sim::RuntimeOptions::fromEnv(processEnv())) {
    sim::trace::configure(sim::trace::TraceOptions::fromEnv(processEnv()));
  }
  jit::JitEngine &jitEngine() {
    if (!jit)
      jit = std::make_unique<jit::JitEngine>(jit::JitOptions::fromEnv(processEnv()));
    return *jit;
  }
  static Card &get() {
    static Card card;
    return card;
  }
};

at::ScalarType torchType(HostType t) {
  switch (t) {
  case HostType::F16: return at::kHalf;
  case HostType::BF16: return at::kBFloat16;
  case HostType::F32: return at::kFloat;
  case HostType::I32: return at::kInt;
  case HostType::I64: return at::kLong;
  case HostType::Bool: return at::kBool;
  case HostType::I8: return at::kChar;
  case HostType::I16: return at::kShort;
  case HostType::U8: return at::kByte;
  case HostType::F8E4M3: return at::kFloat8_e4m3fn;
  }
  return at::kHalf;
}

class CompiledGraph {
public:
  CompiledGraph(const std::string &graphText, const std::string &engineName, const std::string &dumpDir, int cores)
      : dumpDir_(dumpDir) {
    auto t0 = std::chrono::steady_clock::now();
    frontend::Graph g = frontend::parseGraph(graphText, "<fx graph>");
    frontend::CompileOptions opts = frontend::CompileOptions::fromEnv(processEnv());
    if (cores > 0)
      opts.maxCores = cores;
    opts.dumpDir = dumpDir;
    opts.passLog = &passes_;
    isa::JobPlan plan = frontend::compileGraph(g, opts);
    auto t1 = std::chrono::steady_clock::now();
    frontendMs_ = std::chrono::duration<double, std::milli>(t1 - t0).count();
    Card &card = Card::get();
    sim::Engine *engine;
    if (engineName == "interp") {
      engine = card.interp.get();
    } else if (engineName == "jit") {
      if (!dumpDir.empty()) {
        jit::JitOptions jo = jit::JitOptions::fromEnv(processEnv());
        jo.dumpDir = dumpDir;
        ownJit_ = std::make_unique<jit::JitEngine>(std::move(jo));
        engine = ownJit_.get();
      } else {
        engine = &card.jitEngine();
      }
    } else {
      throw Error("unknown engine '" + engineName + "' (expected 'jit' or 'interp')");
    }
    backend::CompiledJob job = backend::compileJobPlan(plan, backend::BackendOptions::fromEnv(processEnv()));
    backendMs_ = job.compileMs;
    exe_ = std::make_unique<sim::Executable>(std::move(plan), std::move(job.kernels), *engine, dumpDir);
  }

  std::vector<at::Tensor> run(const std::vector<at::Tensor> &inputs, const std::vector<double> &scalars) {
    const isa::JobPlan &plan = exe_->plan();
    if (inputs.size() != plan.inputs.size())
      throw Error("compiled graph expects " + std::to_string(plan.inputs.size()) + " inputs, got " +
                  std::to_string(inputs.size()));
    if (scalars.size() != static_cast<size_t>(plan.numScalars))
      throw Error("compiled graph expects " + std::to_string(plan.numScalars) + " runtime scalars ($0..), got " +
                  std::to_string(scalars.size()));
    std::vector<at::Tensor> keep(plan.buffers.size());
    std::vector<uint64_t> addr(plan.buffers.size(), 0);
    // The graph runs on the card that holds its inputs; outputs and intermediates go there too.
    const int device = runDevice(inputs);
    c10::DeviceGuard onDevice(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)));
    auto &mem = deviceMemory(device);
    // Intermediates live in raw DDR blocks for the duration of the run.
    struct Block {
      Block(sim::DeviceMemory &m, uint64_t bytes) : mem(m), addr(m.allocate(bytes)) {}
      Block(const Block &) = delete;
      ~Block() { mem.free(addr); }
      sim::DeviceMemory &mem;
      uint64_t addr;
    };
    std::vector<std::unique_ptr<Block>> blocks;
    for (size_t i = 0; i < plan.inputs.size(); ++i) {
      const auto &b = plan.buffers[plan.inputs[i]];
      at::Tensor t = inputs[i];
      std::string where = "input " + std::to_string(i) + " (%" + b.name + ")";
      if (t.device().type() != c10::DeviceType::PrivateUse1)
        throw Error(where + " is on " + t.device().str() + ", expected a spyre tensor");
      if (t.sizes().vec() != b.hostShape)
        throw Error(where + " has shape " + c10::str(t.sizes()) + ", the graph was compiled for " +
                    c10::str(at::IntArrayRef(b.hostShape)));
      if (t.scalar_type() != torchType(b.hostType))
        throw Error(where + " has dtype " + std::string(c10::toString(t.scalar_type())) + ", expected " +
                    c10::toString(torchType(b.hostType)));
      if (!coversStorage(t) || !(tensorLayout(t) == b.layout)) {
        // A view or a tensor in another layout: restage into the layout the kernel expects.
        at::Tensor staged = emptyWithLayout(b.hostShape, contiguousStrides(b.hostShape), t.scalar_type(), b.layout);
        copyFromCpu(staged, toCpu(t));
        t = staged;
      }
      keep[plan.inputs[i]] = t;
      addr[plan.inputs[i]] = deviceAddress(t);
    }
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      const auto &b = plan.buffers[i];
      if (b.kind == isa::BufferSpec::Kind::Output && !keep[i].defined()) {
        keep[i] = emptyWithLayout(b.hostShape, contiguousStrides(b.hostShape), torchType(b.hostType), b.layout);
        addr[i] = deviceAddress(keep[i]);
      } else if (b.kind == isa::BufferSpec::Kind::Intermediate) {
        blocks.push_back(std::make_unique<Block>(mem, b.layout.deviceBytes()));
        addr[i] = blocks.back()->addr;
      }
    }
    Card &card = Card::get();
    {
      std::lock_guard<std::mutex> g(card.mu);
      auto t0 = std::chrono::steady_clock::now();
      exe_->run(card.runtime, mem.base(), mem.capacity(), addr, scalars);
      lastRunMs_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    std::vector<at::Tensor> outs;
    for (size_t i = 0; i < plan.outputs.size(); ++i)
      outs.push_back(plan.outputAliasesInput[i] >= 0 ? inputs[plan.outputAliasesInput[i]] : keep[plan.outputs[i]]);
    return outs;
  }

  /// The card of the inputs (the current one for a graph without spyre inputs); inputs on two
  /// cards are an error, as torch's own "same device" check words it.
  static int runDevice(const std::vector<at::Tensor> &inputs) {
    std::optional<c10::Device> first;
    for (const at::Tensor &t : inputs) {
      if (t.device().type() != c10::DeviceType::PrivateUse1)
        continue; // reported with its input number below
      c10::Device d(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(deviceIndex(t)));
      if (!first)
        first = d;
      else if (d != *first)
        throw Error("Expected all tensors to be on the same device, but found at least two devices, " +
                    first->str() + " and " + d.str() + "!");
    }
    return first ? first->index() : currentDevice();
  }

  int numScalars() const { return exe_->plan().numScalars; }
  double frontendMs() const { return frontendMs_; }
  double backendMs() const { return backendMs_; }
  double jitMs() const { return exe_->prepareMs(); }
  double lastRunMs() const { return lastRunMs_; }
  double simulatedUs() const { return exe_->simulatedUs(); }
  std::vector<std::string> listings() const {
    std::vector<std::string> out;
    for (const auto &l : exe_->launches())
      out.push_back(isa::printKernel(l.kernel));
    return out;
  }
  std::vector<std::string> superDscs() const {
    std::vector<std::string> out;
    for (const auto &l : exe_->plan().launches)
      out.push_back(l.sdscJson);
    return out;
  }
  std::vector<std::string> timings() const {
    std::vector<std::string> out;
    for (const auto &l : exe_->launches())
      out.push_back(l.timing);
    return out;
  }
  std::string plan() const { return exe_->plan().summary(); }
  /// (pass, graph text after it) in pass order.
  std::vector<std::pair<std::string, std::string>> passes() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto &p : passes_)
      out.push_back({p.pass, p.graph});
    return out;
  }

private:
  std::string dumpDir_;
  std::vector<frontend::PassSnapshot> passes_;
  std::unique_ptr<jit::JitEngine> ownJit_;
  std::unique_ptr<sim::Executable> exe_;
  double frontendMs_ = 0, backendMs_ = 0, lastRunMs_ = 0;
};

} // namespace

void registerCompileBindings(pyb::module_ &m) {
  pyb::class_<CompiledGraph>(m, "CompiledGraph", "A graph compiled for the simulated Spyre card")
      .def(pyb::init([](const std::string &text, const std::string &engine, const std::string &dumpDir, int cores) {
             return withTorchErrors([&] { return std::make_unique<CompiledGraph>(text, engine, dumpDir, cores); });
           }),
           pyb::arg("graph"), pyb::arg("engine") = "jit", pyb::arg("dump_dir") = "", pyb::arg("cores") = 0)
      .def(
          "run",
          [](CompiledGraph &g, const std::vector<at::Tensor> &inputs, const std::vector<double> &scalars) {
            return withTorchErrors([&] { return g.run(inputs, scalars); });
          },
          pyb::arg("inputs"), pyb::arg("scalars") = std::vector<double>{},
          "Runs the graph on spyre tensors; `scalars[k]` is the value of its runtime scalar $k")
      .def_property_readonly("num_scalars", &CompiledGraph::numScalars)
      .def_property_readonly("frontend_ms", &CompiledGraph::frontendMs)
      .def_property_readonly("backend_ms", &CompiledGraph::backendMs)
      .def_property_readonly("jit_ms", &CompiledGraph::jitMs)
      .def_property_readonly("last_run_ms", &CompiledGraph::lastRunMs)
      .def_property_readonly("simulated_us", &CompiledGraph::simulatedUs)
      .def("listings", &CompiledGraph::listings)
      .def("superdscs", &CompiledGraph::superDscs)
      .def("timings", &CompiledGraph::timings)
      .def("plan", &CompiledGraph::plan)
      .def("passes", &CompiledGraph::passes, "(pass name, graph IR text after the pass) for each frontend pass");
  m.def(
      "run_totals",
      [] {
        const sim::RunTotals t = sim::runTotals();
        return std::make_pair(t.kernels, t.simulatedUs);
      },
      "(kernels launched, their summed simulated device us) by every compiled graph and eager "
      "kernel run so far in this process; benchmarks difference two reads");
  m.def(
      "run_host_ms", [] { return sim::runTotals().hostMs; },
      "Host wall ms spent inside kernel launches (sim::Runtime::launch: register reset, phases, "
      "barriers) by every compiled graph and eager kernel run so far in this process; the rest "
      "of a call's time is Python, argument binding and allocation. Benchmarks difference two reads");
  m.def(
      "jit_wait_tier_up",
      [] {
        jit::JitEngine *engine = Card::get().jit.get(); // created under the GIL
        if (engine) {
          pyb::gil_scoped_release nogil;
          engine->waitForTierUp();
        }
      },
      "SPYRE_JIT_OPT=tiered: blocks until every kernel compiled so far runs its O2 code (benchmarks "
      "time warm calls after it); otherwise returns at once");
  m.def(
      "check_graph",
      [](const std::string &text, int cores) -> std::string {
        // Frontend + backend + verifier without the JIT: "" when the graph compiles, else the
        // reason (what the partitioner needs to decide what runs on spyre).
        try {
          frontend::Graph g = frontend::parseGraph(text, "<fx graph>");
          frontend::CompileOptions opts = frontend::CompileOptions::fromEnv(processEnv());
          if (cores > 0)
            opts.maxCores = cores;
          isa::JobPlan plan = frontend::compileGraph(g, opts);
          const backend::BackendOptions backendOpts = backend::BackendOptions::fromEnv(processEnv());
          for (const auto &l : plan.launches)
            (void)backend::compileSuperDsc(l.sdsc, backendOpts);
          return "";
        } catch (const std::exception &e) {
          return e.what();
        }
      },
      pyb::arg("graph"), pyb::arg("cores") = 0,
      "Compile a graph through frontend and backend without running it; returns '' or the error");
  m.def(
      "plain_unary_ops",
      [] {
        // The rows of ops.def that _lowering registers generically: elementwise, one tensor
        // operand, no attribute but `scalar`. Python maps the ATen overload of the same name to it.
        std::vector<std::string> names;
#define OP(Id, name, minIn, maxIn, cls, opFunc, attrs)                                                   \
  if (frontend::OpClass::cls == frontend::OpClass::Pointwise && (minIn) == 1 && (maxIn) == 1 &&          \
      std::string_view(attrs) == "scalar")                                                             \
    names.emplace_back(name);
#include "spyre/frontend/ops.def"
#undef OP
        return names;
      },
      "Names of the graph-IR ops with one tensor operand and no attributes (from ops.def)");
  m.def(
      "hardware_config",
      [] {
        return withTorchErrors([] {
          const isa::HardwareConfig hw = isa::HardwareConfig::fromEnv(processEnv());
          pyb::dict d;
#define HW(type, name, value) d[#name] = hw.name;
#include "spyre/isa/hardware_config.def"
#undef HW
          return d;
        });
      },
      "The modelled card's HardwareConfig (hardware_config.def), SENCORES applied: member name -> value");
  m.def("sencores", [] { return withTorchErrors([] { return frontend::CompileOptions::fromEnv(processEnv()).maxCores; }); });
  m.def(
      "trace_collective",
      [](const std::string &kind, double simulatedUs, int64_t bytes, int64_t world) {
        Card::get(); // configures SPYRE_TRACE when no kernel has run yet
        sim::trace::recordCollective(kind, simulatedUs,
                                     "\"bytes\":" + std::to_string(bytes) + ",\"world\":" + std::to_string(world));
      },
      ::py::arg("kind"), ::py::arg("simulated_us"), ::py::arg("bytes"), ::py::arg("world"),
      "Records a collective's modelled link time in the SPYRE_TRACE timeline (a no-op without one)");
}

} // namespace spyre::py
