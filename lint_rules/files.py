"""Which files to lint: expand paths, recurse into directories, apply excludes."""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from lint_rules.errors import UsageError

# Directories never descended into (the set Ruff skips by default).
DEFAULT_EXCLUDES = frozenset({
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints",
    ".mypy_cache", ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache",
    ".svn", ".tox", ".venv", ".vscode", "__pypackages__", "_build", "buck-out", "build",
    "dist", "node_modules", "site-packages", "venv", ".torchcheck_cache", "__pycache__",
})


def matches(path: Path, patterns: list[str], root: Path) -> bool:
    """Whether ``path`` (or one of its parent directories) matches a glob in ``patterns``.

    Patterns are relative to ``root`` (the configuration's directory); a pattern
    without a slash also matches any single path component, as in ``.gitignore``.
    """
    if not patterns:
        return False
    import fnmatch  # only runs with configured patterns
    try:
        rel = PurePosixPath(path.resolve().relative_to(root.resolve()).as_posix())
    except ValueError:
        rel = PurePosixPath(path.as_posix())
    parts = rel.parts
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pat in patterns:
        pat = pat.rstrip("/")
        if pat.startswith("./"):
            pat = pat[2:]
        if "/" not in pat:
            if any(fnmatch.fnmatchcase(part, pat) for part in parts):
                return True
        elif any(fnmatch.fnmatchcase(prefix, pat) for prefix in prefixes):
            return True
    return False


def discover(paths: list[str], excludes: list[str], root: Path, *, respect_gitignore: bool = False,
             notes: list[str] | None = None) -> list[Path]:
    """Python files under ``paths``, sorted, each once.

    Files named explicitly are linted even if they are not ``*.py`` (as pre-commit
    passes them), unless a configured exclude matches them; one that is not a regular file or is over
    ``MAX_FILE_BYTES`` is kept, and :func:`read_regular` makes it that file's error. A directory
    named explicitly that cannot be listed is a ``UsageError``. Walking a directory skips
    what git ignores (``respect_gitignore``), never follows a symbolic link to a
    directory (so a link loop cannot recurse), and skips, with a line in ``notes``,
    anything that is not a regular file (a FIFO would block the read forever), a
    dangling or looping link, a directory it cannot list, and files over ``MAX_FILE_BYTES``.
    """
    from lint_rules.limits import MAX_FILE_BYTES

    notes = [] if notes is None else notes
    out: dict[str, Path] = {}

    def take(path: str, st: os.stat_result, named: bool = False) -> None:
        path = str(Path(path))  # "./a.py" and "a.py" are one file
        if named and (not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES):
            out[path] = Path(path)  # asked for by name: reading it reports the error, without blocking
        elif not stat.S_ISREG(st.st_mode):
            notes.append(f"skipping {path}: not a regular file ({_kind(st.st_mode)})")
        elif st.st_size > MAX_FILE_BYTES:
            notes.append(f"skipping {path}: {st.st_size / 2**20:.1f} MiB, over the limit of "
                         f"{MAX_FILE_BYTES // 2**20} MiB for one file")
        else:
            out[path] = Path(path)

    for raw in paths:
        try:
            st = os.stat(raw)
        except OSError as e:
            raise UsageError(f"path {raw!r} {_missing(raw, e)}") from None
        if not stat.S_ISDIR(st.st_mode):
            if not matches(Path(raw), excludes, root):
                take(raw, st, named=True)
            continue
        ignored = git_ignored(raw, notes) if respect_gitignore else frozenset()
        stack = [raw]
        while stack:
            directory = stack.pop()
            try:
                with os.scandir(directory) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as e:
                if directory is raw:  # named: nothing under it was checked, so the run cannot pass
                    raise UsageError(f"path {raw!r} cannot be listed: {e.strerror}") from None
                notes.append(f"skipping {Path(directory)}: cannot list it: {e.strerror}")
                continue
            subdirs = []
            for entry in entries:
                name = entry.name
                if ignored and os.path.normpath(entry.path) in ignored:
                    continue
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if is_dir:
                    if name in DEFAULT_EXCLUDES or name.endswith(".egg-info") \
                            or os.path.exists(os.path.join(entry.path, "pyvenv.cfg")):
                        continue
                    if not matches(Path(entry.path), excludes, root):
                        subdirs.append(entry.path)
                elif name.endswith((".py", ".ipynb")) and not matches(Path(entry.path), excludes, root):
                    try:
                        take(entry.path, entry.stat())  # follows a link to a file
                    except OSError as e:
                        notes.append(f"skipping {Path(entry.path)}: {_missing(entry.path, e)}")
            stack += reversed(subdirs)
    return [out[k] for k in sorted(out)]


class UnsafeToRead(OSError):
    """A path that is not read: not a regular file (reading a FIFO or a device could block or never end),
    or over the size limit. ``strerror`` says which."""


def read_regular(path: str | os.PathLike) -> bytes:
    """The bytes of the regular file at ``path``, never blocking on whatever else it may be.

    A file can be swapped for a FIFO after discovery looked at it, so the check is made on the
    descriptor that is read (``fstat``), and the open is non-blocking: opening a FIFO for reading
    would otherwise wait for a writer, and a serial device for its carrier. Raises ``OSError``;
    ``UnsafeToRead`` (its ``strerror`` says what the path is) for anything but a regular file,
    and for one over ``MAX_FILE_BYTES``.
    """
    from lint_rules.limits import MAX_FILE_BYTES

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        try:  # a socket cannot be opened at all (ENXIO): say what it is rather than "No such device"
            mode = os.stat(path).st_mode
        except OSError:
            mode = stat.S_IFREG
        if not stat.S_ISREG(mode):
            raise UnsafeToRead(0, f"not a regular file ({_kind(mode)})", str(path)) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeToRead(0, f"not a regular file ({_kind(st.st_mode)})", str(path))
        if st.st_size > MAX_FILE_BYTES:  # said before a byte is read
            raise UnsafeToRead(0, f"over the limit of {MAX_FILE_BYTES // 2**20} MiB for one file", str(path))
        chunks = []
        size = 0
        while True:  # bounded: a file that grows while it is read is not read forever
            chunk = os.read(fd, max(st.st_size - size + 1, 65536))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_FILE_BYTES:
                raise UnsafeToRead(0, f"over the limit of {MAX_FILE_BYTES // 2**20} MiB for one file", str(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    for test, kind in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return kind
    return "a special file"


def _missing(path: str, error: OSError) -> str:
    """Why ``os.stat(path)`` failed, in words."""
    import errno

    if error.errno == errno.ELOOP:
        return "is a symbolic link loop"
    if os.path.islink(path):
        return f"is a symbolic link to {os.readlink(path)!r}, which does not exist"
    if error.errno == errno.ENOENT:
        return "does not exist"
    return f"cannot be read: {error.strerror}"


def git_ignored(directory: str, notes: list[str]) -> frozenset[str]:
    """The paths under ``directory`` that git ignores, normalised as ``os.path.normpath(os.path.join(directory,
    name))``; a wholly ignored directory is one entry. Empty outside a git work tree.

    Git itself answers, so every source of ignore rules counts exactly as git counts it: nested
    ``.gitignore`` files, ``.git/info/exclude``, the global ``core.excludesFile``, negations; and a
    tracked file is never ignored, as in git.
    """
    import subprocess  # here: a run that walks no directory does not pay for it

    try:
        proc = subprocess.run(["git", "-C", directory, "ls-files", "-z", "--others", "--ignored",
                               "--exclude-standard", "--directory"], capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return frozenset()  # no git: nothing can be ignored by it
    if proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip()
        if "not a git repository" not in message and not _ignored_itself(directory):
            first = message.splitlines()[0] if message else f"exit status {proc.returncode}"
            notes.append(f".gitignore is not applied under {directory}: git says: {first}")
        return frozenset()
    return frozenset(os.path.normpath(os.path.join(directory, os.fsdecode(rel)))
                     for rel in proc.stdout.split(b"\0") if rel)


def _ignored_itself(directory: str) -> bool:
    """Whether git ignores ``directory`` as a whole (a virtual environment, site-packages under a
    tracked home directory). Named on the command line, it is linted whole, as when git lists
    nothing under it; some git versions fail to list an ignored directory instead ("directory entry
    not superset of prefix"), which then needs no warning."""
    import subprocess

    try:
        return subprocess.run(["git", "-C", directory, "check-ignore", "-q", "."], capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def display(path: Path) -> str:
    """Path as shown in output: relative to the working directory when below it."""
    real = os.path.realpath(path)  # as Path.resolve(), at a fraction of the cost per file
    cwd = _real_cwd()
    if real == cwd:
        return "."
    if real.startswith(cwd.rstrip(os.sep) + os.sep):
        return Path(real[len(cwd.rstrip(os.sep)) + 1:]).as_posix()
    return path.as_posix()


def _real_cwd() -> str:
    cwd = os.getcwd()
    cached = _CWD.get(cwd)
    if cached is None:
        cached = _CWD[cwd] = os.path.realpath(cwd)
    return cached


_CWD: dict[str, str] = {}


def undecodable(shown: str, data: bytes, error: Exception) -> str:
    """Why ``data`` (the file ``shown``) cannot be decoded, where, and what to do about it."""
    if isinstance(error, UnicodeDecodeError):
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        what = f"cannot decode {shown}: byte 0x{data[error.start]:02x} at line {line}, column {column} is not " \
               f"valid {error.encoding}; save the file as UTF-8"
        if shown.endswith(".ipynb"):
            return what + " (a notebook is JSON, always UTF-8)"
        return what + ", or declare its encoding in a comment on line 1 or 2 (PEP 263: # -*- coding: latin-1 -*-)"
    reason = error.msg if isinstance(error, SyntaxError) else str(error)  # a bad or unknown coding cookie
    if data.startswith(b"\xef\xbb\xbf") and reason.startswith("encoding problem"):
        reason = "it starts with a UTF-8 byte-order mark, but its coding comment declares another encoding"
    return f"cannot decode {shown}: {reason}"
