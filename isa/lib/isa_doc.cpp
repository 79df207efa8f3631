#include "spyre/isa/isa_doc.h"
#include "spyre/isa/limits.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/timing.h"
#include <algorithm>
#include <cstdio>
#include <string_view>
#include <vector>

namespace spyre::isa {
namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// The hand-written kernel section 3 shows as its example.
constexpr std::string_view kExampleFile = "add_relu_mul.lst";

std::string timingCost(const OpInfo &op, const HardwareConfig &hw) {
  double c = hw.corelets;
  switch (op.timing) {
  case TimingClass::Scalar:
    return "scalar unit, " + num(hw.scalarCycles) +
           (op.op == Opcode::Loop ? " cycle per entry; iterations are free (hardware loop)" : " cycle");
  case TimingClass::Dma:
    return "DMA unit, " + num(hw.dmaStartupNs) + " ns start-up (" + num(hw.nsToCycles(hw.dmaStartupNs)) +
           " cycles) + bytes ÷ (" + num(hw.ddrBytesPerSecond / 1e9) + " GB/s ÷ active cores) = " +
           num(hw.ddrBytesPerCyclePerCore(hw.numCores)) + " B/cycle per core with " +
           std::to_string(hw.numCores) + " active cores" +
           (op.op == Opcode::DmaMc       ? "; each of the k cohort members is charged bytes ÷ k (one DDR read per cohort)"
            : isIndexedDma(op.op)        ? "; bytes = n boxes (one start-up for the whole index list)"
                                         : "");
  case TimingClass::Lsu:
    return "LSU, " + num(1.0 / (hw.lsuSticksPerCycle * c)) + " cycle per stick (" +
           num(hw.lsuSticksPerCycle) + " stick/cycle × " + num(c) + " corelets)";
  case TimingClass::Sfp:
    return "SFP, " + num(1.0 / (hw.sfpSticksPerCycle * c)) + " cycle per stick (" +
           num(hw.sfpSticksPerCycle) + " stick/cycle × " + num(c) + " corelets)";
  case TimingClass::SfpTrans:
    return "SFP transcendental, " + num(hw.transcendentalCyclesPerStick / (hw.sfpSticksPerCycle * c)) +
           " cycles per stick (" + num(hw.transcendentalCyclesPerStick) + " cycles/stick ÷ " + num(c) +
           " corelets)";
  case TimingClass::Pt:
    return "PT, M·N·K ÷ " + num(hw.ptMacsPerCycle) + " MAC/cycle per core";
  case TimingClass::PtOut:
    return "SFP, one stick-op per output stick (M·N/64), " + num(1.0 / (hw.sfpSticksPerCycle * c)) + " cycle each";
  case TimingClass::Ring:
    return "RING, bytes ÷ " + num(hw.ringBytesPerCyclePerHop) + " B/cycle per hop (neighbours: 1 hop)";
  case TimingClass::Sync:
    return "sync unit, " + num(hw.waitCycles) + " cycle to issue; the scheduled replay holds the sequencer until the tokens complete";
  case TimingClass::Barrier:
    return "kernel level, " + num(hw.barrierNs) + " ns per barrier (" + num(hw.nsToCycles(hw.barrierNs)) +
           " cycles)";
  }
  return "?";
}

std::string formatList(uint8_t mask) {
  std::vector<std::string> f;
  if (mask & FMT_DL16) f.push_back("dl16");
  if (mask & FMT_F32) f.push_back("f32");
  if (mask & FMT_I32) f.push_back("i32");
  std::string s;
  for (size_t i = 0; i < f.size(); ++i)
    s += (i ? "," : "") + f[i];
  return s;
}

} // namespace

std::string instructionSyntax(const OpInfo &info) {
  std::string s(info.mnemonic);
  if (info.formats != FMT_NONE)
    s += ".{" + formatList(info.formats) + "}";
  std::string_view ops = info.operands;
  // Register names follow the semantics column: the first operand is the destination (vd, rd);
  // a vector register after a non-register operand is a source (vs), as in st.
  const char *vsrc[] = {"va", "vb", "vc"};
  int vi = 0, ri = 0;
  bool first = true, vdest = !ops.empty() && ops[0] == 'V';
  for (size_t pos = 0; pos < ops.size(); pos += 2) {
    char kind = ops[pos];
    std::string t;
    switch (kind) {
    case 'V':
      t = vi == 0 && vdest ? "vd" : vdest ? vsrc[vi - 1] : (vi == 0 ? "vs" : vsrc[vi - 1]);
      ++vi;
      break;
    case 'R': t = ri++ == 0 ? "rd" : "rs"; break;
    case 'I': t = "imm"; break;
    case 'F': t = "imm"; break;
    case 'L': t = "lx[ra+off]"; break;
    case 'D': t = "ddr[arg+rb+off]"; break;
    case 'S': t = "shape=(n2,n1,n0)[, ddr.stride=(s2,s1)][, lx.stride=(s2,s1)]"; break;
    case 'C': t = "cohort=k"; break;
    case 'X': t = "[c0, c1, …]"; break;
    case 'T': t = "tK[, tK…]"; break;
    case 'O': s += " -> tK"; continue;
    case 'N': s += " N { … }"; return s;
    }
    s += first ? " " : ", ";
    first = false;
    s += t;
  }
  return s;
}

namespace {

/// Section 9: the hand-written kernels' static timing, and how each unit's cycles follow from
/// the work counters and HardwareConfig (per average core: work ÷ cores).
std::string handWrittenTiming(const HardwareConfig &hw, const std::vector<DocKernel> &examples) {
  std::string d =
      "## 9. Hand-written kernels and their timing\n\n"
      "The kernels below are written by hand in the listing syntax, checked in under\n"
      "`tests/kernels/`, verified, and run by `tests/cpp/simulator/handwritten_kernels_test.cpp` on\n"
      "both engines against C++ references. Their static timing with the default HardwareConfig\n"
      "(`spyre-isa-dump FILE` prints the per-phase table); cycles are Σ over phases of the per-phase\n"
      "max over cores, times in µs include the " + num(hw.kernelLaunchNs / 1e3) + " µs launch and the barriers:\n\n"
      "| kernel | cores | phases | DMA | LSU | SFP | PT | ring | scalar | sync | scheduled µs | overlapped µs | serial µs | bound by |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::string how;
  size_t dmaBound = 0;
  for (const auto &e : examples) {
    TimingReport r = timeKernel(e.kernel, hw);
    UnitCycles t = r.totals();
    std::pair<double, const char *> units[] = {{t.dma, "DMA"}, {t.lsu, "LSU"}, {t.sfp, "SFP"}, {t.pt, "PT"},
                                               {t.ring, "ring"}, {t.scalar, "scalar"}, {t.sync, "sync"}};
    const char *bound = std::max_element(std::begin(units), std::end(units))->second;
    dmaBound += std::string_view(bound) == "DMA";
    char row[512];
    std::snprintf(row, sizeof row,
                  "| [`%s`](../%s) | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.3f | %.3f | %.3f | %s |\n",
                  e.kernel.name.c_str(), e.file.c_str(), e.kernel.numCores, r.numPhases(), t.dma, t.lsu, t.sfp,
                  t.pt, t.ring, t.scalar, t.sync, r.scheduledUs, r.overlappedUs, r.serialUs, bound);
    d += row;

    const double n = e.kernel.numCores, c = hw.corelets;
    const int active = std::max(r.activeCores, 1);
    const double bw = hw.ddrBytesPerCyclePerCore(active);
    const double startup = hw.nsToCycles(hw.dmaStartupNs);
    auto per = [&](uint64_t v) { return static_cast<double>(v) / n; };
    std::vector<std::string> parts;
    if (r.dmaOps) {
      double bytes = static_cast<double>(r.ddrBytes) / active;
      parts.push_back("DMA " + num(per(r.dmaOps)) + " transfers × " + num(startup) + " + " + num(bytes) + " B ÷ " +
                      num(bw) + " B/cycle = " + num(per(r.dmaOps) * startup + bytes / bw));
    }
    if (r.lsuSticks)
      parts.push_back("LSU " + num(per(r.lsuSticks)) + " sticks ÷ " + num(hw.lsuSticksPerCycle * c) + " = " +
                      num(per(r.lsuSticks) / (hw.lsuSticksPerCycle * c)));
    if (r.sfpStickOps) {
      double plain = per(r.sfpStickOps - r.sfpTransStickOps), trans = per(r.sfpTransStickOps);
      parts.push_back("SFP (" + num(plain) + " + " + num(hw.transcendentalCyclesPerStick) + " × " + num(trans) +
                      " transcendental) stick-ops ÷ " + num(hw.sfpSticksPerCycle * c) + " = " +
                      num((plain + hw.transcendentalCyclesPerStick * trans) / (hw.sfpSticksPerCycle * c)));
    }
    if (r.ptMacs)
      parts.push_back("PT " + num(per(r.ptMacs)) + " MACs ÷ " + num(hw.ptMacsPerCycle) + " = " +
                      num(per(r.ptMacs) / hw.ptMacsPerCycle));
    if (r.ringBytes)
      parts.push_back("ring " + num(per(r.ringBytes)) + " B ÷ " + num(hw.ringBytesPerCyclePerHop) +
                      " B/cycle = " + num(per(r.ringBytes) / hw.ringBytesPerCyclePerHop));
    if (r.scalarOps)
      parts.push_back("scalar " + num(per(r.scalarOps)) + " × " + num(hw.scalarCycles) + " = " +
                      num(per(r.scalarOps) * hw.scalarCycles));
    if (r.waits)
      parts.push_back("sync " + num(per(r.waits)) + " waits × " + num(hw.waitCycles) + " = " +
                      num(per(r.waits) * hw.waitCycles));
    how += "- `" + e.kernel.name + "`: ";
    for (size_t i = 0; i < parts.size(); ++i)
      how += (i ? "; " : "") + parts[i];
    how += " cycles.\n";
  }
  d += "\nHow the numbers follow from HardwareConfig: the section 7 formulas with the section 8\n"
       "values, per average core (work ÷ cores; DDR bytes ÷ active cores). The table shows the\n"
       "busiest core per phase, which differs where cores do different work (the last core of\n"
       "`ksplit_matmul` alone converts and stores the result; its ring work is spread over phases).\n\n" +
       how;
  if (dmaBound == examples.size())
    d += "\nAt these sizes every kernel is DMA-bound: each transfer's " + num(hw.dmaStartupNs) +
         " ns start-up dominates,\nwhich is why the backend moves each core's whole slice of an operand with "
         "one multi-dimensional DMA.\n";
  else
    d += "\n" + std::to_string(dmaBound) + " of " + std::to_string(examples.size()) + " kernels are DMA-bound.\n";
  return d;
}

/// The title and the introduction.
std::string docIntro() {
  return "# The Spyre core ISA\n\n"
         "<!-- Generated by spyre::isa::generateIsaDoc() (isa/lib/isa_doc.cpp) from the instruction\n"
         "     table isa/include/spyre/isa/instructions.def and HardwareConfig:\n"
         "     build/bin/spyre-isa-dump --doc tests/kernels > docs/isa.md. Do not edit by hand. -->\n\n"
         "IBM has published no instruction set for Spyre. This is the ISA *modelled* by spyre-jit: a\n"
         "small, regular instruction set over the units torch-spyre and its companion projects\n"
         "describe (DMA, LSU, SFP vector units, PT matrix arrays, a ring between cores). The compiler\n"
         "backend targets it, the reference interpreter defines it, the LLVM ORC JIT translates it,\n"
         "the verifier checks it and the timing model costs it. Every instruction is one row of\n"
         "`instructions.def`; this document is generated from that row.\n\n";
}

/// Section 1: memories, cores and their registers.
std::string machineState(const HardwareConfig &hw) {
  return "## 1. Machine state\n\n"
         "- **DDR** (`hbm` in SuperDSC): byte-addressed device memory shared by all cores. Only DMA\n"
         "  (and, later, ring) instructions touch it. Tensors live there in their SpyreTensorLayout.\n"
         "  A kernel sees DDR only through its **arguments**: `ddr[arg+rb+off]` is relative to the\n"
         "  base of the buffer bound to argument `arg`, and must stay inside that buffer.\n"
         "- **" + std::to_string(hw.numCores) + " cores** (`SENCORES`, 1–32), each with:\n"
         "  - **LX**, a " + num(hw.lxBytes / 1048576.0) + " MiB scratchpad; kernels may use [0, " +
         std::to_string(hw.lxUsableBytes) + ") (20 % is reserved, as in torch-spyre); every access is\n"
         "    128-byte aligned, except the element-aligned `ldu`/`stu`. The top " +
         std::to_string(kMaxScalarArgs) + " sticks of the\n"
         "    reserved part, from " + std::to_string(kScalarArgLxBase) + ", are the **scalar-argument block**: the launch's\n"
         "    runtime scalars (numbers that are not compile-time constants, e.g. eager ops' Python\n"
         "    scalars), one slot per `.scalars` entry, written by the runtime before phase 0 as the\n"
         "    value rounded to the slot's format in every lane (what `bcast` makes of an immediate);\n"
         "    kernels only read it, with `ld` of the slot's format;\n"
         "  - scalar registers **r0..r31** (64-bit integers; **r0 = core id, read-only**) for\n"
         "    addresses and counters;\n"
         "  - vector registers **v0..v15**: each holds one stick as **64 fp32 lanes** — a DL16 stick\n"
         "    (64 elements) widened on load, or an fp32 stick in lanes 0..31 (lanes 32..63 zero);\n"
         "    values persist across phases;\n"
         "  - async **tokens t0..t15**: a DMA names an output token (`-> tK`), `wait tK` blocks until\n"
         "    it completes;\n"
         "  - " + std::to_string(hw.corelets) + " corelets, each with an SFP vector unit, a PT array and an LSU port\n"
         "    (the timing model divides SFP and LSU work between them).\n"
         "- A **stick** is 128 bytes: 64 DL16, 32 fp32/int32 or 128 int8 elements.\n\n";
}

/// Section 2: programs, structured control flow and phases.
std::string programStructure() {
  return "## 2. Program structure and phases\n\n"
         "A *kernel* is one SuperDSC op: a program per core. A program usually covers a range of cores\n"
         "(`.core 0..31`, SPMD); per-core differences come from `r0` and `tbl` (a per-core constant\n"
         "table indexed by core id). Every core `0..cores-1` is covered by exactly one range.\n\n"
         "Control flow is structured and static: `loop N { … }` runs its body N times (N ≥ 0, a\n"
         "constant), loops nest, and there are no data-dependent branches. Static trip counts make\n"
         "the verifier's address checks and the timing model exact.\n\n"
         "A top-level `bar` ends a **phase**: all cores of the kernel synchronise there. Phases are the\n"
         "unit of execution (the runtime runs all cores of phase p, then phase p+1) and of timing. A\n"
         "program ending in `bar` has no empty trailing phase. Every DMA token must be waited before\n"
         "its phase ends.\n\n";
}

/// Section 3: the listing syntax, with the example kernel.
std::string listingSyntax(const std::vector<DocKernel> &examples) {
  std::string d;
  auto add = [&](std::string_view s) { d += s; };
  add("## 3. Listing syntax\n\n"
      "The listing is the textual form of a kernel: `printKernel` and `parseKernel` round-trip it.\n\n"
      "- `; comment` to end of line; a comment before `.kernel` is kept as the kernel's comment.\n"
      "- `.kernel NAME cores=N` (1–32), then `.args NAME…` (kernel arguments, in binding order),\n"
      "  optionally `.scalars $K:FMT…` (the scalar-argument slots in order: slot i holds the\n"
      "  launch's scalar K in format `dl16` or `f32`, at LX " + std::to_string(kScalarArgLxBase) + " + 128·i; at most " +
      std::to_string(kMaxScalarArgs) + "),\n"
      "  then one or more `.core FIRST[..LAST]` sections holding instructions.\n"
      "- `mnemonic[.fmt] operand, operand, …`, one instruction per line; `loop N {` opens a body\n"
      "  closed by `}` on its own line.\n"
      "- Operands: `vN`, `rN`, integers (decimal or `0x` hex, optional `-`), float immediates,\n"
      "  `lx[off]` / `lx[rN]` / `lx[rN+off]` / `lx[rN-off]`, `ddr[arg]` / `ddr[arg+rN+off]`,\n"
      "  `shape=(n2,n1,n0)` optionally followed by `, ddr.stride=(s2,s1)` and `, lx.stride=(s2,s1)`\n"
      "  (bytes; dense strides are the default and are not printed), `cohort=k`, `-> tK`, `tK, tK`,\n"
      "  `[c0, c1, …]`.\n\n");
  for (const DocKernel &e : examples)
    if (std::string_view(e.file).ends_with(kExampleFile)) {
      add("Example (`" + e.file + "`):\n\n```\n" + printKernel(e.kernel) + "```\n\n");
      break;
    }
  return d;
}

/// Section 4: one entry per instructions.def row, grouped by unit.
std::string instructionReference(const HardwareConfig &hw) {
  std::string d;
  auto add = [&](std::string_view s) { d += s; };
  add("## 4. Instructions\n\n"
      "Formats: `.dl16` rounds every result to DL16 (lanes hold DL16 values widened to fp32);\n"
      "`.f32` is IEEE single precision. Timing costs are per execution with the default\n"
      "HardwareConfig (section 8).\n\n");
  const Unit units[] = {Unit::Scalar, Unit::Dma, Unit::Lsu, Unit::Sfp, Unit::Pt, Unit::Ring, Unit::Sync};
  const char *unitTitle[] = {"Scalar and control", "Memory transfers", "Load/store", "Vector",
                             "Matrix", "Ring", "Synchronisation"};
  int sec = 1;
  for (size_t u = 0; u < std::size(units); ++u) {
    add("### 4." + std::to_string(sec++) + " " + unitTitle[u] + " (unit " + std::string(unitName(units[u])) + ")\n\n");
    bool any = false;
    for (const auto &op : allOps()) {
      if (op.unit != units[u])
        continue;
      any = true;
      add("#### `" + std::string(op.mnemonic) + "`\n\n");
      add("    " + instructionSyntax(op) + "\n\n");
      add("- semantics: " + std::string(op.semantics) + "\n");
      add("- formats: " + (op.formats == FMT_NONE ? std::string("none (no suffix)") : formatList(op.formats)) + "\n");
      add("- timing: " + timingCost(op, hw) + "\n\n");
    }
    if (!any)
      add("No instructions yet: the unit is modelled (timing counts its work) but the table has no\n"
          "row for it.\n\n");
  }
  return d;
}

/// Section 5: the DL16 format, our rounding choices and the transcendental functions.
std::string dl16Choices() {
  return "## 5. DL16 (SEN169_FP16) and our choices\n\n"
         "torch float16, bfloat16 and bool live on the device as IBM DLFloat16: 1 sign bit, 6 exponent\n"
         "bits (bias 31), 9 fraction bits, `bits = s<<15 | (e+31)<<9 | round(f·512)`. Published\n"
         "properties: no subnormals (exponent field 0 holds zero and normal numbers), the all-ones code\n"
         "is one merged NaN/infinity, signs of zero and NaN/inf do not matter, and the one rounding mode\n"
         "is round to nearest with ties away from zero. Largest finite value 2^32·(1+510/512) ≈ 8.57e9,\n"
         "smallest positive 2^-31·(1+1/512).\n\n"
         "Our documented choices (`isa/include/spyre/isa/dl16.h`, the single definition used by the\n"
         "interpreter, the JIT and host↔device DMA):\n\n"
         "- **underflow** flushes to zero keeping the sign (−0 is code 0x8000);\n"
         "- **overflow** (rounded magnitude above the largest finite value, or ±inf) gives the\n"
         "  NaN/infinity code with its sign — no saturation;\n"
         "- **NaN** encodes to 0x7FFF; decoding `sign|0x7FFF` gives ±infinity, so NaN reads back as +inf;\n"
         "- decoding is exact (every DL16 value is an fp32 value); every `.dl16` SFP result is rounded\n"
         "  to DL16 (fp32 → DL16 → fp32) after each instruction.\n\n"
         "**Transcendental functions.** Each has one implementation, `sfpApply` in `isa/lib/sfp.cpp`,\n"
         "which the interpreter runs and the JIT either calls (a whole-stick helper: `log`, `softplus`,\n"
         "`sin`, `cos`, `tan`) or inlines as the same fp32 operations in the same order (the rest), so the two\n"
         "engines are bit-identical by construction and the differential tests check it:\n\n"
         "| instruction | implementation (fp32) | accuracy against libm `expf` / `logf` / … |\n|---|---|---|\n"
         "| `exp` | own branch-free exp: Cody-Waite reduction, degree-6 polynomial; below 2^-126 flushes to 0 | ≤ 3 ulp over [−87, 88] (`SfpMath.ExpWithinThreeUlpOfLibm`); after DL16 rounding equal to DL16-rounded libm for > 99.9 % of DL16 inputs |\n"
         "| `sigmoid`, `silu` | 1 / (1 + exp(−x)), x / (1 + exp(−x)) with the exp above | the exp error plus one division rounding |\n"
         "| `tanh` | own branch-free tanh: |x| < 0.625 an odd degree-11 polynomial (least-squares fit), beyond sign(x)·(1 − 2/(exp(2|x|) + 1)) with the exp above | ≤ 2 ulp against tanh in double (`SfpMath.TanhAndErfWithinThreeUlp`) |\n"
         "| `erf` | own branch-free erf: |x| < 1 an odd degree-13 polynomial, 1 ≤ |x| < 3.92 sign(x)·(1 − exp(Q(|x|))) with Q a degree-8 fit of log erfc, beyond ±1 | ≤ 3 ulp against erf in double |\n"
         "| `log`, `softplus`, `sin`, `cos`, `tan` | the host libm in fp32 (`logf`, `log1pf`, `sinf`, `cosf`, `tanf`) | glibc's fp32 functions are < 1 ulp; a host with another libm may round differently (both engines still agree) |\n"
         "| `sqrt`, `div`, `recip` | IEEE fp32 operations | correctly rounded |\n"
         "| `rsqrt` | 1 / sqrt(x), two roundings | ≤ 1 ulp |\n"
         "| `gelu` (tanh form), `gelu.erf` | 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), 0.5·x·(1 + erf(x/√2)) with the tanh and erf above | as `tanh` / `erf` plus 5 / 3 roundings |\n\n";
}

/// The bounds of limits.h, from the values themselves.
std::string limitsText() {
  const KernelLimits &l = kKernelLimits;
  return "**Limits** (`KernelLimits` in `spyre/isa/limits.h`; the parser and `verifyKernel` enforce\n"
         "them, with an error naming the listing line, or the kernel, core and line):\n\n"
         "| bound | value | error |\n|---|---|---|\n"
         "| loop nesting depth | " + std::to_string(l.maxLoopDepth) + " | `loop nesting deeper than " +
         std::to_string(l.maxLoopDepth) + "` |\n"
         "| instructions per kernel (all programs, loop bodies included) | " + std::to_string(l.maxInstructions) +
         " | `more than " + std::to_string(l.maxInstructions) + " instructions` |\n"
         "| product of the trip counts around an instruction | " + std::to_string(l.maxTripProduct) +
         " (int64) | `the trip counts of this loop and the loops around it multiply to more than …` |\n"
         "| listing line length | " + std::to_string(l.maxListingLineBytes) + " bytes | `line longer than " +
         std::to_string(l.maxListingLineBytes) + " bytes` |\n"
         "| visits of the exact dry run of one core (only where the symbolic pass gives up) | " +
         std::to_string(l.maxDryRunVisits) + " | `the dry run needs more than " + std::to_string(l.maxDryRunVisits) +
         " instruction visits` and the reason the symbolic pass gave |\n\n"
         "Real kernels nest loops at most 3 deep. Listings may use LF or CRLF line endings.\n\n";
}

/// Section 6: the verifier's rules and why its checks are exact.
std::string verifierRules(const HardwareConfig &hw) {
  return "## 6. Verifier rules\n\n"
         "`verifyKernel(kernel, argBytes, lxBytes = " + std::to_string(hw.lxUsableBytes) + ")` throws one\n"
         "error for the first violated rule, naming kernel, core, listing line, mnemonic and operand,\n"
         "e.g. `kernel k, core 1, line 5, dma.in ddr[a+r1]: DMA row (0,0) covers DDR [4096, 4352),\n"
         "outside argument a of 4096 bytes`. Rules:\n\n"
         "1. The kernel has 1–32 cores; every core is covered by exactly one `.core` range inside\n"
         "   0..cores−1; one buffer size is bound per argument.\n"
         "2. Operands are valid: vector registers v0..v15, scalar registers r0..r31, tokens t0..t15,\n"
         "   `ddr[...]` names a kernel argument, the format suffix is one the instruction allows.\n"
         "3. No instruction writes `r0`; every `tbl` has exactly one entry per core.\n"
         "4. Loop counts are ≥ 0; DMA shape entries are ≥ 1.\n"
         "5. `bar` appears only at the top level (never inside a loop), and every core reaches the\n"
         "   same number of barriers.\n"
         "6. Every LX access — `ld`/`st` and every row of a DMA — lies inside [0, lxBytes) and is\n"
         "   128-byte aligned; `ldu`/`stu` access n elements inside [0, lxBytes) at an address aligned\n"
         "   to the element (2 bytes `.dl16`, 4 bytes `.f32`). The one exception: `ld` of a declared\n"
         "   scalar-argument slot (§1), in the slot's format.\n"
         "7. Every DDR row of a DMA lies inside [0, argBytes[arg]) of its argument.\n"
         "8. A DMA's output token is not still outstanding (issued and not yet waited); `wait` names\n"
         "   only tokens issued in the current phase; every token is waited before its phase ends.\n"
         "9. Scalar address arithmetic does not overflow 64 bits.\n"
         "10. DMAs are asynchronous: until its token is waited, no instruction reads or writes LX that\n"
         "   an outstanding `dma.in` is filling, and none writes LX that an outstanding `dma.out` is\n"
         "   reading (the DMA's LX span is the interval from its lowest to its highest row). Because\n"
         "   of this rule the engines may complete a DMA when it issues: no valid program can tell.\n"
         "   Inside loops it is checked on the iterations the walk visits (below).\n"
         "11. `ld.pad` lane counts lie in 0..64 (`.dl16`) or 0..32 (`.f32`), `ldu`/`stu` element\n"
         "   counts in 1..64 / 1..32; PT tile sizes, ring stick\n"
         "   counts and directions are in range and their LX tiles obey rule 6.\n"
         "12. Multicast: a `dma.mc` cohort size k is 2..8; the cohort of core c is cores\n"
         "   c − c mod k .. c − c mod k + k − 1, all inside the kernel; every member issues the same\n"
         "   multicast transfers in the same order per phase (same DDR argument and address, LX\n"
         "   address, shape, strides and cohort size) as any member. That is what makes one DDR read\n"
         "   delivered to every member's LX equal to the per-core copies the engines perform.\n\n"
         "Reading a vector register before writing it is allowed: registers persist across phases.\n\n"
         "**How it stays fast.** The exact dry run below costs a few visits per instruction for the\n"
         "kernels we generate, but a deep loop nest makes it exponential in the depth. Past a budget\n"
         "of 16 visits per instruction a symbolic pass decides instead, for every iteration at once, in\n"
         "time linear in the program (not in executed iterations, not exponential in the depth): each\n"
         "register is an affine form c + Σ kᵢ·tᵢ over the induction variables tᵢ ∈ [0, nᵢ − 1] of the\n"
         "loops around an instruction. That is exact for loops whose live-in registers (read before\n"
         "written in the body) advance by a constant per iteration; every other register is then a\n"
         "function of those. Each such body is walked once and its effect on the registers is an\n"
         "affine map computed once per loop; a range holds when it holds at the extremes of the form\n"
         "over the box of the tᵢ, alignment when the constant and the coefficients are multiples. A\n"
         "body that waits every DMA it issues starts each later iteration with fewer DMAs in flight\n"
         "than the first, so one walk decides the token rules. Anything outside that model (rotating\n"
         "or doubling registers, a DMA in flight across iterations as in double buffering, an overlap\n"
         "the box cannot exclude) makes it give up, and the dry run decides with its full budget (see\n"
         "Limits) and words the error.\n\n"
         "**How it is exact.** The verifier dry-runs the scalar part of each core's program (registers\n"
         "start at 0, r0 = core id) and checks each address with the register values it would have. DMA\n"
         "row starts are affine in the row index, so the corner rows bound them and base plus strides\n"
         "decide alignment. Loops are not unrolled: every scalar instruction is affine, so a loop\n"
         "iteration maps the register state s to A·s + b. As soon as three consecutive iteration entry\n"
         "states have equal differences, every later state is a translation of the earlier ones and\n"
         "every value in the body is affine in the iteration number; checking two consecutive\n"
         "iterations (alignment) and the last one (range) is then exact, and the token protocol is\n"
         "decided by the first two iterations (a body's token effect is idempotent). A loop of\n"
         "millions of iterations costs three body walks. The same argument applied to p iterations at\n"
         "a time covers states that become a translation with period p ≤ 4 (double and triple\n"
         "buffering alternate addresses): the walker then visits 2p consecutive iterations and the\n"
         "last p. Loops whose state never becomes such a translation (e.g. a register doubling each\n"
         "iteration) are walked iteration by iteration, still exactly.\n\n" +
         limitsText();
}

/// Section 7: the timing model's unit costs and its three phase times.
std::string timingModel(const HardwareConfig &hw) {
  const double perCoreDdr = hw.ddrBytesPerCyclePerCore(hw.numCores);
  return "## 7. Timing model\n\n"
         "`timeKernel(kernel, hw)` uses the same dry run, so all counts are exact dynamic counts. Per\n"
         "core and phase, the busy cycles of each unit (c = " + std::to_string(hw.corelets) + " corelets):\n\n"
         "| unit | cycles |\n|---|---|\n"
         "| scalar | (li/addi/muli/tbl executed + loop entries) × " + num(hw.scalarCycles) + " |\n"
         "| sync | waits executed × " + num(hw.waitCycles) + " |\n"
         "| LSU | sticks loaded or stored ÷ (" + num(hw.lsuSticksPerCycle) + " × c) |\n"
         "| SFP | (stick-ops + " + num(hw.transcendentalCyclesPerStick) + " × transcendental stick-ops) ÷ (" +
         num(hw.sfpSticksPerCycle) + " × c) |\n"
         "| PT | MACs ÷ " + num(hw.ptMacsPerCycle) + " |\n"
         "| ring | bytes ÷ " + num(hw.ringBytesPerCyclePerHop) + " per hop |\n"
         "| DMA | DMAs × " + num(hw.nsToCycles(hw.dmaStartupNs)) + " (start-up " + num(hw.dmaStartupNs) +
         " ns) + DDR bytes ÷ (" + num(hw.ddrBytesPerSecond / 1e9) + " GB/s ÷ " + num(hw.clockGHz) +
         " GHz ÷ A) |\n\n"
         "A = the kernel's **active cores** (cores that execute any DMA): the card's DDR bandwidth is\n"
         "shared evenly by the cores streaming at once (" + num(perCoreDdr) + " B/cycle per core when all " +
         std::to_string(hw.numCores) + " stream). A multicast (`dma.mc`, cohort of k cores) reads DDR once\n"
         "for its cohort: each member is charged its bytes ÷ k (a cohort of 8 that loads one weight block\n"
         "costs the DDR of one load, not 8). Members run the same instruction stream, so they reach\n"
         "the transfer together; a skew between them is not modelled.\n\n"
         "Three phase times per core, from the same costs:\n\n"
         "- **scheduled** (the kernel's simulated time): the core's instruction stream replayed in\n"
         "  order. A sequencer issues in program order; scalar ops (loop entries included) and `wait`\n"
         "  advance it, `wait` until its tokens complete. An LSU, SFP, PT or ring instruction starts\n"
         "  when issued and its unit is free, and holds the unit for its cost (units pipeline; register\n"
         "  dependencies are not modelled). One DMA engine per core runs DMAs in issue order; a DMA\n"
         "  starts when issued, when the engine is free and when every compute unit has drained (the\n"
         "  LX it reads or overwrites is then final); its token completes with it. The phase ends when\n"
         "  the sequencer, every unit and the DMA engine are idle. So a block computed right after a\n"
         "  synchronous DMA costs DMA + compute, and a double-buffered loop (DMA of block i+1 issued\n"
         "  before block i is computed) costs about max(DMA, compute) per block. Loops are replayed\n"
         "  until the state (unit free times relative to the sequencer) advances by the same vector\n"
         "  twice; the rest is extrapolated and the jump verified by replaying one more iteration\n"
         "  (halving the jump if the step changed), so trip counts of 10^12 cost microseconds;\n"
         "- **overlapped** (lower bound): the max over its units (perfectly decoupled units);\n"
         "- **serial** (upper bound): the sum over its units (compute + memory + communication +\n"
         "  control, the way the public Python interpreter of Spyre kernels counts).\n\n"
         "Phase time = max over cores. Kernel time = launch (" + num(hw.kernelLaunchNs / 1e3) +
         " µs) + Σ phases ÷ " + num(hw.clockGHz) + " GHz + barriers × " + num(hw.barrierNs) + " ns.\n"
         "overlapped ≤ scheduled ≤ serial. `TimingReport::summary()` prints the per-phase max over\n"
         "cores of each unit, the totals, the three kernel times and the work counters (DDR bytes, LSU\n"
         "sticks, SFP stick-ops, PT MACs, ring bytes).\n\n";
}

/// Section 8: the HardwareConfig defaults and where they come from.
std::string hardwareConfiguration(const HardwareConfig &hw) {
  return "## 8. Hardware configuration\n\n"
         "`HardwareConfig` defaults, calibrated to torch-spyre's cost-model constants. `SENCORES`\n"
         "(1–32) sets the core count; any other value is the error\n"
         "`Unsupported: invalid SENCORES value N (expected an integer in 1..32)`.\n\n"
         "| parameter | value | source |\n|---|---|---|\n"
         "| cores | " + std::to_string(hw.numCores) + " | torch-spyre `SENCORES` default |\n"
         "| clock | " + num(hw.clockGHz) + " GHz | 1024 MAC/cycle × 1.5 GHz = 1.536e6 MAC/µs/core (torch-spyre) |\n"
         "| PT | " + num(hw.ptMacsPerCycle) + " DL16 MAC/cycle/core | 98.304 TFLOP/s per card |\n"
         "| SFP | " + num(hw.sfpSticksPerCycle) + " stick/cycle per corelet × " + std::to_string(hw.corelets) +
         " corelets; transcendental " + num(hw.transcendentalCyclesPerStick) + " cycles/stick | ktir-cpu model |\n"
         "| LSU | " + num(hw.lsuSticksPerCycle) + " stick/cycle per corelet | |\n"
         "| DDR | " + num(hw.ddrBytesPerSecond / 1e9) + " GB/s per card, shared by active cores | torch-spyre |\n"
         "| DMA start-up | " + num(hw.dmaStartupNs) + " ns | our choice: DDR latency + descriptor fetch |\n"
         "| ring | " + num(hw.ringBytesPerCyclePerHop) + " B/cycle per direction per hop | torch-spyre |\n"
         "| barrier | " + num(hw.barrierNs) + " ns | our choice: a ring round trip + handshake |\n"
         "| kernel launch | " + num(hw.kernelLaunchNs / 1e3) + " µs | our choice: a small pointwise kernel costs a few µs |\n"
         "| LX | " + std::to_string(hw.lxBytes) + " B, usable " + std::to_string(hw.lxUsableBytes) + " B | torch-spyre |\n"
         "| card-to-card link | " + num(hw.linkBytesPerSecond / 1e9) + " GB/s per direction, " +
         num(hw.linkLatencyNs / 1e3) + " µs per collective step | our assumption: PCIe Gen5 x16 peer to peer "
         "(torch-spyre publishes the host interface only); the collectives' time, docs/architecture.md §5 |\n";
}

} // namespace

std::string generateIsaDoc(const HardwareConfig &hw, const std::vector<DocKernel> &examples) {
  std::string d = docIntro();
  d += machineState(hw);
  d += programStructure();
  d += listingSyntax(examples);
  d += instructionReference(hw);
  d += dl16Choices();
  d += verifierRules(hw);
  d += timingModel(hw);
  d += hardwareConfiguration(hw);
  if (!examples.empty())
    d += "\n" + handWrittenTiming(hw, examples);
  return d;
}

} // namespace spyre::isa
