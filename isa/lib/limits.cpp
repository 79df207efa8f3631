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
    // An explicit stack of open loop bodies (never recursion: an in-memory kernel may be
    // arbitrarily deep) with the trip-count product of the loops around each.
    struct Frame {
      const std::vector<Instr> *body;
      size_t next;
      int64_t trips;
    };
    std::vector<Frame> stack{{&p.body, 0, 1}};
    while (!stack.empty()) {
      Frame &f = stack.back();
      if (f.next == f.body->size()) {
        stack.pop_back();
        continue;
      }
      const Instr &in = (*f.body)[f.next++];
      if (++instructions > limits.maxInstructions)
        throw Error("kernel " + k.name + ": more than " + std::to_string(limits.maxInstructions) +
                    " instructions");
      if (in.op != Opcode::Loop)
        continue;
      if (static_cast<int>(stack.size()) > limits.maxLoopDepth)
        fail(in, "loop nesting deeper than " + std::to_string(limits.maxLoopDepth));
      int64_t trips = 0;
      if (in.imm > 0 && (__builtin_mul_overflow(f.trips, in.imm, &trips) || trips > limits.maxTripProduct))
        fail(in, "the trip counts of this loop and the loops around it multiply to more than " +
                     std::to_string(limits.maxTripProduct) + " iterations");
      stack.push_back({&in.body, 0, trips}); // a loop that never runs has product 0
    }
  }
}

} // namespace spyre::isa
