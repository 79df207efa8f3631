"""``python -m torch_spyre.merge_traces OUT.json IN.rank0.json IN.rank1.json ...``: one
Perfetto view of several ranks' SPYRE_TRACE files (docs/debugging.md)."""

from __future__ import annotations

import sys

from ._trace import merge_traces


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        n = merge_traces(argv[1:], argv[0])
    except ValueError as e:
        print(f"merge_traces: {e}", file=sys.stderr)
        return 1
    print(f"{argv[0]}: {n} events from {len(argv) - 1} rank(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
