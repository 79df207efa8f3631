// CompileOptions::fromEnv: the one place the frontend's options meet the environment (through the
// boundary's spyre::Env).
#include "spyre/frontend/compiler.h"
#include "spyre/isa/error.h"
#include <cctype>
#include <charconv>

namespace spyre::frontend {

CompileOptions CompileOptions::fromEnv(const spyre::Env &env) {
  CompileOptions o;
  if (auto v = env.raw("SENCORES")) {
    int64_t n = 0;
    const auto r = std::from_chars(v->data(), v->data() + v->size(), n);
    if (!std::isdigit(static_cast<unsigned char>((*v)[0])) || r.ec != std::errc() || r.ptr != v->data() + v->size() ||
        n < 1 || n > 32)
      throw Unsupported("invalid SENCORES value " + *v + " (expected an integer in 1..32)");
    o.maxCores = static_cast<int>(n);
  }
  o.lxPlanning = env.flag("LX_PLANNING", o.lxPlanning);
  o.padMatmulK = env.flag("SPYRE_PAD_MATMUL_K", o.padMatmulK);
  o.matmulTransB = env.flag("SPYRE_MATMUL_TRANSB", o.matmulTransB);
  o.splitReductions = env.flag("SPYRE_SPLIT_REDUCTIONS", o.splitReductions);
  o.fusion = env.flag("SPYRE_FUSION", o.fusion);
  o.layoutBeamWidth = static_cast<int>(env.integer("SPYRE_LAYOUT_BEAM", o.layoutBeamWidth, 1, 4096));
  return o;
}

} // namespace spyre::frontend
