"""Adopting torchcheck on a legacy codebase: ``--add-noqa``, a baseline file, ``--show-files`` and
``--show-settings``, run as a subprocess."""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

from tests.lint.test_cli import BUGGY_LOOP, DATA_PARALLEL, run, write

LEGACY = textwrap.dedent(
    """\
    import torch
    model = torch.nn.DataParallel(model)  # keep this comment
    m2 = torch.nn.DataParallel(m2)  # noqa: E501
    m3 = torch.nn.DataParallel(m3)  # type: ignore[name-defined]
    doc = torch.nn.DataParallel(\"\"\"a
    b\"\"\")
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.zero_grad()
        opt.step()
    """
)
WITH_NOQA = textwrap.dedent(
    """\
    import torch
    model = torch.nn.DataParallel(model)  # keep this comment  # noqa: TRN301
    m2 = torch.nn.DataParallel(m2)  # noqa: E501, TRN301
    m3 = torch.nn.DataParallel(m3)  # type: ignore[name-defined]  # noqa: TRN301
    doc = torch.nn.DataParallel(\"\"\"a
    b\"\"\")
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.zero_grad()  # noqa: TRN101
        opt.step()
    """
)


# ------------------------------------------------------------------ --add-noqa
def test_add_noqa_suppresses_every_finding_keeping_comments_and_is_idempotent(tmp_path):
    write(tmp_path, {"legacy.py": LEGACY, "clean.py": "import torch\n"})
    r = run("lint", "--add-noqa", ".", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "legacy.py").read_text() == WITH_NOQA
    assert r.stdout == "Added 4 noqa codes to 1 file.\n"
    # the finding that starts inside a multi-line string cannot carry a comment: said, not broken
    assert "legacy.py: no comment can end line 5" in r.stderr
    after = run("lint", "--format", "json", ".", cwd=tmp_path)
    assert [(f["line"], f["code"]) for f in json.loads(after.stdout)] == [(5, "TRN301")]
    again = run("lint", "--add-noqa", ".", cwd=tmp_path)
    assert (tmp_path / "legacy.py").read_text() == WITH_NOQA
    assert again.stdout == "Added 0 noqa codes to 0 files.\n"
    # the comments added are used: TRN002 (unused suppressions) has nothing to say
    unused = run("lint", "--format", "json", "--extend-select", "TRN002", "legacy.py", cwd=tmp_path)
    assert [f["code"] for f in json.loads(unused.stdout)] == ["TRN301"]


def test_add_noqa_keeps_line_endings_and_encoding(tmp_path):
    latin = "# -*- coding: latin-1 -*-\r\n" + DATA_PARALLEL.replace("\n", "\r\n") + "s = 'caf\xe9'\r\n"
    (tmp_path / "t.py").write_bytes(latin.encode("latin-1"))
    r = run("lint", "--add-noqa", "t.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "t.py").read_bytes() == latin.replace(
        "DataParallel(model)\r\n", "DataParallel(model)  # noqa: TRN301\r\n").encode("latin-1")


def test_add_noqa_leaves_syntax_errors_reported(tmp_path):
    write(tmp_path, {"bad.py": "import torch\ndef f(:\n"})
    r = run("lint", "--add-noqa", "bad.py", cwd=tmp_path)
    assert (tmp_path / "bad.py").read_text() == "import torch\ndef f(:\n"
    assert r.stdout == "Added 0 noqa codes to 0 files.\n"


@pytest.mark.parametrize(("args", "given"), [(["--fix"], "--fix"), (["--diff"], "--diff"),
                                             (["-"], "standard input")])
def test_add_noqa_with_fix_diff_or_stdin_is_a_usage_error(tmp_path, args, given):
    write(tmp_path, {"t.py": DATA_PARALLEL})
    r = run("lint", "--add-noqa", *args, *([] if "-" in args else ["t.py"]), cwd=tmp_path, stdin="")
    assert r.returncode == 2 and given in r.stderr and "Traceback" not in r.stderr
    assert (tmp_path / "t.py").read_text() == DATA_PARALLEL


# -------------------------------------------------------------------- baseline
def test_baseline_hides_recorded_findings_and_survives_edits_above_them(tmp_path):
    write(tmp_path, {"train.py": BUGGY_LOOP + DATA_PARALLEL, "other.py": DATA_PARALLEL})
    r = run("lint", "--baseline", "tc-baseline.json", "--write-baseline", ".", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Wrote 3 findings to the baseline tc-baseline.json." in r.stderr
    data = json.loads((tmp_path / "tc-baseline.json").read_text())
    assert {(e["path"], e["code"], e["content"]) for e in data["findings"]} == {
        ("train.py", "TRN101", "opt.zero_grad()"), ("train.py", "TRN301", "model = torch.nn.DataParallel(model)"),
        ("other.py", "TRN301", "model = torch.nn.DataParallel(model)")}

    r = run("lint", "--baseline", "tc-baseline.json", ".", cwd=tmp_path)
    assert r.returncode == 0 and "All checks passed (2 files checked)." in r.stdout
    assert "3 findings in the baseline tc-baseline.json not shown" in r.stderr

    # Lines added above, indentation changed: still accepted. A new finding is reported.
    edited = ("# a header\n\n" + (BUGGY_LOOP + DATA_PARALLEL).replace("    opt.zero_grad()", "    opt.zero_grad( )")
              + "other = torch.nn.DataParallel(other)\n")
    write(tmp_path, {"train.py": edited})
    r = run("lint", "--format", "json", "--baseline", "tc-baseline.json", ".", cwd=tmp_path)
    assert [(f["path"], f["line"], f["code"]) for f in json.loads(r.stdout)] == [
        ("train.py", 9, "TRN101"),  # its line's text changed: a different line now
        ("train.py", 13, "TRN301")]
    assert r.returncode == 1
    assert "1 baseline entry matched nothing" in r.stderr


def test_baseline_counts_identical_lines(tmp_path):
    write(tmp_path, {"t.py": DATA_PARALLEL + "model = torch.nn.DataParallel(model)\n"})
    run("lint", "--baseline", "b.json", "--write-baseline", "t.py", cwd=tmp_path)
    write(tmp_path, {"t.py": DATA_PARALLEL + "model = torch.nn.DataParallel(model)\n" * 2})
    r = run("lint", "--format", "json", "--baseline", "b.json", "t.py", cwd=tmp_path)
    assert [f["line"] for f in json.loads(r.stdout)] == [4]  # two accepted, the third is new


def test_baseline_paths_are_relative_to_the_baseline_file(tmp_path):
    write(tmp_path, {"pkg/t.py": DATA_PARALLEL})
    run("lint", "--baseline", "b.json", "--write-baseline", ".", cwd=tmp_path)
    assert json.loads((tmp_path / "b.json").read_text())["findings"][0]["path"] == "pkg/t.py"
    r = run("lint", "--baseline", "../b.json", ".", cwd=tmp_path / "pkg")
    assert r.returncode == 0, r.stdout


def test_syntax_errors_are_never_baselined(tmp_path):
    write(tmp_path, {"bad.py": "import torch\ndef f(:\n"})
    run("lint", "--baseline", "b.json", "--write-baseline", ".", cwd=tmp_path)
    assert json.loads((tmp_path / "b.json").read_text())["findings"] == []
    assert run("lint", "--baseline", "b.json", ".", cwd=tmp_path).returncode == 1


@pytest.mark.parametrize(("content", "args", "message"), [
    (None, ["--baseline", "b.json"], "--baseline 'b.json': no such file; create it with --write-baseline"),
    ("{not json", ["--baseline", "b.json"], "--baseline 'b.json': not a torchcheck baseline (invalid JSON"),
    ('{"version": 7, "findings": []}', ["--baseline", "b.json"], "not a torchcheck baseline of version 1"),
    ('{"version": 1, "findings": [{"path": 1}]}', ["--baseline", "b.json"],
     "every entry of 'findings' needs string 'path', 'code' and 'content'"),
    (None, ["--write-baseline"], "--write-baseline needs --baseline FILE"),
])
def test_bad_baseline_is_a_usage_error(tmp_path, content, args, message):
    write(tmp_path, {"t.py": DATA_PARALLEL, **({"b.json": content} if content is not None else {})})
    r = run("lint", *args, "t.py", cwd=tmp_path)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


# ------------------------------------------------- --show-files, --show-settings
def test_show_files_lists_what_would_be_linted(tmp_path):
    write(tmp_path, {"pyproject.toml": '[tool.torchcheck]\nexclude = ["vendored"]\n', "a.py": DATA_PARALLEL,
                     "pkg/b.py": "", "nb.ipynb": "{}", "vendored/c.py": "", "notes.txt": ""})
    r = run("lint", "--show-files", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.splitlines() == ["a.py", "nb.ipynb", "pkg/b.py"]


def test_show_settings_names_config_rules_and_torch_bound(tmp_path):
    write(tmp_path, {
        "pyproject.toml": textwrap.dedent("""\
            [project]
            name = "p"
            dependencies = ["torch>=2.1"]
            [tool.torchcheck]
            select = ["TRN1", "TRN3"]
            ignore = ["TRN102"]
            [tool.torchcheck.per-file-ignores]
            "scripts/*.py" = ["TRN301"]
            """),
        "scripts/run.py": DATA_PARALLEL,
    })
    r = run("lint", "--show-settings", "scripts/run.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = dict((k, v.strip()) for k, v in (line.split(":", 1) for line in r.stdout.splitlines()))
    assert rows["path"] == "scripts/run.py"
    assert rows["configuration"] == f"{tmp_path / 'pyproject.toml'} [tool.torchcheck]"
    count, rules = rows["rules"].split(": ")
    assert "TRN101" in rules and "TRN301" not in rules and "TRN102" not in rules
    assert int(count) == len(rules.split(", "))
    assert rows["turned off here by per-file-ignores"] == "TRN301"
    assert rows["torch lower bound"] == f">= 2.1 (from {tmp_path / 'pyproject.toml'})"
    r = run("lint", "--show-settings", "--isolated", "scripts/run.py", cwd=tmp_path)
    assert "none (--isolated)" in r.stdout


# ------------------------------------------------------------------ the settings in [tool.torchcheck]
def test_baseline_setting_in_pyproject_is_used_from_any_directory(tmp_path):
    write(tmp_path, {"pyproject.toml": '[tool.torchcheck]\nbaseline = "ci/tc-baseline.json"\n',
                     "pkg/t.py": DATA_PARALLEL, "ci/.keep": ""})
    w = run("lint", "--write-baseline", ".", cwd=tmp_path)
    assert w.returncode == 0, w.stderr
    assert (tmp_path / "ci" / "tc-baseline.json").is_file()  # relative to the pyproject.toml
    r = run("lint", ".", cwd=tmp_path / "pkg")
    assert r.returncode == 0 and "1 finding in the baseline" in r.stderr, r.stdout + r.stderr
    # --baseline on the command line replaces the setting; --isolated drops it
    assert run("lint", "--isolated", ".", cwd=tmp_path / "pkg").returncode == 1
    shown = run("lint", "--show-settings", "pkg/t.py", cwd=tmp_path)
    assert "ci/tc-baseline.json" in shown.stdout


@pytest.mark.parametrize(("value", "message"), [
    ("1", "[tool.torchcheck] baseline in "),
    ('""', "must be a file path (a non-empty string), got ''"),
    ('"yes"', None),
])
def test_bad_baseline_setting_is_named(tmp_path, value, message):
    write(tmp_path, {"pyproject.toml": f"[tool.torchcheck]\nbaseline = {value}\n", "t.py": DATA_PARALLEL})
    r = run("lint", "t.py", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    if message is None:  # a path that does not exist: the baseline file is named, as with --baseline
        assert "yes" in r.stderr
    else:
        assert message in r.stderr


def test_respect_gitignore_setting_and_flag(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=60)
    write(tmp_path, {".gitignore": "gen/\n", "a.py": DATA_PARALLEL, "gen/g.py": DATA_PARALLEL})
    paths = lambda r: {f["path"] for f in json.loads(r.stdout)}  # noqa: E731
    assert paths(run("lint", "--format", "json", ".", cwd=tmp_path)) == {"a.py"}
    write(tmp_path, {"pyproject.toml": "[tool.torchcheck]\nrespect-gitignore = false\n"})
    assert paths(run("lint", "--format", "json", ".", cwd=tmp_path)) == {"a.py", "gen/g.py"}
    shown = run("lint", "--show-settings", "a.py", cwd=tmp_path).stdout
    assert shown.split("respect .gitignore:")[1].split("\n")[0].strip() == "no"
    # the flag overrides the setting
    assert paths(run("lint", "--format", "json", "--respect-gitignore", ".", cwd=tmp_path)) == {"a.py"}
    write(tmp_path, {"pyproject.toml": '[tool.torchcheck]\nrespect-gitignore = "no"\n'})
    bad = run("lint", ".", cwd=tmp_path)
    assert bad.returncode == 2 and "respect-gitignore" in bad.stderr and "must be true or false" in bad.stderr
