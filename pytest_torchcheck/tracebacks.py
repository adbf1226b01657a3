"""Tracebacks that end at the user's frame: torch's and torchcheck's own frames are hidden.

pytest hides a frame that sets ``__tracebackhide__``; torch's frames cannot set it, so a
failure raised from inside a module call or a backward pass would otherwise print
torch's ``Module._call_impl`` or ``all_reduce`` source (75 lines and more) between the
user's line and the message. ``--fulltrace`` shows every frame, as it does in pytest.

pytest also prints, above the source of a long-style frame (the test's and the one that failed, with the
default ``--tb=auto``), the repr of each of the frame's arguments: a model's or an optimizer's repr is 10 to
50 lines, and the user's training loop takes both. In torchcheck's failures an argument whose repr spans
lines is folded to its first line; ``-l`` (``--showlocals``) keeps them whole.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_CONTEXTLIB = os.path.abspath(sys.modules["contextlib"].__file__ or "contextlib.py")


def _library_prefixes() -> tuple[str, ...]:
    prefixes = [_OWN_DIR]
    torch = sys.modules.get("torch")
    torch_file = getattr(torch, "__file__", None)
    if torch_file:
        prefixes.append(os.path.dirname(os.path.abspath(torch_file)) + os.sep)
    return tuple(prefixes)


def hide_library_frames(excinfo: Any) -> None:
    """Drop torch's, torchcheck's and contextlib's entries from ``excinfo.traceback`` (kept if nothing else is left).

    The traceback is rebuilt as a new chain of ``TracebackType`` objects rather than filtered as a list:
    pytest cuts a traceback at the test function by following the raw chain (``tb_next``), which would
    bring a filtered-out entry back.
    """
    import types

    from _pytest._code.code import Traceback

    prefixes = _library_prefixes()
    kept = [entry._rawentry for entry in excinfo.traceback
            if not (str(entry.path).startswith(prefixes) or str(entry.path) == _CONTEXTLIB)]
    if not kept or len(kept) == len(excinfo.traceback):
        return
    chain = None
    for raw in reversed(kept):
        chain = types.TracebackType(chain, raw.tb_frame, raw.tb_lasti, raw.tb_lineno)
    excinfo.traceback = Traceback(chain)


def should_hide(excinfo: Any) -> bool:
    """Hide library frames from torchcheck's failures and usage errors (a bad ``loss_fn`` found inside an
    optimizer step hook), and from any failure inside a distributed rank (where the library frames are
    torch.distributed's collectives and the harness)."""
    from pytest_torchcheck.errors import TorchcheckFailure, TorchcheckUsageError

    if isinstance(excinfo.value, (TorchcheckFailure, TorchcheckUsageError)):
        return True
    context = sys.modules.get("pytest_torchcheck.distributed.context")
    return getattr(context, "CURRENT", None) is not None


def fold_long_arguments(longrepr: Any) -> None:
    """Fold every multi-line argument repr in ``longrepr``'s frames to its first line (``Sequential( ...``)."""
    chain = getattr(longrepr, "chain", None)
    tracebacks = [element[0] for element in chain] if chain else [getattr(longrepr, "reprtraceback", None)]
    for reprtraceback in tracebacks:
        for entry in getattr(reprtraceback, "reprentries", ()):
            funcargs = getattr(entry, "reprfuncargs", None)
            if funcargs is None:
                continue
            funcargs.args = [(name, value if "\n" not in value else
                              f"{value.splitlines()[0].rstrip()} ... ({value.count(chr(10)) + 1}-line repr folded; "
                              f"-l shows it)")
                             for name, value in funcargs.args]


def raise_at_test(test: Any, error: BaseException) -> None:
    """Raise ``error`` from a frame that pytest shows as the test's ``def`` line, and no other.

    A failure found after the test's body returned (a watch's findings) has no frame of the test left to end
    the traceback at; the hook's own frames would print their source instead. This frame has the test's file
    and line and no locals: pytest shows the test's ``def`` line and the message. ``error``'s cause and context
    (the body's own failure) are kept, so pytest prints them above it.
    """
    __tracebackhide__ = True
    code = getattr(test, "__code__", None)
    if code is None:
        raise error.with_traceback(None)
    import linecache

    line = code.co_firstlineno
    while line < code.co_firstlineno + 50 and not linecache.getline(code.co_filename, line).lstrip().startswith(
            ("def ", "async def ")):
        line += 1  # past the decorators, to the def line
    if not linecache.getline(code.co_filename, line).strip():
        line = code.co_firstlineno
    namespace: dict[str, Any] = {"__torchcheck_failure__": error.with_traceback(None)}
    # The raise spans two lines so that pytest draws no column markers under the test's def line.
    exec(compile("\n" * (line - 1) + f"def {code.co_name}(): raise (\n    __torchcheck_failure__)\n",
                 code.co_filename, "exec"), namespace)
    namespace[code.co_name]()
