"""Where a node runs: in a test of the pitfall itself, under a TorchScript/tracing check, in a
library module or an application; and whether a path names a file that comes from elsewhere.

Facts, not findings: rules ask these to stay quiet where their pitfall cannot bite.
"""

from __future__ import annotations

import os
import re

import libcst as cst

from lint_rules.analysis.scopes import PARAM, dotted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

_TEST_CASE_BASES = frozenset({"unittest.TestCase", "unittest.case.TestCase", "unittest.IsolatedAsyncioTestCase"})
_SCRIPTING_CHECKS = frozenset({"torch.jit.is_scripting", "torch.jit.is_tracing", "torch._jit_internal.is_scripting",
                               "torch.jit._script.is_scripting", "torch.compiler.is_compiling",
                               "torch._dynamo.is_compiling"})


def in_test(model: FileModel, node: cst.CSTNode) -> bool:
    """Inside a pytest-style test (``def test_*``, a method of a ``Test*`` class), a
    ``unittest.TestCase`` method, or anywhere in a test file (:func:`test_file`): code that
    exercises a pattern on purpose, on data small enough that its cost does not matter."""
    if test_file(model):
        return True
    for anc in model.ancestors(node):
        if isinstance(anc, cst.FunctionDef) and anc.name.value.startswith("test"):
            return True
        if isinstance(anc, cst.ClassDef):
            if anc.name.value.startswith("Test"):
                return True
            for base in anc.bases:
                if model.qualified_name(base.value) in _TEST_CASE_BASES:
                    return True
    return False


_TEST_DIRS = frozenset({"tests", "test", "testing", "unittests", "unit_tests", "integration_tests"})
_TEST_FILE = re.compile(r"^(test_.*|.*_test)\.py$")
_TEST_FRAMEWORKS = frozenset({"pytest", "unittest"})


def test_file(model: FileModel) -> bool:
    """The linted file is test code: in a folder of tests (``tests/``, ``test/``, ``testing/``), a
    ``conftest.py``, or named like a test module (``test_*.py``, ``*_test.py``) and written as one
    (it imports pytest or unittest, or defines ``test_*`` functions or ``Test*`` classes; a research
    project's ``test_model.py`` that evaluates a checkpoint is an application). Answered once per file."""
    return model.fact(_TestFile).answer


class _TestFile:
    def __init__(self, model: FileModel) -> None:
        facts = getattr(model, "project_facts", None)
        path = getattr(facts, "path", None)
        self.answer = False
        if path and path != "-":
            path = os.path.abspath(path)
            index = getattr(facts, "index", None)
            root = index.project_root(os.path.dirname(path)) if index is not None else os.path.dirname(path)
            parts = os.path.relpath(path, root).split(os.sep)
            self.answer = parts[-1] == "conftest.py" or any(p.lower() in _TEST_DIRS for p in parts[:-1]) \
                or bool(_TEST_FILE.match(parts[-1])) and _written_as_tests(model.module)


def _written_as_tests(module: cst.Module) -> bool:
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value.startswith("test") \
                or isinstance(stmt, cst.ClassDef) and stmt.name.value.startswith("Test"):
            return True
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Import) and any(
                    (dotted(a.name) or "").split(".")[0] in _TEST_FRAMEWORKS for a in small.names):
                return True
            if isinstance(small, cst.ImportFrom) and small.module is not None \
                    and (dotted(small.module) or "").split(".")[0] in _TEST_FRAMEWORKS:
                return True
    return False


def under_scripting_check(model: FileModel, node: cst.CSTNode) -> bool:
    """In either branch of ``if torch.jit.is_scripting():`` (or ``is_tracing()``, ``is_compiling()``):
    code written for TorchScript, which does not run hooks anyway."""
    child = node
    for anc in model.ancestors(node):
        if isinstance(anc, (cst.If, cst.IfExp)) and child is not anc.test and _checks_scripting(model, anc.test):
            return True
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
            return False
        child = anc
    return False


def _checks_scripting(model: FileModel, test: cst.CSTNode) -> bool:
    found = False

    class _Find(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> bool:
            nonlocal found
            found = found or model.qualified_name(call.func) in _SCRIPTING_CHECKS
            return not found

    test.visit(_Find())
    return found


# Folders whose files are run, not imported: a package's examples and scripts are applications.
_APPLICATION_DIRS = frozenset({"examples", "example", "scripts", "script", "tools", "demo", "demos", "tutorials",
                               "tutorial", "notebooks", "benchmarks", "recipes", "tests", "test", "docs"})


def library_module(model: FileModel) -> bool:
    """The linted file is a module of an installable package that other code calls, not an
    application: it sits in a package (folders with ``__init__.py``) whose top folder is next to
    the project's ``pyproject.toml``, ``setup.py`` or ``setup.cfg`` (or under its ``src/``), no
    folder of the package is an examples/scripts/tests folder, and the file has no
    ``if __name__ == "__main__":`` block. A library's ``torch.load`` reads files its users hand
    it; a script reads its own. Answered once per file."""
    return model.fact(_LibraryModule).answer


def hands_over_its_model(model: FileModel, fn: cst.CSTNode | None, receiver: cst.CSTNode) -> bool:
    """``fn``, a function of a library module (:func:`library_module`), runs a model that its caller
    hands it: ``receiver`` (``model`` of ``model(x)``, ``net.encoder`` of ``net.encoder(x)``) is
    reached from a parameter of ``fn`` other than ``self``. Such a function leaves grad mode and
    train/eval mode to its caller (``evaluate(model, loader)`` of a metrics package): whether they
    are right is decided where it is called."""
    if not isinstance(fn, cst.FunctionDef) or not library_module(model):
        return False
    while isinstance(receiver, (cst.Attribute, cst.Subscript)):
        receiver = receiver.value
    if not isinstance(receiver, cst.Name) or receiver.value in ("self", "cls"):
        return False
    bindings = model.bindings_of(receiver)
    return bool(bindings) and all(b.kind == PARAM and b.value is fn for b in bindings)


class _LibraryModule:
    def __init__(self, model: FileModel) -> None:
        self.answer = _library_module(model)


def _library_module(model: FileModel) -> bool:
    facts = getattr(model, "project_facts", None)
    path = getattr(facts, "path", None)
    if not path or path == "-":
        return False
    folder = os.path.dirname(os.path.abspath(path))
    packages = []
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        packages.append(os.path.basename(folder))
        folder = os.path.dirname(folder)
    if not packages or any(p.lower() in _APPLICATION_DIRS for p in packages):
        return False
    if os.path.basename(folder) == "src":
        folder = os.path.dirname(folder)
    if not any(os.path.isfile(os.path.join(folder, f)) for f in ("pyproject.toml", "setup.py", "setup.cfg")):
        return False
    return not any(isinstance(stmt, cst.If) and _is_main_guard(stmt.test) for stmt in model.module.body)


def _is_main_guard(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1 \
            or not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    return any(isinstance(a, cst.Name) and a.value == "__name__" for a in sides) and any(
        isinstance(b, cst.SimpleString) and b.evaluated_value == "__main__" for b in sides)


# A file that comes from elsewhere: downloaded, a published pretrained checkpoint, a URL.
_THIRD_PARTY = re.compile(r"pretrain|finetune|download|cached_path|(^|_)url($|_)|hub", re.I)
_DOWNLOADERS = re.compile(r"download|urlretrieve|hf_hub|cached_path|^get_file$", re.I)  # not get_files()


def third_party_file(model: FileModel, expr: cst.CSTNode, depth: int = 0) -> bool:
    """``expr`` (a path) names a file that comes from elsewhere: a string with a URL, a name or
    attribute spelled as a pretrained or downloaded checkpoint (``args.pretrained``,
    ``cached_path``), a call that downloads, a local variable assigned one of those, or a
    parameter of a function named for such a file (``def load_pretrained(net, path)``)."""
    if depth > 3:
        return False
    if isinstance(expr, cst.SimpleString):
        return (expr.evaluated_value or "").startswith(("http://", "https://"))
    if isinstance(expr, cst.Call):
        text = dotted(expr.func)
        if text is not None and _DOWNLOADERS.search(text.rsplit(".", 1)[-1]):
            return True
        return any(a.keyword is None and third_party_file(model, a.value, depth + 1) for a in expr.args)
    if isinstance(expr, (cst.Name, cst.Attribute)):
        text = dotted(expr)
        if text is not None and _THIRD_PARTY.search(text.rsplit(".", 1)[-1]):
            return True
        if isinstance(expr, cst.Name):
            # any value it may hold: `path = local; if missing: path = hf_hub_download(...)` may read a download
            for b in model.bindings_of(expr) or ():
                if b.value is None:
                    continue
                if b.kind == PARAM:  # def load_pretrained(net, path): the function says what it reads
                    if isinstance(b.value, cst.FunctionDef) and _THIRD_PARTY.search(b.value.name.value):
                        return True
                elif third_party_file(model, b.value, depth + 1):
                    return True
            return _downloaded_into(model, expr)
    return False


def _downloaded_into(model: FileModel, name: cst.Name) -> bool:
    """``name`` is handed to a downloader that runs before it in its own function, on the same
    path: ``urlretrieve(url, cached_file)`` writes the file that ``torch.load(cached_file)`` then
    reads. A download in the other branch of an ``if`` (``if known: download(name) else:
    torch.load(name)``) is another case's."""
    scope = model.enclosing_function(name) or model.module
    at = next((a for a in model.ancestors(name) if isinstance(a, cst.Call)), None)
    here = model.order.get(id(at), 0) if at is not None else 0
    for call in model.within(cst.Call, scope):
        text = dotted(call.func)
        if text is None or not _DOWNLOADERS.search(text.rsplit(".", 1)[-1]) or model.order.get(id(call), 0) >= here:
            continue
        if any(isinstance(a.value, cst.Name) and a.value.value == name.value
               and (model.enclosing_function(a.value) or model.module) is scope for a in call.args) \
                and not _exclusive(model, call, name, scope):
            return True
    return False


def _exclusive(model: FileModel, a: cst.CSTNode, b: cst.CSTNode, scope: cst.CSTNode) -> bool:
    """``a`` and ``b`` sit in different branches of one ``if`` (or ``elif``/``else``)."""
    child = a
    for anc in model.ancestors(a):
        if anc is scope:
            return False
        if isinstance(anc, cst.If) and anc.orelse is not None:
            a_in_body = child is anc.body
            if child is anc.body or child is anc.orelse:
                other = anc.orelse if a_in_body else anc.body
                if model.is_inside(b, other):
                    return True
        child = anc
    return False


def reads_safe_format(model: FileModel, node: cst.CSTNode) -> bool:
    """The function around ``node`` (or the module's top level) also reads safetensors: a loader of
    the ``safetensors`` package (``load_file``, ``safe_open``, ``load``) or a helper named for it
    (``load_safetensors_model``). Code that reads that format reads published model weights, which
    safetensors exists to load without unpickling: a pickle read beside it (the fallback for an
    older ``pytorch_model.bin``) reads the same kind of file from elsewhere. Writing safetensors
    says less: a converter of the project's own checkpoints writes them too."""
    scope = model.enclosing_function(node) or model.module
    for call in model.within(cst.Call, scope):
        if (model.enclosing_function(call) or model.module) is not scope:
            continue  # a nested function's (or, at top level, any function's) calls are not this code's
        qualified = model.qualified_name(call.func) or ""
        leaf = (dotted(call.func) or "").rsplit(".", 1)[-1].lower()
        from_package = qualified.split(".", 1)[0] == "safetensors"
        if leaf == "safe_open" or ("load" in leaf and (from_package or "safetensors" in leaf)) \
                or (from_package and "load" in qualified.rsplit(".", 1)[-1].lower()):
            return True
    return False


def documented(model: FileModel, node: cst.CSTNode, words: re.Pattern[str]) -> bool:
    """The authors say something about ``node`` in ``words``: in a comment on its statement or on
    the lines just above it, or in the docstring of the function or class that holds it. Rules
    ask it for a choice documented as deliberate (dropout "always on", "Monte Carlo" dropout)."""
    texts: list[str] = []
    for anc in [node, *model.ancestors(node)]:
        if isinstance(anc, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and not texts:
            texts.extend(line.comment.value for line in anc.leading_lines if line.comment is not None)
            trailing = getattr(anc, "trailing_whitespace", None)
            if trailing is not None and trailing.comment is not None:
                texts.append(trailing.comment.value)
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
            doc = anc.get_docstring()
            if doc:
                texts.append(doc)
            if isinstance(anc, cst.ClassDef):
                break
    return any(words.search(text) for text in texts)


# Methods a tensor and a module share: a checkpoint item passes through them as what it was.
_NEUTRAL_METHODS = frozenset({"float", "half", "double", "bfloat16", "to", "cuda", "cpu"})
# Methods only a module has: an item of a checkpoint called with one was a pickled module.
_MODULE_METHODS = frozenset({"state_dict", "load_state_dict", "eval", "train", "fuse", "parameters",
                             "named_parameters", "modules", "named_modules", "children", "requires_grad_"})


def loads_a_module(model: FileModel, load: cst.Call) -> bool:
    """The checkpoint ``load`` (a ``torch.load(...)`` call) reads holds a whole pickled module: its
    result, an item of it (``ckpt["model"]``, ``ckpt.get("ema") or ckpt["model"]``) or a name
    assigned one of those in the same function is used as a module (``.state_dict()``, ``.eval()``,
    ``.fuse()``, after ``.float()``/``.to(device)``); or so is another load of the same path in that
    function (``torch.load(weights).get("run_id")`` before ``torch.load(weights)["model"].eval()``).
    ``weights_only=True`` cannot load such a file."""
    scope = model.enclosing_function(load) or model.module
    if _used_as_module(model, load, scope):
        return True
    path = _first_arg(load)
    if path is None:
        return False
    code = model.module.code_for_node(path)
    for other in model.within(cst.Call, scope):
        if other is not load and model.qualified_name(other.func) == model.qualified_name(load.func):
            other_path = _first_arg(other)
            if other_path is not None and model.module.code_for_node(other_path) == code \
                    and _used_as_module(model, other, scope):
                return True
    return False


def _first_arg(call: cst.Call) -> cst.BaseExpression | None:
    return call.args[0].value if call.args and call.args[0].keyword is None else None


def _used_as_module(model: FileModel, node: cst.CSTNode, scope: cst.CSTNode) -> bool:
    parents = model.parents
    while True:
        parent = parents.get(id(node))
        if isinstance(parent, cst.Subscript) and parent.value is node:
            node = parent  # ckpt["model"]
        elif isinstance(parent, cst.BooleanOperation):
            node = parent  # ckpt.get("ema") or ckpt["model"]
        elif isinstance(parent, cst.Attribute) and parent.value is node:
            call = parents.get(id(parent))
            if not (isinstance(call, cst.Call) and call.func is parent):
                return False
            if parent.attr.value in _MODULE_METHODS:
                return True
            if parent.attr.value not in _NEUTRAL_METHODS and parent.attr.value != "get":
                return False
            node = call  # ckpt.get("model"), item.float()
        elif isinstance(parent, (cst.Arg, cst.Element)) or parent is None:
            return False
        else:
            break
    # `ckpt = torch.load(...)`: a later call of its own function uses the name as a module
    if not (isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1):
        return False
    target = parent.targets[0].target
    if not isinstance(target, cst.Name):
        return False
    after = model.order.get(id(parent), 0)
    for call in model.within(cst.Call, scope):
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in _MODULE_METHODS) \
                or model.order.get(id(call), 0) <= after:
            continue
        base = _item_base(func.value)
        if isinstance(base, cst.Name) and base.value == target.value:
            return True
    return False


def _item_base(expr: cst.CSTNode) -> cst.CSTNode:
    """The name under ``ckpt["model"].float()``, ``ckpt.get("ema") or ckpt["model"]``: ``ckpt``."""
    for _ in range(8):
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.BooleanOperation):
            expr = expr.left
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
                and (expr.func.attr.value in _NEUTRAL_METHODS or expr.func.attr.value == "get"):
            expr = expr.func.value
        else:
            break
    return expr
