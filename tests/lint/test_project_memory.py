"""Bounded memory (issue #17): one process linting many files keeps at most a small, constant
amount per file once the file is done, so memory is flat in the number of files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Each generated file imports the previous one's model class (so the cross-file summaries
# are exercised too) and has findings of several rules (so positions and fixes are built).
PROBE = textwrap.dedent('''
    import gc, json, sys, tracemalloc
    from pathlib import Path
    from lint_rules import api
    from lint_rules.config import Config
    from lint_rules.analysis.project_index import index_for

    root, n = Path(sys.argv[1]), int(sys.argv[2])
    index_for(None).max_summaries = 32  # the bounded cache fills within the warm-up
    TEMPLATE = """import torch
    from torch import nn
    from m{prev} import Net{prev}

    class Net{i}(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear({i} + 8, 3)
            self.drop = nn.Dropout(0.1)
            self.act = nn.Sigmoid()

        def forward(self, x):
            return self.act(self.fc(self.drop(x)))

    def train_{i}(loader, opt):
        model = Net{prev}()
        criterion = nn.BCELoss()
        model.train()
        for x, y in loader:
            opt.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            opt.step()
            print(loss.item())
    """
    paths = []
    for i in range(n):
        p = root / f"m{i}.py"
        p.write_text(TEMPLATE.format(i=i, prev=max(i - 1, 0)))
        paths.append(p)

    def lint(ps):
        return sum(len(api.lint_file(p, settings, shown=str(p)).findings) for p in ps)

    settings = api.Settings.resolve(config=Config(), select=["ALL"], preview=True)

    third = n // 3
    # Traced from the start: the bounded summary cache evicts what the warm-up put there, and an untraced
    # entry replaced by a traced one would read as growth.
    tracemalloc.start()
    lint(paths[:third])
    gc.collect()
    a = tracemalloc.get_traced_memory()[0]
    f1 = lint(paths[third:2 * third])
    gc.collect()
    b = tracemalloc.get_traced_memory()[0]
    f2 = lint(paths[2 * third:])
    gc.collect()
    c = tracemalloc.get_traced_memory()[0]
    print(json.dumps({"first": (b - a) / third, "second": (c - b) / (n - 2 * third), "findings": [f1, f2]}))
''')


def test_memory_per_linted_file_is_small_and_flat(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path), "150"], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    # Every file has its findings (TRN502 across files among them): the files were really linted.
    assert out["findings"][0] >= 2 * 50 and out["findings"][1] >= 2 * 50, out
    # A file's tree is ~60 KB of objects; a leak of even one tree per file shows up 30 times over.
    assert out["first"] < 2048 and out["second"] < 2048, f"bytes kept per linted file: {out}"
