#include "compile_bindings.h"

namespace spyre::py {
// Filled in by the compile path (frontend/backend/JIT) work.
void registerCompileBindings(pybind11::module_ &m) {}
} // namespace spyre::py
