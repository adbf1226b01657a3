"""Phase one of the project analysis: what one module offers to the files that import it.

A summary is built from one file alone (so it can be cached by the file's
content) and is plain JSON: its top-level classes (bases as written, whether the
file shows them to be ``nn.Module`` classes, whether they define ``forward`` and
what it returns), its top-level functions (what they return, and which of them
step an optimizer), its module-level
instances (``model = nn.Sequential(..., nn.Sigmoid())``: what calling them
returns) and its imports, as written, so that phase two
(:mod:`lint_rules.analysis.project_index`) can follow names across files.

"What it returns" is a provenance kind (``softmax``, ``log_softmax``,
``sigmoid``, ``logits``) or None when the file alone does not say.
"""

from __future__ import annotations

import ast
import gc
import sys

import libcst as cst

from lint_rules.analysis.model import FileModel, dotted
from lint_rules.analysis.parsing import parse_module
from lint_rules.analysis.provenance import Provenance, returns_of

def empty() -> dict:
    return {"classes": {}, "functions": {}, "instances": {}, "imports": {}, "stepping": [], "calls": [],
            "no_grad": [], "sampled_loaders": [], "runs": {}}


def summarise_source(source: str) -> dict:
    """The summary of a module's text; a file that does not parse summarises to nothing."""
    # CPython's parser first: it turns nesting that would overflow LibCST's native parser
    # (a crash of the whole process, not an exception) into an error. Summaries are built
    # only for files a rule asks about, so the second parse is rare.
    try:
        compile(source, "<summary>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return empty()
    enabled = gc.isenabled()
    gc.disable()  # as in the engine: the collector would rescan the tree while it is built
    try:
        try:
            module = parse_module(source)
        except Exception:  # a syntax error or a parser limit: nothing to offer importers
            return empty()
        model = FileModel(module, frozenset({cst.Return, cst.Call}))
        try:
            return summarise(model)
        except (RecursionError, MemoryError, ValueError):
            # A pathological file offers nothing to its importers; their lint goes on.
            return empty()
        finally:
            model.dispose()
    finally:
        if enabled:
            gc.enable()


def summarise(model: FileModel, provenance: Provenance | None = None) -> dict:
    """The summary of a parsed file (see the module docstring)."""
    prov = provenance or Provenance(model)
    out = empty()
    for stmt in model.module.body:
        if isinstance(stmt, cst.ClassDef):
            out["classes"][stmt.name.value] = _class(model, prov, stmt)
        elif isinstance(stmt, cst.FunctionDef):
            out["functions"][stmt.name.value] = _function_returns(prov, stmt)
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.ImportFrom):
                    record_import_from(out["imports"], small)
                elif isinstance(small, cst.Import):
                    record_import(out["imports"], small)
                elif isinstance(small, cst.Assign) and isinstance(small.value, cst.Call):
                    for t in small.targets:
                        if isinstance(t.target, cst.Name):
                            out["instances"][t.target.value] = prov.of_module(small.value, small)
    out["stepping"] = _stepping(model, [stmt for stmt in model.module.body if isinstance(stmt, cst.FunctionDef)])
    out["calls"] = _imported_calls(model, out["imports"], prov)
    out["no_grad"] = _no_grad_functions(model)
    out["sampled_loaders"] = _sampled_loaders(model)
    out["runs"] = _runs(model)
    # Only what a module-level binding ends as counts; drop instances that are None to keep it small.
    out["instances"] = {k: v for k, v in out["instances"].items() if v is not None}
    return out


def _class(model: FileModel, prov: Provenance, node: cst.ClassDef) -> dict:
    from lint_rules.analysis.modules import facts

    has_forward = any(isinstance(s, cst.FunctionDef) and s.name.value == "forward" for s in node.body.body)
    output = prov.of_module(cst.Call(func=cst.Name(node.name.value)), node) if has_forward else None
    bases = [text for b in node.bases if b.keyword is None and (text := dotted(b.value)) is not None]
    fx = facts(model)
    registers = fx.registered_names(node, own=True)
    return {"bases": bases, "module": fx.is_module_class(node),
            "forward": has_forward, "output": output, "mode": fx.class_mode_dependent(node),
            "registers": sorted(registers) if registers is not None else None,
            "methods": _methods(model, node)}


# Decorators that make a class attribute something other than a method to call.
_NOT_METHODS = frozenset({"property", "cached_property", "functools.cached_property"})


def _methods(model: FileModel, node: cst.ClassDef) -> dict:
    """What each method of a class does, for the files that inherit or call it through ``self``:
    ``{name: {"stub": bool, "params": [...], "effects": [[kind, target, looped, depth, conditional],
    ...]}}`` with the effects of :class:`~lint_rules.analysis.summaries.Summaries` (``target``
    spelled ``self.x``, ``$param``, other text, or None); None for a name bound otherwise (a value,
    a property, two defs)."""
    from lint_rules.analysis.scopes import is_stub
    from lint_rules.analysis.summaries import Summaries

    helpers = model.fact(Summaries)
    out: dict = {}
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    for stmt in body:
        if isinstance(stmt, cst.FunctionDef):
            name = stmt.name.value
            if name in out or any(_decorator_name(d.decorator) in _NOT_METHODS
                                  or isinstance(d.decorator, cst.Attribute) for d in stmt.decorators):
                out[name] = None  # a property (or its setter), or a second def
                continue
            summary = helpers.of(stmt)
            out[name] = {"stub": is_stub(stmt), "params": list(summary.params),
                         "effects": [[e.kind, e.target, e.looped, e.depth, bool(e.conditions)]
                                     for e in summary.effects]}
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else \
                    [small.target] if isinstance(small, cst.AnnAssign) and small.value is not None else []
                for target in targets:
                    if isinstance(target, cst.Name):
                        out[target.value] = None
    return out


def _decorator_name(expr: cst.BaseExpression) -> str | None:
    return dotted(expr.func if isinstance(expr, cst.Call) else expr)


def _stepping(model: FileModel, functions: list[cst.FunctionDef]) -> list[str]:
    """The top-level functions that call ``<optimizer>.step()`` in their own body
    (``run_epoch(model, loader, optimizer)``), or call such a function of the same file
    (``train()`` calling ``_train_or_test()``), up to three calls deep."""
    from lint_rules.analysis.kinds import OPTIMIZER

    own = {id(fn): fn.name.value for fn in functions}
    stepping: list[str] = []
    callees: dict[str, set[str]] = {}
    for call in model.nodes(cst.Call):
        name = own.get(id(model.enclosing_function(call)))
        if name is None:
            continue  # module level, a method, or a nested function
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "step" \
                and model.kind_of(func.value) == OPTIMIZER:
            if name not in stepping:
                stepping.append(name)
        elif isinstance(func, cst.Name):
            callees.setdefault(name, set()).add(func.value)
    for _ in range(3):
        grown = [fn.name.value for fn in functions if fn.name.value not in stepping
                 and callees.get(fn.name.value, set()) & set(stepping)]
        if not grown:
            break
        stepping.extend(grown)
    return stepping


def _runs(model: FileModel) -> dict[str, list[list]]:
    """For each top-level function that runs a parameter as a module (``model(x)``), without training
    it or setting a mode: ``[[position or -1, name], ...]`` (see :func:`handed.run_parameters`)."""
    from lint_rules.analysis.handed import run_parameters

    out: dict[str, list[list]] = {}
    for stmt in model.module.body:
        if isinstance(stmt, cst.FunctionDef) and (params := run_parameters(model, stmt)):
            out[stmt.name.value] = [[position, name] for position, name in params]
    return out


def _no_grad_functions(model: FileModel) -> list[str]:
    """The top-level functions whose body enters a torch no-grad context, or that carry a no-grad
    decorator: used as a decorator or context manager elsewhere, they turn grad off
    (``@inference`` in ``utils.py`` wrapping ``torch.inference_mode``). One pass over the file."""
    from lint_rules.analysis.grad_mode import GradMode

    modes = model.fact(GradMode)
    top = {id(stmt): stmt.name.value for stmt in model.module.body if isinstance(stmt, cst.FunctionDef)}
    found: list[str] = []

    def owner(node: cst.CSTNode) -> None:
        for a in model.ancestors(node):
            name = top.get(id(a))
            if name is not None:
                if name not in found:
                    found.append(name)
                return

    for call in model.nodes(cst.Call):
        if modes.of_expr(call) is False:
            owner(call)
    for w in model.nodes(cst.With):
        if modes.of_with(w) is False:
            owner(w)
    for fn in model.nodes(cst.FunctionDef):
        if any(modes.of_expr(d.decorator) is False for d in fn.decorators):
            name = top.get(id(fn))
            if name is not None and name not in found:
                found.append(name)
            owner(fn)
    return sorted(found)


_MAX_CALLS = 256  # calls recorded per file: a summary stays small
_LIBRARIES = frozenset(
    "torch torchvision torchaudio torchtext numpy scipy pandas sklearn matplotlib PIL cv2 tqdm yaml einops timm "
    "transformers datasets accelerate lightning pytorch_lightning hydra omegaconf wandb tensorboard tensorboardX "
    "apex deepspeed".split())


def _imported_calls(model: FileModel, imports: dict, prov: Provenance) -> list[list]:
    """The calls of functions this file imports at module level, with the kind of each argument.

    ``from train import fit`` then ``fit(net, loader, nn.CrossEntropyLoss(), opt)`` gives
    ``["fit", [], ["module", "loader", "criterion", "optimizer"], {}, [], [[null, "Net", null], null,
    [false, "torch.nn.CrossEntropyLoss", null], null], {}]``: the local name, the attribute path
    after it (``engine.fit(...)`` after ``import engine``: ``["fit"]``), the kinds of the positional
    arguments (``"*"`` for a starred one, None when unknown) and of the keyword arguments (``"**"``
    for a double-starred one), what holds where the call runs: ``"no_grad"`` (grad is off there)
    and ``"eval"`` (the caller's last mode call before it is ``eval()``), and the facts of each
    module argument, positional and keyword (``module_facts`` below: mode dependence, class, output). Importers' kinds flow into the callee's parameters
    (:meth:`~lint_rules.analysis.cross_file.ProjectFacts.call_kinds`), their contexts tell an
    evaluation function whether its callers set the mode (``caller_contexts``).
    Calls of names imported from the standard library or from the common libraries of
    training code (torch, numpy, ...) are left out: they never reach the project's functions.
    """
    out: list[list] = []
    if not imports:
        return out
    from lint_rules.analysis.evaluation import EVAL, FileFacts
    from lint_rules.analysis.kinds import CRITERION, MODULE
    from lint_rules.analysis.modules import facts

    modes = model.fact(FileFacts)
    layers = facts(model)

    def module_facts(expr: cst.CSTNode, kind: str | None) -> list | None:
        """[mode-dependent, class, output] of a module argument: whether it behaves differently in
        train and eval mode, the class that built it (a torch class's qualified name, or an imported
        class as this file spells it, for the reader to look up in its file's summary), and what
        calling it returns (``Provenance.of_module``); None for any other argument."""
        if kind not in (MODULE, CRITERION):
            return None
        cls = layers.imported_class(expr) or layers.torch_class(expr)
        return [layers.mode_dependent(expr), cls, prov.of_module(expr, expr)]

    for call in model.nodes(cst.Call):
        text = dotted(call.func)
        if text is None:
            continue
        head, *rest = text.split(".")
        ref = imports.get(head)
        if ref is None or _external(ref):
            continue
        bindings = model.bindings_of(call.func if isinstance(call.func, cst.Name) else _leftmost(call.func))
        if not bindings or len(bindings) != 1 or not isinstance(bindings[0].node, (cst.Import, cst.ImportFrom)):
            continue  # shadowed by a local name
        args: list[str | None] = []
        kwargs: dict[str, str | None] = {}
        fact_args: list[list | None] = []
        fact_kwargs: dict[str, list | None] = {}
        for arg in call.args:
            if arg.keyword is not None:
                kind = kwargs[arg.keyword.value] = model.kind_of(arg.value)
                fact_kwargs[arg.keyword.value] = module_facts(arg.value, kind)
            elif arg.star == "**":
                kwargs["**"] = "**"
            elif arg.star:
                args.append("*")
                fact_args.append(None)
            else:
                kind = model.kind_of(arg.value)
                args.append(kind)
                fact_args.append(module_facts(arg.value, kind))
        context = []
        if model.in_no_grad(call):
            context.append("no_grad")
        last = modes.last_mode_before(call, model.enclosing_function(call))
        if last is not None and last[0] == EVAL:
            context.append("eval")
        out.append([head, rest, args, kwargs, context, fact_args, fact_kwargs])
        if len(out) >= _MAX_CALLS:
            break
    return out


def _external(ref: list) -> bool:
    """Whether an import (``[level, module, name]``) is of the standard library or of one of the
    libraries training code calls most: its calls never reach a function of the project."""
    level, module, name = ref
    if level:
        return False
    top = (module or name or "").split(".", 1)[0]
    return top in sys.stdlib_module_names or top in _LIBRARIES


def _leftmost(expr: cst.CSTNode) -> cst.CSTNode:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr


def _sampled_loaders(model: FileModel) -> list[str]:
    """The top-level functions that return a ``DataLoader`` fed by a shuffling ``DistributedSampler``
    (``sampler = DistributedSampler(ds); return DataLoader(ds, sampler=sampler)``): an importer
    that iterates the result every epoch must call ``set_epoch`` on its sampler."""
    from lint_rules.analysis.loaders import sampler_argument, shuffling_sampler
    from lint_rules.analysis.names import DATA_LOADERS

    out = []
    for fn in model.module.body:
        if not isinstance(fn, cst.FunctionDef):
            continue
        for ret in returns_of(fn):
            loader = _bound_call(model, ret.value)
            if loader is None or model.qualified_name(loader.func) not in DATA_LOADERS:
                continue
            arg = sampler_argument(loader)
            sampler = _bound_call(model, arg.value) if arg is not None else None
            if sampler is not None and shuffling_sampler(model, sampler):
                out.append(fn.name.value)
                break
    return out


def _bound_call(model: FileModel, expr: cst.CSTNode | None) -> cst.Call | None:
    """``expr`` if it is a call, or the call a name is bound to once."""
    if isinstance(expr, cst.Call):
        return expr
    if isinstance(expr, cst.Name):
        bindings = model.bindings_of(expr)
        if bindings and len(bindings) == 1 and isinstance(bindings[0].value, cst.Call):
            return bindings[0].value
    return None


def _function_returns(prov: Provenance, fn: cst.FunctionDef) -> str | None:
    returns = returns_of(fn)
    if not returns or any(r.value is None for r in returns):
        return None
    kinds = {prov.of_value(r.value, r) for r in returns}
    return kinds.pop() if len(kinds) == 1 else None


def record_import_from(imports: dict, node: cst.ImportFrom) -> None:
    """Add ``local name -> [level, module, name]`` for each name ``node`` imports."""
    if isinstance(node.names, cst.ImportStar):
        return
    level = len(node.relative)
    module = dotted(node.module) if node.module is not None else ""
    for alias in node.names:
        name = dotted(alias.name)
        local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) \
            else name
        if name and local:
            imports[local] = [level, module or "", name]


def record_import(imports: dict, node: cst.Import) -> None:
    """Add ``local name -> [0, module, None]`` for each module ``node`` imports."""
    for alias in node.names:
        full = dotted(alias.name)
        if not full:
            continue
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            imports[alias.asname.name.value] = [0, full, None]  # import a.b as m: m is module a.b
        else:
            root = full.split(".", 1)[0]
            imports.setdefault(root, [0, root, None])
