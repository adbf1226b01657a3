"""The CLI, run as a subprocess the way pre-commit and CI call it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

BUGGY_LOOP = textwrap.dedent(
    """\
    import torch
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.zero_grad()
        opt.step()
    """
)
DATA_PARALLEL = "import torch\nmodel = torch.nn.DataParallel(model)\n"
CLEAN = "import torch\nx = torch.zeros(3)\n"


def with_preview(args: tuple[str, ...]) -> tuple[str, ...]:
    """``lint`` with every rule: these CLI tests use preview rules (TRN301, TRN701) as their example
    findings; which rules are on by default is tested in test_registry_preview.py."""
    if args and args[0] == "lint" and "--no-preview" not in args:
        return (args[0], "--preview", *args[1:])
    return args


def run(*args: str, cwd: Path, stdin: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    # This checkout's package, whatever is installed: the subprocess runs the code under test.
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    args = with_preview(args)
    return subprocess.run(
        [sys.executable, "-m", "lint_rules", *args],
        cwd=cwd, input=stdin, capture_output=True, text=True, timeout=120, env=full_env,
    )


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


# ---------------------------------------------------------------- exit codes
def test_exit_0_when_clean(tmp_path):
    write(tmp_path, {"a.py": CLEAN})
    r = run("lint", ".", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "All checks passed (1 file checked)." in r.stdout


def test_exit_1_with_findings_and_text_format(tmp_path):
    write(tmp_path, {"train.py": BUGGY_LOOP})
    r = run("lint", "train.py", cwd=tmp_path)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines[0].startswith("train.py:7:5: TRN101 ")
    assert lines[-1] == "Found 1 finding in 1 file (1 file checked)."


def test_exit_zero_flag(tmp_path):
    write(tmp_path, {"train.py": BUGGY_LOOP})
    r = run("lint", "--exit-zero", "train.py", cwd=tmp_path)
    assert r.returncode == 0
    assert "TRN101" in r.stdout


def test_default_path_is_cwd_and_output_is_sorted(tmp_path):
    write(tmp_path, {"b.py": DATA_PARALLEL, "a/z.py": BUGGY_LOOP + DATA_PARALLEL, "a/y.py": DATA_PARALLEL})
    r = run("lint", cwd=tmp_path)
    assert r.returncode == 1
    found = [line.split(": ", 1)[0] for line in r.stdout.splitlines() if re.match(r"^\S+:\d+:\d+: TRN", line)]
    assert found == ["a/y.py:2:9", "a/z.py:7:5", "a/z.py:10:9", "b.py:2:9"]


def test_skips_git_venv_build_and_pyvenv_directories(tmp_path):
    write(tmp_path, {
        "keep.py": DATA_PARALLEL,
        ".git/x.py": DATA_PARALLEL,
        ".venv/lib/x.py": DATA_PARALLEL,
        "build/x.py": DATA_PARALLEL,
        "myenv/pyvenv.cfg": "home = /usr\n",
        "myenv/lib/x.py": DATA_PARALLEL,
        "pkg.egg-info/x.py": DATA_PARALLEL,
    })
    r = run("lint", "--format", "json", ".", cwd=tmp_path)
    assert {f["path"] for f in json.loads(r.stdout)} == {"keep.py"}


def test_missing_path_is_usage_error(tmp_path):
    r = run("lint", "nope.py", cwd=tmp_path)
    assert r.returncode == 2
    assert "'nope.py' does not exist" in r.stderr
    assert "Traceback" not in r.stderr


def test_bad_option_value_is_usage_error(tmp_path):
    r = run("lint", "--format", "xml", ".", cwd=tmp_path)
    assert r.returncode == 2
    assert "invalid choice: 'xml'" in r.stderr


# ------------------------------------------------------------------- formats
def test_json_schema(tmp_path):
    write(tmp_path, {"train.py": BUGGY_LOOP})
    r = run("lint", "--format", "json", "train.py", cwd=tmp_path)
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data == [{
        "path": "train.py", "line": 7, "column": 5, "end_line": 7, "end_column": 20,
        "code": "TRN101", "name": "zero-grad-between-backward-and-step",
        "message": data[0]["message"], "severity": "error", "fix": None, "confidence": "certain",
        "url": "https://torchcheck.readthedocs.io/en/latest/rules/zero-grad-between-backward-and-step/",
    }]
    assert "zero gradients" in data[0]["message"]


def test_json_empty_list_when_clean(tmp_path):
    write(tmp_path, {"a.py": CLEAN})
    r = run("lint", "--format", "json", ".", cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout) == []


# ------------------------------------------------------------------ selection
@pytest.mark.parametrize(
    ("args", "codes"),
    [
        ([], {"TRN101", "TRN301"}),
        (["--select", "TRN1"], {"TRN101"}),
        (["--select", "TRN301"], {"TRN301"}),
        (["--select", "TRN1", "--extend-select", "TRN3"], {"TRN101", "TRN301"}),
        (["--ignore", "TRN101"], {"TRN301"}),
        (["--select", "ALL", "--ignore", "TRN3,TRN101"], set()),
    ],
)
def test_select_extend_select_ignore(tmp_path, args, codes):
    write(tmp_path, {"t.py": BUGGY_LOOP + DATA_PARALLEL})
    r = run("lint", "--format", "json", *args, "t.py", cwd=tmp_path)
    assert {f["code"] for f in json.loads(r.stdout)} == codes
    assert r.returncode == (1 if codes else 0)


def test_unknown_code_is_named(tmp_path):
    write(tmp_path, {"t.py": CLEAN})
    r = run("lint", "--select", "TRN101,TRN777", "t.py", cwd=tmp_path)
    assert r.returncode == 2
    assert "'TRN777'" in r.stderr and "--select" in r.stderr
    assert "Traceback" not in r.stderr


# --------------------------------------------------------------- suppression
@pytest.mark.parametrize(
    ("comment", "suppressed"),
    [
        ("# noqa", True),
        ("# noqa: TRN101", True),
        ("# noqa: E501, TRN101", True),
        ("# noqa:TRN201", False),
        ("# torchcheck: ignore[TRN101]", True),
        ("# torchcheck: ignore[TRN102]", False),
        ("# torchcheck: ignore", True),
    ],
)
def test_suppression_comments(tmp_path, comment, suppressed):
    src = BUGGY_LOOP.replace("opt.zero_grad()", f"opt.zero_grad()  {comment}")
    write(tmp_path, {"t.py": src})
    r = run("lint", "--format", "json", "t.py", cwd=tmp_path)
    assert (json.loads(r.stdout) == []) is suppressed


def test_noqa_inside_a_string_does_not_suppress(tmp_path):
    src = BUGGY_LOOP.replace("opt.zero_grad()", 'opt.zero_grad(); s = "# noqa"')
    write(tmp_path, {"t.py": src})
    r = run("lint", "--format", "json", "t.py", cwd=tmp_path)
    assert [f["code"] for f in json.loads(r.stdout)] == ["TRN101"]


def test_skip_file(tmp_path):
    write(tmp_path, {"t.py": "# torchcheck: skip-file\n" + BUGGY_LOOP})
    r = run("lint", "t.py", cwd=tmp_path)
    assert r.returncode == 0


# --------------------------------------------------------------- bad files
def test_syntax_error_is_reported_and_other_files_still_linted(tmp_path):
    write(tmp_path, {"bad.py": "import torch\ndef f(:\n    pass\n", "good.py": DATA_PARALLEL})
    r = run("lint", "--format", "json", ".", cwd=tmp_path)
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert [(f["path"], f["code"], f["name"], f["line"]) for f in data] == [
        ("bad.py", "TRN000", "syntax-error", 2), ("good.py", "TRN301", "data-parallel", 2)]
    assert data[0]["column"] >= 1


def test_undecodable_file_is_an_error_naming_it_not_a_traceback(tmp_path):
    (tmp_path / "bin.py").write_bytes(b"import torch\nx = '\xff\xfe'\n")
    r = run("lint", "bin.py", cwd=tmp_path)
    assert r.returncode == 2  # as an unreadable file: it was not checked
    assert "torchcheck: error: cannot decode bin.py: byte 0xff at line 2, column 6" in r.stderr
    assert "TRN000" not in r.stdout and "Traceback" not in r.stderr


def test_crashing_rule_yields_internal_error_and_keeps_other_findings(tmp_path):
    write(tmp_path, {"t.py": BUGGY_LOOP + DATA_PARALLEL})
    script = textwrap.dedent(
        """
        import sys
        from lint_rules.rules import trn301_data_parallel as m
        def boom(self, node):
            raise ZeroDivisionError("kaput")
        m.DataParallel.visit_Call = boom
        from lint_rules.cli import main
        sys.exit(main(["lint", "--preview", "--format", "json", "t.py"]))
        """
    )
    r = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    data = json.loads(r.stdout)
    assert [f["code"] for f in data] == ["TRN001", "TRN101"]
    assert "TRN301" in data[0]["message"] and "ZeroDivisionError: kaput" in data[0]["message"]


# ------------------------------------------------------------------ stdin
def test_stdin_with_filename(tmp_path):
    r = run("lint", "--stdin-filename", "src/train.py", "-", cwd=tmp_path, stdin=BUGGY_LOOP)
    assert r.returncode == 1
    assert r.stdout.startswith("src/train.py:7:5: TRN101")


def test_stdin_default_name(tmp_path):
    r = run("lint", "-", cwd=tmp_path, stdin=DATA_PARALLEL)
    assert r.stdout.startswith("-:2:9: TRN301")


# ----------------------------------------------------------- configuration
def test_config_select_ignore_exclude_per_file_ignores(tmp_path):
    write(tmp_path, {
        "pyproject.toml": textwrap.dedent(
            """
            [tool.torchcheck]
            select = ["TRN1", "TRN3"]
            ignore = ["TRN102"]
            exclude = ["vendored", "legacy/*.py"]
            [tool.torchcheck.per-file-ignores]
            "scripts/*.py" = ["TRN301"]
            """
        ),
        "train.py": BUGGY_LOOP + DATA_PARALLEL,
        "scripts/run.py": DATA_PARALLEL,
        "vendored/x.py": DATA_PARALLEL,
        "legacy/old.py": DATA_PARALLEL,
    })
    r = run("lint", "--format", "json", cwd=tmp_path)
    assert sorted((f["path"], f["code"]) for f in json.loads(r.stdout)) == [
        ("train.py", "TRN101"), ("train.py", "TRN301")]
    # Excludes also apply to files passed explicitly, as pre-commit passes them.
    r = run("lint", "--format", "json", "legacy/old.py", cwd=tmp_path)
    assert json.loads(r.stdout) == [] and r.returncode == 0
    # The command line replaces the configured selection.
    r = run("lint", "--format", "json", "--select", "TRN301", "train.py", cwd=tmp_path)
    assert [f["code"] for f in json.loads(r.stdout)] == ["TRN301"]


def test_config_found_from_subdirectory(tmp_path):
    write(tmp_path, {"pyproject.toml": '[tool.torchcheck]\nignore = ["TRN301"]\n', "sub/t.py": DATA_PARALLEL})
    r = run("lint", ".", cwd=tmp_path / "sub")
    assert r.returncode == 0, r.stdout


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ('[tool.torchcheck]\nselcet = ["TRN1"]\n', ["unknown key 'selcet'", "allowed keys: select"]),
        ('[tool.torchcheck]\nselect = "TRN1"\n', ["select", "must be a list of strings", "'TRN1'"]),
        ('[tool.torchcheck]\nignore = [101]\n', ["ignore", "must be a list of strings", "[101]"]),
        ('[tool.torchcheck]\nselect = ["TRN1", "TRX9"]\n', ["'TRX9'", "[tool.torchcheck] select"]),
        ('[tool.torchcheck.per-file-ignores]\n"a.py" = ["TRN999"]\n', ["'TRN999'", "per-file-ignores"]),
        ('[tool.torchcheck]\nselect = [\n', ["not valid TOML"]),
    ],
)
def test_bad_config_is_exit_2_naming_key_value_and_file(tmp_path, toml, expected):
    write(tmp_path, {"pyproject.toml": toml, "t.py": CLEAN})
    r = run("lint", "t.py", cwd=tmp_path)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    for text in expected:
        assert text in r.stderr
    assert str(tmp_path / "pyproject.toml") in r.stderr


def test_isolated_ignores_config(tmp_path):
    write(tmp_path, {"pyproject.toml": '[tool.torchcheck]\nignore = ["TRN301"]\n', "t.py": DATA_PARALLEL})
    assert run("lint", "t.py", cwd=tmp_path).returncode == 0
    assert run("lint", "--isolated", "t.py", cwd=tmp_path).returncode == 1


# ------------------------------------------------------ rules and explain
def test_rules_lists_every_rule():
    r = run("rules", cwd=REPO)
    assert r.returncode == 0
    codes = re.findall(r"^(TRN\d{3})\s+(\S+)\s+\S", r.stdout, re.M)
    assert ("TRN101", "zero-grad-between-backward-and-step") in codes
    assert ("TRN000", "syntax-error") in codes
    assert len(codes) >= 10


def test_rules_is_a_table_with_severity_tier_and_fix_that_fits_100_columns():
    r = run("rules", cwd=REPO)
    lines = r.stdout.splitlines()
    assert re.match(r"^CODE +NAME +SEVERITY +TIER +FIX +SUMMARY$", lines[0])
    assert max(len(line) for line in lines) <= 100
    rows = {line.split()[0]: line.split()[1:5] for line in lines[1:]}
    assert rows["TRN101"] == ["zero-grad-between-backward-and-step", "error", "default", "-"]
    assert rows["TRN301"] == ["data-parallel", "warning", "core", "-"]  # preview, with a certain core
    assert rows["TRN202"][2] == "preview"
    assert rows["TRN503"][1:] == ["warning", "core", "safe"]  # a core, and a safe fix
    assert rows["TRN000"][1:3] == ["error", "builtin"]
    assert rows["TRN903"] == ["replicas-diverged", "error", "runtime", "-"]  # torchcheck run's own
    assert not any(line.endswith("(preview)") for line in lines)


def test_rules_json_has_every_field_in_full():
    r = run("rules", "--format", "json", cwd=REPO)
    entries = {e["code"]: e for e in json.loads(r.stdout)}
    assert len(entries["TRN103"]["name"]) > 36 and not entries["TRN103"]["summary"].endswith("…")
    assert entries["TRN503"]["fix"] == "safe" and entries["TRN301"]["tier"] == "core"
    assert entries["TRN301"]["preview"] is True and entries["TRN301"]["certain_core"] is True
    assert entries["TRN101"]["url"].endswith("/rules/zero-grad-between-backward-and-step/")


@pytest.mark.parametrize(("args", "usage", "hint"), [
    (("lint", "--selct", "TRN1", "."), "usage: torchcheck lint ", "unrecognized arguments: --selct (did you mean "
                                                                   "'--select'?)"),
    (("lint", "--output-flie=r.txt", "."), "usage: torchcheck lint ", "(did you mean '--output-file'?)"),
    (("rules", "--formt", "json"), "usage: torchcheck rules ", "(did you mean '--format'?)"),
    (("--verson",), "usage: torchcheck [", "(did you mean '--version'?)"),
])
def test_an_unknown_option_prints_its_commands_usage_and_a_suggestion(tmp_path, args, usage, hint):
    r = subprocess.run([sys.executable, "-m", "lint_rules", *args], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(usage), r.stderr
    assert r.stderr.rstrip().splitlines()[-1].endswith(hint), r.stderr


@pytest.mark.parametrize(("args", "config", "hint"), [
    (("--select", "TRN1011"), None, "'TRN1011' (did you mean 'TRN101'?) in --select"),
    (("--ignore", "data-parallel"), None, "'data-parallel' (did you mean 'TRN301', data-parallel?) in --ignore"),
    (("--extend-select", "zero-grad-between-backward-and-stp"), None,
     "(did you mean 'TRN101', zero-grad-between-backward-and-step?)"),
    ((), 'select = ["TRN1011"]', "'TRN1011' (did you mean 'TRN101'?) in [tool.torchcheck] select"),
    ((), 'selct = ["TRN1"]', "unknown key 'selct' (did you mean 'select'?) in [tool.torchcheck]"),
    ((), 'per-file-ignores = {"t.py" = ["TRN3O1"]}', "'TRN3O1' (did you mean 'TRN301'?)"),
])
def test_unknown_codes_and_keys_get_a_suggestion(tmp_path, args, config, hint):
    write(tmp_path, {"t.py": CLEAN})
    if config is not None:
        write(tmp_path, {"pyproject.toml": f"[tool.torchcheck]\n{config}\n"})
    r = run("lint", *args, "t.py", cwd=tmp_path)
    assert r.returncode == 2 and hint in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_an_unrelated_code_gets_no_suggestion(tmp_path):
    write(tmp_path, {"t.py": CLEAN})
    r = run("lint", "--select", "TRN999", "t.py", cwd=tmp_path)
    assert r.returncode == 2 and "'TRN999' in --select" in r.stderr and "did you mean" not in r.stderr


def test_explain_prints_documentation():
    r = run("explain", "TRN101", cwd=REPO)
    assert r.returncode == 0
    for section in ("## What it does", "## Why is this bad?", "Use instead:", "## References"):
        assert section in r.stdout
    by_name = run("explain", "zero-grad-between-backward-and-step", cwd=REPO)
    assert by_name.stdout == r.stdout


def test_explain_shows_what_torchcheck_run_watches():
    r = run("explain", "TRN101", cwd=REPO)
    assert "## At run time\nObserved" in r.stdout  # the rule's runtime check
    own = run("explain", "replicas-diverged", cwd=REPO)  # a runtime-only code, by name
    assert own.returncode == 0 and own.stdout.startswith("# TRN903 replicas-diverged")
    assert "## What it does" in own.stdout and "## At run time" in own.stdout


def test_a_runtime_only_code_is_a_valid_selector(tmp_path):
    # a configuration shared by lint and run may name torchcheck run's codes; lint has nothing to run
    write(tmp_path, {"t.py": CLEAN, "pyproject.toml": '[tool.torchcheck]\nextend-select = ["TRN9"]\n'})
    r = run("lint", "--select", "TRN101,TRN903", "t.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert run("lint", "t.py", cwd=tmp_path).returncode == 0


def test_explain_unknown_code():
    r = run("explain", "TRN555", cwd=REPO)
    assert r.returncode == 2 and "'TRN555'" in r.stderr


def test_no_command_is_usage_error():
    r = run(cwd=REPO)
    assert r.returncode == 2


# ------------------------------------------------------------- pre-commit
def _hook_entry() -> list[str]:
    text = (REPO / ".pre-commit-hooks.yaml").read_text()
    assert re.search(r"^- id: torchcheck$", text, re.M)
    # notebooks and stubs too, and one process for all files: one summary line, not one per batch
    assert re.search(r"^\s+types_or: \[python, pyi, jupyter\]$", text, re.M)
    assert re.search(r"^\s+require_serial: true$", text, re.M)
    entry = re.search(r"^\s+entry: (.+)$", text, re.M).group(1).split()
    assert entry[0] == "torchcheck"
    return entry[1:]


def test_precommit_entry_with_no_files_exits_0(tmp_path):
    write(tmp_path, {"t.py": DATA_PARALLEL})  # must not be linted implicitly
    r = run(*_hook_entry(), cwd=tmp_path)
    assert r.returncode == 0, r.stdout


def test_precommit_entry_with_staged_files(tmp_path):
    write(tmp_path, {"a.py": DATA_PARALLEL, "b.py": CLEAN, "c.py": BUGGY_LOOP})
    r = run(*_hook_entry(), "a.py", "b.py", cwd=tmp_path)
    assert r.returncode == 1
    assert "a.py:2:9: TRN301" in r.stdout and "c.py" not in r.stdout


def test_precommit_entry_lints_notebooks_and_stubs_with_one_summary(tmp_path):
    notebook = {"cells": [{"cell_type": "code", "source": DATA_PARALLEL, "metadata": {}, "outputs": [],
                           "execution_count": None}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(notebook))
    write(tmp_path, {"a.py": DATA_PARALLEL, "stubs.pyi": DATA_PARALLEL})
    r = run(*_hook_entry(), "a.py", "stubs.pyi", "nb.ipynb", cwd=tmp_path)
    assert r.returncode == 1
    assert "nb.ipynb:cell 1:2:9: TRN301" in r.stdout and "stubs.pyi:2:9: TRN301" in r.stdout
    assert [line for line in r.stdout.splitlines() if line.startswith("Found")] == [
        "Found 3 findings in 3 files (3 files checked)."]


def test_readme_install_and_hook_snippets_name_things_that_exist():
    """No `rev:` a user cannot fetch (there is no tag yet), and no install from a package index that
    does not carry the distribution (an unrelated project owns the name `torchcheck` on PyPI)."""
    docs = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    readme = "\n".join(p.read_text() for p in docs)
    assert "rev:" in readme and "pip install" in readme  # the snippets are still somewhere to check
    tags = subprocess.run(["git", "-C", str(REPO), "tag"], capture_output=True, text=True, timeout=60).stdout.split()
    for rev in re.findall(r"^\s*rev: (\S+)", readme, re.M):
        assert rev.startswith("<") or rev in tags, f"README pins the hook to {rev!r}, which does not exist"
    for spec in re.findall(r"pip install (?:-e )?\"(pytest-torchcheck[^\"]*|[^\"]*torchcheck[^\"]*)\"", readme):
        assert "git+" in spec or spec.startswith(("/", ".")), f"README installs {spec!r} from a package index"


def test_console_script_installed():
    exe = shutil.which("torchcheck")
    assert exe, "the torchcheck console script is not on PATH"
    r = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("torchcheck ")


# ------------------------------------------------------------- parallelism
def test_parallel_output_matches_serial(tmp_path):
    # Sizes vary (workers take the largest files first), yet output keeps discovery order.
    files = {f"m{i:02d}.py": (BUGGY_LOOP if i % 3 else DATA_PARALLEL) + "# padding\n" * ((i * 37) % 200)
             for i in range(40)}
    files["bad.py"] = "import torch\ndef f(:\n"
    write(tmp_path, files)
    serial = run("lint", "-j", "1", "--format", "json", ".", cwd=tmp_path)
    parallel = run("lint", "-j", "2", "--format", "json", ".", cwd=tmp_path)
    assert serial.returncode == parallel.returncode == 1
    assert parallel.stdout == serial.stdout
    assert len(json.loads(serial.stdout)) == 41


@pytest.mark.parametrize("value", ["0", "two", "-3"])
def test_bad_jobs_value(tmp_path, value):
    r = run("lint", "-j", value, ".", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "--jobs" in r.stderr


# --------------------------------------------------------------- severity
def test_fail_on_error_ignores_warnings(tmp_path):
    write(tmp_path, {"w.py": DATA_PARALLEL, "e.py": BUGGY_LOOP})  # TRN301 is a warning, TRN101 an error
    assert run("lint", "--fail-on", "error", "w.py", cwd=tmp_path).returncode == 0
    assert run("lint", "--fail-on", "error", "e.py", cwd=tmp_path).returncode == 1
    assert run("lint", "w.py", cwd=tmp_path).returncode == 1  # default: warning
    write(tmp_path, {"pyproject.toml": '[tool.torchcheck]\nfail-on = "error"\n'})
    assert run("lint", "w.py", cwd=tmp_path).returncode == 0
    r = run("lint", "--format", "json", "w.py", cwd=tmp_path)
    assert json.loads(r.stdout)[0]["severity"] == "warning"


def test_bad_fail_on_config(tmp_path):
    write(tmp_path, {"pyproject.toml": '[tool.torchcheck]\nfail-on = "fatal"\n', "t.py": CLEAN})
    r = run("lint", "t.py", cwd=tmp_path)
    assert r.returncode == 2 and "'fatal'" in r.stderr and "fail-on" in r.stderr


# ------------------------------------------------------------------ formats
def _positions_from(fmt: str, stdout: str) -> list[tuple]:
    if fmt == "json":
        return [(f["path"], f["line"], f["column"], f["code"]) for f in json.loads(stdout)]
    if fmt == "json-lines":
        return [(f["path"], f["line"], f["column"], f["code"]) for f in map(json.loads, stdout.splitlines())]
    if fmt == "gitlab":
        return sorted((f["location"]["path"], f["location"]["positions"]["begin"]["line"],
                       f["location"]["positions"]["begin"]["column"], f["check_name"].split()[0])
                      for f in json.loads(stdout))
    if fmt == "sarif":
        return sorted((r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                       r["locations"][0]["physicalLocation"]["region"]["startLine"],
                       r["locations"][0]["physicalLocation"]["region"]["startColumn"], r["ruleId"])
                      for r in json.loads(stdout)["runs"][0]["results"])
    if fmt == "junit":
        from xml.etree import ElementTree as ET

        text = "\n".join(el.text or "" for el in ET.fromstring(stdout).iter("failure"))
        return sorted(_positions_from("concise", text))
    if fmt == "github":
        out = []
        for line in stdout.splitlines():
            m = re.match(r"^::(error|warning) file=([^,]+),line=(\d+),col=(\d+),endLine=\d+,endColumn=\d+,"
                         r"title=(TRN\d{3}) \(.*\)::", line)
            out.append((m.group(2), int(m.group(3)), int(m.group(4)), m.group(5)))
        return out
    return [(m.group(1), int(m.group(2)), int(m.group(3)), m.group(4))
            for m in re.finditer(r"^(\S+):(\d+):(\d+): (TRN\d{3}) ", stdout, re.M)]


def test_every_format_reports_identical_positions(tmp_path):
    write(tmp_path, {"a.py": BUGGY_LOOP + DATA_PARALLEL, "b.py": DATA_PARALLEL, "bad.py": "import torch\nx = (\n"})
    seen = {}
    for fmt in ("text", "concise", "json", "json-lines", "github", "junit", "gitlab", "sarif"):
        r = run("lint", "--format", fmt, ".", cwd=tmp_path)
        assert r.returncode == 1, (fmt, r.stderr)
        seen[fmt] = sorted(_positions_from(fmt, r.stdout))
    assert len(seen["json"]) == 4
    assert all(v == seen["json"] for v in seen.values()), seen


def test_junit_has_one_case_per_checked_file(tmp_path):
    from xml.etree import ElementTree as ET

    write(tmp_path, {"a.py": DATA_PARALLEL, "b.py": CLEAN, "c.py": BUGGY_LOOP})
    r = run("lint", "--format", "junit", ".", cwd=tmp_path)
    suite = ET.fromstring(r.stdout).find("testsuite")
    cases = {c.get("name"): c.find("failure") for c in suite.iter("testcase")}
    assert set(cases) == {"a.py", "b.py", "c.py"}
    assert cases["b.py"] is None and cases["a.py"].get("type") == "TRN301"
    assert suite.get("tests") == "3" and suite.get("failures") == "2"


def test_github_annotations_escape_and_levels(tmp_path):
    write(tmp_path, {"we,ird:name.py": DATA_PARALLEL + BUGGY_LOOP})
    r = run("lint", "--format", "github", ".", cwd=tmp_path)
    lines = r.stdout.splitlines()
    assert lines[0].startswith("::warning file=we%2Cird%3Aname.py,line=2,col=9,")
    assert any(line.startswith("::error file=we%2Cird%3Aname.py,") and "TRN101" in line for line in lines)


def test_output_file_and_show_source(tmp_path):
    write(tmp_path, {"t.py": BUGGY_LOOP + DATA_PARALLEL + DATA_PARALLEL.replace("import torch\n", "")})
    r = run("lint", "--output-file", "report.txt", "--show-source", "t.py", cwd=tmp_path)
    assert r.returncode == 1 and r.stdout == ""
    report = (tmp_path / "report.txt").read_text()
    assert "    7 |     opt.zero_grad()\n            ^^^^^^^^^^^^^^^\n" in report
    assert report.rstrip().endswith("Found 3 findings in 1 file (1 file checked).")


@pytest.mark.parametrize("output_file", [False, True])
def test_statistics_prints_only_the_table(tmp_path, output_file):
    # As Ruff's --statistics: the count per rule instead of the findings, and nothing else.
    write(tmp_path, {"t.py": BUGGY_LOOP + DATA_PARALLEL + DATA_PARALLEL.replace("import torch\n", "")})
    extra = ["--output-file", "report.txt"] if output_file else []
    r = run("lint", *extra, "--statistics", "--show-source", "t.py", cwd=tmp_path)
    assert r.returncode == 1
    report = (tmp_path / "report.txt").read_text() if output_file else r.stdout
    assert report == "2  TRN301  data-parallel\n1  TRN101  zero-grad-between-backward-and-step\n"


def test_output_file_unwritable(tmp_path):
    write(tmp_path, {"t.py": CLEAN})
    r = run("lint", "--output-file", "no/such/dir/r.txt", "t.py", cwd=tmp_path)
    assert r.returncode == 2 and "--output-file 'no/such/dir/r.txt'" in r.stderr and "Traceback" not in r.stderr


# -------------------------------------------------------------------- cache
def _tamper_cache(root: Path) -> int:
    """Plant a fake finding in every cache entry, sealed with its digest as the linter seals an entry (a
    merely edited entry is a miss); a run that shows it was served from the cache."""
    from lint_rules.cache import _seal

    n = 0
    for entry in (root / ".torchcheck_cache").rglob("*.json"):
        data = json.loads(entry.read_text())["entry"]
        data["findings"].append({"path": data["path"], "line": 1, "column": 1, "end_line": 1, "end_column": 2,
                                 "code": "TRN999", "name": "from-the-cache", "message": "cached",
                                 "severity": "error", "cell": None, "fix": None, "confidence": "certain"})
        entry.write_text(_seal(json.dumps(data)))
        n += 1
    return n


def test_cache_is_used_and_never_stale(tmp_path):
    write(tmp_path, {"t.py": BUGGY_LOOP + DATA_PARALLEL})
    first = run("lint", "--format", "json", "t.py", cwd=tmp_path)
    assert (tmp_path / ".torchcheck_cache" / ".gitignore").read_text().strip().endswith("*")
    assert _tamper_cache(tmp_path) == 1
    again = run("lint", "--format", "json", "t.py", cwd=tmp_path)
    assert "TRN999" in {f["code"] for f in json.loads(again.stdout)}, "second run did not use the cache"
    assert [f for f in json.loads(again.stdout) if f["code"] != "TRN999"] == json.loads(first.stdout)
    # another rule set, another config, other content, or --no-cache: never the stale entry
    other_rules = run("lint", "--format", "json", "--select", "TRN3", "t.py", cwd=tmp_path)
    assert [f["code"] for f in json.loads(other_rules.stdout)] == ["TRN301"]
    write(tmp_path, {"pyproject.toml": '[tool.torchcheck]\n[tool.torchcheck.per-file-ignores]\n"t.py" = ["TRN1"]\n'})
    other_config = run("lint", "--format", "json", "t.py", cwd=tmp_path)
    assert [f["code"] for f in json.loads(other_config.stdout)] == ["TRN301"]
    (tmp_path / "pyproject.toml").unlink()
    no_cache = run("lint", "--format", "json", "--no-cache", "t.py", cwd=tmp_path)
    assert "TRN999" not in no_cache.stdout
    write(tmp_path, {"t.py": BUGGY_LOOP + DATA_PARALLEL + "# edited\n"})
    edited = run("lint", "--format", "json", "t.py", cwd=tmp_path)
    assert "TRN999" not in edited.stdout and len(json.loads(edited.stdout)) == 2


def test_no_cache_and_cache_dir(tmp_path):
    write(tmp_path, {"t.py": DATA_PARALLEL})
    run("lint", "--no-cache", "t.py", cwd=tmp_path)
    assert not (tmp_path / ".torchcheck_cache").exists()
    run("lint", "--cache-dir", "elsewhere", "t.py", cwd=tmp_path)
    assert list((tmp_path / "elsewhere").rglob("*.json")) and not (tmp_path / ".torchcheck_cache").exists()


# -------------------------------------------------- unused suppressions (TRN002)
def test_unused_and_unknown_suppressions_are_opt_in(tmp_path):
    src = (DATA_PARALLEL.replace("(model)", "(model)  # noqa: TRN301")
           + "x = 1  # noqa: TRN301, E501\n"
           + "y = 2  # torchcheck: ignore[TRN10]\n"
           + "z = 3  # torchcheck: ignore\n"
           + "w = 4  # noqa\n"
           + "v = 5  # noqa: TRN201\n")
    write(tmp_path, {"t.py": src})
    assert run("lint", "t.py", cwd=tmp_path).returncode == 0  # off by default
    r = run("lint", "--format", "json", "--extend-select", "TRN002", "t.py", cwd=tmp_path)
    got = [(f["line"], f["code"], f["message"]) for f in json.loads(r.stdout)]
    assert got == [
        (3, "TRN002", "Unused suppression: no TRN301 finding on this line"),
        (4, "TRN002", "Unknown torchcheck code TRN10 in a suppression comment (did you mean 'TRN109'?)"),
        (5, "TRN002", "`# torchcheck: ignore` suppresses nothing on this line"),
        (7, "TRN002", "Unused suppression: no TRN201 finding on this line"),
    ], got
    # a rule that is not enabled is not judged
    r = run("lint", "--format", "json", "--select", "TRN3,TRN002", "t.py", cwd=tmp_path)
    assert 7 not in [f["line"] for f in json.loads(r.stdout)]


# ------------------------------------------------------------- duplicates
def test_a_link_to_a_file_of_the_tree_is_linted_reported_and_fixed_once(tmp_path):
    source = "import torch\nx = torch.log(torch.softmax(y, dim=1))\nmodel = torch.nn.DataParallel(model)\n"
    write(tmp_path, {"train.py": source})
    (tmp_path / "link.py").symlink_to("train.py")
    assert run("lint", "--show-files", ".", cwd=tmp_path).stdout == "train.py\n"
    assert run("lint", "--show-files", "train.py", "link.py", "./train.py", cwd=tmp_path).stdout == "train.py\n"
    r = run("lint", "--format", "json", ".", cwd=tmp_path)
    assert sorted(f["code"] for f in json.loads(r.stdout)) == ["TRN301", "TRN503"]
    r = run("lint", "--fix", "--show-fixes", ".", cwd=tmp_path)
    assert "Found 2 findings (1 fixed, 1 remaining); 1 file checked." in r.stdout
    assert "    1 × TRN503 (log-of-softmax)" in r.stdout
    assert (tmp_path / "link.py").is_symlink() and "torch.log_softmax(y, dim=1)" in (tmp_path / "train.py").read_text()


# ------------------------------------------------------- a full device
@pytest.mark.parametrize(("args", "files"), [
    (("lint", "--no-cache", "t.py"), {"t.py": CLEAN}),  # a clean file: one short line, written at the end
    (("lint", "--no-cache", "--format", "json", "t.py"), {"t.py": BUGGY_LOOP + DATA_PARALLEL}),
    (("rules",), {}),
])
def test_standard_output_on_a_full_device_is_one_line_and_exit_2(tmp_path, args, files):
    write(tmp_path, files)
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "lint_rules", *args], cwd=tmp_path, stdout=full,
                           stderr=subprocess.PIPE, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.stderr == "torchcheck: cannot write the report to standard output: No space left on device\n"
    assert r.returncode == 2


# ----------------------------------------------------------- closed pipes
def _run_into_closed_pipe(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run the CLI with standard output a pipe whose reader is already gone, as `| head` leaves it
    once head has its lines: every write fails with EPIPE, deterministically."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", "lint_rules", *args], cwd=cwd, stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    finally:
        os.close(write_end)


@pytest.mark.parametrize("args", [("explain", "TRN101"), ("rules",), ("rules", "--format", "json"),
                                  ("lint", "--no-cache", "t.py"), ("lint", "--no-cache", "--format", "json", "t.py")])
def test_closed_pipe_ends_quietly(tmp_path, args):
    write(tmp_path, {"t.py": BUGGY_LOOP + DATA_PARALLEL})
    r = _run_into_closed_pipe(*args, cwd=tmp_path)
    assert r.stderr == "", r.stderr  # no BrokenPipeError traceback, no "Exception ignored"
    assert r.returncode == 141  # 128 + SIGPIPE, what the shell reports for `yes | head`
