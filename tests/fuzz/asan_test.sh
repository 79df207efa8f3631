#!/usr/bin/env bash
# The C++ tests (everything ctest runs: GoogleTest, the tools, lit) built with AddressSanitizer +
# UndefinedBehaviorSanitizer in build-asan/ (gcc; the Python extension is not built). Any
# sanitizer report fails its test. Extra arguments go to ctest (e.g. -R '^lit\.'). No -Werror:
# the sanitizers make gcc warn where the normal build does not.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${ASAN_BUILD_DIR:-$ROOT/build-asan}
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DSPYRE_SANITIZE=ON -DSPYRE_BUILD_PYTHON=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" -DPython3_EXECUTABLE="$ROOT/.venv/bin/python" >/dev/null
fi
ninja -C "$BUILD" -j"${SPYRE_BUILD_JOBS:-$(nproc)}"
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$BUILD" && ctest --output-on-failure -j"${SPYRE_TEST_JOBS:-2}" "$@"
