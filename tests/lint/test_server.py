"""``torchcheck server`` end to end: pygls's LanguageClient drives the server as a subprocess over stdio.

pygls's own client is used rather than pytest-lsp: the server already depends on pygls, the client
speaks the real protocol over the real pipes, and these few sessions need no fixture machinery
(each test runs one session in ``asyncio.run`` with a time limit).
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import sys
import threading
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from lint_rules.server import Framing

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 20.0

BUGGY = """import torch

with torch.cuda.amp.autocast():
    pass
"""
FIXED = BUGGY.replace("torch.cuda.amp.autocast()", 'torch.autocast("cuda")')


class Session:
    """A started client with the diagnostics the server published, per document."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.published: dict[str, asyncio.Queue] = {}
        self.messages: list[lsp.ShowMessageParams] = []
        self.versions: dict[str, int] = {}

    def queue(self, uri: str) -> asyncio.Queue:
        return self.published.setdefault(uri, asyncio.Queue())

    async def diagnostics(self, uri: str) -> list[lsp.Diagnostic]:
        return list((await asyncio.wait_for(self.queue(uri).get(), TIMEOUT)).diagnostics)

    async def open(self, path: Path, text: str) -> list[lsp.Diagnostic]:
        uri = path.as_uri()
        self.versions[uri] = 1
        self.client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        return await self.diagnostics(uri)

    async def change(self, path: Path, text: str) -> list[lsp.Diagnostic]:
        uri = path.as_uri()
        self.versions[uri] += 1
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            [lsp.TextDocumentContentChangeWholeDocument(text=text)]))
        return await self.diagnostics(uri)

    async def actions(self, path: Path, line: int, only: list[str] | None = None) -> list[lsp.CodeAction]:
        rng = lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0))
        got = await asyncio.wait_for(self.client.text_document_code_action_async(lsp.CodeActionParams(
            lsp.TextDocumentIdentifier(path.as_uri()), rng, lsp.CodeActionContext(diagnostics=[], only=only))),
            TIMEOUT)
        return [a for a in got or [] if isinstance(a, lsp.CodeAction)]


@asynccontextmanager
async def session(root: Path, capabilities: lsp.ClientCapabilities | None = None):
    client = LanguageClient("torchcheck-test", "1")
    s = Session(client)

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _published(params: lsp.PublishDiagnosticsParams) -> None:
        s.queue(params.uri).put_nowait(params)

    @client.feature(lsp.WINDOW_SHOW_MESSAGE)
    def _shown(params: lsp.ShowMessageParams) -> None:
        s.messages.append(params)

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    await client.start_io(sys.executable, "-m", "lint_rules", "server", cwd=str(root), env=env)
    try:
        params = lsp.InitializeParams(capabilities=capabilities or lsp.ClientCapabilities(), root_uri=root.as_uri(),
                                      process_id=os.getpid())
        await asyncio.wait_for(client.initialize_async(params), TIMEOUT)
        client.initialized(lsp.InitializedParams())
        yield s
    finally:
        if not client.stopped:
            await asyncio.wait_for(client.shutdown_async(None), TIMEOUT)
            client.exit(None)
        server = client._server
        if server is not None:
            s.returncode = await asyncio.wait_for(server.wait(), TIMEOUT)
        await client.stop()


def run(coro) -> None:
    asyncio.run(asyncio.wait_for(coro, 60))


def apply(text: str, edits: list[lsp.TextEdit]) -> str:
    """Apply LSP edits (0-based, ASCII text here) to ``text``, last first."""
    lines = text.splitlines(True)

    def offset(p: lsp.Position) -> int:
        return sum(len(x) for x in lines[:p.line]) + p.character

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:offset(e.range.start)] + e.new_text + text[offset(e.range.end):]
        lines = text.splitlines(True)
    return text


def test_diagnostics_follow_the_buffer_and_shutdown_is_clean(tmp_path: Path) -> None:
    path = tmp_path / "train.py"  # never written: the buffer is linted from memory

    async def go() -> None:
        async with session(tmp_path) as s:
            found = await s.open(path, BUGGY)
            assert [(d.code, d.source, d.severity) for d in found] == [
                ("TRN802", "torchcheck", lsp.DiagnosticSeverity.Warning)]
            assert found[0].range == lsp.Range(lsp.Position(2, 5), lsp.Position(2, 28))
            assert await s.change(path, FIXED) == []
            assert [d.code for d in await s.change(path, BUGGY)] == ["TRN802"]
            s.client.text_document_did_close(lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(path.as_uri())))
            assert await s.diagnostics(path.as_uri()) == []  # closing clears what the editor shows
        assert s.returncode == 0  # shutdown, then exit: a clean stop

    run(go())


def test_quick_fix_fix_all_and_suppress_remove_the_finding(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    two = BUGGY + "with torch.cuda.amp.autocast():  # keep\n    pass\n"

    async def go() -> None:
        async with session(tmp_path) as s:
            assert [d.code for d in await s.open(path, two)] == ["TRN802", "TRN802"]
            actions = await s.actions(path, 2)
            titles = [a.title for a in actions]
            fix = next(a for a in actions if a.kind == lsp.CodeActionKind.QuickFix and "noqa" not in a.title)
            assert fix.is_preferred and fix.diagnostics[0].code == "TRN802"
            once = apply(two, fix.edit.changes[path.as_uri()])
            assert [d.range.start.line for d in await s.change(path, once)] == [4], titles

            suppress = next(a for a in await s.actions(path, 4) if "suppress" in a.title)
            quiet = apply(once, suppress.edit.changes[path.as_uri()])
            assert "with torch.cuda.amp.autocast():  # keep  # noqa: TRN802\n" in quiet
            assert await s.change(path, quiet) == []

            await s.change(path, two)
            fix_all = await s.actions(path, 0, only=["source.fixAll"])
            assert [a.kind for a in fix_all] == ["source.fixAll.torchcheck"]
            assert await s.change(path, apply(two, fix_all[0].edit.changes[path.as_uri()])) == []

    run(go())


def test_suppress_merges_into_an_existing_noqa_comment(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    text = BUGGY.replace("autocast():", "autocast():  # noqa: E501")

    async def go() -> None:
        async with session(tmp_path) as s:
            await s.open(path, text)
            suppress = next(a for a in await s.actions(path, 2) if "suppress" in a.title)
            new = apply(text, suppress.edit.changes[path.as_uri()])
            assert "autocast():  # noqa: E501, TRN802\n" in new
            assert await s.change(path, new) == []

    run(go())


def test_project_configuration_is_honoured(tmp_path: Path) -> None:
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    (quiet / "pyproject.toml").write_text('[tool.torchcheck]\nignore = ["TRN802"]\n')
    loud = tmp_path / "loud"
    loud.mkdir()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "pyproject.toml").write_text('[tool.torchcheck]\nselect = ["TRN9999"]\n')

    async def go() -> None:
        async with session(tmp_path) as s:
            assert await s.open(quiet / "train.py", BUGGY) == []
            assert [d.code for d in await s.open(loud / "train.py", BUGGY)] == ["TRN802"]
            # A bad configuration is shown to the user (naming the value), and the server carries on.
            assert await s.open(bad / "train.py", BUGGY) == []
            assert any("TRN9999" in m.message for m in s.messages), s.messages
            assert [d.code for d in await s.change(loud / "train.py", BUGGY + "\n")] == ["TRN802"]

    run(go())


def test_a_syntax_error_is_a_diagnostic_and_the_server_keeps_running(tmp_path: Path) -> None:
    path = tmp_path / "train.py"

    async def go() -> None:
        async with session(tmp_path) as s:
            broken = await s.open(path, "import torch\ndef f(:\n")
            assert [(d.code, d.severity, d.range.start.line) for d in broken] == [
                ("TRN000", lsp.DiagnosticSeverity.Error, 1)]
            assert await s.actions(path, 1) == []  # a syntax error is not to be silenced
            assert [d.code for d in await s.change(path, BUGGY)] == ["TRN802"]

    run(go())


def test_base_install_does_not_import_pygls() -> None:
    code = ("import sys; from lint_rules import cli; cli.main(['rules']); "
            "assert 'pygls' not in sys.modules and 'lint_rules.server' not in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_columns_are_in_the_clients_utf16_units(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    text = 'import torch\ns = "\U0001F600"; ctx = torch.cuda.amp.autocast()\n'  # one code point, two UTF-16 units

    async def go() -> None:
        async with session(tmp_path) as s:
            found = await s.open(path, text)
            assert found[0].range.start == lsp.Position(1, 16)  # 15 code points before it, 16 UTF-16 units

    run(go())


def test_a_burst_of_changes_ends_on_the_newest_text_and_a_save_does_not_relint(tmp_path: Path) -> None:
    path = tmp_path / "train.py"

    async def go() -> None:
        async with session(tmp_path) as s:
            await s.open(path, BUGGY)
            uri = path.as_uri()
            for n in range(2, 12):  # no waiting in between: stale texts may be skipped, never published last
                s.versions[uri] = n
                s.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
                    lsp.VersionedTextDocumentIdentifier(uri=uri, version=n),
                    [lsp.TextDocumentContentChangeWholeDocument(text=BUGGY if n < 11 else FIXED)]))
            while True:
                got = await asyncio.wait_for(s.queue(uri).get(), TIMEOUT)
                assert got.version <= 11
                if got.version == 11:
                    break
            assert list(got.diagnostics) == []
            path.write_text(BUGGY)  # another text on disk: the buffer, not the file, is what is linted
            s.client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
            # The save changed neither the text nor the settings: no second lint, nothing published
            # until the next change.
            s.versions[uri] = 12
            s.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(uri=uri, version=12),
                [lsp.TextDocumentContentChangeWholeDocument(text=BUGGY)]))
            got = await asyncio.wait_for(s.queue(uri).get(), TIMEOUT)
            assert (got.version, [d.code for d in got.diagnostics]) == (12, ["TRN802"])

    run(go())


def test_save_relints_when_the_project_configuration_changed(tmp_path: Path) -> None:
    """The same text, saved after pyproject.toml changed: its selection and its torch bound apply."""
    path = tmp_path / "train.py"
    text = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"  # below a torch 2.3 floor: "raise that floor"
    uri = path.as_uri()

    def save(s: Session) -> None:
        s.client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri)))

    async def go() -> None:
        async with session(tmp_path) as s:
            first = await s.open(path, text)
            assert [d.code for d in first] == ["TRN802"] and "raise that floor" not in first[0].message
            (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["torch>=2.1"]\n')
            save(s)
            # the torch bound, read again: below it the finding is only possible, not shown by default
            assert await s.diagnostics(uri) == []
            (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["torch>=2.1"]\n'
                                                     '[tool.torchcheck]\nextend-select = ["TRN802"]\n')
            save(s)
            below = await s.diagnostics(uri)  # selected by its code: shown, and the advice names the floor
            assert [d.code for d in below] == ["TRN802"] and "torch>=2.1" in below[0].message
            (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["torch>=2.4"]\n'
                                                     '[tool.torchcheck]\nignore = ["TRN101"]\n')
            save(s)
            above = await s.diagnostics(uri)
            assert [d.code for d in above] == ["TRN802"] and "raise that floor" not in above[0].message
            (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["torch>=2.4"]\n'
                                                     '[tool.torchcheck]\nignore = ["TRN802"]\n')
            save(s)
            assert await s.diagnostics(uri) == []  # the selection, read again

    run(go())


def test_without_pygls_the_server_says_how_to_install_it(tmp_path: Path) -> None:
    blocker = tmp_path / "pygls"
    blocker.mkdir()
    (blocker / "__init__.py").write_text('raise ImportError("No module named \'pygls\'", name="pygls")\n')
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"}
    done = subprocess.run([sys.executable, "-m", "lint_rules", "server"], env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert 'pip install "pygls>=2.0"' in done.stderr and "Traceback" not in done.stderr


def test_fix_all_waits_for_code_action_resolve_where_the_client_supports_it(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    lazy = lsp.ClientCapabilities(text_document=lsp.TextDocumentClientCapabilities(
        code_action=lsp.CodeActionClientCapabilities(
            resolve_support=lsp.ClientCodeActionResolveOptions(properties=["edit"]))))

    async def go() -> None:
        async with session(tmp_path, lazy) as s:
            await s.open(path, BUGGY)
            (action,) = await s.actions(path, 0, only=["source.fixAll.torchcheck"])
            assert action.edit is None
            resolved = await asyncio.wait_for(s.client.code_action_resolve_async(action), TIMEOUT)
            assert apply(BUGGY, resolved.edit.changes[path.as_uri()]) == FIXED

    run(go())


def test_exit_without_shutdown_is_an_error_exit(tmp_path: Path) -> None:
    async def go() -> None:
        client = LanguageClient("torchcheck-test", "1")
        await client.start_io(sys.executable, "-m", "lint_rules", "server", cwd=str(tmp_path),
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        await asyncio.wait_for(client.initialize_async(lsp.InitializeParams(capabilities=lsp.ClientCapabilities())),
                               TIMEOUT)
        client.exit(None)
        assert await asyncio.wait_for(client._server.wait(), TIMEOUT) == 1  # the LSP rule: no shutdown first
        await client.stop()

    run(go())


def test_a_buffer_sees_the_project_modules_it_imports_on_disk(tmp_path: Path) -> None:
    projects = Path(__file__).resolve().parent / "projects"
    source = (projects / "gan_sigmoid" / "gan" / "train.py").read_text()  # the model it imports decides

    async def go() -> None:
        async with session(tmp_path) as s:
            buggy = await s.open(projects / "gan_sigmoid" / "gan" / "train.py", source)
            assert [(d.code, d.range.start.line) for d in buggy] == [("TRN502", 13)]
            assert await s.open(projects / "gan_sigmoid_ok" / "gan" / "train.py", source) == []

    run(go())


def test_saving_an_imported_module_relints_the_buffers_that_depend_on_it(tmp_path: Path) -> None:
    """train.py's TRN502 comes from model.py's last activation: when model.py is saved without the
    sigmoid, the open train.py is linted again and its finding goes; an open file that imports
    nothing from model.py is not linted again."""
    pkg = tmp_path / "gan"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (tmp_path / "pyproject.toml").write_text('[tool.torchcheck]\nextend-select = ["TRN502"]\n')  # a preview rule
    model_text = ("import torch.nn as nn\n\n\nclass D(nn.Module):\n    def __init__(self):\n"
                  "        super().__init__()\n        self.net = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())\n\n"
                  "    def forward(self, x):\n        return self.net(x)\n")
    (pkg / "model.py").write_text(model_text)
    train_text = ("import torch\nimport torch.nn as nn\nfrom gan.model import D\n\nd = D()\ncriterion = nn.BCELoss()\n"
                  "loss = criterion(d(torch.randn(2, 4)), torch.ones(2, 1))\n")
    other_text = BUGGY
    model_uri = (pkg / "model.py").as_uri()

    async def go() -> None:
        async with session(tmp_path) as s:
            assert [d.code for d in await s.open(pkg / "train.py", train_text)] == ["TRN502"]
            assert [d.code for d in await s.open(pkg / "other.py", other_text)] == ["TRN802"]
            assert await s.open(pkg / "model.py", model_text) == []
            fixed = model_text.replace(", nn.Sigmoid()", "")
            assert await s.change(pkg / "model.py", fixed) == []
            (pkg / "model.py").write_text(fixed)  # as the editor writes the file, then says so
            s.client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(model_uri)))
            assert await s.diagnostics((pkg / "train.py").as_uri()) == []
            # other.py depends on no other file: nothing was published for it again
            await asyncio.sleep(0.5)
            assert s.queue((pkg / "other.py").as_uri()).empty()

    run(go())


def test_hover_shows_the_rule_documentation_of_the_finding_under_the_cursor(tmp_path: Path) -> None:
    path = tmp_path / "train.py"

    async def hover(s: Session, line: int, character: int) -> lsp.Hover | None:
        return await asyncio.wait_for(s.client.text_document_hover_async(lsp.HoverParams(
            lsp.TextDocumentIdentifier(path.as_uri()), lsp.Position(line, character))), TIMEOUT)

    async def go() -> None:
        async with session(tmp_path) as s:
            (finding,) = await s.open(path, BUGGY)  # torch.cuda.amp.autocast() on line 2, columns 5-28
            got = await hover(s, 2, 10)
            assert got.contents.kind == lsp.MarkupKind.Markdown and got.range == finding.range
            text = got.contents.value
            assert text.startswith(f"**TRN802** `deprecated-amp-api`: {finding.message}"), text
            assert "**What it does**\nFlags `torch.cuda.amp.GradScaler`" in text
            assert "**Why is this bad?**\nThese device-specific entry points are deprecated" in text
            assert "## Example" not in text  # the two sections only, not the whole page
            page = REPO / "docs" / "rules" / "deprecated-amp-api.md"
            assert f"[TRN802 documentation]({page.as_uri()})" in text and page.is_file()
            assert await hover(s, 2, 27) is not None  # the last character of the range
            for line, character in ((2, 4), (2, 28), (0, 3), (9, 0)):  # beside it, after it, elsewhere
                assert await hover(s, line, character) is None, (line, character)
            await s.change(path, FIXED)
            assert await hover(s, 2, 10) is None  # the finding is gone with the fix

    run(go())


# ------------------------------------------------------------- framing
# The pygls client always frames its messages correctly; these tests write the bytes themselves.

def frame(message: dict, length: int | None = None) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % (len(body) if length is None else length) + body


def request(msg_id: int, method: str, params: object = None) -> dict:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}


class RawServer:
    """``torchcheck server`` as a subprocess fed raw bytes; its (well-framed) output read by a thread."""

    def __init__(self, cwd: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "lint_rules", "server"], cwd=cwd,
                                        env={**os.environ, "PYTHONPATH": str(REPO)}, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.received: queue.Queue = queue.Queue()
        self.logged: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.send(frame(request(0, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})))
        self.answer(0)
        self.send(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))

    def _read(self) -> None:
        out = self.process.stdout
        while True:
            length = None
            while (line := out.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line or length is None:
                self.received.put(None)
                return
            self.received.put(json.loads(out.read(length)))

    def send(self, data: bytes) -> None:
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def answer(self, msg_id: int) -> dict:
        """The response to request ``msg_id``, noting the window/logMessage messages on the way."""
        while True:
            try:
                message = self.received.get(timeout=TIMEOUT)
            except queue.Empty:
                raise AssertionError(f"no answer to request {msg_id} in {TIMEOUT} s; logged: {self.logged}") from None
            assert message is not None, f"the server stopped: {self.process.stderr.read().decode()}"
            if message.get("method") == "window/logMessage":
                self.logged.append(message["params"]["message"])
            if message.get("id") == msg_id and "method" not in message:
                return message

    def stop(self) -> tuple[int, str]:
        """exit (after shutdown, once): the exit code and what the server wrote to stderr."""
        self.send(frame({"jsonrpc": "2.0", "method": "exit"}))
        try:
            code = self.process.wait(TIMEOUT)
        finally:
            self.process.kill()
            self.process.stdin.close()
        return code, self.process.stderr.read().decode()


@pytest.fixture
def raw(tmp_path: Path):
    server = RawServer(tmp_path)
    yield server
    if server.process.poll() is None:
        server.process.kill()
    server.process.wait()
    server.process.stdin.close()


HOVER = {"textDocument": {"uri": "file:///nowhere/train.py"}, "position": {"line": 0, "character": 0}}


@pytest.mark.parametrize("off", [-3, 3, 500], ids=["short", "long", "longer-than-the-next-message"])
def test_a_content_length_a_few_bytes_off_loses_that_message_only(raw: RawServer, off: int) -> None:
    """The damaged message is reported and skipped; the next one is read and answered (500 bytes too
    long reaches past the whole next message: its header inside the claimed body says so)."""
    damaged = request(1, "textDocument/hover", HOVER)
    raw.send(frame(damaged, len(json.dumps(damaged)) + off) + frame(request(2, "textDocument/hover", HOVER)))
    assert raw.answer(2)["result"] is None
    assert any("skipping to the next Content-Length header" in m for m in raw.logged), raw.logged
    raw.send(frame(request(3, "shutdown")))
    raw.answer(3)
    code, stderr = raw.stop()
    assert code == 0 and "Traceback" not in stderr, stderr


@pytest.mark.parametrize("length", [99_999_999_999, 2 * 1024**3])
def test_a_huge_content_length_is_skipped_not_read(raw: RawServer, length: int) -> None:
    """Once a MemoryError (pygls allocated the length) or a wait for 2 GiB that never came."""
    raw.send(b"Content-Length: %d\r\n\r\n" % length + json.dumps(request(1, "shutdown")).encode())
    raw.send(frame(request(2, "textDocument/hover", HOVER)))
    assert raw.answer(2)["result"] is None
    assert any(f"Content-Length of {length} bytes, over the limit of 67108864 bytes" in m for m in raw.logged)
    raw.send(frame(request(3, "shutdown")))
    raw.answer(3)
    code, stderr = raw.stop()
    assert code == 0 and "MemoryError" not in stderr and "Traceback" not in stderr, stderr


def test_requests_after_shutdown_are_answered_with_invalid_request(raw: RawServer) -> None:
    raw.send(frame(request(1, "shutdown")))
    assert raw.answer(1)["result"] is None
    raw.send(frame(request(2, "textDocument/hover", HOVER)))
    error = raw.answer(2)["error"]
    assert error["code"] == -32600 and "textDocument/hover after shutdown" in error["message"]
    assert raw.stop()[0] == 0  # exit is still accepted


def test_a_request_with_bad_params_is_answered_with_an_error(raw: RawServer) -> None:
    raw.send(frame(request(1, "textDocument/hover", {"position": "here"})))
    assert raw.answer(1)["error"]["code"] == -32602  # InvalidParams, not silence
    raw.send(frame(request(2, "shutdown")))
    raw.answer(2)
    assert raw.stop()[0] == 0


def test_framing_reads_a_stream_however_it_is_split() -> None:
    """Header fields besides Content-Length, a blank line between frames, then three kinds of damage:
    the same bodies and reports whether the bytes come at once or one at a time."""
    one, two = json.dumps(request(1, "a")).encode(), json.dumps(request(2, "b")).encode()
    stream = (b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d\r\n\r\n" % len(one)
              + one + b"\r\n"
              + b"X-Junk\r\n\r\n"  # not a header
              + b"Content-Length: 5\r\n\r\n" + one  # too short: its first 5 bytes are no JSON
              + b"Content-Length: 99999999999\r\n\r\n" + one  # over the limit: skipped, not read
              + b"Content-Length: %d\r\n\r\n" % len(two) + two)

    def read(chunks: list[bytes]) -> tuple[list[bytes], list[str]]:
        reports: list[str] = []
        framing, bodies = Framing(reports.append, limit=1024), []
        for chunk in chunks:
            framing.feed(chunk)
            while (body := framing.next_body()) is not None:
                try:
                    json.loads(body)
                except ValueError:
                    framing.reject("not JSON")
                else:
                    bodies.append(body)
        return bodies, reports

    whole = read([stream])
    assert whole == ([one, two], [
        "a header line that is not 'Name: value': b'X-Junk'; skipping to the next Content-Length header",
        "not JSON; skipping to the next Content-Length header",
        "a Content-Length of 99999999999 bytes, over the limit of 1024 bytes; "
        "skipping to the next Content-Length header",
    ])
    assert read([stream[i:i + 1] for i in range(len(stream))]) == whole
