#include "spyre/isa/limits.h"
#include <string>
#include <vector>

namespace spyre::isa {

void checkKernelLimits(const Kernel &k, const KernelLimits &limits) {
  int64_t instructions = 0;
  for (const CoreProgram &p : k.programs) {
    auto fail = [&](const Instr &in, const std::string &what) {
      throw Error("kernel " + k.name + ", core " + std::to_string(p.firstCore) + ", line " +
                  std::to_string(in.line) + ", loop: " + what);
    };
    // The trip-count product of the loops around each instruction (never recursion).
    forEachNested(p.body, int64_t{1}, [&](const Instr &in, int64_t around, int depth, int64_t &trips) {
      if (++instructions > limits.maxInstructions)
        throw Error("kernel " + k.name + ": more than " + std::to_string(limits.maxInstructions) +
                    " instructions");
      if (in.op != Opcode::Loop)
        return false;
      if (depth + 1 > limits.maxLoopDepth)
        fail(in, "loop nesting deeper than " + std::to_string(limits.maxLoopDepth));
      if (in.imm > 0 && (__builtin_mul_overflow(around, in.imm, &trips) || trips > limits.maxTripProduct))
        fail(in, "the trip counts of this loop and the loops around it multiply to more than " +
                     std::to_string(limits.maxTripProduct) + " iterations");
      return true; // a loop that never runs has product 0
    });
  }
}

} // namespace spyre::isa
