#!/usr/bin/env python
"""Is each rule's textbook example caught by a plain ``torchcheck lint``?

The textbook example of a rule is the first code block under ``## Example`` in its documentation (the
rule class's docstring, which ``docs/rules/`` is generated from). Most are fragments (``model =
nn.DataParallel(model)``), so each is completed the way a reader pasting it would: the usual imports
(``torch``, ``dist``, ``nn``, ``F``, ``DataLoader``, ``DistributedSampler``, ``DDP``) when it has none, and a
``class Net(nn.Module):`` around a lone ``def forward(self, ...)``. Each is then linted as a file of
its own, in a temporary folder (no project context, no torch floor), with a plain ``lint`` and with
``--preview``, and counted as caught when the rule reports anything in it.

Issue #22's target: every rule's example caught by a plain lint. A rule that is preview-only, or whose
example shows a shape the rule leaves possible (a fragment that does not show a training loop, a
conditional fallback), is a miss by default and says why in its page's "Confidence" section.

    python benchmarks/textbook.py [--json PATH]

Exit code 0 always (a benchmark, not a test); 2 when the linter could not run.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lint_rules import registry  # noqa: E402

PRELUDE = (
    "import torch\n"
    "import torch.distributed as dist\n"
    "import torch.nn.functional as F\n"
    "from torch import nn\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    "from torch.utils.data import DataLoader, DistributedSampler\n"
)
_EXAMPLE = re.compile(r"## Example\s*```python\n(.*?)```", re.S)


def example(rule: type) -> str | None:
    """The rule's textbook example, completed into a file; None when its docs have none."""
    found = _EXAMPLE.search(inspect.getdoc(rule) or "")
    if found is None:
        return None
    source = found.group(1)
    first = source.lstrip().splitlines()[0] if source.strip() else ""
    if first.startswith("def ") and "(self" in first:
        source = "class Net(nn.Module):\n" + "".join(f"    {line}\n" for line in source.splitlines())
    if "import torch" not in source:
        source = PRELUDE + source
    return source


def caught(source: str, code: str, preview: bool) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "example.py")
        Path(path).write_text(source, encoding="utf-8")
        args = [sys.executable, "-m", "lint_rules", "lint", "--isolated", "--no-cache", "--format", "json", path]
        if preview:
            args.insert(4, "--preview")
        r = subprocess.run(args, capture_output=True, text=True, cwd=tmp)
        if r.returncode not in (0, 1):
            raise SystemExit(f"textbook: the linter failed on {code}'s example (exit {r.returncode}):\n{r.stderr}")
        return any(f["code"] == code for f in json.loads(r.stdout or "[]"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the per-rule results here")
    args = parser.parse_args(argv)
    rows = []
    for code, rule in sorted(registry.all_rules().items()):
        source = example(rule)
        if source is None:
            rows.append({"code": code, "tier": "-", "default": None, "preview": None})
            continue
        tier = "preview" if registry.is_preview(code) else "default"
        if code in getattr(registry, "CERTAIN_CORE", ()):
            tier = "core"
        rows.append({"code": code, "tier": tier, "default": caught(source, code, False),
                     "preview": caught(source, code, True)})
    mark = {True: "yes", False: "no", None: "-"}
    print(f"{'rule':8}{'tier':9}{'plain lint':12}--preview")
    for row in rows:
        print(f"{row['code']:8}{row['tier']:9}{mark[row['default']]:12}{mark[row['preview']]}")
    counted = [r for r in rows if r["default"] is not None]
    plain = sum(r["default"] for r in counted)
    preview = sum(r["preview"] for r in counted)
    print(f"\ncaught by a plain lint: {plain} of {len(counted)} ({plain / len(counted):.0%}); "
          f"with --preview: {preview} of {len(counted)} ({preview / len(counted):.0%})")
    missed = [r["code"] for r in counted if not r["default"]]
    print(f"missed by a plain lint: {', '.join(missed) if missed else 'none'}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
