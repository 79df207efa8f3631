#include "phase_groups.h"
#include "lowering.h"
#include <algorithm>
#include <cstring>

namespace spyre::jit {

using isa::Instr;
using isa::Opcode;

namespace {

bool sameFloat(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; } // NaN payloads too
bool sameLx(const isa::LxAddr &a, const isa::LxAddr &b) { return a.base == b.base && a.offset == b.offset; }

bool sameUpToLi(const Instr &a, const Instr &b);

bool sameUpToLi(const std::vector<Instr> &a, size_t aBegin, const std::vector<Instr> &b, size_t bBegin, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!sameUpToLi(a[aBegin + i], b[bBegin + i]))
      return false;
  return true;
}

/// Every field that shapes the generated code, except the immediate of `li` (and the source line).
bool sameUpToLi(const Instr &a, const Instr &b) {
  if (a.op != b.op || a.fmt != b.fmt || a.v != b.v || a.r != b.r || a.imms != b.imms || !sameFloat(a.fimm, b.fimm) ||
      !sameFloat(a.fimm2, b.fimm2) || !sameLx(a.lx, b.lx) || !sameLx(a.lx2, b.lx2) || !sameLx(a.lx3, b.lx3) ||
      a.ddr.arg != b.ddr.arg || a.ddr.base != b.ddr.base || a.ddr.offset != b.ddr.offset || a.dma.n != b.dma.n ||
      a.dma.ddrStride != b.dma.ddrStride || a.dma.lxStride != b.dma.lxStride || a.outToken != b.outToken ||
      a.tokens != b.tokens || a.table != b.table || a.body.size() != b.body.size())
    return false;
  if (a.op != Opcode::Li && a.imm != b.imm)
    return false;
  return sameUpToLi(a.body, 0, b.body, 0, a.body.size());
}

void collectLi(const std::vector<Instr> &body, size_t begin, size_t end, std::vector<int64_t> &out) {
  for (size_t i = begin; i < end; ++i) {
    if (body[i].op == Opcode::Li)
      out.push_back(body[i].imm);
    collectLi(body[i].body, 0, body[i].body.size(), out);
  }
}

} // namespace

std::vector<PhaseGroup> groupPhases(const isa::Kernel &k) {
  std::vector<std::vector<std::pair<size_t, size_t>>> ranges;
  size_t phases = 0;
  for (const auto &p : k.programs) {
    ranges.push_back(isa::phaseRanges(p));
    phases = std::max(phases, ranges.back().size());
  }
  std::vector<PhaseGroup> groups;
  for (size_t ph = 0; ph < phases; ++ph) {
    size_t first = groups.size();
    for (size_t pi = 0; pi < k.programs.size(); ++pi) {
      if (ph >= ranges[pi].size() || phaseIsEmpty(k.programs[pi], ranges[pi][ph]))
        continue;
      auto [b, e] = ranges[pi][ph];
      bool joined = false;
      for (size_t g = first; g < groups.size() && !joined; ++g) {
        size_t rep = groups[g].programs[0];
        auto [rb, re] = ranges[rep][ph];
        if (re - rb == e - b && sameUpToLi(k.programs[rep].body, rb, k.programs[pi].body, b, e - b)) {
          groups[g].programs.push_back(pi);
          joined = true;
        }
      }
      if (!joined)
        groups.push_back(PhaseGroup{ph, {pi}, {}});
    }
    for (size_t g = first; g < groups.size(); ++g) {
      PhaseGroup &grp = groups[g];
      std::vector<std::vector<int64_t>> lis; // [member][li ordinal]
      for (size_t pi : grp.programs) {
        lis.emplace_back();
        collectLi(k.programs[pi].body, ranges[pi][ph].first, ranges[pi][ph].second, lis.back());
      }
      for (size_t j = 0; j < lis[0].size(); ++j) {
        bool differs = false;
        for (const auto &m : lis)
          differs |= m[j] != lis[0][j];
        if (!differs) {
          grp.liTables.emplace_back();
          continue;
        }
        int cores = k.numCores;
        for (size_t pi : grp.programs)
          cores = std::max(cores, k.programs[pi].lastCore + 1);
        std::vector<int64_t> perCore(static_cast<size_t>(cores), 0);
        for (size_t mi = 0; mi < grp.programs.size(); ++mi) {
          const auto &p = k.programs[grp.programs[mi]];
          for (int c = p.firstCore; c <= p.lastCore; ++c)
            perCore[static_cast<size_t>(c)] = lis[mi][j];
        }
        grp.liTables.emplace_back(std::move(perCore));
      }
    }
  }
  return groups;
}

} // namespace spyre::jit
