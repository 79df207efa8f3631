#!/usr/bin/env bash
# Installs everything spyre-jit needs on a fresh Debian 12 machine and builds it. Idempotent:
# a second run only rebuilds what changed.
#   apt: LLVM 19 (and its tools: lit, FileCheck), Boost.Program_options, GoogleTest, nlohmann_json,
#        pybind11, Ninja, ccache; clang 19 with its sanitizer/libFuzzer runtimes (make fuzz)
#   venv: .venv with torch==2.13.0 (the local CPU wheel), numpy, pytest; torch_spyre editable
#   build: build/ (CMake + Ninja), executables in build/bin/, torch_spyre._C next to the package
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

APT_PACKAGES=(cmake ninja-build ccache g++ make llvm-19-dev llvm-19-tools libboost-program-options-dev
              libgtest-dev libgmock-dev nlohmann-json3-dev pybind11-dev zlib1g-dev libzstd-dev libedit-dev
              libxml2-dev libffi-dev clang-19 libclang-rt-19-dev)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[setup] apt-get install ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

PY=$(command -v python3.11 || command -v python3)
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $PY"
  "$PY" -m venv .venv
fi
# torch==2.13.0 resolves to the CPU wheel on this machine's disk; nothing here asks for a torch
# range that could pull another build.
if ! .venv/bin/python -c "import torch, numpy, pytest; assert torch.__version__.startswith('2.13.0')" 2>/dev/null; then
  echo "[setup] pip install torch==2.13.0 numpy pytest"
  .venv/bin/pip install -q --disable-pip-version-check torch==2.13.0 numpy pytest
fi
# The stock-model suite (tests/python/test_models.py) builds models from transformers' config
# classes with random weights (no hub access). Pinned: a release that works with torch 2.13.
if ! .venv/bin/python -c "import transformers; assert transformers.__version__ == '5.24.0'" 2>/dev/null; then
  echo "[setup] pip install transformers==5.24.0"
  .venv/bin/pip install -q --disable-pip-version-check transformers==5.24.0
fi

JOBS=${SPYRE_BUILD_JOBS:-$(nproc)}
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPYRE_WERROR=ON \
    -DPython3_EXECUTABLE="$ROOT/.venv/bin/python"
fi
ninja -C build -j"$JOBS"

if ! .venv/bin/pip show -q torch_spyre >/dev/null 2>&1; then
  echo "[setup] pip install -e . (torch_spyre, editable, no build isolation)"
  TORCH_DEVICE_BACKEND_AUTOLOAD=0 .venv/bin/pip install -q --disable-pip-version-check \
    --no-build-isolation --no-deps -e .
fi
