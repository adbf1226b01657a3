"""The documentation: generated rule pages are current, the site builds clean, the README is a front door."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path


from lint_rules import registry

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT / "scripts" / "gen_rule_docs.py"
REGEN = "python scripts/gen_rule_docs.py"


def _run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_generated_rule_pages_are_current():
    proc = _run(str(GENERATOR), "--check")
    assert proc.returncode == 0, (
        f"docs/rules/ does not match the rules' own documentation; run `{REGEN}` and commit docs/rules/.\n"
        f"{proc.stdout}{proc.stderr}")


def test_check_names_stale_missing_and_orphaned_pages(tmp_path):
    """The staleness check sees a hand-edited page, a missing one and one no rule owns (on a copy)."""
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "docs" / "rules", rules)
    edited = rules / "zero-grad-between-backward-and-step.md"
    edited.write_text(edited.read_text(encoding="utf-8") + "\nhand edit\n", encoding="utf-8")
    (rules / "missing-zero-grad.md").unlink()
    (rules / "retired-rule.md").write_text((rules / "data-parallel.md").read_text(encoding="utf-8"), encoding="utf-8")
    proc = _run(str(GENERATOR), "--check", "--rules-dir", str(rules))
    assert proc.returncode == 1
    assert f"{edited}: out of date" in proc.stdout
    assert f"{rules / 'missing-zero-grad.md'}: missing" in proc.stdout
    assert f"{rules / 'retired-rule.md'}: no rule has this page any more" in proc.stdout
    assert REGEN in proc.stdout
    assert _run(str(GENERATOR), "--rules-dir", str(rules)).returncode == 0
    assert _run(str(GENERATOR), "--check", "--rules-dir", str(rules)).returncode == 0
    assert not (rules / "retired-rule.md").exists()


MODULE_MAP = ROOT / "scripts" / "gen_module_map.py"
MODULE_MAP_REGEN = "python scripts/gen_module_map.py"


def test_module_map_is_current():
    proc = _run(str(MODULE_MAP), "--check")
    assert proc.returncode == 0, f"{proc.stdout}{proc.stderr}"


def test_module_map_check_names_a_module_without_a_docstring_and_a_stale_map(tmp_path):
    """On a copy: a new module without a docstring, then with one but the map not regenerated."""
    for package in ("lint_rules", "pytest_torchcheck"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(ROOT / "CONTRIBUTING.md", tmp_path / "CONTRIBUTING.md")
    new = tmp_path / "lint_rules" / "made_up" / "check.py"
    new.parent.mkdir()
    new.write_text("from __future__ import annotations\n")
    proc = _run(str(MODULE_MAP), "--check", "--root", str(tmp_path))
    assert proc.returncode == 1
    assert "lint_rules/made_up/check.py: no docstring" in proc.stdout
    assert "lint_rules/made_up/__init__.py" not in proc.stdout  # a namespace folder needs a FOLDERS line
    assert "lint_rules/made_up/ (a folder without __init__.py" in proc.stdout
    assert MODULE_MAP_REGEN in proc.stdout
    (new.parent / "__init__.py").write_text('"""One module per command."""\n')
    new.write_text('"""``torchcheck check``: a made-up command.\n\nMore detail.\n"""\n')
    proc = _run(str(MODULE_MAP), "--check", "--root", str(tmp_path))
    assert proc.returncode == 1 and "out of date" in proc.stdout and MODULE_MAP_REGEN in proc.stdout
    assert _run(str(MODULE_MAP), "--root", str(tmp_path)).returncode == 0
    assert _run(str(MODULE_MAP), "--check", "--root", str(tmp_path)).returncode == 0
    text = (tmp_path / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert re.search(r"^  made_up/ +One module per command\.\n    check\.py +``torchcheck check``: a made-up "
                     r"command\.\n", text, re.M)
    assert "More detail" not in text  # the first paragraph only


# Measured results of torchcheck, which drift as it changes: they live in benchmarks/README.md only,
# and the docs link there. docs/rules/ is left out: its numbers are the symptoms of the user's bug
# ("runs 1.5-2x slower"), not measurements of torchcheck.
MEASURED = re.compile(r"""
    \b\d+\s*/\s*\d+\ (?:cases|bugs|real\ bugs|reductions|caught)\b      # 43/45 cases
  | \b\d+\ of\ \d+\ (?:are\ caught|cases|bugs|real\ bugs|reductions)\b    # 35 of 45 are caught
  | \b\d+(?:\.\d+)?x\ (?:faster|slower)\b                                  # 538x faster
  | \b\d+\.\d+(?:-\d+\.\d+)?x\b                                            # 1.02x, 1.05-1.08x: a cost ratio
  | \bprecision\ (?:of\ )?\d+(?:\.\d+)?\ ?%                                 # precision of 93%
  | \babout\ \d+(?:\.\d+)?\ ?(?:ms|us|µs|s)\b                               # about 3 ms
""", re.X)


def test_measured_numbers_live_only_in_the_benchmarks_readme():
    docs = [ROOT / "README.md", ROOT / "CONTRIBUTING.md",
            *sorted(p for p in (ROOT / "docs").rglob("*.md") if p.parent.name != "rules")]
    found = [f"{p.relative_to(ROOT)}:{i}: {m.group(0)!r}" for p in docs
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) for m in MEASURED.finditer(line)]
    assert not found, ("measured numbers belong in benchmarks/README.md (link to its section instead):\n"
                       + "\n".join(found))
    assert MEASURED.search("Today 35 of 45 are caught") and MEASURED.search("real bugs 43/45 cases")
    assert MEASURED.search("2.8 ms, 538x faster") and MEASURED.search("costs about 1.02x a bare parse")


def _index_rows() -> dict[str, dict[str, str]]:
    """The rule index's table rows by code, each as {column: cell}."""
    text = (ROOT / "docs" / "rules" / "index.md").read_text(encoding="utf-8")
    rows: dict[str, dict[str, str]] = {}
    header: list[str] = []
    for line in text.splitlines():
        if not line.startswith("| "):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if cells[0] == "code":
            header = cells
        elif re.fullmatch(r"TRN\d{3}", cells[0]):
            rows[cells[0]] = dict(zip(header, cells))
    return rows


def test_rule_index_lists_every_registered_code_with_its_page():
    rows = _index_rows()
    runtime_only = {c: registry.runtime_check(c) for c in registry.runtime_only_codes()}
    rules = {**registry.BUILTINS, **registry.all_rules(), **runtime_only}
    assert sorted(rows) == sorted(rules)
    is_preview = getattr(registry, "is_preview", None)
    for code, rule in rules.items():
        row = rows[code]
        assert row["name"].startswith(f"[{rule.NAME}]({rule.NAME}.md)"), code
        assert row["severity"] == rule.SEVERITY, code
        if callable(is_preview):  # the registry has a preview tier: the index must show it
            tier = "built-in" if code in registry.BUILTINS else "runtime" if code in runtime_only \
                else "core" if code in registry.CERTAIN_CORE else "preview" if is_preview(code) else "default"
            assert row["tier"] == tier, code
        assert (ROOT / "docs" / "rules" / f"{rule.NAME}.md").is_file(), code


def test_runtime_checks_document_themselves_on_the_rule_pages():
    """A rule whose pitfall torchcheck run watches has an "At run time" section, the check's own
    docstring; a runtime-only code (TRN9) has a page of its own, with a rule's sections."""
    from pytest_torchcheck.watch.watcher import check_class, codes

    assert registry.runtime_only_codes(), "no runtime-only check to document"
    for code in codes():
        check = check_class(code)
        page = (ROOT / "docs" / "rules" / f"{check.NAME}.md").read_text(encoding="utf-8")
        assert "## At run time" in page and check.observed().splitlines()[0] in page, code
        if code in registry.runtime_only_codes():
            assert page.startswith(f"# {check.NAME} ({code})\n") and "| tier | runtime |" in page, code
            for heading in ("## What it does", "## Why is this bad?", "## Example"):
                assert heading in page, (code, heading)


def test_rule_page_carries_the_rules_documentation_and_examples():
    rule = registry.all_rules()["TRN303"]
    page = (ROOT / "docs" / "rules" / f"{rule.NAME}.md").read_text(encoding="utf-8")
    assert page.startswith(f"# {rule.NAME} (TRN303)\n")
    assert rule.MESSAGE in page and rule.FIX_TITLE in page
    for heading in ("## What it does", "## Why is this bad?", "## Fix safety", "### Flagged", "### Not flagged"):
        assert heading in page, heading
    assert "| fix | safe or unsafe |" in page
    for example in (*rule.VALID, *rule.INVALID):
        assert textwrap.dedent(example.code).strip("\n") in page


def test_docs_site_builds_strict_without_broken_links(tmp_path):
    """``mkdocs build --strict``: any warning (a link to a missing page or anchor) fails the build."""
    proc = _run("-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site"), timeout=120)
    assert proc.returncode == 0, f"mkdocs build --strict failed (pip install -e '.[test]' installs mkdocs):\n" \
                                 f"{proc.stdout}{proc.stderr}"
    assert (tmp_path / "site" / "rules" / "zero-grad-between-backward-and-step" / "index.html").is_file()


def test_docs_build_fails_on_a_broken_link(tmp_path):
    """The strict build must catch a broken anchor, or the test above proves nothing."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [missing](other.md#nowhere).\n", encoding="utf-8")
    (docs / "other.md").write_text("# Other\n", encoding="utf-8")
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config = re.sub(r"(?ms)^nav:.*", "", config)
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "nowhere" in proc.stdout + proc.stderr


def _front_door() -> Path:
    """README.new.md until it replaces README.md; README.md afterwards."""
    new = ROOT / "README.new.md"
    return new if new.exists() else ROOT / "README.md"


def test_front_door_readme_is_short_and_keeps_the_ci_command():
    readme = _front_door()
    text = readme.read_text(encoding="utf-8")
    assert len(text.encode()) <= 12 * 1024, f"{readme.name} is {len(text.encode())} bytes; keep it under 12 KiB"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").rstrip("\n").splitlines()[-1]
    assert f"```sh\n{ci}\n```" in text, f".ci/run runs {ci!r}, which {readme.name} must show verbatim"
    assert "```sh\npython -m pip install . && torchcheck lint --preview fixtures/\n```" in text


def test_front_door_links_resolve_and_name_every_rule_family():
    readme = _front_door()
    text = readme.read_text(encoding="utf-8")
    index = (ROOT / "docs" / "rules" / "index.md").read_text(encoding="utf-8")
    anchors = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-")
               for h in re.findall(r"^## (.+)$", index, re.MULTILINE)}
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        assert (ROOT / path).exists(), f"{readme.name} links to missing {path}"
        if path == "docs/rules/index.md" and anchor:
            assert anchor in anchors, f"{readme.name} links to missing anchor #{anchor} of {path}"
    for family in sorted({code[:4] for code in [*registry.all_rules(), *registry.BUILTINS]}):
        assert f"docs/rules/index.md#{family.lower()}-" in text, f"{readme.name} does not link the {family} family"


def test_findings_link_to_the_published_rule_pages():
    # JSON findings and SARIF rules carry registry.docs_url(name): it must be where mkdocs publishes the page.
    import re

    from lint_rules import registry

    site_url = re.search(r"^site_url: (\S+)$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M).group(1)
    assert registry.DOCS_URL == site_url
    for rule in [*registry.BUILTINS.values(), *registry.all_rules().values()]:
        url = registry.docs_url(rule.NAME)
        assert url.startswith(site_url)
        assert (ROOT / "docs" / f"{url[len(site_url):].rstrip('/')}.md").is_file(), url
