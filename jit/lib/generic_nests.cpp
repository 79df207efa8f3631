#include "generic_nests.h"
#include "lowering.h"
#include <llvm/Support/xxhash.h>
#include <cstdio>

namespace spyre::jit {

using isa::Instr;
using isa::Opcode;

namespace {

bool isPlainDma(Opcode op) { return op == Opcode::DmaIn || op == Opcode::DmaMc || op == Opcode::DmaOut; }
bool hasImmErased(Opcode op) {
  return op == Opcode::Loop || op == Opcode::Li || op == Opcode::Addi || op == Opcode::Muli;
}

/// Visits the erased fields of `in` and its body in table order: f(field).
template <typename F> void forEachErased(Instr &in, F &&f) {
  if (hasImmErased(in.op))
    f(in.imm);
  f(in.lx.offset);
  f(in.lx2.offset);
  f(in.lx3.offset);
  f(in.ddr.offset);
  if (isPlainDma(in.op)) {
    for (int64_t &n : in.dma.n)
      f(n);
    for (int64_t &s : in.dma.ddrStride)
      f(s);
    for (int64_t &s : in.dma.lxStride)
      f(s);
  }
  for (Instr &b : in.body)
    forEachErased(b, f);
}

bool containsPtMm(const Instr &in) {
  if (in.op == Opcode::PtMm)
    return true;
  for (const Instr &b : in.body)
    if (containsPtMm(b))
      return true;
  return false;
}

int countLi(const Instr &in) {
  int n = in.op == Opcode::Li;
  for (const Instr &b : in.body)
    n += countLi(b);
  return n;
}

void appendStreaming(const isa::Kernel &k, const Instr &in, std::string &out) {
  if (in.op == Opcode::DmaOut)
    out.push_back(dmaOutStreams(k, in) ? 'S' : 'C');
  for (const Instr &b : in.body)
    appendStreaming(k, b, out);
}

NestUse makeUse(const isa::Kernel &k, const Instr &nest) {
  NestUse u;
  u.nest = &nest;
  Instr copy = nest;
  forEachErased(copy, [&](int64_t &field) {
    u.params.push_back(field);
    field = 0;
  });
  u.identity = "generic nest v1\n";
  isa::appendInstrIdentity(u.identity, copy);
  u.identity += "\nstreaming ";
  appendStreaming(k, nest, u.identity);
  u.liCount = countLi(nest);
  return u;
}

} // namespace

std::string NestUse::symbol() const {
  llvm::XXH128_hash_t h = llvm::xxh3_128bits(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(identity.data()), identity.size()));
  char buf[48];
  std::snprintf(buf, sizeof buf, "spyre_gn_%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

std::unordered_map<const Instr *, NestUse> genericNestsOf(const isa::Kernel &k, const PhaseGroup &g) {
  std::unordered_map<const Instr *, NestUse> out;
  const isa::CoreProgram &p = k.programs[g.programs[0]];
  auto range = isa::phaseRanges(p)[g.phase];
  size_t liOrdinal = 0; // the li of the phase in pre-order, as FunctionLowering counts them
  for (size_t i = range.first; i < range.second; ++i) {
    const Instr &in = p.body[i];
    size_t n = static_cast<size_t>(countLi(in));
    bool perCore = false;
    for (size_t j = liOrdinal; j < liOrdinal + n && j < g.liTables.size(); ++j)
      perCore = perCore || g.liTables[j].has_value();
    liOrdinal += n;
    // A nest with pt.mm stays in the phase function: the phase's decoded-B cache (lower_pt.cpp)
    // and its outlined micro-kernels are shared with the pt.mm around the nest, and a call
    // would decode B again on each side of it.
    if (in.op == Opcode::Loop && in.imm > 0 && !perCore && !containsPtMm(in))
      out.emplace(&in, makeUse(k, in));
  }
  return out;
}

std::vector<NestUse> genericNestsOf(const isa::Kernel &k) {
  std::vector<NestUse> out;
  std::unordered_map<std::string, bool> seen;
  for (const PhaseGroup &g : groupPhases(k)) {
    // In phase order, so the list (and a kernel's compile order) is deterministic.
    const isa::CoreProgram &p = k.programs[g.programs[0]];
    auto range = isa::phaseRanges(p)[g.phase];
    auto uses = genericNestsOf(k, g);
    for (size_t i = range.first; i < range.second; ++i) {
      auto it = uses.find(&p.body[i]);
      if (it != uses.end() && seen.emplace(it->second.identity, true).second)
        out.push_back(std::move(it->second));
    }
  }
  return out;
}

std::unique_ptr<ErasedNest> eraseNest(const Instr &nest) {
  auto e = std::make_unique<ErasedNest>();
  e->nest = nest;
  unsigned i = 0;
  forEachErased(e->nest, [&](int64_t &field) {
    e->index[&field] = i++;
    field = 0;
  });
  return e;
}

} // namespace spyre::jit
