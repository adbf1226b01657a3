#!/usr/bin/env python
"""How long after a change does ``torchcheck server`` publish the new diagnostics?

Starts ``python -m lint_rules server`` as a subprocess and drives it over stdio with pygls's
LanguageClient, as an editor would: opens a 1,000-line file, then sends ``--edits`` incremental
``textDocument/didChange`` edits one at a time (a character typed into a line) and measures, for
each, the time from sending the change to receiving the ``textDocument/publishDiagnostics`` for
that document version. Next to it, in the same run, ``lint_rules.api.lint_text`` on the same text in
this process: the floor that the server's protocol and threading add to. Target: median at most
100 ms (issue #16). Exits 0 whether or not the target is met; 2 when it could not measure.

Files: a training script (reference implementations from fixtures/, concatenated to 1,000 lines:
a training loop every ~100 lines, findings throughout), the rules' INVALID examples concatenated to
1,000 lines (a finding every dozen lines) and, when torch is installed, the ``torch/optim/adam.py``
that ships with it (990 lines of library code).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from _report import table, verdict, write_json  # a sibling module: benchmarks/ is on sys.path when run as a script

REPO = Path(__file__).resolve().parent.parent
TARGET_MS = 100.0
LINES = 1000


def training_script() -> str:
    """Reference implementations, correct and buggy, one after another up to 1,000 lines."""
    parts: list[str] = []
    correct = sorted((REPO / "fixtures" / "correct").glob("*.py"))
    buggy = sorted((REPO / "fixtures" / "buggy").glob("*.py"))
    sources = [p for pair in zip(buggy, correct) for p in pair]  # findings throughout, as in code being written
    for n, path in enumerate(sources):
        text = path.read_text(encoding="utf-8")
        parts.append(text.replace("def ", f"def f{n}_").replace("class ", f"class C{n}_"))
        if sum(p.count("\n") for p in parts) >= LINES:
            break
    lines = "".join(parts).splitlines(True)[:LINES]
    return "".join(lines)


def dense_findings() -> str:
    """The rules' INVALID examples one after another up to 1,000 lines: a finding every dozen lines,
    where positions cost the most (they are worked out only for the statements holding findings)."""
    import textwrap

    from lint_rules import registry

    parts = [textwrap.dedent(ex.code).replace("from __future__ import annotations\n", "")
             for rule in registry.active_rules().values() for ex in rule.INVALID]
    return "".join("".join(parts).splitlines(True)[:LINES])


def corpus() -> dict[str, str]:
    files = {"training script (fixtures)": training_script(), "rule examples (dense findings)": dense_findings()}
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch")
        if spec is not None and spec.origin:
            adam = Path(spec.origin).parent / "optim" / "adam.py"
            if adam.is_file():
                files["torch/optim/adam.py"] = adam.read_text(encoding="utf-8")
    except (ImportError, ValueError):
        pass
    return files


def edit_line(text: str, k: int) -> int:
    """A line to type into on edit ``k``: a non-empty one, spread over the file."""
    lines = text.splitlines()
    candidates = [i for i, line in enumerate(lines) if line.strip() and not line.rstrip().endswith("\\")]
    return candidates[(k * 37) % len(candidates)]


async def measure(name: str, text: str, directory: Path, edits: int) -> dict:
    client = LanguageClient("lsp-latency", "1")
    published: asyncio.Queue = asyncio.Queue()

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _published(params: lsp.PublishDiagnosticsParams) -> None:
        published.put_nowait((time.perf_counter(), params))

    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    await client.start_io(sys.executable, "-m", "lint_rules", "server", cwd=str(directory), env=env)
    await client.initialize_async(lsp.InitializeParams(capabilities=lsp.ClientCapabilities(),
                                                       root_uri=directory.as_uri(), process_id=os.getpid()))
    client.initialized(lsp.InitializedParams())
    uri = (directory / "train.py").as_uri()
    started = time.perf_counter()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    at, params = await asyncio.wait_for(published.get(), 60)
    first_ms = (at - started) * 1000
    findings = len(params.diagnostics)
    latencies = []
    for k in range(edits):
        version = k + 2
        line = edit_line(text, k)
        # Type a space at the end of a line: the text stays valid Python and keeps its findings.
        end = len(text.splitlines()[line])
        change = lsp.TextDocumentContentChangePartial(
            range=lsp.Range(lsp.Position(line, end), lsp.Position(line, end)), text=" ")
        lines = text.splitlines(True)
        lines[line] = lines[line][:end] + " " + lines[line][end:]
        text = "".join(lines)
        sent = time.perf_counter()
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=version), [change]))
        while True:
            at, params = await asyncio.wait_for(published.get(), 60)
            if params.version == version:
                break
        latencies.append((at - sent) * 1000)
        if len(params.diagnostics) != findings:
            raise RuntimeError(f"{name}: edit {k} changed the findings ({findings} -> {len(params.diagnostics)})")
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return {"first_ms": first_ms, "findings": findings, "latencies_ms": latencies}


def in_process_ms(text: str, directory: Path, repeat: int) -> float:
    from lint_rules.api import Settings, lint_text

    settings = Settings.resolve(directory)
    path = str(directory / "train.py")
    lint_text(text, path, settings)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        lint_text(text, path, settings)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def p90(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=10)[-1] if len(xs) >= 2 else xs[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=20, help="changes sent per file (default 20)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    import tempfile

    rows = [["file", "lines", "findings", "open ms", "change median ms", "change p90 ms", "lint_text ms", "target"]]
    result: dict = {"target_ms": TARGET_MS, "python": platform.python_version(), "cores": os.cpu_count(), "files": {}}
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        for name, text in corpus().items():
            try:
                got = asyncio.run(measure(name, text, directory, args.edits))
            except (OSError, RuntimeError, asyncio.TimeoutError) as e:
                print(f"lsp_latency: could not measure {name}: {e!r}", file=sys.stderr)
                return 2
            floor = in_process_ms(text, directory, max(5, args.edits // 2))
            median = statistics.median(got["latencies_ms"])
            tail = p90(got["latencies_ms"])
            got |= {"median_ms": median, "p90_ms": tail, "lint_text_ms": floor, "lines": text.count("\n")}
            result["files"][name] = got
            rows.append([name, str(got["lines"]), str(got["findings"]), f"{got['first_ms']:.0f}", f"{median:.1f}",
                         f"{tail:.1f}", f"{floor:.1f}", verdict(median <= TARGET_MS)])
    print(f"didChange -> publishDiagnostics through a real client over stdio, {args.edits} edits per file "
          f"(python {result['python']}, {result['cores']} cores); target: median at most {TARGET_MS:.0f} ms")
    print(table(rows, right={1, 2, 3, 4, 5, 6}))
    if args.json:
        write_json(args.json, result, print)
    return 0


if __name__ == "__main__":
    sys.exit(main())
