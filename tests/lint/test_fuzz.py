"""Fuzzing the linter and its fixes with generated programs and seeded mutations of the bundled
sources (fixtures and every rule's examples).

A plain ``pytest`` run checks a bounded number of inputs (well under a minute). Deeper runs:
``pytest -m fuzz`` checks ``DEEP`` inputs per test, and ``TORCHCHECK_FUZZ_EXAMPLES=N`` sets the
number of inputs per test whatever the selection; ``TORCHCHECK_FUZZ_SEED`` picks the first
mutation seed (a failure message names the seed that reproduces it).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from lint_rules import suppression
from lint_rules.diagnostics import Finding
from tests.lint.fuzzing import mutate as mutation
from tests.lint.fuzzing.mutate import mutate
from tests.lint.fuzzing.programs import ROOT, fixable, host, hosts, sources, torch_programs
from tests.lint.fuzzing.properties import (
    CODES, Hang, PropertyFailed, check_fixes, check_lint, check_positions, parses, time_limit)

pytestmark = pytest.mark.fuzz

# Inputs per test: bounded for every plain run (CI), deep for `pytest -m fuzz`.
BOUNDED = {"mutants": 120, "programs": 25, "cli_files": 24}
DEEP = {"mutants": 5000, "programs": 2000, "cli_files": 300}
ENV_EXAMPLES = "TORCHCHECK_FUZZ_EXAMPLES"
ENV_SEED = "TORCHCHECK_FUZZ_SEED"


@dataclass(frozen=True)
class Budget:
    deep: bool
    examples: int | None  # from the environment: overrides every count
    seed: int

    def count(self, what: str) -> int:
        if self.examples is not None:
            return self.examples
        return (DEEP if self.deep else BOUNDED)[what]


def _env_int(name: str, default: int | None, minimum: int = 0) -> int | None:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        pytest.fail(f"{name}={raw!r} in the environment: expected a whole number >= {minimum}", pytrace=False)
    return value


@pytest.fixture(scope="module")
def budget(request: pytest.FixtureRequest) -> Budget:
    """How many inputs each fuzz test tries, and the first mutation seed."""
    deep = "fuzz" in (request.config.getoption("markexpr") or "")
    seed = _env_int(ENV_SEED, random.randrange(2**31) if deep else 0)
    print(f"fuzz seed: {ENV_SEED}={seed}")  # shown with a failing test's captured output
    return Budget(deep, _env_int(ENV_EXAMPLES, None, minimum=1), seed)


def _rerun(seed: int, test: str) -> str:
    return f"{ENV_SEED}={seed} {ENV_EXAMPLES}=1 python -m pytest 'tests/lint/test_fuzz.py::{test}'"


def _fail(failures: list[str], tried: int, what: str) -> None:
    __tracebackhide__ = True
    shown = "\n\n".join(failures[:5])
    pytest.fail(f"{len(failures)} of {tried} {what} broke a property:\n\n{shown}", pytrace=False)


# ------------------------------------------------------------------ in process
def test_mutated_sources_keep_every_property(budget: Budget) -> None:
    texts = sources()
    failures: list[str] = []
    applied: set[str] = set()
    parsed = fixed = 0
    n = budget.count("mutants")
    for seed in range(budget.seed, budget.seed + n):
        name, text = host(seed)
        mutant = mutate(text, seed, texts, codes=sorted(CODES))
        applied.update(op.split(" ")[0] for op in mutant.operations)
        parsed += parses(mutant.source)
        try:
            fixed += check_fixes(mutant.source) != mutant.source
        except (PropertyFailed, Hang, Exception) as e:
            failures.append(f"mutant of {name} ({mutant.describe()}): {type(e).__name__}: {e}\n"
                            f"  rerun: {_rerun(seed, 'test_mutated_sources_keep_every_property')}")
    if failures:
        _fail(failures, n, "mutants")
    if n >= BOUNDED["mutants"]:  # the fuzzer itself: every operation ran, and most mutants still parse
        assert applied == set(mutation.OPERATION_NAMES) | {"delete-line", "line-endings"}, applied
        assert 0.6 * n <= parsed < n, f"{parsed} of {n} mutants parse"
        assert fixed >= 0.1 * n, f"only {fixed} of {n} mutants had a fix applied"


def test_generated_programs_keep_every_property(budget: Budget) -> None:
    # Bounded runs draw the same programs every time (no flaky CI); deep runs draw new ones and
    # keep failures in Hypothesis's database, which replays them first next time.
    @settings(max_examples=budget.count("programs"), deadline=None, derandomize=not budget.deep,
              database=None if not budget.deep else settings.default.database,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                     HealthCheck.data_too_large, HealthCheck.large_base_example])
    @given(torch_programs())
    def run(source: str) -> None:
        check_fixes(source)

    run()


def test_a_fix_never_edits_a_line_suppressed_for_another_code() -> None:
    # Targeted rather than random: on every fixable source, each fix's first edited line gets a
    # noqa for some other torchcheck code. The finding is still reported, its fix is not applied.
    tried = 0
    for name, source in fixable():
        for f in check_lint(source).findings:
            if f.fix is None:
                continue
            other = "TRN201" if f.code != "TRN201" else "TRN202"
            lines = source.split("\n")
            k = f.fix.edits[0].line - 1
            lines[k] += f"  # noqa: {other}"
            marked = "\n".join(lines)
            if not parses(marked) or other not in suppression.suppressions(marked).get(k + 1, ()):
                continue  # the line ends inside a string or with a backslash
            fixed = check_fixes(marked)
            assert lines[k] in fixed.split("\n"), f"{name}: the fix for {f.code} edited line {k + 1}"
            assert (f.code, f.line) in {(g.code, g.line) for g in check_lint(fixed).findings}, name
            tried += 1
    assert tried >= 30, tried


# ------------------------------------------------------------------ the CLI, as a subprocess
def _cli_files(tmp: Path, n: int, seed: int, starts: tuple[tuple[str, str], ...]) -> Path:
    """``n`` mutants of ``starts`` as files, a few with byte-level oddities only the CLI sees (a
    BOM, a Latin-1 coding cookie, CRLF line ends)."""
    texts = sources()
    folder = tmp / "fuzzed"
    folder.mkdir()
    for k, s in enumerate(range(seed, seed + n)):
        text = mutate(host(s, starts)[1], s, texts, codes=sorted(CODES)).source
        if k % 8 == 1:
            data = b"\xef\xbb\xbf" + text.encode("utf-8")
        elif k % 8 == 2:
            data = ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + text).encode("latin-1", "replace")
        elif k % 8 == 3:
            data = text.replace("\r\n", "\n").replace("\n", "\r\n").encode("utf-8")
        else:
            data = text.encode("utf-8")
        (folder / f"m{k:04d}.py").write_bytes(data)
    return folder


def _cli(*args: str, cwd: Path, hash_seed: str) -> subprocess.CompletedProcess:
    # PYTHONPATH: this checkout's code, not the one installed.
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--isolated", "--preview", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=600, env=env)


def _clean(r: subprocess.CompletedProcess) -> None:
    __tracebackhide__ = True
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode in (0, 1), f"exit {r.returncode}\n{r.stderr}\n{r.stdout[-2000:]}"


def test_cli_output_is_the_same_for_any_job_count_hash_seed_and_cache(tmp_path: Path, budget: Budget) -> None:
    folder = _cli_files(tmp_path, max(budget.count("cli_files"), 17), budget.seed, hosts())  # 17: -j 2 uses 2
    select = ("--select", "ALL", "--format", "json")
    one = _cli(*select, "--no-cache", "-j", "1", ".", cwd=folder, hash_seed="0")
    _clean(one)
    findings = json.loads(one.stdout)
    assert findings, "the mutants should have findings; an empty report proves nothing"
    for label, r in [
        ("-j 2, PYTHONHASHSEED=1", _cli(*select, "--no-cache", "-j", "2", ".", cwd=folder, hash_seed="1")),
        ("cold cache, -j 2, PYTHONHASHSEED=random", _cli(*select, "-j", "2", ".", cwd=folder, hash_seed="random")),
        ("warm cache, -j 1, PYTHONHASHSEED=3", _cli(*select, "-j", "1", ".", cwd=folder, hash_seed="3")),
    ]:
        _clean(r)
        assert r.stdout == one.stdout, f"{label} differs from -j 1, PYTHONHASHSEED=0"
    shutil.rmtree(folder / ".torchcheck_cache", ignore_errors=True)

    # Every position inside its file, read back as the CLI decoded it.
    by_path: dict[str, list[Finding]] = {}
    for f in findings:
        by_path.setdefault(f["path"], []).append(Finding.from_dict(f))
    for path, found in by_path.items():
        from lint_rules.runner import decode

        check_positions(decode((folder / path).read_bytes()), found)


def test_cli_fix_writes_what_the_engine_fixes_and_settles(tmp_path: Path, budget: Budget) -> None:
    folder = _cli_files(tmp_path, max(budget.count("cli_files"), 17), budget.seed, fixable())
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    r = _cli("--select", "ALL", "--no-cache", "--fix", "--unsafe-fixes", "-j", "2", ".", cwd=folder, hash_seed="0")
    _clean(r)
    from lint_rules.runner import decode_with_encoding

    changed = 0
    for name, data in before.items():
        text, encoding = decode_with_encoding(data)
        after = (folder / name).read_bytes()
        expected = check_fixes(text)
        assert decode_with_encoding(after)[0] == expected, f"{name}: the CLI's fix differs from the engine's"
        if after != data:
            changed += 1
            assert after.startswith(b"\xef\xbb\xbf") == data.startswith(b"\xef\xbb\xbf"), name
            if parses(text):
                assert parses(decode_with_encoding(after)[0]), f"{name}: --fix broke the file"
    assert changed, "no mutant had a fix: the test proves nothing"
    again = _cli("--select", "ALL", "--no-cache", "--fix", "--unsafe-fixes", "--diff", ".", cwd=folder,
                 hash_seed="1")
    _clean(again)
    assert again.stdout == "", f"a second --fix would change more:\n{again.stdout[:3000]}"


# ------------------------------------------------------------------ the fuzzer itself
def test_mutations_are_seeded_and_do_not_depend_on_the_hash_seed() -> None:
    code = ("from tests.lint.fuzzing.mutate import mutate; from tests.lint.fuzzing.programs import sources; "
            "t = sources(); print(repr([mutate(t[s * 37 % len(t)], s, t).source for s in range(6)]))")
    here = [mutate(sources()[s * 37 % len(sources())], s, sources()).source for s in range(6)]
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env={**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert r.stdout == repr(here) + "\n"
    assert len(set(here)) == 6


def test_the_properties_catch_what_they_claim_to(monkeypatch: pytest.MonkeyPatch) -> None:
    # A finding past the end of a line, or past the last line, is reported; the end of the file is inside.
    with pytest.raises(PropertyFailed, match="outside the file"):
        check_positions("import torch\nx = 1\n", [Finding("f.py", 2, 7, 2, 7, "TRN101", "x", "m", "warning")])
    with pytest.raises(PropertyFailed, match="outside the file"):
        check_positions("import torch\n", [Finding("f.py", 3, 1, 3, 1, "TRN101", "x", "m", "warning")])
    check_positions("import torch\nx = 1\n", [Finding("f.py", 3, 1, 3, 1, "TRN101", "x", "m", "warning")])
    with pytest.raises(Hang):
        with time_limit(0.05, "a loop"):
            while True:
                pass
    # A rule that raises becomes TRN001 in the engine, and a property failure here.
    from lint_rules import registry

    def boom(self, node):
        raise KeyError("boom")

    monkeypatch.setattr(registry.active_rules()["TRN301"], "visit_Call", boom)
    with pytest.raises(PropertyFailed, match="internal error: rule TRN301.*KeyError"):
        check_lint("import torch\nmodel = torch.nn.DataParallel(model)\n")


def test_a_bad_fuzz_setting_in_the_environment_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ("many", "0"):
        monkeypatch.setenv(ENV_EXAMPLES, bad)
        with pytest.raises(pytest.fail.Exception, match=f"TORCHCHECK_FUZZ_EXAMPLES='{bad}' in the environment: "
                                                        "expected a whole number >= 1"):
            _env_int(ENV_EXAMPLES, None, minimum=1)
    monkeypatch.setenv(ENV_EXAMPLES, "7")
    assert _env_int(ENV_EXAMPLES, None, minimum=1) == 7 and Budget(False, 7, 0).count("mutants") == 7
    assert Budget(True, None, 0).count("programs") == DEEP["programs"]


# ------------------------------------------------------------------ regressions found by fuzzing
def test_fix_prints_no_python_warning_about_the_users_code(tmp_path: Path) -> None:
    # A mutant with `x is 1` made --fix print Python's SyntaxWarning for "<torchcheck fix>" (twice):
    # the fixed text is compiled to check that it still parses, and the warning leaked to stderr.
    (tmp_path / "a.py").write_text("import torch\nif step is 1:\n    pass\nscaler = torch.cuda.amp.GradScaler()\n")
    r = _cli("--no-cache", "--fix", "a.py", cwd=tmp_path, hash_seed="0")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert 'torch.amp.GradScaler("cuda")' in (tmp_path / "a.py").read_text()


def test_shuffle_given_twice_gets_no_fix_that_leaves_it_flagged() -> None:
    # A mutant passed shuffle both by position and by keyword: TRN303's fix removed the keyword,
    # and the next pass flagged the positional True at the same place (the fix had not removed
    # its finding). With shuffle given twice the call is a TypeError already: no fix is offered.
    source = ("from torch.utils.data import DataLoader, SequentialSampler\n"
              "a = DataLoader(ds, 64, True, SequentialSampler(ds), shuffle=True)\n")
    [finding] = check_lint(source).findings
    assert finding.code == "TRN303" and finding.fix is None
    assert check_fixes(source) == source
    single = source.replace(", shuffle=True", "")  # one shuffle: still fixed
    assert "DataLoader(ds, 64, False, SequentialSampler(ds))" in check_fixes(single)


@pytest.mark.parametrize("ending", ["\r", "\r\n", "\n"])
def test_suppressions_are_read_on_their_own_line_whatever_the_line_ends(ending: str) -> None:
    # A mutant with old-Mac \r line ends: tokenize read the whole file as line 1, so a noqa
    # suppressed findings on line 1 only, and TRN002 pointed past the end of line 1.
    source = ending.join(["# first", "import torch  # torchcheck: ignore",
                          "model = torch.nn.DataParallel(model)  # noqa: TRN301",
                          "model = torch.nn.DataParallel(model)", "x = 1  # noqa: TRN104", ""])
    found = [(f.line, f.column, f.code) for f in check_lint(source).findings]
    assert found == [(2, 15, "TRN002"), (4, 9, "TRN301"), (5, 8, "TRN002")]


def test_a_form_feed_does_not_shift_a_suppression_comments_column() -> None:
    source = 'import torch\n\x0c\nx = "a\x0cb"  # noqa: TRN104\n'
    assert [(f.line, f.column) for f in check_lint(source).findings] == [(3, 12)]
