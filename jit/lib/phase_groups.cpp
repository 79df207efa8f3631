#include "phase_groups.h"
#include "lowering.h"
#include <algorithm>
#include <string>

namespace spyre::jit {

using isa::Instr;
using isa::Opcode;

namespace {

/// The identity of the instructions [begin, end) of `body` up to the immediates of `li`
/// (isa::appendInstrIdentity): what shapes the generated code of a phase group.
std::string phaseIdentity(const std::vector<Instr> &body, size_t begin, size_t end) {
  std::string s;
  for (size_t i = begin; i < end; ++i)
    isa::appendInstrIdentity(s, body[i], /*skipLiImm=*/true);
  return s;
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
    std::vector<std::string> identities; // of groups[first + i]'s first program
    for (size_t pi = 0; pi < k.programs.size(); ++pi) {
      if (ph >= ranges[pi].size() || phaseIsEmpty(k.programs[pi], ranges[pi][ph]))
        continue;
      auto [b, e] = ranges[pi][ph];
      std::string identity = phaseIdentity(k.programs[pi].body, b, e);
      bool joined = false;
      for (size_t g = first; g < groups.size() && !joined; ++g) {
        if (identities[g - first] == identity) {
          groups[g].programs.push_back(pi);
          joined = true;
        }
      }
      if (!joined) {
        groups.push_back(PhaseGroup{ph, {pi}, {}});
        identities.push_back(std::move(identity));
      }
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
