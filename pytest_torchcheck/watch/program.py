"""Run a script or a module as ``python SCRIPT ARGS`` / ``python -m MODULE ARGS`` would, in this process.

Same ``sys.argv`` (``argv[0]`` the script as given, or the module's file), ``__main__`` as its name,
``sys.path[0]`` the script's folder (the working directory for ``-m``), the working directory
unchanged. What the program's end means is an :class:`Outcome`: its exit code, as Python computes it
from ``SystemExit`` (``None`` 0, an int itself, anything else printed to standard error and 1), or 1
after an uncaught exception, whose traceback is printed as Python prints it, from the program's first
frame (the frames of this runner and of ``runpy`` are left out).
"""

from __future__ import annotations

import os
import sys

from lint_rules.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Sequence


class ProgramNotFound(Exception):
    """The script or module does not exist: a usage error, raised before anything ran."""


@record(frozen=True)
class Outcome:
    code: int  # the exit code ``python`` would have ended with
    stopped: bool = False  # ended by the watch (``--max-steps``), not by the program


def locate(script: str | None, module: str | None) -> str:
    """The file that will run; :class:`ProgramNotFound` naming what is missing."""
    if module is not None:
        import importlib.util

        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError) as e:  # a missing parent package, an empty or relative name
            raise ProgramNotFound(f"no module named {module!r}: {e}") from None
        if spec is None:
            raise ProgramNotFound(f"no module named {module!r} (searched from {os.getcwd()})")
        if spec.submodule_search_locations is not None:  # a package runs its __main__, as python -m does
            main = importlib.util.find_spec(f"{module}.__main__")
            if main is None or main.origin is None:
                raise ProgramNotFound(f"{module!r} is a package and has no __main__ module: it cannot be run")
            return main.origin
        if spec.origin is None or not os.path.exists(spec.origin):
            raise ProgramNotFound(f"module {module!r} has no source file to run")
        return spec.origin
    assert script is not None
    if not os.path.exists(script):
        raise ProgramNotFound(f"cannot run {script!r}: no such file")
    if os.path.isdir(script) and not os.path.exists(os.path.join(script, "__main__.py")):
        raise ProgramNotFound(f"cannot run {script!r}: a folder without __main__.py")
    return os.path.abspath(script)


def run(script: str | None, module: str | None, args: Sequence[str],
        within: Callable[[Callable[[], None]], None] | None = None) -> Outcome:
    """Run the program; ``within(body)`` calls ``body()`` inside whatever context must surround it (a
    watch). ``sys.argv`` and ``sys.path[0]`` are restored after."""
    import runpy

    from pytest_torchcheck.watch.events import StopProgram

    saved_argv, saved_path = sys.argv[:], sys.path[:]
    try:
        if module is not None:
            # python -m puts the working directory first: the module is found, and imports, from there
            sys.path[0:1] = [os.getcwd()]
            target = locate(None, module)
            sys.argv = [target, *args]

            def body() -> None:
                # __annotations__: the interpreter creates __main__ with it, runpy does not
                kept = runpy.run_module(module, {"__annotations__": {}}, run_name="__main__", alter_sys=True)
                _settle_process_groups()  # `kept`, a copy of the program's globals, holds its objects till now
                del kept
        else:
            assert script is not None
            target = locate(script, None)
            sys.argv = [script, *args]
            sys.path[0:1] = [target if os.path.isdir(target) else os.path.dirname(target)]

            def body() -> None:
                if os.path.isdir(target):  # a folder with __main__.py: runpy's way is python's
                    kept = runpy.run_path(target, run_name="__main__")
                    _settle_process_groups()  # as for a module
                    del kept
                else:
                    _run_file(target)

        try:
            if within is None:
                body()
            else:
                within(body)
        except StopProgram as e:
            return Outcome(_exit_code(e.code), stopped=True)
        except SystemExit as e:
            return Outcome(_exit_code(e.code))
        except KeyboardInterrupt:
            _print_traceback(*sys.exc_info(), target)
            return Outcome(130)
        except BaseException:
            _print_traceback(*sys.exc_info(), target)
            return Outcome(1)
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
    return Outcome(0)


def _run_file(path: str) -> None:
    """Run a script file as ``python path`` does: a fresh ``__main__`` module with an absolute ``__file__``
    (Python 3.9+), ``sys.argv`` left as set (``runpy.run_path`` would put ``path`` in ``argv[0]``)."""
    import builtins
    import importlib.machinery
    import io
    import types

    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = builtins
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    main.__spec__ = None
    main.__cached__ = None
    main.__annotations__ = {}  # the interpreter creates __main__ with it
    with io.open_code(path) as f:
        code = compile(f.read(), path, "exec", dont_inherit=True)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved
        _settle_process_groups()
    # `main` (the program's objects) is freed when this returns


def _settle_process_groups() -> None:
    """Let torch.distributed's threads finish before the program's objects are freed.

    A gloo worker thread lets go of a finished collective's tensors, which needs the GIL. Freeing a
    DistributedDataParallel's reducer joins those threads while holding the GIL (torch 2.13), so if the
    reducer goes first the two wait on each other forever. Python keeps ``__main__`` alive until it
    exits; this runner frees it when the program returns, so it first sleeps, GIL free, for a moment
    (only in a program that imported torch.distributed)."""
    if "torch.distributed" in sys.modules:
        import time

        time.sleep(0.05)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF  # what the operating system keeps of it
    sys.stdout.flush()
    print(code, file=sys.stderr)
    return 1


def _print_traceback(kind, value, tb, target: str) -> None:
    """Python's report of an uncaught exception, from the program's first frame on (the runner's and
    runpy's frames before it left out; all of them if the program's file has no frame in it), without
    the frames of the watch's wrappers around torch (pytest_torchcheck/watch/events.py): as unwatched."""
    import traceback

    from pytest_torchcheck.watch import events

    first = tb
    while first is not None and os.path.abspath(first.tb_frame.f_code.co_filename) != target:
        first = first.tb_next
    kept = []
    entry = first or tb
    while entry is not None:
        if entry.tb_frame.f_code.co_filename != events.__file__:
            kept.append(entry)
        entry = entry.tb_next
    for entry, after in zip(kept, kept[1:] + [None]):
        entry.tb_next = after
    sys.stdout.flush()
    traceback.print_exception(kind, value, kept[0] if kept else (first or tb), file=sys.stderr)
    sys.stderr.flush()
