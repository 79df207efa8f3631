#!/usr/bin/env bash
# The fuzz harnesses of tests/fuzz (docs/fuzzing.md). Builds build-fuzz/ (clang-19, ASan + UBSan
# + libFuzzer; only the libraries the harnesses link) and runs every harness, or those named:
#   tests/fuzz/run.sh [--regress | --seconds N] [harness...]
#   --regress    every file of corpus/<h>/ and findings/<h>/fixed/ once
#   --seconds N  the same, then N seconds of mutation per harness (default: FUZZ_SECONDS or 10)
# Fails when any input gives a finding; new ones are saved in build-fuzz/findings/<h>/.
# FUZZ_KEEP_GOING=1: fork mode, keep fuzzing past findings (FUZZ_JOBS parallel jobs, default 1).
# FUZZ_MAX_LEN: largest input in bytes (default 16384, docs/fuzzing.md). FUZZ_NICE: default 10.
# FUZZ_TIMEOUT: seconds per input (default 10; libFuzzer's clock is wall time, so a run niced on a
# busy machine needs more: an input of 0.45 s took 12 s at nice 19 with a load of 9).
# FUZZ_SEED: libFuzzer's -seed (default 0: a fresh random seed; `make fuzz`, what CI runs, uses 1
# so that a CI finding reproduces with the same command).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
HERE=$ROOT/tests/fuzz
BUILD=${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
ALL=(fuzz_sdsc fuzz_listing fuzz_graph fuzz_code_cache)

mode=random
seconds=${FUZZ_SECONDS:-10}
harnesses=()
while (($#)); do
  case "$1" in
    --regress) mode=regress ;;
    --seconds) seconds=$2; shift ;;
    -h|--help) sed -n 2,11p "$0"; exit 0 ;;
    fuzz_*) harnesses+=("$1") ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
((${#harnesses[@]})) || harnesses=("${ALL[@]}")
NICE=(nice -n "${FUZZ_NICE:-10}")

if [ ! -f "$BUILD/build.ninja" ]; then
  # -O2 with assertions kept (no NDEBUG): internal invariants are findings too. No -Werror:
  # clang warns where gcc (the -Werror build) does not.
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DSPYRE_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g" \
    -DCMAKE_CXX_COMPILER="${FUZZ_CXX:-clang++-19}" -DCMAKE_C_COMPILER="${FUZZ_CC:-clang-19}" >/dev/null
fi
"${NICE[@]}" ninja -C "$BUILD" -j"${SPYRE_BUILD_JOBS:-$(nproc)}" "${harnesses[@]}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Per input at most FUZZ_TIMEOUT (10 s; the slowest corpus input takes well under 1 s) and 2 GiB.
FLAGS=(-timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -max_len="${FUZZ_MAX_LEN:-16384}" -print_final_stats=1)

status=0
for h in "${harnesses[@]}"; do
  out=$BUILD/findings/$h
  mkdir -p "$out"
  dict=()
  [ -f "$HERE/dict/$h.dict" ] && dict=(-dict="$HERE/dict/$h.dict")
  inputs=("$HERE/corpus/$h")
  [ -d "$HERE/findings/$h/fixed" ] && inputs+=("$HERE/findings/$h/fixed")
  echo "== $h: regress ($(find "${inputs[@]}" -type f | wc -l) inputs)"
  if ! "${NICE[@]}" "$BUILD/bin/$h" "${FLAGS[@]}" -runs=0 -artifact_prefix="$out/" "${inputs[@]}" \
       > "$out/regress.log" 2>&1; then
    echo "FAIL $h (regress), log: $out/regress.log"
    grep -m1 -A8 "FINDING\|ERROR: \|==ERROR\|runtime error" "$out/regress.log" || tail -n 20 "$out/regress.log"
    status=1
    continue
  fi
  [ "$mode" = regress ] && continue

  # Mutation, on a scratch corpus in build-fuzz/ seeded by the checked-in one.
  work=$BUILD/corpus/$h
  mkdir -p "$work"
  mode_flags=()
  if [ "${FUZZ_KEEP_GOING:-0}" = 1 ]; then
    mode_flags=(-fork="${FUZZ_JOBS:-1}" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  fi
  echo "== $h: ${seconds} s of mutation"
  rc=0
  "${NICE[@]}" "$BUILD/bin/$h" "${FLAGS[@]}" "${dict[@]}" "${mode_flags[@]}" -seed="${FUZZ_SEED:-0}" -max_total_time="$seconds" \
    -artifact_prefix="$out/" "$work" "$HERE/corpus/$h" > "$out/fuzz.log" 2>&1 || rc=$?
  found=$(find "$out" -maxdepth 1 \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) \
          -newer "$out/regress.log" | wc -l)
  grep -h "stat::number_of_executed_units\|stat::peak_rss_mb" "$out/fuzz.log" | sed "s/^/   /" || true
  grep -ho "cov: [0-9]* ft: [0-9]*" "$out/fuzz.log" | tail -n 1 | sed "s/^/   /" || true
  if [ "$rc" != 0 ] || [ "$found" -gt 0 ]; then
    echo "FAIL $h: $found finding(s) in $out/, log: $out/fuzz.log"
    grep -m1 -A8 "FINDING\|ERROR: \|==ERROR\|runtime error" "$out/fuzz.log" || tail -n 20 "$out/fuzz.log"
    status=1
  fi
done
exit $status
