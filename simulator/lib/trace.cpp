#include "spyre/sim/trace.h"
#include "spyre/isa/hardware_config.h"
#include "spyre/isa/timing.h"
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

namespace spyre::sim::trace {

namespace {

constexpr const char *kTrailer = "\n]}\n";
constexpr long kTrailerLen = 4;
constexpr int kUnits = 6;
// Track order per core; indexed by isa::TimelineUnit.
const char *const kUnitNames[kUnits] = {"SEQ (waits)", "LSU", "SFP", "PT", "RING", "DMA"};
constexpr int kTrackOrder[kUnits] = {5, 1, 2, 3, 4, 0}; // DMA first, then compute, then waits
constexpr size_t kMaxSlicesPerUnit = 32;
constexpr int kPid = 1;

struct CachedReport {
  std::weak_ptr<const PreparedKernel> prepared;
  std::shared_ptr<const isa::TimingReport> report;
  /// scheduleTimeline of each core program of the kernel.
  std::vector<std::vector<isa::TimelineSlice>> timelines;
};

struct State {
  std::mutex mu;
  std::string path;
  std::FILE *file = nullptr; ///< open trace (after the first recorded launch)
  bool firstEvent = true;
  double clockUs = 0;
  std::string label;
  std::set<int> namedTracks;
  std::map<const void *, CachedReport> reports;

  void closeFile() {
    if (file)
      std::fclose(file);
    file = nullptr;
    firstEvent = true;
    clockUs = 0;
    namedTracks.clear();
  }
};

State &state() {
  static State *s = new State; // never destroyed: launches may be recorded during static teardown
  return *s;
}
std::atomic<int> g_paused{0};
std::atomic<int> g_enabled{0}; // a path is set

std::string jsonEscape(const std::string &s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\')
      o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20)
      o += ' ';
    else
      o += c;
  }
  return o;
}

std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6f", v);
  return b;
}

int trackId(int core, int unit) { return 1 + core * kUnits + kTrackOrder[unit]; }
// After every core's tracks (trackId of core 1023 is below it).
constexpr int kCollectiveTid = 1 << 20;

/// Opens the trace file on the first recorded event; false (tracing turned off, a message on
/// stderr) when it cannot be written.
bool openFile(State &s) {
  if (s.file)
    return true;
  s.file = std::fopen(s.path.c_str(), "w+");
  if (!s.file) {
    std::fprintf(stderr, "spyre: cannot write SPYRE_TRACE file '%s'; tracing off\n", s.path.c_str());
    s.path.clear();
    g_enabled.store(0);
    return false;
  }
  std::fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock\":\"simulated device time (us)\"},"
             "\"traceEvents\":[",
             s.file);
  std::fputs(kTrailer, s.file);
  return true;
}

/// The events of one record call, appended to the open file in one write (the file stays valid
/// JSON after every call: the closing "]}" is rewritten).
class Events {
public:
  explicit Events(State &s) : s_(s), first_(s.firstEvent) {
    if (s_.namedTracks.empty())
      (*this)("\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + std::to_string(kPid) +
              ",\"args\":{\"name\":\"Spyre card (simulated time)\"}");
  }
  void operator()(const std::string &body) {
    o_ << (first_ ? "\n" : ",\n") << "{" << body << "}";
    first_ = false;
  }
  void nameTrack(int tid, const std::string &name) {
    if (!s_.namedTracks.insert(tid).second)
      return;
    (*this)("\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + std::to_string(kPid) +
            ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":\"" + name + "\"}");
    (*this)("\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":" + std::to_string(kPid) +
            ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"sort_index\":" + std::to_string(tid) + "}");
  }
  void slice(const std::string &name, int tid, double ts, double dur, const std::string &args) {
    (*this)("\"name\":\"" + jsonEscape(name) + "\",\"cat\":\"sim\",\"ph\":\"X\",\"pid\":" +
            std::to_string(kPid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + num(ts) +
            ",\"dur\":" + num(dur) + (args.empty() ? "" : ",\"args\":{" + args + "}"));
  }
  void append() {
    std::string body = o_.str();
    std::fseek(s_.file, -kTrailerLen, SEEK_END);
    std::fwrite(body.data(), 1, body.size(), s_.file);
    std::fputs(kTrailer, s_.file);
    std::fflush(s_.file);
    s_.firstEvent = false;
  }

private:
  State &s_;
  bool first_;
  std::ostringstream o_;
};

} // namespace

TraceOptions TraceOptions::fromEnv(const spyre::Env &env) { return {env.string("SPYRE_TRACE")}; }

void configure(const TraceOptions &o) { setPath(o.path); }

bool enabled() {
  return g_enabled.load(std::memory_order_relaxed) == 1 && g_paused.load(std::memory_order_relaxed) == 0;
}

void setPath(const std::string &p) {
  State &s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  s.closeFile();
  s.path = p;
  g_enabled.store(p.empty() ? 0 : 1);
}

std::string path() {
  State &s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  return s.path;
}

Pause::Pause() { g_paused.fetch_add(1); }
Pause::~Pause() { g_paused.fetch_sub(1); }

void setLabel(const std::string &label) {
  State &s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  s.label = label;
}

double clockUs() {
  State &s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  return s.clockUs;
}

void recordLaunch(const isa::Kernel &kernel, const std::shared_ptr<const PreparedKernel> &prepared, double hostMs) {
  if (!enabled())
    return;
  State &s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  const isa::HardwareConfig hw; // the config the boundaries time kernels with (backend::compileJobPlan)
  // The timing report, cached per prepared kernel (the weak_ptr detects a reused address).
  auto &cached = s.reports[prepared.get()];
  if (!cached.report || cached.prepared.lock() != prepared) {
    cached.prepared = prepared;
    cached.report = std::make_shared<const isa::TimingReport>(isa::timeKernel(kernel, hw));
    cached.timelines.clear();
    for (const auto &p : kernel.programs)
      cached.timelines.push_back(isa::scheduleTimeline(kernel, p, hw, kMaxSlicesPerUnit));
  }
  const isa::TimingReport &rep = *cached.report;

  if (!openFile(s))
    return;
  Events e(s);
  e.nameTrack(0, "kernels");

  const double t0 = s.clockUs;
  const double cpu = hw.cyclesPerUs();
  std::ostringstream ka;
  ka << "\"label\":\"" << jsonEscape(s.label) << "\",\"simulated_us\":" << num(rep.scheduledUs)
     << ",\"overlapped_us\":" << num(rep.overlappedUs) << ",\"serial_us\":" << num(rep.serialUs) << ",\"host_ms\":" << num(hostMs) << ",\"cores\":" << kernel.numCores
     << ",\"active_cores\":" << rep.activeCores << ",\"phases\":" << rep.numPhases() << ",\"ddr_bytes\":" << rep.ddrBytes
     << ",\"lsu_sticks\":" << rep.lsuSticks << ",\"sfp_stick_ops\":" << rep.sfpStickOps << ",\"pt_macs\":" << rep.ptMacs
     << ",\"ring_bytes\":" << rep.ringBytes;
  e.slice(kernel.name, 0, t0, rep.scheduledUs, ka.str());
  e.slice("launch", 0, t0, rep.launchUs, "");
  // Barrier time is spread evenly after the phases (the report has only the total).
  const int phases = rep.numPhases();
  const double barrierPerPhase = phases ? rep.barrierUs / phases : 0;
  std::vector<double> phaseStart(phases + 1, t0 + rep.launchUs);
  for (int p = 0; p < phases; ++p) {
    double dur = rep.phaseScheduledCycles[p] / cpu;
    e.slice("phase " + std::to_string(p), 0, phaseStart[p], dur, "\"cycles\":" + num(rep.phaseScheduledCycles[p]));
    phaseStart[p + 1] = phaseStart[p] + dur + barrierPerPhase;
  }
  // Every core of a program shares its scheduled timeline (SPMD; timing depends only on the
  // program's structure): DMA transfers, compute runs, stalls on `wait`.
  for (size_t pi = 0; pi < kernel.programs.size() && pi < cached.timelines.size(); ++pi) {
    const auto &prog = kernel.programs[pi];
    for (int c = prog.firstCore; c <= prog.lastCore; ++c) {
      for (const isa::TimelineSlice &ts : cached.timelines[pi]) {
        if (ts.phase >= phases)
          continue;
        const int u = static_cast<int>(ts.unit);
        int tid = trackId(c, u);
        char name[48];
        std::snprintf(name, sizeof name, "core %02d %s", c, kUnitNames[u]);
        e.nameTrack(tid, name);
        e.slice(ts.what, tid, phaseStart[ts.phase] + ts.start / cpu, (ts.end - ts.start) / cpu,
              "\"kernel\":\"" + jsonEscape(kernel.name) + "\",\"phase\":" + std::to_string(ts.phase) +
                  ",\"cycles\":" + num(ts.end - ts.start) + ",\"count\":" + std::to_string(ts.count));
      }
    }
  }
  s.clockUs = t0 + rep.scheduledUs;
  e.append();
}

void recordCollective(const std::string &kind, double simulatedUs, const std::string &args) {
  if (!enabled())
    return;
  State &s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  if (!openFile(s))
    return;
  Events e(s);
  e.nameTrack(kCollectiveTid, "collectives (card-to-card link)");
  e.slice(kind, kCollectiveTid, s.clockUs, simulatedUs, args);
  s.clockUs += simulatedUs;
  e.append();
}

} // namespace spyre::sim::trace
