#include "spyre/isa/program.h"
#include <algorithm>

namespace spyre::isa {

static const std::vector<OpInfo> kOps = {
#define INST(E, M, U, O, F, T, S) {Opcode::E, M, Unit::U, O, F, TimingClass::T, S},
#include "spyre/isa/instructions.def"
#undef INST
};

const OpInfo &opInfo(Opcode op) { return kOps[static_cast<size_t>(op)]; }
const std::vector<OpInfo> &allOps() { return kOps; }

std::string_view formatName(Format f) {
  switch (f) {
  case Format::None: return "";
  case Format::DL16: return "dl16";
  case Format::F32: return "f32";
  case Format::I32: return "i32";
  }
  return "?";
}

std::string_view unitName(Unit u) {
  switch (u) {
  case Unit::Scalar: return "scalar";
  case Unit::Dma: return "DMA";
  case Unit::Lsu: return "LSU";
  case Unit::Sfp: return "SFP";
  case Unit::Pt: return "PT";
  case Unit::Ring: return "RING";
  case Unit::Sync: return "SYNC";
  }
  return "?";
}

InstrBody::~InstrBody() {
  // Detach every nested body onto a worklist before destroying it, so that each Instr the
  // vectors destroy has an empty body: one level of destructor calls at any depth.
  std::vector<std::vector<Instr>> work;
  auto detach = [&work](std::vector<Instr> &body) {
    for (Instr &in : body)
      if (!in.body.empty())
        work.push_back(std::move(static_cast<std::vector<Instr> &>(in.body))); // leaves it empty
  };
  detach(*this);
  while (!work.empty()) {
    std::vector<Instr> body = std::move(work.back());
    work.pop_back();
    detach(body);
  }
}

const CoreProgram *Kernel::programFor(int core) const {
  for (const auto &p : programs)
    if (core >= p.firstCore && core <= p.lastCore)
      return &p;
  return nullptr;
}

std::vector<std::pair<size_t, size_t>> phaseRanges(const CoreProgram &p) {
  std::vector<std::pair<size_t, size_t>> r;
  size_t start = 0;
  for (size_t i = 0; i < p.body.size(); ++i) {
    if (p.body[i].op == Opcode::Bar) {
      r.push_back({start, i + 1});
      start = i + 1;
    }
  }
  if (start < p.body.size() || r.empty())
    r.push_back({start, p.body.size()});
  return r;
}

int Kernel::numPhases() const {
  // Per-core programs may end in a bar (a core with nothing left to do): the kernel has as many
  // phases as its longest program.
  size_t n = 0;
  for (const auto &p : programs)
    n = std::max(n, phaseRanges(p).size());
  return static_cast<int>(n);
}

} // namespace spyre::isa
