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
    rules = {**registry.BUILTINS, **registry.all_rules()}
    assert sorted(rows) == sorted(rules)
    is_preview = getattr(registry, "is_preview", None)
    for code, rule in rules.items():
        row = rows[code]
        assert row["name"].startswith(f"[{rule.NAME}]({rule.NAME}.md)"), code
        assert row["severity"] == rule.SEVERITY, code
        if callable(is_preview):  # the registry has a preview tier: the index must show it
            tier = "built-in" if code in registry.BUILTINS else "preview" if is_preview(code) else "default"
            assert row["tier"] == tier, code
        assert (ROOT / "docs" / "rules" / f"{rule.NAME}.md").is_file(), code


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
