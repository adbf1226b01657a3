"""Cross-file facts for the rules of one file, answered from the summaries of imported modules.

:class:`ProjectFacts` resolves a name of the linted file that is imported from
another file of the project (see :mod:`lint_rules.analysis.project_index`) and
answers from that module's summary: what a project class's ``forward`` returns
(following base classes across files), what a project function returns, whether
a class is an ``nn.Module``. Every read is recorded in :attr:`ProjectFacts.deps`
for the result cache. The engine hands one to each file as ``model.project_facts``.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.kinds import ARG_CLASS
from lint_rules.analysis.model import PARAM, dotted
from lint_rules.analysis.project_index import ProjectIndex
from lint_rules.analysis.provenance import Provenance
from lint_rules.analysis.summary import record_import, record_import_from

if TYPE_CHECKING:
    from typing import Callable

    from lint_rules.analysis.model import FileModel

_MAX_DEPTH = 8  # re-exports and base classes followed across files, at most
_MAX_SUBCLASS_DEPTH = 3  # files of subclasses of subclasses followed, at most


class ProjectFacts:
    """Cross-file facts for one linted file at ``path`` (an existing file or where a buffer would be)."""

    def __init__(self, index: ProjectIndex, path: str) -> None:
        self.index = index
        self.path = os.path.abspath(path)
        self._deps: dict[tuple, tuple] = {}
        self._call_kinds: dict[object, list | None] = {}  # per function: asked per parameter
        self._texts: dict[str, bytes | None] = {}  # importers' bytes, read once for every function

    @property
    def deps(self) -> list:
        """What the answers so far depended on: JSON-ready records for :meth:`ProjectIndex.still_valid`."""
        return [list(k) + list(v) for k, v in self._deps.items()]

    # ------------------------------------------------------------ queries
    def class_output(self, model: "FileModel", expr: cst.CSTNode) -> str | None:
        """What calling an instance of the project class named by ``expr`` returns."""
        found = self._resolve_local(model, expr)
        if found is None or found[0] != "class":
            return None
        return self._class_output(found[1], found[2], found[3], 0)

    def call_output(self, model: "FileModel", expr: cst.CSTNode) -> str | None:
        """What calling ``expr`` returns: a project function, a module instance defined in another
        file, or a parameter annotated with a project module class."""
        if isinstance(expr, cst.Name):
            bindings = model.lookup(expr.value, model.scope_at(expr))
            if bindings and len(bindings) == 1 and bindings[0].kind == PARAM:
                param = bindings[0].node
                if isinstance(param, cst.Param) and param.annotation is not None:
                    return self.class_output(model, param.annotation.annotation)
                return None
        found = self._resolve_local(model, expr)
        if found is None:
            return None
        if found[0] == "function":
            return found[3]
        if found[0] == "instance":
            return found[3]
        return None

    def steps_optimizer(self, model: "FileModel", expr: cst.CSTNode) -> bool:
        """True when ``expr`` names a project function, defined in another file, that calls
        ``optimizer.step()`` in its body."""
        found = self._resolve_local(model, expr)
        if found is None or found[0] != "function":
            return False
        held = self._summary(found[1])
        return held is not None and found[2] in held.get("stepping", ())

    def run_parameters(self, model: "FileModel", expr: cst.CSTNode) -> list[tuple[int, str]] | None:
        """The parameters, as (position or -1, name), that the project function named by ``expr``,
        defined in another file, runs as a module (:func:`lint_rules.analysis.handed.run_parameters`);
        None when ``expr`` names no such function."""
        found = self._resolve_local(model, expr)
        if found is None or found[0] != "function":
            return None
        held = self._summary(found[1])
        runs = held.get("runs", {}).get(found[2]) if held is not None else None
        return [(position, name) for position, name in runs] if runs else None

    def defines(self, model: "FileModel", expr: cst.CSTNode) -> bool:
        """Whether ``expr`` names a class, function or instance of another project file (whose summary
        then answers for it), as opposed to something from outside the project or unknown."""
        return self._resolve_local(model, expr) is not None

    def disables_grad(self, model: "FileModel", expr: cst.CSTNode) -> bool:
        """True when ``expr`` names a project function, defined in another file, whose body turns
        grad off: as a decorator or context manager (``@inference`` from the project's
        ``utils``), what it wraps runs with grad disabled."""
        found = self._resolve_local(model, expr)
        if found is None or found[0] != "function":
            return False
        held = self._summary(found[1])
        return held is not None and found[2] in held.get("no_grad", ())

    def is_module_class(self, model: "FileModel", expr: cst.CSTNode) -> bool | None:
        """True when ``expr`` names a project class that is an ``nn.Module``; None when unknown."""
        found = self._resolve_local(model, expr)
        if found is None or found[0] != "class":
            return None
        return self._is_module(found[1], found[2], found[3], 0)

    def ancestor_bases(self, model: "FileModel", expr: cst.CSTNode) -> list[str] | None:
        """The base classes, as written in their files (``pl.LightningModule``), of the project class
        that ``expr`` names and of every project class it derives from; None when ``expr`` names no
        project class. A base from outside the project ends its branch."""
        found = self._resolve_local(model, expr)
        if found is None or found[0] != "class":
            return None
        out: list[str] = []
        stack = [(found[1], found[2], found[3], 0)]
        seen: set[tuple[str, str]] = set()
        while stack:
            path, name, entry, depth = stack.pop()
            if (path, name) in seen or depth > _MAX_DEPTH:
                continue
            seen.add((path, name))
            for base in entry.get("bases", ()):
                out.append(base)
                held = self._base(path, base, depth)
                if held is not None and held[0] == "class":
                    stack.append((held[1], held[2], held[3], depth + 1))
        return out

    def class_mode_dependent(self, model: "FileModel", expr: cst.CSTNode) -> bool | None:
        """Whether the project class that ``expr`` names behaves differently in train and eval mode
        (:meth:`~lint_rules.analysis.modules.ModuleFacts.class_mode_dependent`, read from its file's
        summary); None when unknown or not a project class."""
        found = self._resolve_local(model, expr)
        if found is None or found[0] != "class":
            return None
        return found[3].get("mode")

    def returns_sampled_loader(self, model: "FileModel", expr: cst.CSTNode) -> bool:
        """True when ``expr`` names a function of another project file that returns a DataLoader fed
        by a shuffling DistributedSampler (``build_loader()`` in ``data.py``)."""
        found = self._resolve_local(model, expr)
        if found is None or found[0] != "function":
            return False
        held = self._summary(found[1])
        return held is not None and found[2] in held.get("sampled_loaders", ())

    def registered_names(self, model: "FileModel", expr: cst.CSTNode) -> set[str] | None:
        """The names a project class that ``expr`` names, and its bases, register by string
        (``register_buffer("mask", ...)``); None when unknown: not a project class, a name
        computed, or a base other than ``nn.Module`` defined outside the project."""
        found = self._resolve_local(model, expr)
        if found is None or found[0] != "class":
            return None
        return self._registered(found[1], found[3], 0)

    def _registered(self, path: str, entry: dict, depth: int) -> set[str] | None:
        own = entry.get("registers")
        if own is None or depth > _MAX_DEPTH:
            return None
        names = set(own)
        for base in entry.get("bases", ()):
            if base in _PLAIN_BASES:
                continue
            found = self._base(path, base, depth)
            if found is None or found[0] != "class":
                return None  # a base from outside the project: what it registers is unknown
            inherited = self._registered(found[1], found[3], depth + 1)
            if inherited is None:
                return None
            names |= inherited
        return names

    # ------------------------------------------------ class hierarchies
    def inherited_method(self, model: "FileModel", bases: list[cst.CSTNode], name: str):
        """The method ``name`` that a class of the linted file inherits through ``bases`` (base classes
        it names that the file does not define), looked up depth first through the summaries of the
        project's files: a :class:`~lint_rules.analysis.dispatch.ForeignMethod` (a stub too);
        ``METHOD_MISSING`` when no class above binds it and every one is a project class (or
        ``object``, ``ABC``); None when a base class is outside the project (it may define it) or
        binds the name to a value."""
        from lint_rules.analysis.dispatch import PLAIN_BASES, ForeignMethod
        from lint_rules.analysis.scopes import METHOD_MISSING

        stack = []
        for expr in reversed(bases):
            found = self._resolve_local(model, expr)
            if found is None or found[0] != "class":
                return None
            stack.append(found[1:])
        seen: set[tuple[str, str]] = set()
        while stack:
            path, cls, entry = stack.pop()
            if (path, cls) in seen:
                continue
            if len(seen) > _MAX_DEPTH * 2:
                return None
            seen.add((path, cls))
            methods = entry.get("methods", {})
            if name in methods:
                method = methods[name]
                return None if method is None else ForeignMethod(path, cls, name, method)
            above = []
            for base in entry.get("bases", ()):
                if base in PLAIN_BASES:
                    continue
                found = self._base(path, base, 0)
                if found is None or found[0] != "class":
                    return None
                above.append(found[1:])
            stack.extend(reversed(above))
        return METHOD_MISSING

    def overrides(self, classes: list[str], name: str):
        """The implementations of method ``name`` in the classes of the project's other files that derive,
        directly or through other classes, from the linted file's top-level ``classes``: a list of
        :class:`~lint_rules.analysis.dispatch.ForeignMethod` (stubs left out: an instance of such a
        class raises); None when that cannot be told: too many files import a class
        (:data:`MAX_SUBCLASS_FILES`), or a subclass binds the name to a value."""
        from lint_rules.analysis.dispatch import ForeignMethod

        found = {(self.path, cls) for cls in classes}
        frontier = sorted(found)
        out = []
        for _ in range(_MAX_SUBCLASS_DEPTH):
            grown: list[tuple[str, str]] = []
            for path, cls in frontier:
                key = ("subclasses", path, cls)
                if key in self._deps:  # asked before, for another method: the files are the same
                    files = self._deps[key][0]
                else:
                    files = self.index.subclass_files(path, cls)
                    files = list(files) if files is not None else None
                    self._deps[key] = (files,)
                if files is None:
                    return None
                for other in files:
                    held = self._summary(other)
                    if held is None:
                        continue
                    changed = True
                    while changed:  # a subclass of a subclass in the same file
                        changed = False
                        for sub, entry in held["classes"].items():
                            if (other, sub) in found or not self._derives(other, entry, found):
                                continue
                            found.add((other, sub))
                            grown.append((other, sub))
                            changed = True
                            methods = entry.get("methods", {})
                            if name in methods:
                                method = methods[name]
                                if method is None:
                                    return None
                                if not method["stub"]:
                                    out.append(ForeignMethod(other, sub, name, method))
            frontier = grown
            if not frontier:
                break
        return out

    def _derives(self, path: str, entry: dict, classes: set[tuple[str, str]]) -> bool:
        """Whether a class of ``path`` names one of ``classes`` as a base class."""
        held = self._summary(path)
        for base in entry.get("bases", ()):
            head, *rest = base.split(".")
            ref = held["imports"].get(head) if held is not None else None
            if ref is None:  # a class of the same file
                if not rest and (path, head) in classes:
                    return True
                continue
            level, module, name = ref
            if name is not None and not rest and (module or level):
                # `from base.trainer import BaseTrainer`: where the module is tells it; its summary is
                # needed only for a re-export (a package's __init__)
                where = self._locate(path, level, module)
                if where is not None and os.path.basename(where) != "__init__.py":
                    if (where, name) in classes:
                        return True
                    continue
            found = self._base(path, base, 0)
            if found is not None and found[0] == "class" and (found[1], found[2]) in classes:
                return True
        return False

    def call_kinds(self, fn_name: str) -> list[tuple[list, dict]] | None:
        """The argument kinds of every call, in the project's other files, of the top-level
        function ``fn_name`` of this file: a list of (positional kinds, keyword kinds), one per
        call (see :func:`~lint_rules.analysis.summary._imported_calls`); [] when no other file
        calls it; None when that cannot be told: more than :data:`MAX_CALLER_FILES` files import
        the module (a library module, whose callers vary and would each have to be parsed) or
        call the function, a caller is not a script (no ``if __name__ == "__main__":``; a
        library that calls it has callers of its own), or the project is too large to read."""
        found = self._calls_of(fn_name)
        return None if found is None else [(args, kwargs) for args, kwargs, _, _ in found]

    def call_facts(self, which: int) -> Callable[[str], list[tuple[list, dict]] | None]:
        """For :func:`~lint_rules.analysis.kinds.agreed_at_call_sites`: given a top-level function of
        this file, one fact of each module argument of every call of it in the project's other files
        (``ARG_MODE``: mode-dependent, ``ARG_CLASS``: the torch class that built it, ``ARG_OUTPUT``: what calling
        it returns), as positional and keyword answers per call; None as for :meth:`call_kinds`."""
        def answers(fn_name: str) -> list[tuple[list, dict]] | None:
            found = self._calls_of(fn_name)
            if found is None:
                return None
            return [([f[which] if f is not None else None for f in fargs],
                     {k: f[which] if f is not None else None for k, f in fkwargs.items()})
                    for _, _, _, (fargs, fkwargs) in found]
        return answers

    def caller_contexts(self, fn_name: str) -> list[set[str]] | None:
        """What holds at every call, in the project's other files, of the top-level function
        ``fn_name`` of this file: a set per call, with ``"no_grad"`` (grad is off there) and
        ``"eval"`` (the caller set a model to eval mode before it); None as for :meth:`call_kinds`."""
        found = self._calls_of(fn_name)
        return None if found is None else [set(context) for _, _, context, _ in found]

    def called_with_grad_off(self, fn_name: str) -> bool:
        """Some call, in the project's other files, of the top-level function ``fn_name`` of this
        file runs with grad off (``with torch.no_grad(): validation(model, loader)`` in ``train.py``).
        Unlike :meth:`caller_contexts`, callers that are not scripts count too: a grad-off context at
        a call is evidence of its own, whoever calls the caller."""
        key = ("any", fn_name)
        if key not in self._call_kinds:
            self._call_kinds[key] = self._find_call_kinds(fn_name, scripts_only=False)
        return any("no_grad" in context for _, _, context, _ in self._call_kinds[key] or ())

    def passed_classes(self) -> set[str]:
        """The torch classes of the modules that the project's other files pass to this file's top-level
        functions (``train(model, loader, nn.CrossEntropyLoss(), opt)`` in ``main.py``): a rule whose
        trigger words this file lacks still runs when a caller passes what it looks for."""
        found = self._calls_of(None)
        return {f[ARG_CLASS] for _, _, _, (fargs, fkwargs) in found or ()
                for f in (*fargs, *fkwargs.values()) if f is not None and f[ARG_CLASS] is not None}

    def _calls_of(self, fn_name: str | None) -> list[tuple[list, dict, list, tuple[list, dict]]] | None:
        if fn_name not in self._call_kinds:
            self._call_kinds[fn_name] = self._find_call_kinds(fn_name)
        return self._call_kinds[fn_name]

    def _find_call_kinds(self, fn_name: str | None,
                         scripts_only: bool = True) -> list[tuple[list, dict, list, tuple[list, dict]]] | None:
        """The calls of ``fn_name`` (any top-level function of this file when None) in its importers."""
        importers = self.index.importers(self.path)
        if importers is None:
            self._deps[("importers", self.path)] = (None,)
            return None
        self._deps[("importers", self.path)] = (list(importers),)
        if len(importers) > MAX_CALLER_FILES:
            return None  # a module imported from many files is a library module: no parse of them all
        needle = fn_name.encode() if fn_name is not None else None
        texts = self._texts
        for f in importers:
            if f not in texts:
                texts[f] = _read(f)
        callers = [(f, data) for f in importers
                   if (data := texts[f]) is not None and (needle is None or _names(data, needle))]
        if len(callers) > MAX_CALLER_FILES or scripts_only and not all(_SCRIPT.search(data) for _, data in callers):
            # Only scripts' calls are read: a library module that calls it has callers of its own,
            # and summarising it would parse much of the project for one parameter.
            return None
        out: list[tuple[list, dict, list, tuple[list, dict]]] = []
        for caller, _ in callers:
            held = self._summary(caller)
            if held is None:
                continue
            for head, rest, args, kwargs, context, fact_args, fact_kwargs in held.get("calls", ()):
                ref = held["imports"].get(head)
                if ref is None:
                    continue
                found = self._follow(caller, ref, list(rest), 0)
                if found is not None and found[0] == "function" and found[1] == self.path \
                        and (fn_name is None or found[2] == fn_name):
                    facts = ([self._resolved(caller, held, f) for f in fact_args],
                             {k: self._resolved(caller, held, f) for k, f in fact_kwargs.items()})
                    out.append((args, kwargs, context, facts))
        return out

    def _resolved(self, path: str, held: dict, facts: list | None) -> list | None:
        """A summarised argument's [mode, class, output], a class imported by the caller looked up in
        its own file's summary: its mode dependence and output (a torch class's name is kept)."""
        if facts is None:
            return None
        mode, cls, output = facts
        if cls is None or cls.startswith("torch."):
            return facts
        head, *rest = cls.split(".")
        ref = held["imports"].get(head)
        found = self._follow(path, ref, rest, 0) if ref is not None else None
        if found is None or found[0] != "class":
            return [mode, None, output]
        return [found[3].get("mode") if mode is None else mode, None, output or found[3].get("output")]

    # --------------------------------------------------------- resolving
    def _resolve_local(self, model: "FileModel", expr: cst.CSTNode):
        """("class"|"function"|"instance", module path, name, entry) for a name of the linted file
        imported from another project file; None when it is not one."""
        text = dotted(expr)
        if text is None:
            return None
        head, *rest = text.split(".")
        bindings = model.lookup(head, model.scope_at(expr) if isinstance(expr, cst.Name) else
                                model.scope_at(_leftmost(expr)))
        if not bindings or len(bindings) != 1:
            return None
        node = bindings[0].node
        table: dict = {}
        if isinstance(node, cst.ImportFrom):
            record_import_from(table, node)
        elif isinstance(node, cst.Import):
            record_import(table, node)
        else:
            return None
        ref = table.get(head)
        if ref is None:
            return None
        return self._follow(self.path, ref, rest, 0)

    def _follow(self, from_file: str, ref: list, rest: list[str], depth: int):
        level, module, name = ref
        if name is None:  # `import a.b as m` / `import a.b`: the name is the module
            path = self._locate(from_file, level, module)
            if path is None:
                return self._submodule_chain(from_file, module, rest, depth)
            return self._lookup(path, rest, depth + 1)
        path = self._locate(from_file, level, module) if module or level else None
        if path is not None:
            found = self._lookup(path, [name, *rest], depth + 1)
            if found is not None:
                return found
        # `from pkg import model` where `model` is a submodule (with or without pkg/__init__.py)
        sub = self._locate(from_file, level, f"{module}.{name}" if module else name)
        return self._lookup(sub, rest, depth + 1) if sub is not None else None

    def _submodule_chain(self, from_file: str, module: str, rest: list[str], depth: int):
        # `import pkg.model` with pkg a namespace package, used as `pkg.model.Net`
        for i in range(len(rest), 0, -1):
            path = self._locate(from_file, 0, ".".join([module, *rest[:i]]))
            if path is not None:
                return self._lookup(path, rest[i:], depth + 1)
        return None

    def _lookup(self, path: str, names: list[str], depth: int):
        if depth > _MAX_DEPTH or not names:
            return None
        held = self._summary(path)
        if held is None:
            return None
        first, rest = names[0], names[1:]
        if not rest:
            for kind, table in (("class", "classes"), ("function", "functions"), ("instance", "instances")):
                if first in held[table]:
                    return kind, path, first, held[table][first]
        ref = held["imports"].get(first)
        if ref is not None:
            return self._follow(path, ref, rest, depth)
        if os.path.basename(path) == "__init__.py":  # pkg.submodule.Name
            sub = self._locate(path, 1, first)
            if sub is not None:
                return self._lookup(sub, rest, depth + 1)
        return None

    def _base(self, path: str, base: str, depth: int):
        """A base class written as ``base`` in module ``path``, when it is a project class."""
        head, *rest = base.split(".")
        held = self._summary(path)
        if held is None:
            return None
        if not rest and head in held["classes"]:
            return "class", path, head, held["classes"][head]
        ref = held["imports"].get(head)
        return self._follow(path, ref, rest, depth + 1) if ref is not None else None

    def _class_output(self, path: str, name: str, entry: dict, depth: int) -> str | None:
        if entry.get("forward"):
            return entry.get("output")
        if depth > _MAX_DEPTH:
            return None
        for base in entry.get("bases", ()):
            found = self._base(path, base, depth)
            if found is not None and found[0] == "class" and (found[1], found[2]) != (path, name):
                return self._class_output(found[1], found[2], found[3], depth + 1)
        return None

    def _is_module(self, path: str, name: str, entry: dict, depth: int) -> bool | None:
        if entry.get("module") is True:
            return True
        if depth > _MAX_DEPTH:
            return None
        verdict: bool | None = entry.get("module")
        for base in entry.get("bases", ()):
            found = self._base(path, base, depth)
            if found is not None and found[0] == "class" and (found[1], found[2]) != (path, name):
                if self._is_module(found[1], found[2], found[3], depth + 1):
                    return True
        return verdict

    # -------------------------------------------------- recorded reads
    def _locate(self, from_file: str, level: int, module: str) -> str | None:
        path = self.index.locate_module(from_file, level, module)
        self._deps[("import", from_file, level, module)] = (path,)
        return path

    def _summary(self, path: str) -> dict | None:
        held = self.index.summary(path)
        self._deps[("summary", path)] = (held[0] if held else None,)
        return held[1] if held else None


# Base classes, as spelled in a summary, that register nothing by name.
_PLAIN_BASES = frozenset({"nn.Module", "torch.nn.Module", "Module", "object", "ABC", "abc.ABC",
                          # Lightning's module registers no buffer or parameter by name either
                          "LightningModule", "pl.LightningModule", "pytorch_lightning.LightningModule",
                          "L.LightningModule", "lightning.LightningModule", "lightning.pytorch.LightningModule"})

MAX_CALLER_FILES = 8  # a module imported from more files than this is a library: its parameters vary


_SCRIPT = re.compile(rb"""__name__\s*==\s*['"]__main__['"]""")


def _names(data: bytes, name: bytes) -> bool:
    """Whether ``name`` occurs in ``data`` as a whole word (called or imported). No regular expression:
    one per function name would fill ``re``'s cache with patterns that are never used again."""
    at = data.find(name)
    while at >= 0:
        end = at + len(name)
        if (at == 0 or not _word_byte(data[at - 1])) and (end == len(data) or not _word_byte(data[end])):
            return True
        at = data.find(name, end)
    return False


def _word_byte(byte: int) -> bool:
    return byte == 95 or 48 <= byte <= 57 or 65 <= byte <= 90 or 97 <= byte <= 122 or byte >= 128


def _read(path: str) -> bytes | None:
    from lint_rules.files import read_regular

    try:
        return read_regular(path)
    except OSError:
        return None


def _leftmost(expr: cst.CSTNode) -> cst.CSTNode:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr


class ProjectProvenance(Provenance):
    """:class:`Provenance` that also follows what this file imports from other project files:
    ``Net()`` of a class defined in ``model.py``, a model instance or a function defined there,
    and parameters annotated with such a class. Without ``model.project_facts`` it is the plain one."""

    def __init__(self, model: "FileModel") -> None:
        super().__init__(model)
        self.facts: ProjectFacts | None = getattr(model, "project_facts", None)

    def of_module(self, expr: cst.CSTNode, at: cst.CSTNode, depth: int = 0) -> str | None:
        found = super().of_module(expr, at, depth)
        if found is not None or self.facts is None or depth > 12:
            return found
        if isinstance(expr, cst.Call):  # constructing a module: what calling it will return
            func = expr.func
            return self.facts.class_output(self.model, func) if isinstance(func, (cst.Name, cst.Attribute)) else None
        if isinstance(expr, (cst.Name, cst.Attribute)):  # calling a function, an instance, an annotated parameter
            return self.facts.call_output(self.model, expr)
        return None
