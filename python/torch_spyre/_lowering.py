"""ATen op -> Spyre graph IR translation, shared by the compiled path (_compile.py) and the
eager path (_eager.py).

The op contract lives in ``frontend/include/spyre/frontend/graph.h``. This module only knows
how each ATen overload is *spelled* in the IR (op name, operand order, attributes); whether the
C++ side can compile a node is never decided here: ``check_text`` checks a one-node graph with
``_C.check_graph``, so ops start running on spyre as soon as the C++ side learns them.

The code is split by concept: ``_lowering_core`` (IR spelling, ``Lowered``, ``Env``, the
registry, graph text), ``_lowering_arith`` (pointwise, reductions, matmul) and
``_lowering_data`` (casts, permutations, slices, views, padding, fills). Importing this module
registers every lowering, in that order.
"""

from __future__ import annotations

from . import _C, _lowering_arith, _lowering_data  # noqa: F401  (register the lowerings)
from ._errors import FallbackWarning, Unsupported
from ._lowering_core import (
    Env,
    Lowered,
    RuntimeScalar,
    Tmp,
    bind_arguments,
    check_text,
    format_attr,
    ir_dtype,
    is_lowerable,
    lower,
    lowerable_ops,
    node_lines,
    single_node_text,
    type_text,
)

# Unary ops of ops.def without attributes need no Python of their own: the table is the one list.
_lowering_arith.register_plain_unaries(_C.plain_unary_ops())

__all__ = ["Unsupported", "FallbackWarning", "Tmp", "Lowered", "RuntimeScalar", "lower", "is_lowerable", "check_text",
           "ir_dtype", "type_text", "format_attr", "Env", "node_lines", "single_node_text", "lowerable_ops", "bind_arguments"]
