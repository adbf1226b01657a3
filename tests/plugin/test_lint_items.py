"""``pytest --torchcheck-lint``: one lint item per collected Python file, in real pytest runs."""

from __future__ import annotations

import json

BUGGY = "import torch\nmodel = torch.nn.DataParallel(model)\n"
CLEAN = "import torch\n\ndef test_ok():\n    assert torch is not None\n"


PREVIEW = '[tool.torchcheck]\npreview = true\n'  # TRN301 is a preview rule


def test_lint_items_pass_and_fail(pytester, inner):
    pytester.makefile(".toml", pyproject=PREVIEW)
    pytester.makepyfile(helper=BUGGY, test_a=CLEAN)
    result = inner.run("--torchcheck-lint")
    result.assert_outcomes(passed=2, failed=1)  # test_ok, lint(test_a.py) pass; lint(helper.py) fails
    result.stdout.fnmatch_lines(["*torchcheck-lint helper.py*", "helper.py:2:9: TRN301 nn.DataParallel*",
                                 "FAILED helper.py::torchcheck-lint*"])


def test_without_the_option_there_are_no_lint_items(pytester, inner):
    pytester.makepyfile(helper=BUGGY, test_a=CLEAN)
    inner.run().assert_outcomes(passed=1)


def test_ini_enables_and_config_applies(pytester, inner):
    pytester.makeini("[pytest]\ntorchcheck_lint = true\n")
    pytester.makepyfile(helper=BUGGY, test_a=CLEAN)
    pytester.makefile(".toml", pyproject='[tool.torchcheck]\n[tool.torchcheck.per-file-ignores]\n"helper.py" = ["TRN3"]\n')
    inner.run().assert_outcomes(passed=3)


def test_results_are_cached_and_torch_is_not_imported(pytester, inner):
    pytester.makefile(".toml", pyproject=PREVIEW)
    pytester.makepyfile(helper=BUGGY, conftest=(
        "import sys\n"
        "def pytest_sessionfinish(session):\n"
        "    open('torch_loaded.txt', 'w').write(str('torch' in sys.modules))\n"))
    inner.run("--torchcheck-lint").assert_outcomes(passed=1, failed=1)  # conftest.py is clean
    from lint_rules.cache import _seal  # an entry is sealed with its digest: a merely edited one is a miss

    entries = {json.loads(e.read_text())["entry"]["path"]: e
               for e in (pytester.path / ".torchcheck_cache").rglob("*.json")}
    assert set(entries) == {"helper.py", "conftest.py"}
    data = json.loads(entries["helper.py"].read_text())["entry"]
    assert [f["code"] for f in data["findings"]] == ["TRN301"]
    data["findings"] = []  # a run served from the cache now passes
    entries["helper.py"].write_text(_seal(json.dumps(data)))
    inner.run("--torchcheck-lint").assert_outcomes(passed=2)
    assert (pytester.path / "torch_loaded.txt").read_text() == "False"
