"""The worker processes of a parallel lint: how each one starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def _python(code: str, cwd: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=ENV, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_worker_starts_with_the_engine_and_every_rule_imported_and_frozen_and_the_collector_on(tmp_path):
    got = _python("""
        import gc, json, sys
        from lint_rules import api, registry
        assert "libcst" not in sys.modules
        api._start_worker()
        rules = {r.__module__ for r in registry.active_rules().values()}
        print(json.dumps({"gc": gc.isenabled(), "frozen": gc.get_freeze_count(),
                          "libcst": "libcst" in sys.modules, "engine": "lint_rules.engine" in sys.modules,
                          "rules": sorted(rules - set(sys.modules)), "n": len(rules)}))
    """, tmp_path)
    assert got["gc"] is True
    assert got["frozen"] > 10_000  # LibCST's classes and functions, kept out of later collections
    assert got["libcst"] and got["engine"]
    assert got["rules"] == [] and got["n"] > 30


def test_every_worker_of_a_parallel_lint_runs_the_start_up(tmp_path):
    for i in range(40):
        (tmp_path / f"m{i}.py").write_text("import torch\nmodel = torch.nn.DataParallel(model)\n")
    got = _python(f"""
        import json, os
        from lint_rules import api
        started = api._start_worker

        def spy():
            open(os.path.join({str(tmp_path)!r}, f"started-{{os.getpid()}}"), "w").close()
            started()

        api._start_worker = spy
        settings = api.Settings.resolve(isolated=True, select=["TRN301"], cache=False, jobs=2)
        results = list(api.lint_paths([{str(tmp_path)!r}], settings))
        print(json.dumps({{"files": len(results), "findings": sum(len(r.findings) for r in results),
                           "parent": os.getpid()}}))
    """, tmp_path)
    assert got["files"] == 40 and got["findings"] == 40
    started = sorted(p.name for p in tmp_path.glob("started-*"))
    assert len(started) == 2, started  # one per worker, and not the parent
    assert f"started-{got['parent']}" not in started
