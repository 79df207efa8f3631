# lit configuration of spyre-jit's text tests: one stage per test (graph -> graph after a pass,
# SuperDSC JSON -> listing, listing -> verifier error), checked with FileCheck or diff. ctest runs
# each *.test file as its own test (tests/CMakeLists.txt passes the tool paths as --param):
#   lit -v --param spyre_bin=build/bin --param llvm_bin=/usr/lib/llvm-19/bin \
#       --param exec_root=build/tests/lit tests/lit/<dir>/<name>.test
import os
import re

import lit.formats

config.name = "spyre"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = lit_config.params.get("exec_root", os.path.join(config.test_source_root, "Output"))

spyre_bin = lit_config.params.get("spyre_bin")
llvm_bin = lit_config.params.get("llvm_bin", "/usr/lib/llvm-19/bin")
if not spyre_bin:
    lit_config.fatal("give --param spyre_bin=<build>/bin (ctest does)")

tests_dir = os.path.dirname(config.test_source_root)
config.substitutions.append(("%golden", os.path.join(tests_dir, "golden")))
config.substitutions.append(("%sdsc", os.path.join(tests_dir, "sdsc")))
config.substitutions.append(("%kernels", os.path.join(tests_dir, "kernels")))


def tool(name, path):
    # A tool name at a command position (not inside a path or another word) becomes its path.
    config.substitutions.append((r"(?<![\w/.%-])" + re.escape(name) + r"(?![\w/.-])", path))


for name in ("spyre-opt", "spyre-isa-dump", "spyre-jit-bench"):
    tool(name, os.path.join(spyre_bin, name))
for name in ("FileCheck", "not", "split-file"):
    tool(name, os.path.join(llvm_bin, name))

# Library behaviour must not depend on the caller's environment: lit passes only a few
# variables through; none of the SPYRE_* / SENCORES / LX_PLANNING knobs.
for var in list(config.environment):
    if var.startswith("SPYRE_") or var in ("SENCORES", "LX_PLANNING"):
        del config.environment[var]
