"""Report formats for ``torchcheck lint``: every format prints the same positions."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path, PurePath


from lint_rules import __version__
from lint_rules.registry import docs_url
from lint_rules.diagnostics import Finding

TYPE_CHECKING = False  # typing is not imported: a warm cached run does not need it
if TYPE_CHECKING:
    from typing import Callable, Sequence, TextIO

FORMATS = ("text", "concise", "json", "json-lines", "github", "junit", "gitlab", "sarif")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# Why a file could not be checked, from the start of its error message (files.py, runner.py, limits.py).
_WHY = (("cannot read ", ": not a regular file", "not a regular file"),
        ("cannot read ", ": over the limit", "too large"),
        ("cannot read ", "", "cannot be read"),
        ("cannot decode ", "", "cannot be decoded"),
        ("cannot lint ", "", "cannot be parsed"))


def _why(error: str) -> str:
    for start, inside, why in _WHY:
        if error.startswith(start) and inside in error:
            return why
    return "failed"


def not_checked(errors: Sequence[str]) -> str:
    """``2 files could not be checked (1 cannot be read, 1 cannot be decoded)``: the files whose errors
    are ``errors`` (one message each), counted by reason."""
    reasons = Counter(_why(e) for e in errors)
    if len(errors) == 1:
        why = next(iter(reasons))
    else:
        why = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{_plural(len(errors), 'file')} could not be checked ({why})"


def _failures(errors: Sequence[str], fix_errors: Sequence[str]) -> str:
    """What failed, for the end of a summary line: never absent when something did."""
    parts = [not_checked(errors)] if errors else []
    if fix_errors:
        parts.append(f"{_plural(len(fix_errors), 'file')} could not be fixed")
    if not parts:
        return ""
    return f"; {' and '.join(parts)}: see the error{'' if len(errors) + len(fix_errors) == 1 else 's'} " \
           "on standard error"


def summary(findings: list[Finding], checked: int, fixed: int = 0, errors: Sequence[str] = (),
            fix_errors: Sequence[str] = ()) -> str:
    """The last line of the text report. ``errors``: one message per file that could not be checked;
    ``fix_errors``: one per file whose fixes could not be written. The line never says that all checks
    passed when a file failed (as Ruff counts its I/O errors)."""
    failures = _failures(errors, fix_errors)
    if fixed:
        total = len(findings) + fixed
        return (f"Found {_plural(total, 'finding')} ({fixed} fixed, {len(findings)} remaining); "
                f"{_plural(checked, 'file')} checked{failures}.")
    if not findings:
        if failures:
            return f"No findings in {_plural(checked, 'file')} checked{failures}."
        return f"All checks passed ({_plural(checked, 'file')} checked)."
    files = len({f.path for f in findings})
    noun = "finding" if len(findings) == 1 else "findings"
    return f"Found {len(findings)} {noun} in {_plural(files, 'file')} ({_plural(checked, 'file')} checked){failures}."


def summary_of_fixes(fixed: int, checked: int, errors: Sequence[str] = (), fix_errors: Sequence[str] = ()) -> str:
    """``--fix-only``'s line: what was fixed, not what is left."""
    failures = _failures(errors, fix_errors)
    if not fixed:
        return f"No fixes applied ({_plural(checked, 'file')} checked){failures}."
    return f"Fixed {_plural(fixed, 'finding')} ({_plural(checked, 'file')} checked){failures}."


def fix_summary(fixable: int, hidden: int, would_fix: bool = False) -> str:
    """Ruff's hint line: how many findings ``--fix`` fixes, and how many more ``--unsafe-fixes`` would."""
    hint = ""
    if hidden:
        hint = f" ({hidden} hidden fix{'' if hidden == 1 else 'es'} can be enabled with the `--unsafe-fixes` option)"
    if would_fix:
        return f"Would fix {_plural(fixable, 'finding')}{hint}." if fixable else f"No fixes available{hint}."
    if fixable:
        return f"[*] {fixable} fixable with the `--fix` option{hint}."
    return f"No fixes available{hint}." if hidden else ""


def fixed_listing(fixed: list[tuple[str, str, str]]) -> str:
    """``--show-fixes``: the fixes applied, per file and rule (as Ruff prints them)."""
    if not fixed:
        return ""
    by_path: dict[str, Counter] = {}
    for path, code, name in fixed:
        by_path.setdefault(path, Counter())[(code, name)] += 1
    lines = [f"Fixed {_plural(len(fixed), 'finding')}:"]
    for path in sorted(by_path):
        lines.append(f"- {path}:")
        lines += [f"    {n} × {code} ({name})" for (code, name), n in sorted(by_path[path].items())]
    return "\n".join(lines)


def _line(f: Finding, unsafe_fixes: bool = False) -> str:
    marker = "[*] " if f.fix is not None and (unsafe_fixes or f.fix.applicability == "safe") else ""
    return f"{f.location}: {f.code} [{f.severity}] {marker}{f.message}"


def _source_excerpt(f: Finding, lines: list[str] | None) -> str:
    """The offending line and a caret under the reported span (first line of it). ``lines`` are the
    file's; in a notebook, the line is taken from the finding's cell and the gutter names the cell."""
    if lines and f.cell is not None:
        from lint_rules.notebook import cell_lines  # the file's lines are its JSON

        lines = cell_lines(lines, f.cell)
    if not lines or not 1 <= f.line <= len(lines):
        return ""
    text = lines[f.line - 1].rstrip("\r\n").expandtabs(1)
    end = f.end_column if f.end_line == f.line else len(text) + 1
    width = max(1, end - f.column)
    gutter = f"{f.line:>5} | " if f.cell is None else f"cell {f.cell}:{f.line:<3} | "
    return f"{gutter}{text}\n{' ' * (len(gutter) + f.column - 1)}{'^' * width}"


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def _github(f: Finding) -> str:
    level = "error" if f.severity == "error" else "warning"
    props = ",".join([
        f"file={_escape_property(f.path)}", f"line={f.line}", f"col={f.column}",
        f"endLine={f.end_line}", f"endColumn={f.end_column}",
        f"title={_escape_property(f'{f.code} ({f.name})' + (f' in cell {f.cell}' if f.cell else ''))}",
    ])
    return f"::{level} {props}::{_escape_data(f'{f.code} {f.message}')}"


def _github_error(path: str, message: str) -> str:
    """A workflow error annotation on a file that could not be checked or fixed."""
    return f"::error file={_escape_property(path)},title=torchcheck::{_escape_data(message)}"


def _json(f: Finding) -> dict:
    """A finding in the json formats: its fields and the address of its rule's documentation."""
    return f.to_dict() | {"url": docs_url(f.name)}


def statistics(findings: list[Finding]) -> str:
    counts = Counter((f.code, f.name) for f in findings)
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0]))
    width = max((len(str(n)) for _, n in rows), default=1)
    return "\n".join(f"{n:>{width}}  {code}  {name}" for (code, name), n in rows)


def junit(findings: list[Finding], checked_paths: list[str], unchecked: Sequence[tuple[str, str]] = ()) -> str:
    """JUnit XML: one test case per checked file, failing with that file's findings; a file that could
    not be checked is a test case in error (what JUnit calls a test that could not run to a verdict)."""
    from xml.etree import ElementTree as ET
    by_path: dict[str, list[Finding]] = {p: [] for p in checked_paths}
    for f in findings:
        by_path.setdefault(f.path, []).append(f)
    errors = {path: message for path, message in unchecked if path not in by_path}
    suite = ET.Element("testsuite", name="torchcheck", tests=str(len(by_path) + len(errors)),
                       failures=str(sum(1 for fs in by_path.values() if fs)), errors=str(len(errors)), skipped="0")
    for path in sorted({*by_path, *errors}):
        case = ET.SubElement(suite, "testcase", classname="torchcheck", name=path)
        if path in errors:
            ET.SubElement(case, "error", message=errors[path], type=_why(errors[path])).text = errors[path]
            continue
        file_findings = by_path[path]
        if file_findings:
            failure = ET.SubElement(case, "failure", message=f"{len(file_findings)} finding(s)",
                                    type=",".join(sorted({f.code for f in file_findings})))
            failure.text = "\n".join(_line(f) for f in file_findings)
    root = ET.Element("testsuites")
    root.append(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def gitlab(findings: list[Finding]) -> str:
    """GitLab code-quality report (a JSON array of issues with stable fingerprints)."""
    import hashlib
    issues = []
    for f in findings:
        fingerprint = hashlib.md5(f"{f.path}:{f.code}:{f.line}:{f.column}:{f.message}".encode()).hexdigest()
        issues.append({
            "description": f"{f.code} {f.message}",
            "check_name": f"{f.code} {f.name}",
            "fingerprint": fingerprint,
            "severity": "major" if f.severity == "error" else "minor",
            "location": {"path": f.path, "positions": {
                "begin": {"line": f.line, "column": f.column},
                "end": {"line": f.end_line, "column": f.end_column}}},
        })
    return json.dumps(issues, indent=2) + "\n"


SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _what_it_does(doc: str) -> str:
    """The first paragraph of a rule's ``## What it does`` section."""
    m = re.search(r"## What it does\n(.*?)(?:\n\s*\n|\n## |$)", doc, re.S)
    return " ".join(m.group(1).split()) if m else ""


def _sarif_uri(path: str) -> dict:
    """A relative path is resolved against ``%SRCROOT%`` (the working directory); others are file URIs."""
    from urllib.parse import quote

    p = PurePath(path)
    if p.is_absolute():
        return {"uri": Path(path).as_uri()}
    return {"uri": quote(p.as_posix()), "uriBaseId": "%SRCROOT%"}


def sarif(findings: list[Finding], rules: Sequence, *, successful: bool = True,
          errors: Sequence[tuple[str | None, str]] = ()) -> str:
    """SARIF 2.1.0 (one run) as GitHub code scanning reads it.

    ``rules`` are rule classes or builtin codes (``CODE``, ``NAME``, ``MESSAGE``,
    ``SEVERITY``, ``documentation()``) for every code that ran or was reported.
    Columns are Unicode code points, 1-based, the end column exclusive: the same
    numbers every other format prints. ``errors``: (path or None, message) of each file that could not
    be checked or fixed, as error notifications of the invocation, located at that file.
    """
    index = {r.CODE: i for i, r in enumerate(rules)}
    descriptors = []
    for r in rules:
        doc = r.documentation()
        descriptors.append({
            "id": r.CODE,
            "name": r.NAME,
            "shortDescription": {"text": r.MESSAGE},
            "fullDescription": {"text": _what_it_does(doc) or r.MESSAGE},
            "help": {"text": doc, "markdown": doc},
            "helpUri": docs_url(r.NAME),
            "defaultConfiguration": {"level": r.SEVERITY},
            "properties": {"tags": ["pytorch", "correctness"]},
        })
    results = []
    for f in findings:
        result: dict = {
            "ruleId": f.code,
            "level": f.severity,
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": _sarif_uri(f.path),
                "region": {"startLine": f.line, "startColumn": f.column,
                           "endLine": f.end_line, "endColumn": f.end_column},
            }}],
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        if f.cell is not None:
            result["properties"] = {"cell": f.cell}
        results.append(result)
    invocation: dict = {"executionSuccessful": successful}
    if errors:
        invocation["toolExecutionNotifications"] = [
            {"level": "error", "message": {"text": message}}
            | ({"locations": [{"physicalLocation": {"artifactLocation": _sarif_uri(path)}}]} if path else {})
            for path, message in errors]
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "torchcheck", "version": __version__,
                                "semanticVersion": __version__,
                                "rules": descriptors}},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri().rstrip("/") + "/"}},
            "invocations": [invocation],
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    return json.dumps(log, indent=2) + "\n"


def write_report(out: TextIO, fmt: str, findings: list[Finding], checked: int, *, quiet: bool = False,
                 show_source: bool = False, source_lines: Callable[[str], list[str] | None] | None = None,
                 with_statistics: bool = False, checked_paths: list[str] | None = None,
                 rules: Sequence = (), successful: bool = True, unchecked: Sequence[tuple[str, str]] = (),
                 unfixed: Sequence[tuple[str, str]] = (), unsafe_fixes: bool = False,
                 fixed: list[tuple[str, str, str]] | None = None, show_fixes: bool = False) -> None:
    """``rules`` and ``successful`` feed the SARIF log's rule metadata and invocation. ``with_statistics``
    (text and concise): the number of findings per rule instead of the findings.

    ``unchecked``: (path, error) of each file that could not be read, decoded or parsed; ``unfixed``:
    (path, error) of each file whose fixes could not be written. The text summary counts them, and
    every format that can say so reports them: SARIF notifications, JUnit errors, GitHub error
    annotations. json, json-lines and gitlab list findings only; the errors are on standard error
    and the exit code is 2.

    ``fixed``: (path, code, name) of each fix applied by a ``--fix`` run (None: not a fix run);
    ``show_fixes`` lists them. ``unsafe_fixes``: unsafe fixes count as available.
    """
    if show_fixes and fixed and fmt not in ("text", "concise"):
        import sys

        print(fixed_listing(fixed), file=sys.stderr)  # machine-readable output stays parseable
    if fmt == "sarif":
        out.write(sarif(findings, rules, successful=successful, errors=[*unchecked, *unfixed]))
        return
    if fmt == "json":
        json.dump([_json(f) for f in findings], out, indent=2)
        out.write("\n")
        return
    if fmt == "json-lines":
        for f in findings:
            out.write(json.dumps(_json(f)) + "\n")
        return
    if fmt == "junit":
        out.write(junit(findings, checked_paths or [], unchecked))
        return
    if fmt == "gitlab":
        out.write(gitlab(findings))
        return
    if fmt == "github":
        for f in findings:
            out.write(_github(f) + "\n")
        for path, message in [*unchecked, *unfixed]:
            out.write(_github_error(path, message) + "\n")
        return
    if with_statistics:  # the table alone, as Ruff prints it: the findings are what it counts
        if findings:
            out.write(statistics(findings) + "\n")
        return
    for f in findings:
        out.write(_line(f, unsafe_fixes) + "\n")
        if show_source and fmt == "text" and source_lines is not None:
            excerpt = _source_excerpt(f, source_lines(f.path))
            if excerpt:
                out.write(excerpt + "\n\n")
    if show_fixes and fixed:
        out.write(fixed_listing(fixed) + "\n")
    if fmt == "text" and not quiet:
        out.write(summary(findings, checked, len(fixed or ()), [m for _, m in unchecked], [m for _, m in unfixed])
                  + "\n")
        fixable = sum(1 for f in findings if f.fix is not None and (unsafe_fixes or f.fix.applicability == "safe"))
        hidden = sum(1 for f in findings if f.fix is not None and not unsafe_fixes and f.fix.applicability != "safe")
        hint = fix_summary(fixable, hidden)
        if hint:
            out.write(hint + "\n")
