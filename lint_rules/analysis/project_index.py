"""Phase two of the project analysis: where the project's imports lead, and module summaries.

A linted file's imports of the project's own modules are resolved on disk
(absolute imports from the file's directory, its package root, the project root
and its ``src/``, then from the parent of a directory above the file that is named like the
import's first part; relative imports from the file's package; packages with or
without ``__init__.py``), and a name imported from another file is looked up in
that file's summary (:mod:`lint_rules.analysis.summary`), following re-exports
and base classes a few steps deep.

:class:`ProjectIndex` holds summaries, bounded in memory and, with a cache
directory, on disk keyed by file content. :class:`~lint_rules.analysis.cross_file.ProjectFacts`
is what rules of one file see; it records every resolution and every summary it read
(:attr:`ProjectFacts.deps`), so that the file's cached result can be checked
against them later (:meth:`ProjectIndex.still_valid`): a cached result is stale
when an import now resolves elsewhere or a consulted summary changed, and only then.
"""

from __future__ import annotations

import json
import os
import re
from collections import OrderedDict

from lint_rules.files import read_regular

# Importing this module loads no parser: a warm run checks cached dependencies with it.
_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git", "requirements.txt")


SUMMARY_VERSION = 10  # bump when the shape or meaning of a summary changes
SUMMARY_KEYS = frozenset({"classes", "functions", "instances", "imports", "stepping", "calls", "no_grad",
                          "sampled_loaders", "runs"})


def _digest(data: bytes):
    from lint_rules.cache import content_hash

    return content_hash(data)


class ProjectIndex:
    """Module summaries of the files on disk, and where the project's imports lead.

    Summaries are kept for at most ``max_summaries`` files (least recently used
    go first) and re-read when a file's size or modification time changes.
    """

    def __init__(self, cache_dir: str | None = None, max_summaries: int = 256) -> None:
        self.cache_dir = cache_dir
        self.max_summaries = max_summaries
        self._summaries: OrderedDict[str, tuple[tuple[int, int], str, dict]] = OrderedDict()
        self._roots: dict[str, tuple[str, ...]] = {}
        self._project_roots: dict[str, str] = {}
        self._mentions: dict[str, dict[str, tuple[str, ...]] | None] = {}
        self.summarised = 0  # how many files were parsed to summarise them (for tests and benchmarks)

    # ------------------------------------------------------------ files
    def forget_files(self) -> None:
        """Forget where import roots are (a long-lived process whose package layout changed).

        Which module files exist is asked of the file system every time: imports are
        resolved only when a rule asks, so a new ``model.py`` is seen at once. Which files import
        which module (:meth:`importers`) is read once per project and forgotten here too."""
        self._roots.clear()
        self._project_roots.clear()
        self._mentions.clear()

    def roots(self, directory: str) -> tuple[str, ...]:
        """Where absolute imports of a file in ``directory`` are looked for, in order."""
        found = self._roots.get(directory)
        if found is not None:
            return found
        out = [directory]
        top = directory
        while os.path.isfile(os.path.join(top, "__init__.py")):
            parent = os.path.dirname(top)
            if parent == top:
                break
            top = parent
        out.append(top)
        d = directory
        while True:
            if any(os.path.exists(os.path.join(d, m)) for m in _ROOT_MARKERS):
                out += [d, os.path.join(d, "src")]
                break
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
        found = tuple(dict.fromkeys(out))
        if len(self._roots) > 4096:
            self._roots.clear()
        self._roots[directory] = found
        return found

    def importers(self, path: str) -> tuple[str, ...] | None:
        """The other Python files of ``path``'s project whose imports name its module.

        A file counts when one of its ``import``/``from`` lines names the module's last
        part (``from train import fit``, ``from . import train``, ``import pkg.train``),
        read from its text without parsing; the import itself is resolved later, from the
        file's summary. The project is the directory holding ``pyproject.toml``,
        ``setup.py``, ``setup.cfg`` or ``.git`` above ``path``, else its package. None when
        the project has more than :data:`MAX_PROJECT_FILES` Python files (too many to read
        for one question), for an installed package (under ``site-packages``), whose
        callers are other projects, and for a module of a package (a folder with
        ``__init__.py``): library code, whose callers would have to be parsed across the
        project. Scripts and modules side by side (``main.py`` importing ``train.py``) are
        what this serves.
        """
        directory = os.path.dirname(path)
        if _INSTALLED.search(directory) or os.path.isfile(os.path.join(directory, "__init__.py")):
            # An installed library's callers are other projects; a package's modules are library code,
            # called from many places: finding their callers would parse much of the project.
            return None
        stem, mentions = self._module_mentions(path)
        if mentions is None:
            return None
        return tuple(f for f in mentions.get(stem, ()) if f != path)

    def _module_mentions(self, path: str) -> tuple[str, dict[str, tuple[str, ...]] | None]:
        """``path``'s module name (its package's for an ``__init__.py``) and the import mentions of its
        project, by module name (None when the project is too large to read), read once per project."""
        directory = os.path.dirname(path)
        stem = os.path.splitext(os.path.basename(path))[0]
        if stem == "__init__":
            stem = os.path.basename(directory)
        root = self.project_root(directory)
        mentions = self._mentions.get(root, ...)
        if mentions is ...:
            mentions = self._mentions[root] = _import_mentions(root)
            if len(self._mentions) > 64:
                self._mentions.pop(next(iter(self._mentions)))
        return stem, mentions

    def subclass_files(self, path: str, cls: str) -> tuple[str, ...] | None:
        """The other Python files of ``path``'s project that may define a subclass of its class ``cls``:
        those whose import lines name the class or the module, and whose text names the class. Unlike
        :meth:`importers`, a module of a package counts (a ``base/trainer.py`` whose subclasses live
        in ``trainers/``). None when the project is too large to read, or more than
        :data:`MAX_SUBCLASS_FILES` files qualify (a class the whole project builds on: its subclasses
        would each have to be summarised)."""
        directory = os.path.dirname(path)
        if _INSTALLED.search(directory):
            return None
        stem, mentions = self._module_mentions(path)
        if mentions is None:
            return None
        files = sorted(set(mentions.get(stem, ())) | set(mentions.get(cls, ())))
        needle = cls.encode()
        out = []
        for f in files:
            if f == path:
                continue
            try:
                data = read_regular(f)
            except OSError:
                continue
            if _has_word(data, needle):
                out.append(f)
                if len(out) > MAX_SUBCLASS_FILES:
                    return None
        return tuple(out)

    def project_root(self, directory: str) -> str:
        """The directory whose files may call into ``directory``'s modules: the project root (the
        nearest folder above with ``pyproject.toml``, ``setup.py``, ``setup.cfg``, ``.git`` or
        ``requirements.txt``, else the top of ``directory``'s package)."""
        found = self._project_roots.get(directory)
        if found is None:  # asked for every import that resolves nowhere: one walk per folder
            roots = self.roots(directory)
            found = roots[1] if len(roots) > 1 else directory
            d = directory
            while True:
                if any(os.path.exists(os.path.join(d, m)) for m in _ROOT_MARKERS):
                    found = d
                    break
                parent = os.path.dirname(d)
                if parent == d:
                    break
                d = parent
            if len(self._project_roots) > 4096:
                self._project_roots.clear()
            self._project_roots[directory] = found
        return found

    def locate_module(self, from_file: str, level: int, module: str) -> str | None:
        """The file of module ``module`` imported with ``level`` leading dots from ``from_file``."""
        parts = [p for p in module.split(".") if p]
        if level:
            base = os.path.dirname(from_file)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            bases: tuple[str, ...] = (base,)
        else:
            if not parts:
                return None
            bases = self.roots(os.path.dirname(from_file))
        for base in bases:
            found = _module_file(base, parts)
            if found is not None:
                return found
        if not level:
            # A file in a directory named like the import's first part (``lib/model/detector.py``
            # importing ``model.proposals``): the project's scripts put that directory's parent on
            # sys.path (a script in ``lib/``, or ``sys.path.insert(0, "lib")``), and Python resolves
            # the import from there. So do we, after the roots, nearest such directory first.
            d = os.path.dirname(from_file)
            while True:
                parent = os.path.dirname(d)
                if parent == d:
                    break
                if os.path.basename(d) == parts[0]:
                    found = _module_file(parent, parts)
                    if found is not None:
                        return found
                d = parent
            # A script in a sub-folder of the project (``classify/predict.py`` importing
            # ``utils.general``) that puts the project root on sys.path first, as such scripts do:
            # each folder above it, up to the project root, nearest first.
            d = os.path.dirname(from_file)
            top = self.project_root(d)
            while d.startswith(top + os.sep):
                d = os.path.dirname(d)
                found = _module_file(d, parts)
                if found is not None:
                    return found
        return None

    # -------------------------------------------------------- summaries
    def summary(self, path: str) -> tuple[str, dict] | None:
        """(digest, summary) of the module in ``path``; None when it cannot be read."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        held = self._summaries.get(path)
        if held is not None and held[0] == stamp:
            self._summaries.move_to_end(path)
            return held[1], held[2]
        try:
            data = read_regular(path)  # never blocks on a module swapped for a FIFO mid-run
        except OSError:
            return None
        from lint_rules.cache import code_fingerprint, load_json, store_json

        key = _digest(data + f"\0summary{SUMMARY_VERSION}\0{code_fingerprint()}".encode()).hexdigest()
        found = load_json(self.cache_dir, "summaries", key) if self.cache_dir else None
        if not well_formed(found):  # absent, or damaged: a rule must never meet a summary of another shape
            from lint_rules.analysis.summary import summarise_source

            found = summarise_source(_decode(data))
            self.summarised += 1
            if self.cache_dir:
                store_json(self.cache_dir, "summaries", key, found)
        digest = _digest(json.dumps(found, sort_keys=True).encode()).hexdigest()[:16]
        self._summaries[path] = (stamp, digest, found)
        if len(self._summaries) > self.max_summaries:
            self._summaries.popitem(last=False)
        return digest, found

    def still_valid(self, deps: list) -> bool:
        """True when every resolution and summary digest in ``deps`` (``ProjectFacts.deps``) holds."""
        for dep in deps:  # anything of another shape (a damaged cache entry) fails: re-lint
            if _shaped(dep, _IMPORT_DEP):
                _, from_file, level, module, path = dep
                if self.locate_module(from_file, level, module) != path:
                    return False
            elif _shaped(dep, _IMPORTERS_DEP) and (dep[2] is None or _strings(dep[2])):
                _, path, found = dep
                now = self.importers(path)
                if (list(now) if now is not None else None) != found:
                    return False
            elif _shaped(dep, _SUBCLASSES_DEP) and (dep[3] is None or _strings(dep[3])):
                _, path, cls, found = dep
                now = self.subclass_files(path, cls)
                if (list(now) if now is not None else None) != found:
                    return False
            elif _shaped(dep, _SUMMARY_DEP):
                _, path, digest = dep
                held = self.summary(path)
                if (held[0] if held is not None else None) != digest:
                    return False
            else:
                return False
        return True


MAX_SUBCLASS_FILES = 12  # files that may subclass one class, summarised at most
MAX_PROJECT_FILES = 2000  # a project with more Python files than this is not read for importers
_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages", "build", "dist",
                           "venv"})
_IMPORT_LINE = re.compile(rb"^[ \t]*(?:from[ \t]+([.\w]+)[ \t]+import[ \t]+([^\n#;]+)|import[ \t]+([^\n#;]+))",
                          re.M)
_WORD = re.compile(rb"\w+")
_INSTALLED = re.compile(r"[\\/](?:site|dist)-packages(?:[\\/]|$)")


def _import_mentions(root: str) -> dict[str, tuple[str, ...]] | None:
    """Module-name word -> the Python files under ``root`` whose import lines mention it."""
    paths: list[str] = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
        paths.extend(os.path.join(directory, name) for name in sorted(files) if name.endswith(".py"))
        if len(paths) > MAX_PROJECT_FILES:
            return None  # listed, not read: a tree this large costs a few milliseconds to give up on
    found: dict[str, list[str]] = {}
    for path in paths:
        try:
            data = read_regular(path)
        except OSError:
            continue
        words: set[bytes] = set()
        for m in _IMPORT_LINE.finditer(data):
            source, names, modules = m.groups()
            if source is not None:
                # `from pkg.train import fit`: the module is the source's last part; `from . import
                # train` / `from pkg import train`: a name may be a module
                words.update(_WORD.findall(source)[-1:])
                for part in names.split(b","):
                    words.update(_WORD.findall(part.strip().split(b" ")[0])[:1])  # `fit as run`: fit
            else:  # `import pkg.train as t, other`
                for part in modules.split(b","):
                    words.update(_WORD.findall(part.strip().split(b" ")[0])[-1:])
        for word in words:
            found.setdefault(word.decode("ascii", "replace"), []).append(path)
    return {k: tuple(v) for k, v in found.items()}


_OPTIONAL_STR = (str, type(None))
# The shapes of ProjectFacts.deps entries: ["import", from_file, level, module, path or None], ["summary", path, digest]
_IMPORT_DEP = ("import", str, int, str, _OPTIONAL_STR)
_SUMMARY_DEP = ("summary", str, _OPTIONAL_STR)
_IMPORTERS_DEP = ("importers", str, (list, type(None)))  # ["importers", path, [caller paths] or None]
# ["subclasses", path, class, [paths of files that may subclass it] or None]
_SUBCLASSES_DEP = ("subclasses", str, str, (list, type(None)))


def _shaped(value: object, shape: tuple) -> bool:
    return type(value) is list and len(value) == len(shape) and value[0] == shape[0] \
        and all(isinstance(v, kind) and type(v) is not bool for v, kind in zip(value[1:], shape[1:]))


def well_formed(found: object) -> bool:
    """Whether ``found`` has the shape of a module summary (:func:`lint_rules.analysis.summary.summarise`):
    the keys, and in each the types, that the rules reading it rely on."""
    if not isinstance(found, dict) or set(found) != SUMMARY_KEYS:
        return False
    classes, functions, instances, imports, stepping = (found[k] for k in
                                                        ("classes", "functions", "instances", "imports", "stepping"))
    return isinstance(classes, dict) and all(
        isinstance(c, dict) and set(c) == {"bases", "module", "forward", "output", "mode", "registers", "methods"}
        and _strings(c["bases"]) and _methods(c["methods"]) and isinstance(c["module"], bool) and isinstance(c["forward"], bool)
        and c["mode"] in (True, False, None)
        and isinstance(c["output"], _OPTIONAL_STR) and (c["registers"] is None or _strings(c["registers"]))
        for c in classes.values()) \
        and isinstance(functions, dict) and all(isinstance(v, _OPTIONAL_STR) for v in functions.values()) \
        and isinstance(instances, dict) and all(isinstance(v, _OPTIONAL_STR) for v in instances.values()) \
        and isinstance(imports, dict) and all(
            type(v) is list and len(v) == 3 and type(v[0]) is int and isinstance(v[1], str)
            and isinstance(v[2], _OPTIONAL_STR) for v in imports.values()) \
        and _strings(stepping) and _calls(found["calls"]) and _strings(found["no_grad"]) \
        and _strings(found["sampled_loaders"]) and _runs(found["runs"])


def _methods(value: object) -> bool:
    """``{name: None or {"stub": bool, "params": [str...], "effects": [[kind, target or None, looped,
    depth, conditional], ...]}}`` (summary._methods)."""
    return isinstance(value, dict) and all(
        m is None or (isinstance(m, dict) and set(m) == {"stub", "params", "effects"} and type(m["stub"]) is bool
                      and _strings(m["params"]) and type(m["effects"]) is list and all(
                          type(e) is list and len(e) == 5 and isinstance(e[0], str)
                          and isinstance(e[1], _OPTIONAL_STR) and type(e[2]) is bool and type(e[3]) is int
                          and type(e[4]) is bool for e in m["effects"]))
        for m in value.values())


def _runs(value: object) -> bool:
    """``{function: [[position, parameter], ...]}`` (summary._runs)."""
    return isinstance(value, dict) and all(
        type(params) is list and all(type(p) is list and len(p) == 2 and type(p[0]) is int and isinstance(p[1], str)
                                     for p in params)
        for params in value.values())


def _calls(value: object) -> bool:
    """``[[head, [attribute...], [kind or None...], {keyword: kind or None}, [context...],
    [module facts or None...], {keyword: module facts or None}], ...]``."""
    return type(value) is list and all(
        type(c) is list and len(c) == 7 and isinstance(c[0], str) and _strings(c[1])
        and type(c[2]) is list and all(isinstance(k, _OPTIONAL_STR) for k in c[2])
        and isinstance(c[3], dict) and all(isinstance(k, _OPTIONAL_STR) for k in c[3].values())
        and _strings(c[4])
        and type(c[5]) is list and all(_module_facts(f) for f in c[5])
        and isinstance(c[6], dict) and all(_module_facts(f) for f in c[6].values())
        for c in value)


def _module_facts(value: object) -> bool:
    """``None`` or ``[mode-dependent or None, class or None, output or None]`` (summary._imported_calls)."""
    return value is None or (type(value) is list and len(value) == 3 and value[0] in (True, False, None)
                             and isinstance(value[1], _OPTIONAL_STR) and isinstance(value[2], _OPTIONAL_STR))


def _strings(value: object) -> bool:
    return type(value) is list and all(isinstance(v, str) for v in value)


def _has_word(data: bytes, word: bytes) -> bool:
    """Whether ``word`` occurs in ``data`` as a whole word. No regular expression: one per class name
    would fill ``re``'s cache with patterns used once."""
    at = data.find(word)
    while at >= 0:
        end = at + len(word)
        if (at == 0 or not _word_byte(data[at - 1])) and (end == len(data) or not _word_byte(data[end])):
            return True
        at = data.find(word, end)
    return False


def _word_byte(byte: int) -> bool:
    return byte == 95 or 48 <= byte <= 57 or 65 <= byte <= 90 or 97 <= byte <= 122 or byte >= 128


def _module_file(base: str, parts: list[str]) -> str | None:
    """The file of the module ``parts`` under the import root ``base``, if there is one."""
    stem = os.path.join(base, *parts)
    for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


def _decode(data: bytes) -> str:
    import tokenize
    from io import BytesIO

    try:
        encoding, _ = tokenize.detect_encoding(BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return ""


_DEFAULT: dict[str | None, ProjectIndex] = {}


def index_for(cache_dir: str | None = None) -> ProjectIndex:
    """The process's index for ``cache_dir`` (summaries cached on disk there; None: in memory only)."""
    found = _DEFAULT.get(cache_dir)
    if found is None:
        found = _DEFAULT[cache_dir] = ProjectIndex(cache_dir)
    return found
