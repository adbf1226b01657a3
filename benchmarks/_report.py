"""Small reporting helpers shared by the benchmark scripts (run as ``python benchmarks/X.py``)."""

from __future__ import annotations

import statistics


def stat(xs: list[float]) -> dict:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "samples": xs}


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def table(rows: list[list[str]], right: set[int]) -> str:
    """A plain-text table; columns in ``right`` are right-aligned."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for n, r in enumerate(rows):
        cells = [c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(r)]
        out.append("  " + "  ".join(cells).rstrip())
        if n == 0:
            out.append("  " + "  ".join("-" * w for w in widths))
    return "\n".join(out)


def write_json(path, result: dict, log) -> None:
    """Write ``result`` to ``path`` (a pathlib.Path), creating its folder."""
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    log(f"wrote {path}")
