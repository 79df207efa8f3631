"""Every environment variable torch_spyre and its C++ core read, in one table.

One ``Knob`` per variable: name, type, default, accepted values and a one-line doc. The Python
modules read knobs only through this module (``engine()``, ``strict()``, ...); the C++ core reads
its own through ``spyre::Env`` (``XOptions::fromEnv``) with the same accepted values and the
same message, ``invalid NAME value 'x' (expected ...)``, which ``ConfigError`` carries here.

When values are checked: at use, never at import. ``import torch`` (which autoloads
torch_spyre) reads no knob, so a bad value cannot break CPU-only users. A Python knob is
checked each time it is read (``SPYRE_STRICT`` at every fallback, ``SPYRE_ENGINE`` at every
compile); ``check_compile()`` checks the knobs the C++ compile path reads before each compile,
so a bad value raises ``ConfigError`` instead of turning into a "cannot compile" reason that the
CPU fallback would swallow.

docs/user-guide.md's environment table is ``markdown_table()`` (tests/python/test_config.py
checks it and says how to regenerate it).

This module imports nothing from torch or the extension.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

from ._errors import ConfigError

__all__ = ["Knob", "KNOBS", "ConfigError", "get", "engine", "strict", "dump_root", "debug_level", "eager_cache_size",
           "torch_debug", "check_compile", "markdown_table"]

_TRUE = ("1", "true", "on", "yes")
_FALSE = ("0", "false", "off", "no")


@dataclass(frozen=True)
class Knob:
    """One environment variable. ``kind`` is ``flag`` (1/0, true/false, on/off, yes/no, any
    case), ``int`` (a decimal integer in lo..hi), ``choice`` (one of ``choices``, exact) or
    ``string`` (anything: paths, developer overrides). An empty value counts as unset."""

    name: str
    kind: str
    default: Any
    read_by: str
    doc: str
    choices: tuple[str, ...] = ()
    lo: int = 0
    hi: int = 0
    default_text: str = ""  # how the docs spell a default that is not a literal
    compile_time: bool = False  # read by the C++ compile path: check_compile() checks it

    def expected(self) -> str:
        """The accepted values, as the error message and the docs spell them."""
        if self.kind == "flag":
            return "one of 1, 0, true, false, on, off"
        if self.kind == "int":
            return f"an integer in {self.lo}..{self.hi}"
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        return "any string"

    def parse(self, raw: str | None) -> Any:
        """The typed value of ``raw`` (None or '' -> the default); raises ConfigError."""
        if raw is None or raw == "":
            return self.default
        if self.kind == "flag":
            low = raw.lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
        elif self.kind == "int":
            digits = raw[1:] if raw.startswith("-") else raw
            if digits.isascii() and digits.isdigit() and self.lo <= int(raw) <= self.hi:
                return int(raw)
        elif self.kind == "choice":
            if raw in self.choices:
                return raw
        else:
            return raw
        raise ConfigError(self.name, raw, self.expected())

    def get(self, environ: Mapping[str, str] | None = None) -> Any:
        """The current value (read now, from ``environ`` or the process environment)."""
        return self.parse((os.environ if environ is None else environ).get(self.name))


def _flag(name: str, default: bool, read_by: str, doc: str, **kw: Any) -> Knob:
    return Knob(name, "flag", default, read_by, doc, **kw)


def _int(name: str, default: int, lo: int, hi: int, read_by: str, doc: str, **kw: Any) -> Knob:
    return Knob(name, "int", default, read_by, doc, lo=lo, hi=hi, **kw)


def _string(name: str, read_by: str, doc: str, default: str = "", **kw: Any) -> Knob:
    return Knob(name, "string", default, read_by, doc, **kw)


_KNOB_LIST = [
    # ---- read by the Python package -----------------------------------------------------------
    Knob("SPYRE_ENGINE", "choice", "jit", "`_compile.py`, `_eager.py` (every compile)",
         "the engine that runs compiled graphs: the LLVM JIT or the reference interpreter",
         choices=("jit", "interp")),
    _flag("SPYRE_STRICT", False, "`_fallback.py`, `_compile.py` (every call / compile)",
          "on: ops that cannot run on spyre raise `NotImplementedError: Unsupported: ...` instead "
          "of falling back to the CPU"),
    _string("SPYRE_DUMP_DIR", "`_compile.py` (every compile, eager ops too)",
            "writes every stage of every compiled graph (and eager op kernel) to `DIR/graph_<n>/` "
            "([debugging.md](debugging.md))", default_text="off"),
    _int("SPYRE_DEBUG", 0, 0, 3, "`_compile.py` (every compile, eager ops too)",
         "`1`: one line per compiled graph (kernels, compile times); `2`: + the graph IR after "
         "each frontend pass and the SuperDSC JSON; `3`: + ISA listings"),
    _int("SPYRE_EAGER_CACHE_SIZE", 512, 1, 1000000, "`_eager.py`, `_lowering_core.py` (every compile)",
         "compiled eager kernels kept (one per op, shapes and dtypes: Python scalars are kernel "
         "arguments, not part of the key), and likewise decomposed-op graphs and compile checks; "
         "past it the least recently used is dropped (and recompiled if used again)"),
    _int("TORCH_SPYRE_DEBUG", 0, 0, 3, "`_compile.py`, `device_options.cpp` (every compile / transfer)",
         "non-zero: logs every host↔device transfer, and the graph IR after each frontend pass "
         "of every compiled graph, to stderr"),
    # ---- read by the C++ core -----------------------------------------------------------------
    _flag("TORCH_SPYRE_DOWNCAST_WARN", True, "`device_options.cpp` (every int64 allocation / transfer)",
          "off silences the warning that int64 tensors are stored as int32 on the card"),
    _int("SENCORES", 32, 1, 32,
         "frontend (every compile), `HardwareConfig` (`spyre-isa-dump`), `spyre-jit-bench`",
         "cores to divide work over. An invalid value is a setup error, never a fallback: "
         "`NotImplementedError: Unsupported: invalid SENCORES value N (expected an integer in 1..32)`"),
    _flag("LX_PLANNING", True, "frontend `CompileOptions`",
          "LX scratchpad planning: intermediates stay in the cores' LX between kernels; off "
          "keeps every intermediate in DDR", compile_time=True),
    _flag("SPYRE_PAD_MATMUL_K", False, "frontend `CompileOptions`",
          "matmul K padding as a graph rewrite (zero-padded operand copies before each matmul "
          "whose K is not a multiple of 64). Off: the backend pads K inside LX without the two "
          "copy kernels", compile_time=True),
    _flag("SPYRE_MATMUL_TRANSB", True, "frontend `CompileOptions`",
          "a matmul whose second operand is a transposed tensor (`x @ w.t()`, `F.linear`, "
          "attention's `k.transpose`) reads it as stored, sticked on K, and transposes its tiles "
          "in the PE array (`transb`; work division splits N before M so each core transposes "
          "only its slice), instead of a restickify kernel before it. Off: torch-spyre "
          "restickifies", compile_time=True),
    _flag("SPYRE_SPLIT_REDUCTIONS", False, "frontend `CompileOptions`",
          "a sum, mean or layer norm's exx2 over the last dim whose rows leave cores idle even "
          "after an uneven row split (fewer rows than cores) also splits the reduced dim over "
          "the idle cores, partial sums meeting on the ring. Off: only where a core would span more than 256 MiB "
          "(work-division pass 1); usually slower in simulated time (a serial ring chain)",
          compile_time=True),
    _flag("SPYRE_FUSION", True, "frontend `CompileOptions`",
          "fusion: chains of elementwise ops over one shape, row reductions (softmax, norms) "
          "with their elementwise prologue and epilogue, and matmuls with their elementwise "
          "epilogue (bias, activation, residual, SwiGLU's product) become one kernel whose intermediates "
          "stay in registers and LX (bit-identical results). Off: one kernel per op, every "
          "intermediate through DDR or LX", compile_time=True),
    _int("SPYRE_LAYOUT_BEAM", 64, 1, 4096, "frontend `CompileOptions` (layout propagation)",
         "beam width of the layout-propagation search (layouts kept per value)", compile_time=True),
    _flag("SPYRE_MULTICAST", True, "backend `BackendOptions`",
          "multicast DMA: one `dma.mc` per cohort of up to 8 cores that share an operand (a "
          "matmul's weight block under an M split); off: every core streams its own copy. For "
          "before/after comparisons of the simulated time; results are identical",
          compile_time=True),
    Knob("SPYRE_JIT_OPT", "choice", "O2", "JIT `JitOptions`",
         "the JIT's optimisation tier (`0` and `2` are spellings of `O0` and `O2`). `tiered`: a "
         "kernel's O2 code if it is in the code cache, else its O0 code at once (≈ 1 ms to compile, "
         "runs at about interpreter speed) and O2 compiled on a background thread, used from the "
         "next phase call on once ready. Results are bit-identical on every tier",
         choices=("O0", "O2", "0", "2", "tiered"), compile_time=True),
    _flag("SPYRE_JIT_TIMES", False, "JIT `JitEngine`",
          "prints the JIT's compile-time breakdown per kernel to stderr", compile_time=True),
    _flag("SPYRE_JIT_DEBUG", False, "JIT `JitEngine`",
          "registers JIT code with GDB and writes perf jitdump files ([debugging.md](debugging.md))",
          compile_time=True),
    _flag("SPYRE_JIT_GENERIC_NESTS", True, "JIT `JitEngine`",
          "O2: each top-level loop nest is compiled and cached on its own with its shape immediates as "
          "parameters, so a new shape of a known kernel reuses its nests ([architecture.md](architecture.md), "
          "JIT tiers); `0` compiles every kernel as one module (the code before)", compile_time=True),
    _flag("SPYRE_JIT_SHARE_B", True, "JIT `JitEngine`",
          "a matmul whose B the cores of a multicast cohort share reuses the B its host thread last decoded "
          "from the same bytes; `0` decodes B in every core, phase and kernel (host-time measurements; the "
          "kernels and simulated times do not change)", compile_time=True),
    _int("SPYRE_JIT_TINY_M", 6, 0, 4096, "JIT `JitEngine`",
         "a matmul tile of at most this many rows that is the only read of its B decodes B in "
         "registers inside the micro-kernel instead of into the thread's fp32 copy; `0` never (host-time "
         "measurements; the kernels and simulated times do not change)",
         default_text="one register block (6 rows on AVX2, 4 on AVX-512)", compile_time=True),
    _string("SPYRE_JIT_PASSES", "JIT `JitEngine`",
            "developer override of the JIT's LLVM pass pipeline (`opt -passes=` syntax)",
            default_text="the tier's pipeline"),
    _string("SPYRE_JIT_LLVM_ARGS", "JIT `JitEngine` (once per process)",
            "developer knob: LLVM command-line options, e.g. `-time-passes`", default_text="none"),
    _string("SPYRE_CACHE_DIR", "JIT code cache",
            "directory of the on-disk JIT code cache; `off` disables it. Entries are checksummed; "
            "a damaged entry is reported once and recompiled", default_text="`~/.cache/spyre-jit`"),
    _int("SPYRE_CACHE_MAX_MB", 1024, 1, 1048576, "JIT code cache (each engine)",
         "size bound of the on-disk JIT code cache in MiB: after each write the least recently "
         "used entries (a hit marks an entry used) are deleted until the directory fits",
         compile_time=True),
    _string("XDG_CACHE_HOME", "JIT code cache",
            "when `SPYRE_CACHE_DIR` is unset the cache is `$XDG_CACHE_HOME/spyre-jit`",
            default_text="unset"),
    _string("HOME", "JIT code cache",
            "when neither `SPYRE_CACHE_DIR` nor `XDG_CACHE_HOME` is set the cache is "
            "`$HOME/.cache/spyre-jit`", default_text="the user's home"),
    _string("SPYRE_TRACE", "simulator trace, `spyre-jit-bench`",
            "`file.json`: writes a Chrome/Perfetto trace of simulated device time (a track per "
            "core and unit)", default_text="off"),
    _int("SPYRE_DEVICE_COUNT", 1, 1, 16, "`device_hooks.cpp` (once, at the first device query)",
         "simulated cards in this process (`spyre:0` .. `spyre:N-1`, each with its own DDR); unset: "
         "torchrun's `LOCAL_WORLD_SIZE` (so `spyre:LOCAL_RANK` names a card), else 1. The cards "
         "of two processes are separate simulations", default_text="1 (torchrun: LOCAL_WORLD_SIZE)",
         compile_time=True),
    _int("SPYRE_SIM_THREADS", 0, 1, 4096, "simulator `Runtime` (once, when the card is first used)",
         "host threads running simulated cores", default_text="host core count", compile_time=True),
]

KNOBS: dict[str, Knob] = {k.name: k for k in _KNOB_LIST}


def get(name: str, environ: Mapping[str, str] | None = None) -> Any:
    """The current typed value of a knob; raises ConfigError for an invalid value."""
    return KNOBS[name].get(environ)


def engine() -> str:
    """SPYRE_ENGINE: "jit" or "interp"."""
    return get("SPYRE_ENGINE")


def strict() -> bool:
    """SPYRE_STRICT: no CPU fallback."""
    return get("SPYRE_STRICT")


def dump_root() -> str:
    """SPYRE_DUMP_DIR, or '' when dumping is off."""
    return get("SPYRE_DUMP_DIR")


def debug_level() -> int:
    """SPYRE_DEBUG: 0 (off) to 3."""
    return get("SPYRE_DEBUG")


def eager_cache_size() -> int:
    """SPYRE_EAGER_CACHE_SIZE: entries of each eager compile cache."""
    return get("SPYRE_EAGER_CACHE_SIZE")


def torch_debug() -> bool:
    """TORCH_SPYRE_DEBUG set to a non-zero level."""
    return get("TORCH_SPYRE_DEBUG") != 0


def check_compile(environ: Mapping[str, str] | None = None) -> None:
    """Raises ConfigError if a knob the C++ compile path reads has an invalid value."""
    for k in _KNOB_LIST:
        if k.compile_time:
            k.get(environ)


def _default_text(k: Knob) -> str:
    if k.default_text:
        return k.default_text
    if k.kind == "flag":
        return "on" if k.default else "off"
    return f"`{k.default}`"


def _accepted_text(k: Knob) -> str:
    if k.kind == "flag":
        return "flag: `1`/`0`, `true`/`false`, `on`/`off`, `yes`/`no`"
    if k.kind == "int":
        return f"integer {k.lo}–{k.hi}"
    if k.kind == "choice":
        return " or ".join(f"`{c}`" for c in k.choices)
    return "string"


def markdown_table() -> str:
    """docs/user-guide.md's environment table (one row per knob, in table order)."""
    rows = ["| variable | values | default | read by | effect |", "|---|---|---|---|---|"]
    for k in _KNOB_LIST:
        rows.append(f"| `{k.name}` | {_accepted_text(k)} | {_default_text(k)} | {k.read_by} | {k.doc} |")
    return "\n".join(rows) + "\n"


def per_rank_trace() -> None:
    """Under torchrun (WORLD_SIZE > 1), SPYRE_TRACE=t.json becomes t.rank<R>.json for this
    process, before the card is first used (``_trace``)."""
    from ._trace import per_rank_trace as _apply

    _apply(os.environ)
