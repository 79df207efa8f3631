# The two commands of the README. Both run the idempotent set-up first.
.PHONY: demo test setup fuzz fuzz-regress fuzz-long asan-test

setup:
	@bash .ci/setup.sh

demo: setup
	.venv/bin/python -m torch_spyre.demo

test: setup
	cd build && ctest --output-on-failure -j2
	TORCHINDUCTOR_ERROR_ON_CUSTOM_OP_ALIASING=1 .venv/bin/python -m pytest -q tests/python

# Hostile input (docs/fuzzing.md). The fuzz harnesses build in build-fuzz/ (clang-19, libFuzzer,
# ASan + UBSan). fuzz: every checked-in corpus input once, then FUZZ_SECONDS (default 10) of
# mutation per harness (what CI runs); fuzz-regress: the corpus only; fuzz-long: an hour each.
# A fixed seed: a finding in CI reproduces with `make fuzz`; fuzz-long draws a fresh one.
FUZZ_SECONDS ?= 10
FUZZ_SEED ?= 1
fuzz: setup
	FUZZ_SEED=$(FUZZ_SEED) tests/fuzz/run.sh --seconds $(FUZZ_SECONDS)

fuzz-regress: setup
	tests/fuzz/run.sh --regress

fuzz-long: setup
	tests/fuzz/run.sh --seconds $(if $(filter command line environment,$(origin FUZZ_SECONDS)),$(FUZZ_SECONDS),3600)

# The C++ unit tests (ctest: GoogleTest, tools, lit) built with ASan + UBSan in build-asan/.
asan-test: setup
	tests/fuzz/asan_test.sh
