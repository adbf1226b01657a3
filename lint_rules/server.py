"""``torchcheck server``: the linter as a Language Server Protocol server over stdio.

A thin layer over :mod:`lint_rules.api`, built on pygls: an open buffer is linted from memory
with :func:`~lint_rules.api.lint_text` as the file it will be saved as (its per-file ignores, torch
bound and the imports of the project around it come from disk), on open and change, and on save
when the configuration read again changed what applies. Each
finding's fix is a quick fix, every safe fix at once is the ``source.fixAll.torchcheck`` action, and
"suppress on this line" adds ``# noqa: TRNnnn`` (merged into a noqa comment already there).
Hovering over a finding shows its rule's documentation (what ``torchcheck explain`` prints, in part).

Messages are read by this module's :class:`Framing` rather than pygls's reader: a damaged frame (a
``Content-Length`` a few bytes off, a body that is not JSON, a length past :data:`MAX_MESSAGE`) is
logged and skipped up to the next header instead of stalling or crashing the server, and every
request gets an answer (after ``shutdown``, an ``InvalidRequest`` error).

Linting runs in one worker thread, one document at a time, and only the newest text of a document
is linted: edits that arrive while a lint runs are coalesced into the next one, so a burst of
typing never queues stale work (no debounce delay is added). Only this module imports pygls, and
only ``torchcheck server`` imports this module.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import RPCRequest
from pygls.workspace.position_codec import ServerTextPosition, ServerTextRange

from lint_rules import __version__, registry
from lint_rules.api import Settings, dependencies_hold, forget_project_files, lint_text
from lint_rules.diagnostics import SAFE, FileResult, Finding
from lint_rules.errors import TorchcheckError
from lint_rules.fixes import add_noqa
from lint_rules.project import clear_cache as clear_project_cache, read_project

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pygls.workspace import TextDocument

SOURCE = "torchcheck"
FIX_ALL = "source.fixAll.torchcheck"  # a sub-kind of source.fixAll, as Ruff's source.fixAll.ruff
_SEVERITY = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning}

log = logging.getLogger(__name__)

MAX_MESSAGE = 64 * 1024 * 1024  # the largest body read: a 99999999999-byte claim is not allocated
_HEADER_LIMIT = 8 * 1024  # a header block longer than this is damage, not a header still arriving
_READ_SIZE = 64 * 1024
# Where a frame starts. Valid JSON never holds these bytes (the name would be inside a string, and a
# string cannot hold a raw CR), so a match inside a body means the previous frame was damaged.
_FRAME_START = re.compile(rb"Content-Length:[ \t]*[0-9]+[ \t]*\r\n")
_BLANK = re.compile(rb"[\r\n\t ]*")
_FIELD = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*(.*?)[ \t]*")
_DOCS = Path(__file__).resolve().parent.parent / "docs" / "rules"  # the rule pages, in a source checkout


class _Linted:
    """The last lint of one document: the text it saw, under what, and what it found there."""

    __slots__ = ("version", "source", "basis", "findings", "fixable", "problem", "noqa", "depends_on")

    def __init__(self, version: int | None, source: str, basis: object, findings: list[Finding],
                 problem: str | None = None, depends_on: list | None = None) -> None:
        self.version = version
        self.depends_on = depends_on or []  # the other files of the project the findings came from
        self.source = source
        self.basis = basis  # what besides the text decided the findings (TorchcheckServer.basis)
        self.findings = findings
        self.problem = problem  # a configuration error to show the user instead
        self.fixable = any(f.fix is not None and f.fix.applicability == SAFE for f in findings)
        # (line, code) -> that line with the code added to its noqa comment (None: no comment can end it);
        # editors ask for code actions at every cursor move, and each answer would tokenize the file.
        self.noqa: dict[tuple[int, str], str | None] = {}


class TorchcheckServer(LanguageServer):
    """pygls's server with the per-document lint state and the per-directory settings."""

    def __init__(self) -> None:
        super().__init__(SOURCE, __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
                         protocol_cls=_Protocol)
        self._settings: dict[tuple[str, bool], tuple[object, Settings | TorchcheckError]] = {}
        self._linted: dict[str, _Linted] = {}
        self._fixed: dict[str, tuple[str, str | None]] = {}  # uri -> (text, that text fixed)
        self._dirty: set[str] = set()
        self._running: dict[str, asyncio.Future] = {}
        self._checks: set[asyncio.Future] = set()  # dependents checks after a save, in flight
        self._announced: set[str] = set()  # configuration errors already shown
        self.shut_down = False  # the client asked to shut down before exit: exit 0, else 1 (the LSP rule)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="torchcheck-lint")

    # ---------------------------------------------------------- settings
    def settings_for(self, path: str | None, fix: bool = False) -> Settings | TorchcheckError:
        """Settings.resolve from the document's directory, cached per directory until the
        configuration file it came from changes (or a document is saved: a new pyproject.toml)."""
        directory = os.path.dirname(path) if path else (self.workspace.root_path or os.getcwd())
        key = (directory, fix)
        held = self._settings.get(key)
        if held is not None and held[0] == _stamp(held[1]):
            return held[1]
        try:
            # The torch bound read here, once per directory, not per lint (and read again with the settings).
            settings: Settings | TorchcheckError = Settings.resolve(directory, fix=fix,
                                                                    project=read_project(Path(directory)))
        except TorchcheckError as e:
            settings = e
        self._settings[key] = (_stamp(settings), settings)
        return settings

    def forget_settings(self) -> None:
        """Read the configuration again at the next lint: settings, and the torch bound of the
        project files (which lint_rules.project otherwise keeps for the life of the process)."""
        self._settings.clear()
        self._announced.clear()
        clear_project_cache()

    def basis(self, path: str | None) -> Settings | str:
        """What a document's findings depend on besides its text: its settings (the torch bound
        included), or the configuration error that stops it being linted."""
        settings = self.settings_for(path)
        return str(settings) if isinstance(settings, TorchcheckError) else settings

    def saved(self, uri: str) -> None:
        """On save: read the configuration again (a new pyproject.toml may apply), and lint again
        only if that changed what applies or the text differs from the last lint. The buffer was
        linted as it is saved, so a save that changes neither needs no lint (editors that save
        after every pause in typing would otherwise lint every text twice)."""
        self.forget_settings()
        task = asyncio.ensure_future(self._relint_dependents(uri))
        self._checks.add(task)  # held until done: the event loop keeps only weak references
        task.add_done_callback(self._checks.discard)
        linted = self._linted.get(uri)
        doc = self.workspace.get_text_document(uri)
        if (linted is not None and uri not in self._running and uri not in self._dirty
                and linted.source == doc.source and linted.basis == self.basis(doc.path)):
            return
        self.schedule(uri)

    async def _relint_dependents(self, saved: str) -> None:
        """Lint again the other open documents whose findings came from a file that has just been
        saved: ``train.py``'s TRN502 depends on whether ``model.py``'s forward still ends in a
        sigmoid. Checked in the lint worker (it owns the project index), one document at a time."""
        loop = asyncio.get_running_loop()
        try:
            # A saved file may import a module another buffer defines: its callers changed.
            await loop.run_in_executor(self._worker, forget_project_files)
            for uri, linted in list(self._linted.items()):
                if uri == saved or not linted.depends_on or uri in self._dirty:
                    continue
                if not await loop.run_in_executor(self._worker, dependencies_hold, linted.depends_on):
                    if uri in self.workspace.text_documents:
                        self.schedule(uri)
        except Exception:  # never let this stop the server
            log.exception("checking the documents that import %s failed", saved)

    # ----------------------------------------------------------- linting
    def schedule(self, uri: str) -> None:
        """Lint ``uri``'s newest text soon; one lint per document in flight, stale ones dropped."""
        self._dirty.add(uri)
        if uri not in self._running:
            self._running[uri] = asyncio.ensure_future(self._lint_until_current(uri))

    async def _lint_until_current(self, uri: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            while uri in self._dirty:
                self._dirty.discard(uri)
                doc = self.workspace.get_text_document(uri)
                source, version = doc.source, doc.version
                linted = await loop.run_in_executor(self._worker, self._lint, doc.path, source, version)
                if uri in self._dirty:
                    continue  # the text changed meanwhile: its lint supersedes this one
                if uri not in self.workspace.text_documents:
                    break  # closed meanwhile: its diagnostics were cleared
                if linted is not None and linted.problem is not None:
                    self._announce(linted.problem)  # here, on the event loop: the protocol is not thread-safe
                if linted is not None:
                    self._linted[uri] = linted
                    self.publish(uri, doc, linted)
        except Exception:  # never let one document's failure stop the server
            log.exception("linting %s failed", uri)
        finally:
            self._running.pop(uri, None)

    def _lint(self, path: str | None, source: str, version: int | None) -> _Linted | None:
        shown = path or "-"
        if shown.endswith(".ipynb"):
            return None  # notebooks come as notebook documents, which this server does not sync
        basis = self.basis(path)
        if isinstance(basis, str):
            return _Linted(version, source, basis, [], problem=basis)
        try:
            result = lint_text(source, shown, basis)
        except TorchcheckError as e:  # valid Python the linter cannot analyse: say so where it is
            result = FileResult(shown, [Finding(shown, 1, 1, 1, 1, registry.SYNTAX_ERROR.CODE,
                                                registry.SYNTAX_ERROR.NAME, str(e), "error")])
        return _Linted(version, source, basis, result.findings, depends_on=result.depends_on)

    def _announce(self, message: str) -> None:
        if message not in self._announced:
            self._announced.add(message)
            self.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Error, f"torchcheck: {message}"))

    def publish(self, uri: str, doc: TextDocument, linted: _Linted) -> None:
        lines = linted.source.splitlines(True)
        diagnostics = [_diagnostic(doc, lines, f) for f in linted.findings]
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=linted.version))

    def close(self, uri: str) -> None:
        self._dirty.discard(uri)
        self._linted.pop(uri, None)
        self._fixed.pop(uri, None)
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    # ------------------------------------------------------------- hover
    def hover(self, params: lsp.HoverParams) -> lsp.Hover | None:
        """The rule documentation of each finding under the cursor, in Markdown; None where there is none."""
        uri = params.text_document.uri
        linted = self._linted.get(uri)
        doc = self.workspace.get_text_document(uri)
        if linted is None or not linted.findings or linted.source != doc.source:
            return None  # not linted yet, or stale: the findings' ranges would point elsewhere
        lines = linted.source.splitlines(True)
        at = doc.position_codec.position_from_client_units(lines, params.position)
        here = (at.line + 1, at.character + 1)
        found = [f for f in linted.findings
                 if (f.line, f.column) == here or (f.line, f.column) <= here < (f.end_line, f.end_column)]
        if not found:
            return None
        first = found[0]
        return lsp.Hover(
            lsp.MarkupContent(lsp.MarkupKind.Markdown, "\n\n---\n\n".join(_explanation(f) for f in found)),
            range=_range(doc, lines, first.line, first.column, first.end_line, first.end_column))

    # ------------------------------------------------------------ stdio
    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """pygls's ``start_io`` with :class:`Framing` reading the messages (pygls's own reader
        stalls on a ``Content-Length`` a few bytes off and allocates whatever length it is told)."""
        self._stop_event = threading.Event()  # pygls's shutdown() sets it
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(self._serve(stdin or sys.stdin.buffer))
        except BrokenPipeError:
            log.error("the connection to the client is lost; stopping")
        except (KeyboardInterrupt, SystemExit):  # exit raises SystemExit
            pass
        finally:
            self.shutdown()

    async def _serve(self, stdin: BinaryIO) -> None:
        loop = asyncio.get_running_loop()
        read = getattr(stdin, "read1", stdin.read)  # read1: what is there, without waiting for a full chunk
        framing = Framing(self._framing_error)
        while not self._stop_event.is_set():
            data = await loop.run_in_executor(self.thread_pool, read, _READ_SIZE)
            if not data:
                break  # the client closed our stdin
            framing.feed(data)
            while (body := framing.next_body()) is not None:
                try:
                    message = json.loads(body, object_hook=self.protocol.structure_message)
                except ValueError as e:  # not JSON (or not UTF-8): the frame's length was wrong
                    framing.reject(f"a message body that is not JSON ({e})")
                    continue
                except JsonRpcException as e:  # JSON, but not a valid message: answer it if it is a request
                    self.protocol.answer_malformed(body, e)
                    continue
                try:
                    self.protocol.handle_message(message)
                except Exception:  # as pygls: one message's failure never stops the server
                    log.exception("handling a message failed")

    def _framing_error(self, message: str) -> None:
        log.error("%s", message)  # standard error, for the editor's LSP log
        try:
            self.window_log_message(lsp.LogMessageParams(lsp.MessageType.Error, f"torchcheck server: {message}"))
        except Exception:  # the log must not stop the reading
            log.exception("could not send window/logMessage")

    # ------------------------------------------------------ code actions
    async def code_actions(self, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        doc = self.workspace.get_text_document(uri)
        linted = self._linted.get(uri)
        if linted is None or linted.source != doc.source:
            return []  # not linted yet, or stale: the edits would land in the wrong place
        only = params.context.only
        wanted = (lambda kind: True) if not only else (lambda kind: any(kind.startswith(o) for o in only))
        lines = linted.source.splitlines(True)
        actions: list[lsp.CodeAction] = []
        first, last = params.range.start.line + 1, params.range.end.line + 1
        here = [f for f in linted.findings if f.line <= last and f.end_line >= first]
        settings = self.settings_for(doc.path)
        unsafe_ok = isinstance(settings, Settings) and settings.unsafe_fixes
        if wanted(lsp.CodeActionKind.QuickFix):
            for f in here:
                if f.fix is not None and (f.fix.applicability == SAFE or unsafe_ok):
                    unsafe = "" if f.fix.applicability == SAFE else " (unsafe)"
                    edits = [lsp.TextEdit(_range(doc, lines, e.line, e.column, e.end_line, e.end_column), e.content)
                             for e in f.fix.edits]
                    actions.append(lsp.CodeAction(
                        title=f"{f.code}: {f.fix.message}{unsafe}", kind=lsp.CodeActionKind.QuickFix,
                        diagnostics=[_diagnostic(doc, lines, f)], is_preferred=not unsafe,
                        edit=lsp.WorkspaceEdit(changes={uri: edits})))
            for f in here:
                if f.code in registry.BUILTINS:  # a syntax error or a crash is not to be silenced
                    continue
                action = _suppress(uri, doc, lines, linted, f)
                if action is not None:
                    actions.append(action)
        if linted.fixable and wanted(FIX_ALL):
            action = lsp.CodeAction(title="torchcheck: fix all safely fixable problems", kind=FIX_ALL,
                                    data={"uri": uri})
            if self._resolves_edits():  # the fix run waits until the user picks the action
                actions.append(action)
            elif (await self.resolve_fix_all(action)).edit is not None:
                actions.append(action)
        return actions

    def _resolves_edits(self) -> bool:
        caps = self.client_capabilities.text_document
        support = caps.code_action.resolve_support if caps and caps.code_action else None
        return support is not None and "edit" in support.properties

    async def resolve_fix_all(self, action: lsp.CodeAction) -> lsp.CodeAction:
        """Fill in the fix-all action's edit (``codeAction/resolve``, or at once for clients without it).
        The fix run happens in the lint worker: the event loop keeps taking changes meanwhile."""
        uri = (action.data or {}).get("uri") if isinstance(action.data, dict) else None
        if uri is None or action.kind != FIX_ALL:
            return action
        doc = self.workspace.get_text_document(uri)
        source = doc.source
        fixed = await asyncio.get_running_loop().run_in_executor(self._worker, self.fix_all, uri, doc.path, source)
        if fixed is not None and fixed != source and doc.source == source:  # not edited meanwhile
            action.edit = lsp.WorkspaceEdit(changes={uri: [_whole(doc, source.splitlines(True), fixed)]})
        return action

    def fix_all(self, uri: str, path: str | None, source: str) -> str | None:
        """``source`` with every safe fix applied (``torchcheck lint --fix`` on the buffer); kept for
        the text it was made from, as editors ask for code actions at every cursor move."""
        held = self._fixed.get(uri)
        if held is not None and held[0] == source:
            return held[1]
        fixed = None
        settings = self.settings_for(path, fix=True)
        if not isinstance(settings, TorchcheckError):
            try:
                result = lint_text(source, path or "-", settings)
            except TorchcheckError:
                result = None
            if result is not None and result.fixed is not None and result.fixed.error is None:
                fixed = result.fixed.source
        self._fixed[uri] = (source, fixed)
        return fixed


class _Protocol(LanguageServerProtocol):
    """pygls's protocol, answering every request: after ``shutdown``, any request but ``exit`` gets an
    ``InvalidRequest`` error (pygls drops it, leaving the client waiting); one whose parameters do not
    fit its method gets pygls's error for it (``InvalidParams``) through :meth:`answer_malformed`."""

    def handle_message(self, message) -> None:
        if self._shutdown and isinstance(message, RPCRequest) and message.method != lsp.EXIT:
            error = JsonRpcInvalidRequest(f"{message.method} after shutdown: only exit is accepted now")
            self._send_response(message.id, None, error.to_response_error())
            return
        if not hasattr(message, "jsonrpc"):  # JSON, but not a JSON-RPC message (an array, a number ...)
            log.error("ignored a message that is not JSON-RPC: %.200s", message)
            return
        super().handle_message(message)

    def answer_malformed(self, body: bytes, error: JsonRpcException) -> None:
        """A JSON body pygls could not read as a message: answer it with ``error`` when it is a request."""
        raw = json.loads(body)
        log.error("ignored a malformed message: %s", error)
        if isinstance(raw, dict) and "method" in raw and isinstance(raw.get("id"), (int, str)):
            self._send_response(raw["id"], None, error.to_response_error())


class Framing:
    """The LSP base protocol's frames (``Content-Length: N\\r\\n\\r\\n`` and N bytes of body) in a byte
    stream, recovering from damage: a header that does not parse, a length over ``limit``, a header
    inside what should be a body (the length was too long), or a body that is not JSON (the caller's
    :meth:`reject`: too short, or too long) is reported through ``report`` and the stream is skipped
    up to the next ``Content-Length:`` header. Memory stays bounded by ``limit`` whatever the stream
    says. ``feed`` the bytes read, then take the bodies from ``next_body`` until it returns None."""

    def __init__(self, report: Callable[[str], None], limit: int = MAX_MESSAGE) -> None:
        self._report = report
        self._limit = limit
        self._buffer = bytearray()
        self._length: int | None = None  # the body being read: its length, its header already dropped
        self._taken = 0  # bytes of the last body returned, dropped at the next call
        self._scanned = 0  # how much of the body being read is known to hold no header
        self._lost = False  # skipping to the next header

    def feed(self, data: bytes) -> None:
        self._buffer += data

    def next_body(self) -> bytes | None:
        buffer = self._buffer
        if self._taken:
            del buffer[:self._taken]
            self._taken = 0
        while True:
            if self._lost and not self._skip(0):
                return None
            if self._length is None:
                if not self._header():
                    return None
                continue
            if len(buffer) < self._length:
                # Still arriving, or the length claimed was too long and runs into the next message:
                # a header inside says which (a whole body is JSON, which holds none: not searched).
                inside = _FRAME_START.search(buffer, max(0, self._scanned - 64))
                if inside is not None:
                    self._damaged(f"a message shorter than its Content-Length of {self._length} bytes",
                                  inside.start())
                    continue
                self._scanned = len(buffer)
                return None
            self._taken, self._length, self._scanned = self._length, None, 0
            return bytes(buffer[:self._taken])

    def reject(self, reason: str) -> None:
        """The last body returned is no message (its Content-Length was wrong): skip to the next header,
        which may begin inside it."""
        self._taken = 0
        self._damaged(reason, 1)

    def _header(self) -> bool:
        """Read the header block at the start of the buffer; False when it has not all arrived."""
        buffer = self._buffer
        blank = _BLANK.match(buffer).end()  # between frames: nothing to report
        if blank:
            del buffer[:blank]
        end = buffer.find(b"\r\n\r\n", 0, _HEADER_LIMIT)
        if end < 0:
            if len(buffer) >= _HEADER_LIMIT:
                self._damaged(f"no end of the header in its first {_HEADER_LIMIT} bytes", 1)
                return True
            return False
        length = None
        for line in bytes(buffer[:end]).split(b"\r\n"):
            field = _FIELD.fullmatch(line)
            if field is None:
                self._damaged(f"a header line that is not 'Name: value': {line[:80]!r}", 1)
                return True
            if field.group(1).lower() == b"content-length":
                if length is not None or not field.group(2).isdigit():
                    self._damaged(f"a bad Content-Length header: {line[:80]!r}", 1)
                    return True
                length = int(field.group(2))
        if length is None:
            self._damaged("a header without Content-Length", 1)
        elif length > self._limit:
            # Not read: the body is skipped like damage (a body that is JSON holds no header to stop at).
            self._damaged(f"a Content-Length of {length} bytes, over the limit of {self._limit} bytes", end + 4)
        else:
            del buffer[:end + 4]
            self._length, self._scanned = length, 0
        return True

    def _damaged(self, reason: str, start: int) -> None:
        self._report(f"{reason}; skipping to the next Content-Length header")
        self._length, self._scanned = None, 0
        self._skip(start)

    def _skip(self, start: int) -> bool:
        """Drop the bytes before the next frame's header at or after ``start``; False when none has
        arrived yet (the end of the buffer, where a header may be arriving, is kept)."""
        buffer = self._buffer
        found = _FRAME_START.search(buffer, start)
        if found is None:
            del buffer[:max(start, len(buffer) - 64)]
            self._lost = True
            return False
        del buffer[:found.start()]
        self._lost = False
        return True


def _stamp(settings: Settings | TorchcheckError) -> object:
    """What says a cached Settings is still current: its configuration file's mtime (None: none)."""
    path = settings.config.path if isinstance(settings, Settings) else None
    if path is None:
        return None
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def _range(doc: TextDocument, lines: list[str], line: int, column: int, end_line: int,
           end_column: int) -> lsp.Range:
    """1-based code-point positions (end exclusive) to the client's 0-based units (UTF-16 by default)."""
    server = ServerTextRange(ServerTextPosition(line - 1, column - 1), ServerTextPosition(end_line - 1, end_column - 1))
    return doc.position_codec.range_to_client_units(lines, server)


def _diagnostic(doc: TextDocument, lines: list[str], f: Finding) -> lsp.Diagnostic:
    return lsp.Diagnostic(
        range=_range(doc, lines, f.line, f.column, f.end_line, f.end_column),
        message=f.message,  # as every other front end words it; the code is shown beside it
        severity=_SEVERITY.get(f.severity, lsp.DiagnosticSeverity.Warning),
        code=f.code,
        source=SOURCE,
    )


@functools.lru_cache(maxsize=None)
def _documentation(code: str) -> tuple[str, str, str] | None:
    """A rule's name, "What it does" and "Why is this bad?" in Markdown, and its page as a link;
    from ``documentation()``, the text ``torchcheck explain`` prints."""
    rule = registry.lookup(code)
    if rule is None:
        return None
    doc = rule.documentation()
    sections = "\n\n".join(f"**{title}**\n{text}" for title in ("What it does", "Why is this bad?")
                           if (text := _section(doc, title)))
    page = _DOCS / f"{rule.NAME}.md"
    # No site serves the rule pages yet: link the page in a source checkout; elsewhere the
    # command that prints it.
    link = f"[{code} documentation]({page.as_uri()})" if page.is_file() else ""
    return rule.NAME, sections, link


def _section(doc: str, title: str) -> str:
    """The text under ``## title`` in a rule's documentation ('' if it has none)."""
    m = re.search(rf"^## {re.escape(title)}[ \t]*\n(.*?)(?=^## |\Z)", doc, re.M | re.S)
    return m.group(1).strip() if m else ""


def _explanation(f: Finding) -> str:
    """Hover Markdown for one finding: its code, name and message, then its rule's documentation."""
    documented = _documentation(f.code)
    if documented is None:
        return f"**{f.code}** {f.message}"
    name, sections, link = documented
    command = f"`torchcheck explain {f.code}`"
    more = f"{link} · {command}" if link else f"{command} prints the whole page"
    return "\n\n".join(part for part in (f"**{f.code}** `{name}`: {f.message}", sections, more) if part)


def _suppress(uri: str, doc: TextDocument, lines: list[str], linted: _Linted, f: Finding) -> lsp.CodeAction | None:
    """"Suppress on this line": the line ``--add-noqa`` would write, as an edit of that line alone."""
    key = (f.line, f.code)
    if key not in linted.noqa:
        new, added, _ = add_noqa(linted.source, {f.line: {f.code}})
        linted.noqa[key] = new.splitlines(True)[f.line - 1].rstrip("\r\n") if added else None
    new_line = linted.noqa[key]
    if new_line is None:
        return None  # no comment can end the line (inside a multi-line string, or continued)
    old_line = lines[f.line - 1].rstrip("\r\n")
    edit = lsp.TextEdit(_range(doc, lines, f.line, 1, f.line, len(old_line) + 1), new_line)
    return lsp.CodeAction(title=f"{f.code}: suppress on this line (# noqa: {f.code})",
                          kind=lsp.CodeActionKind.QuickFix, diagnostics=[_diagnostic(doc, lines, f)],
                          edit=lsp.WorkspaceEdit(changes={uri: [edit]}))


def _whole(doc: TextDocument, lines: list[str], text: str) -> lsp.TextEdit:
    """One edit replacing the whole document with ``text``."""
    if not lines:
        return lsp.TextEdit(lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), text)
    last = lines[-1]
    if last.endswith(("\n", "\r")):  # the end is the start of the (empty) line after it
        end = lsp.Position(len(lines), 0)
    else:
        end = doc.position_codec.position_to_client_units(lines, ServerTextPosition(len(lines) - 1, len(last)))
    return lsp.TextEdit(lsp.Range(lsp.Position(0, 0), end), text)


def build() -> TorchcheckServer:
    server = TorchcheckServer()

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: TorchcheckServer, params: None) -> None:
        ls.shut_down = True

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TorchcheckServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TorchcheckServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TorchcheckServer, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.saved(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TorchcheckServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.close(params.text_document.uri)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(ls: TorchcheckServer, params: lsp.DidChangeWatchedFilesParams) -> None:
        ls.forget_settings()
        for uri in list(ls._linted):
            ls.schedule(uri)

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION,
                    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL],
                                          resolve_provider=True))
    async def code_action(ls: TorchcheckServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        return await ls.code_actions(params)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: TorchcheckServer, params: lsp.HoverParams) -> lsp.Hover | None:
        return ls.hover(params)

    @server.feature(lsp.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: TorchcheckServer, action: lsp.CodeAction) -> lsp.CodeAction:
        return await ls.resolve_fix_all(action)

    return server


def main() -> int:
    """Serve over standard input and output until the client says exit."""
    logging.basicConfig(level=logging.WARNING, format="torchcheck server: %(message)s")  # to stderr
    server = build()
    server.start_io()
    if sys.stdout.closed:  # pygls closes the pipe on exit; the CLI's final flush must find an open file
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives until the process ends
    return 0 if server.shut_down else 1
