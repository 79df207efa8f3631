"""The environment knobs (torch_spyre/_config.py): every documented variable's invalid value
raises an error with its exact message, never a silent default or a CPU fallback; a bad value
never breaks `import torch`; the user guide's table is the one _config generates; no Python
module reads the environment behind _config's back."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest
import torch

import torch_spyre
from torch_spyre import ConfigError, _config
from torch_spyre._compile import compile_text

ROOT = pathlib.Path(__file__).resolve().parents[2]
FLAGS = "(expected one of 1, 0, true, false, on, off)"

# (variable, an invalid value, the exact message). Every knob that has invalid values is here
# (test_every_checked_knob_has_a_must_fail_case keeps the list complete) but SENCORES, which the
# C++ side checks with torch-spyre's wording (test_bad_sencores_message).
INVALID = [
    ("SPYRE_ENGINE", "gpu", "invalid SPYRE_ENGINE value 'gpu' (expected one of jit, interp)"),
    ("SPYRE_STRICT", "maybe", f"invalid SPYRE_STRICT value 'maybe' {FLAGS}"),
    ("SPYRE_DEBUG", "x", "invalid SPYRE_DEBUG value 'x' (expected an integer in 0..3)"),
    ("SPYRE_DEBUG", "4", "invalid SPYRE_DEBUG value '4' (expected an integer in 0..3)"),
    ("TORCH_SPYRE_DEBUG", "yes", "invalid TORCH_SPYRE_DEBUG value 'yes' (expected an integer in 0..3)"),
    ("TORCH_SPYRE_DOWNCAST_WARN", "2", f"invalid TORCH_SPYRE_DOWNCAST_WARN value '2' {FLAGS}"),
    ("LX_PLANNING", "maybe", f"invalid LX_PLANNING value 'maybe' {FLAGS}"),
    ("SPYRE_PAD_MATMUL_K", "2", f"invalid SPYRE_PAD_MATMUL_K value '2' {FLAGS}"),
    ("SPYRE_MATMUL_TRANSB", "y", f"invalid SPYRE_MATMUL_TRANSB value 'y' {FLAGS}"),
    ("SPYRE_SPLIT_REDUCTIONS", "enable", f"invalid SPYRE_SPLIT_REDUCTIONS value 'enable' {FLAGS}"),
    ("SPYRE_FUSION", "sometimes", f"invalid SPYRE_FUSION value 'sometimes' {FLAGS}"),
    ("SPYRE_LAYOUT_BEAM", "0", "invalid SPYRE_LAYOUT_BEAM value '0' (expected an integer in 1..4096)"),
    ("SPYRE_LAYOUT_BEAM", "+8", "invalid SPYRE_LAYOUT_BEAM value '+8' (expected an integer in 1..4096)"),
    ("SPYRE_MULTICAST", "none", f"invalid SPYRE_MULTICAST value 'none' {FLAGS}"),
    ("SPYRE_JIT_OPT", "7", "invalid SPYRE_JIT_OPT value '7' (expected one of O0, O2, 0, 2, tiered)"),
    ("SPYRE_JIT_TIMES", "-1", f"invalid SPYRE_JIT_TIMES value '-1' {FLAGS}"),
    ("SPYRE_JIT_DEBUG", "gdb", f"invalid SPYRE_JIT_DEBUG value 'gdb' {FLAGS}"),
    ("SPYRE_JIT_GENERIC_NESTS", "half", f"invalid SPYRE_JIT_GENERIC_NESTS value 'half' {FLAGS}"),
    ("SPYRE_JIT_SHARE_B", "2", f"invalid SPYRE_JIT_SHARE_B value '2' {FLAGS}"),
    ("SPYRE_JIT_TINY_M", "-1", "invalid SPYRE_JIT_TINY_M value '-1' (expected an integer in 0..4096)"),
    ("SPYRE_DEVICE_COUNT", "0", "invalid SPYRE_DEVICE_COUNT value '0' (expected an integer in 1..16)"),
    ("SPYRE_SIM_THREADS", "many", "invalid SPYRE_SIM_THREADS value 'many' (expected an integer in 1..4096)"),
    ("SPYRE_EAGER_CACHE_SIZE", "0", "invalid SPYRE_EAGER_CACHE_SIZE value '0' (expected an integer in 1..1000000)"),
    ("SPYRE_CACHE_MAX_MB", "lots", "invalid SPYRE_CACHE_MAX_MB value 'lots' (expected an integer in 1..1048576)"),
]
COMPILE_TIME = [case for case in INVALID if _config.KNOBS[case[0]].compile_time]

_GRAPH = "graph(%a: f16[4, 64]) {\n  %b = relu(%a) : f16[4, 64]\n  return (%b)\n}\n"


@pytest.mark.parametrize("name,value,message", INVALID)
def test_invalid_value_message(name, value, message):
    with pytest.raises(ConfigError) as info:
        _config.get(name, {name: value})
    assert str(info.value) == message
    assert (info.value.name, info.value.value) == (name, value)
    assert isinstance(info.value, ValueError)


def test_every_checked_knob_has_a_must_fail_case():
    checked = {k.name for k in _config.KNOBS.values() if k.kind != "string"}
    assert checked == {name for name, _, _ in INVALID} | {"SENCORES"}


@pytest.mark.parametrize("name", sorted(_config.KNOBS))
def test_unset_and_empty_mean_the_default(name):
    knob = _config.KNOBS[name]
    assert knob.get({}) == knob.default
    assert knob.get({name: ""}) == knob.default


@pytest.mark.parametrize("raw,value", [("1", True), ("TRUE", True), ("On", True), ("yes", True),
                                       ("0", False), ("false", False), ("OFF", False), ("No", False)])
def test_flag_spellings(raw, value):
    assert _config.get("SPYRE_STRICT", {"SPYRE_STRICT": raw}) is value


def test_typed_values():
    assert _config.get("SPYRE_DEBUG", {"SPYRE_DEBUG": "2"}) == 2
    assert _config.get("SENCORES", {"SENCORES": "7"}) == 7
    assert _config.get("SPYRE_ENGINE", {"SPYRE_ENGINE": "interp"}) == "interp"
    assert _config.get("SPYRE_DUMP_DIR", {"SPYRE_DUMP_DIR": "/tmp/x y"}) == "/tmp/x y"


# ---- at use: the real read sites raise the message ----------------------------------------------


@pytest.mark.parametrize("name,value,message", COMPILE_TIME + [c for c in INVALID if c[0] in
                                                               ("SPYRE_ENGINE", "SPYRE_DEBUG", "TORCH_SPYRE_DEBUG")])
def test_compile_raises_instead_of_a_default(name, value, message, monkeypatch):
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}$"):
        compile_text(_GRAPH)


def test_compile_time_knobs_are_not_a_fallback_reason(monkeypatch):
    """check_graph turns every C++ error into a 'cannot compile' reason; a bad knob must raise
    before it, or the partitioner would quietly run the graph on the CPU."""
    from torch_spyre._lowering import check_text

    monkeypatch.setenv("LX_PLANNING", "maybe")
    with pytest.raises(ConfigError, match=re.escape(f"invalid LX_PLANNING value 'maybe' {FLAGS}")):
        check_text(_GRAPH)


def test_spyre_engine_gpu_does_not_run_on_the_cpu(monkeypatch):
    """It used to fall back: the C++ 'unknown engine' RuntimeError became a CPU partition."""
    monkeypatch.setenv("SPYRE_ENGINE", "gpu")
    torch._dynamo.reset()
    x = torch.randn(5, 64, dtype=torch.float16).to("spyre")
    with pytest.raises(Exception, match=re.escape("invalid SPYRE_ENGINE value 'gpu' (expected one of jit, interp)")):
        torch.compile(lambda a: torch.relu(a) * 2, backend="spyre")(x)


def test_strict_checked_at_fallback(monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "maybe")
    x = torch.randn(3, 7).to("spyre")
    with pytest.raises(ConfigError, match=re.escape(f"invalid SPYRE_STRICT value 'maybe' {FLAGS}")):
        torch.atan(x)


def test_eager_engine_checked(monkeypatch):
    monkeypatch.setenv("SPYRE_ENGINE", "gpu")
    x = torch.randn(3, 1, 77, dtype=torch.float16).to("spyre")  # a shape no other test compiles
    with pytest.raises(ConfigError, match=re.escape("invalid SPYRE_ENGINE value 'gpu' (expected one of jit, interp)")):
        torch.relu(x)


@pytest.mark.parametrize("name,value,message", [c for c in INVALID if c[0] in
                                                ("TORCH_SPYRE_DEBUG", "TORCH_SPYRE_DOWNCAST_WARN")])
def test_device_knobs_checked_at_transfer(name, value, message, monkeypatch):
    """Read by the C++ device (device_options.cpp) through spyre::Env: a RuntimeError with the
    same message."""
    x = torch.arange(4)
    monkeypatch.setenv(name, value)
    with pytest.raises(RuntimeError, match=re.escape(message)):
        x.to("spyre")


def test_bad_sencores_message(monkeypatch):
    """SENCORES keeps torch-spyre's wording (a setup error from the C++ side)."""
    monkeypatch.setenv("SENCORES", "40")
    with pytest.raises(NotImplementedError, match=r"^Unsupported: invalid SENCORES value '?40'?"):
        torch_spyre._C.sencores()


def test_bad_values_do_not_break_import_torch():
    env = dict(os.environ, SENCORES="40", **{name: value for name, value, _ in INVALID})
    code = "import torch\nprint(torch._C._get_privateuse1_backend_name(), hasattr(torch, 'spyre'))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["spyre", "True"], out.stderr


# ---- one owner ------------------------------------------------------------------------------------


def test_user_guide_table_is_generated_from_config():
    text = (ROOT / "docs" / "user-guide.md").read_text()
    m = re.search(r"<!-- env-table:begin[^\n]*-->\n(.*?)<!-- env-table:end -->", text, re.S)
    assert m, "docs/user-guide.md lost its env-table markers"
    assert m.group(1) == _config.markdown_table(), \
        "regenerate the table: .venv/bin/python -c 'from torch_spyre import _config; " \
        "print(_config.markdown_table(), end=\"\")'"


def test_python_modules_read_the_environment_only_through_config():
    pkg = ROOT / "python" / "torch_spyre"
    offenders = []
    for f in sorted(pkg.glob("*.py")):
        if f.name == "_config.py":
            continue
        for i, line in enumerate(f.read_text().splitlines(), 1):
            if re.search(r"os\.environ|os\.getenv|getenv\(", line):
                offenders.append(f"{f.name}:{i}: {line.strip()}")
    assert not offenders, offenders


def test_device_reads_the_environment_in_one_place():
    csrc = ROOT / "python" / "csrc"
    readers = sorted(f.name for f in csrc.glob("device*") if "getenv" in f.read_text())
    assert readers == ["device_options.cpp"]
