"""bench/ktir_compare.py without a ktir-cpu checkout: it says what it needs and exits with 2
(ktir-cpu is not vendored; the benchmark takes a checkout's path), before importing torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "ktir_compare.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_missing_checkout_exits_2_with_the_expected_layout(tmp_path):
    r = _run(str(tmp_path / "nowhere"))
    assert r.returncode == 2
    assert "no ktir-cpu checkout at" in r.stderr
    assert "ktir_cpu/__init__.py" in r.stderr and r.stdout == ""


def test_a_directory_without_the_package_is_not_a_checkout(tmp_path):
    (tmp_path / "examples").mkdir()
    r = _run(str(tmp_path))
    assert r.returncode == 2 and "no ktir-cpu checkout at" in r.stderr


def test_unknown_kernel_names_are_refused(tmp_path):
    (tmp_path / "ktir_cpu").mkdir()
    (tmp_path / "ktir_cpu" / "__init__.py").write_text("")
    (tmp_path / "examples").mkdir()
    r = _run(str(tmp_path), "--kernels", "vector_add,nosuch")
    assert r.returncode == 2
    assert "unknown kernel(s) nosuch" in r.stderr and "vector_add" in r.stderr
