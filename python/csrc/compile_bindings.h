// Bindings for the compile/run path (frontend -> backend -> JIT -> runtime). Implemented in
// compile_bindings.cpp; module.cpp calls registerCompileBindings() from PYBIND11_MODULE.
#pragma once
#include <torch/csrc/utils/pybind.h>

namespace spyre::py {
void registerCompileBindings(pybind11::module_ &m);
}
