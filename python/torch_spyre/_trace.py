"""SPYRE_TRACE under several ranks: each rank writes its own Perfetto file, and
``python -m torch_spyre.merge_traces`` joins them into one view with a process per rank.

Under torchrun (``WORLD_SIZE`` > 1 and ``RANK`` set), ``SPYRE_TRACE=t.json`` becomes
``t.rank<R>.json`` for rank R before the card is first used (the simulator opens the file on
its first kernel); without that every rank would write the same file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterable, MutableMapping

__all__ = ["rank_trace_path", "per_rank_trace", "merge_traces"]


def rank_trace_path(path: str, rank: int) -> str:
    """``t.json`` -> ``t.rank<rank>.json`` (the suffix kept last so viewers recognise it)."""
    p = Path(path)
    return str(p.with_name(f"{p.stem}.rank{rank}{p.suffix or '.json'}"))


def per_rank_trace(environ: MutableMapping[str, str]) -> None:
    """Rewrites SPYRE_TRACE in ``environ`` (the process environment, passed by
    ``_config.per_rank_trace``) for this rank when torchrun's RANK/WORLD_SIZE say there are
    several; a path already naming the rank (``.rank<R>.``) is left alone."""
    path = environ.get("SPYRE_TRACE")
    rank, world = environ.get("RANK"), environ.get("WORLD_SIZE")
    if not path or rank is None or world is None:
        return
    try:
        r, w = int(rank), int(world)
    except ValueError:
        return  # torch.distributed reports malformed torchrun variables itself
    if w > 1 and f".rank{r}." not in Path(path).name + ".":
        environ["SPYRE_TRACE"] = rank_trace_path(path, r)


_RANK_IN_NAME = re.compile(r"\.rank(\d+)\.")


def merge_traces(inputs: Iterable[str], output: str) -> int:
    """Joins per-rank traces into one: rank R's events move to pid R + 1 and its process is
    named "Spyre card, rank R (simulated time)". The rank comes from the file name
    (``.rank<R>.``), else from the input order. Returns the number of events written."""
    events: list[dict] = []
    meta: dict = {}
    for order, path in enumerate(inputs):
        m = _RANK_IN_NAME.search(Path(path).name + ".")
        rank = int(m.group(1)) if m else order
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"{path}: not a SPYRE_TRACE file ({e})") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
            raise ValueError(f"{path}: not a SPYRE_TRACE file (no traceEvents list)")
        meta = meta or {k: v for k, v in doc.items() if k != "traceEvents"}
        for ev in doc["traceEvents"]:
            ev = dict(ev, pid=rank + 1)
            if ev.get("ph") == "M" and ev.get("name") == "process_name":
                ev["args"] = {"name": f"Spyre card, rank {rank} (simulated time)"}
            events.append(ev)
    with open(output, "w") as f:
        json.dump(dict(meta, traceEvents=events), f)
    return len(events)
