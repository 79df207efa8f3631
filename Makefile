# The two commands of the README. Both run the idempotent set-up first.
.PHONY: demo test setup

setup:
	@bash .ci/setup.sh

demo: setup
	.venv/bin/python -m torch_spyre.demo

test: setup
	cd build && ctest --output-on-failure -j2
	.venv/bin/python -m pytest -q tests/python
