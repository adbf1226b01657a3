from __future__ import annotations

import os
import re

import libcst as cst

from lint_rules.analysis.names import canonical_name
from lint_rules.analysis.spelling import spelling
from lint_rules.rule import SAFE, UNSAFE, WARNING, Replace, Rule, RuleFix
from lint_rules.rules.examples import trn802 as examples

# Deprecated name (every defining path) -> what to write instead.
_REPLACEMENTS: dict[str, str] = {
    "torch.cuda.amp.GradScaler": 'torch.amp.GradScaler("cuda")',
    "torch.cuda.amp.grad_scaler.GradScaler": 'torch.amp.GradScaler("cuda")',
    "torch.cuda.amp.autocast": 'torch.autocast("cuda")',
    "torch.cuda.amp.autocast_mode.autocast": 'torch.autocast("cuda")',
    "torch.cpu.amp.autocast": 'torch.autocast("cpu")',
    "torch.cpu.amp.autocast_mode.autocast": 'torch.autocast("cpu")',
    "torch.cuda.amp.custom_fwd": 'torch.amp.custom_fwd(device_type="cuda")',
    "torch.cuda.amp.autocast_mode.custom_fwd": 'torch.amp.custom_fwd(device_type="cuda")',
    "torch.cuda.amp.custom_bwd": 'torch.amp.custom_bwd(device_type="cuda")',
    "torch.cuda.amp.autocast_mode.custom_bwd": 'torch.amp.custom_bwd(device_type="cuda")',
}
# The torch release that introduced each replacement.
_INTRODUCED: dict[str, tuple[int, int]] = {"torch.amp.GradScaler": (2, 3), "torch.autocast": (1, 10),
                                           "torch.amp.custom_fwd": (2, 4), "torch.amp.custom_bwd": (2, 4)}
# The torch release that introduced each deprecated module: code that uses it unguarded does not run on an
# older torch, so a declared floor below it is stale (never raised as the code moved on) and says nothing
# about which versions the project supports.
_OLD_SINCE: dict[str, tuple[int, int]] = {"torch.cuda.amp": (1, 6), "torch.cpu.amp": (1, 10)}
# Decorators whose replacement takes the device as the keyword-only `device_type`.
_DECORATORS = frozenset({"custom_fwd", "custom_bwd"})
_FALLBACK_ERRORS = re.compile(r"ImportError|ModuleNotFoundError|AttributeError|TypeError")
# A torch version test: `torch.__version__`, `version.parse(...)`, `hasattr(torch.amp, ...)`, or a flag
# named for one (`_TORCH_GE_2_4`, `is_torch_greater_or_equal(...)`, `TORCH_2_3_PLUS`).
_VERSION_TEST = re.compile(r"version|hasattr\(|torch\w*_(?:ge|gt|le|lt|greater|less|older|newer|at_least|before)"
                           r"(?:_|\b)|torch_?\d", re.I)
_TYPE_CHECKS = frozenset({"builtins.isinstance", "builtins.issubclass"})
_LEAVES = frozenset({"GradScaler", "autocast", *_DECORATORS})
# The old autocast classes take (enabled, dtype, cache_enabled); torch.autocast takes
# (device_type, dtype, enabled, cache_enabled): positional arguments become keywords.
_AUTOCAST_PARAMS = ("enabled", "dtype", "cache_enabled")
# Process-wide autocast defaults: torch.autocast reads them, the old classes did not.
_GLOBAL_DEFAULTS = re.compile(r"set_autocast_(?:gpu_|cpu_)?dtype|set_autocast_cache_enabled")
_MODULES = frozenset({"torch.cuda.amp", "torch.cuda.amp.grad_scaler", "torch.cuda.amp.autocast_mode",
                      "torch.cpu.amp", "torch.cpu.amp.autocast_mode"})


class DeprecatedAmpApi(Rule):
    """
    ## What it does
    Flags `torch.cuda.amp.GradScaler`, `torch.cuda.amp.autocast`,
    `torch.cpu.amp.autocast` and the custom autograd function decorators
    `torch.cuda.amp.custom_fwd`/`custom_bwd` under any spelling: a dotted use
    (`torch.cuda.amp.autocast()`, `amp.GradScaler()` after `from torch.cuda import
    amp`) is reported where it is used, and `from torch.cuda.amp import autocast` is
    reported at the import.

    Confidence: a finding whose replacement the project's declared torch floor
    lacks is *possible* (`--preview`): the floor has to rise first, which a
    maintainer keeping old torch versions may not want. A floor older than the
    deprecated module itself (`torch>=1.4` in a project that uses `torch.cuda.amp`,
    which appeared in 1.6) was left behind as the code moved on and is not taken
    as a floor.

    ## Why is this bad?
    These device-specific entry points are deprecated since PyTorch 2.4 in favour of
    the device-generic `torch.amp.GradScaler("cuda")` and `torch.autocast("cuda")`
    (and `torch.amp.custom_fwd(device_type="cuda")`, `torch.amp.custom_bwd(device_type="cuda")`).
    Every construction emits a `FutureWarning` (one per step for an `autocast`
    context in the training loop is easy to produce in logs), and they are slated for
    removal: a torch upgrade turns a working training script into an `AttributeError`.

    ## Example
    ```python
    scaler = torch.cuda.amp.GradScaler()
    with torch.cuda.amp.autocast(dtype=torch.float16):
        loss = model(x)
    ```

    Use instead:
    ```python
    scaler = torch.amp.GradScaler("cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x)
    ```

    ## Known problems
    `torch.amp.GradScaler` appeared in torch 2.3, `torch.autocast` in 1.10 and
    `torch.amp.custom_fwd`/`custom_bwd` in 2.4. In a
    project that declares support for an older torch (`torch>=2.0` in
    `pyproject.toml`, `setup.cfg`, `setup.py`, `requirements*.txt` or
    `environment.yml`), the finding says so and asks to raise the floor, without a
    fix: the replacement would break the older versions the project claims to
    support (declared floors are often stale, and projects do move on). Uses in an
    `except (ImportError, AttributeError, TypeError):` fallback or under a torch
    version test (`if TORCH_VERSION < (2, 4):`, `hasattr(torch.amp, "GradScaler")`)
    are taken as deliberate support for old torch and stay quiet (no finding, so no
    fix rewrites them), as are uses after an early `return` under such a test, and so are
    references that only recognise the old API (`func is torch.cuda.amp.autocast`,
    an element of a set or list of supported context managers,
    `isinstance(ctx, torch.cuda.amp.autocast)`). A name imported from `torch.cuda.amp` is reported once, at the import,
    not at each use.

    ## Fix safety
    A call written with the module path (`torch.cuda.amp.GradScaler(...)`,
    `torch.cuda.amp.autocast(...)`, `amp.autocast(...)` after `from torch.cuda import
    amp`, `@torch.cpu.amp.autocast()`) is rewritten to the replacement PyTorch's own
    deprecation warning names, keeping every argument: `torch.amp.GradScaler("cuda",
    ...)` takes the old arguments in the same places; for `torch.autocast("cuda",
    ...)` positional arguments become keywords (`enabled=`, `dtype=`,
    `cache_enabled=`), because the new signature orders them differently. This is
    safe, except in a file that changes the process-wide autocast defaults
    (`torch.set_autocast_dtype`, `set_autocast_cache_enabled`): the old classes
    ignored them and `torch.autocast` reads them, so there the fix is unsafe.
    A `custom_fwd`/`custom_bwd` decorator becomes `torch.amp.custom_fwd(...,
    device_type="cuda")`, called even where the old one was bare (safe).
    There is no fix for `from torch.cuda.amp import autocast` (every use would change,
    and the import too), for a name that is not called where it is written
    (`partial(amp.autocast, ...)`: the device argument has nowhere to go), for a
    `*args` call to autocast, or where no `import torch` names `torch.amp`: a fix
    never adds an import.

    ## References
    - https://pytorch.org/docs/stable/amp.html
    - https://pytorch.org/docs/stable/amp.html#torch.autocast
    - https://pytorch.org/docs/stable/amp.html#gradient-scaling
    """

    CODE = "TRN802"
    REQUIRES = ("amp",)
    NAME = "deprecated-amp-api"
    MESSAGE = "torch.cuda.amp / torch.cpu.amp is deprecated: use torch.amp.GradScaler(device) and torch.autocast(device)"
    FIX_TITLE = 'Use torch.amp.GradScaler("cuda") and torch.autocast("cuda")'
    SEVERITY = WARNING

    VALID = examples.VALID
    INVALID = examples.INVALID

    def __init__(self, model) -> None:
        super().__init__(model)
        project = getattr(model, "project", None)
        oldest = getattr(project, "torch_min_version", None)
        self._changes_defaults: bool | None = None  # the file calls torch.set_autocast_*: read on demand
        self._flags = frozenset(_REPLACEMENTS)
        # Advice never names an API the oldest supported torch lacks without saying so: such a finding
        # asks to raise the floor instead, and carries no fix.
        self._floor = oldest
        self._source = os.path.basename(getattr(project, "source", None) or "") or "the project's requirements"

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value not in _LEAVES:
            return
        q = self.model.qualified_name(node)
        if q in self._flags and not self._only_referenced(node) and not self._compatibility_fallback(node):
            needs = _INTRODUCED[_REPLACEMENTS[q].split("(")[0]]
            if self._floor_lacks(q, needs):
                self.report(node, _below_floor(q, needs, self._floor, self._source), certain=False)
            else:
                self.report(node, _message(q), fix=self._fix(node, q))

    def _floor_lacks(self, q: str, needs: tuple[int, int]) -> bool:
        """The declared floor predates the replacement, and the code does not already contradict it:
        a floor older than the deprecated module itself was left behind when the code moved on."""
        floor = self._floor
        if floor is None or floor >= needs:
            return False
        since = next((v for m, v in _OLD_SINCE.items() if q.startswith(m + ".")), None)
        return since is None or floor >= since

    def _fix(self, node: cst.Attribute, q: str) -> RuleFix | None:
        if node.attr.value in _DECORATORS:
            return self._decorator_fix(node, q)
        call = self.model.parent(node)
        if not isinstance(call, cst.Call) or call.func is not node:
            return None
        device = cst.SimpleString('"cuda"' if q.startswith("torch.cuda.") else '"cpu"')
        scaler = "GradScaler" in q
        func = spelling(self.model, node, "torch.amp.GradScaler" if scaler else "torch.autocast")
        if func is None:
            return None
        args = list(call.args)
        if not scaler:
            positional = [a for a in args if a.keyword is None]
            if any(a.star for a in positional) or len(positional) > len(_AUTOCAST_PARAMS):
                return None
            eq = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
            args = [a.with_changes(keyword=cst.Name(_AUTOCAST_PARAMS[i]), equal=eq) if i < len(positional) else a
                    for i, a in enumerate(args)]
        first = cst.Arg(device, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if args
                        else cst.MaybeSentinel.DEFAULT)
        new = call.with_changes(func=cst.parse_expression(func), args=[first, *args])
        if not scaler and self._changes_defaults is None:
            self._changes_defaults = bool(_GLOBAL_DEFAULTS.search(self.model.module.code))
        safe = scaler or not self._changes_defaults
        return RuleFix(SAFE if safe else UNSAFE, (Replace(call, new),))

    def _decorator_fix(self, node: cst.Attribute, q: str) -> RuleFix | None:
        """`@torch.cuda.amp.custom_fwd(cast_inputs=...)` and a bare `@amp.custom_bwd`: the replacement
        takes the same keywords plus the keyword-only `device_type`, and must be called even bare."""
        func = spelling(self.model, node, "torch.amp." + node.attr.value)
        if func is None:
            return None
        device = cst.Arg(cst.SimpleString('"cuda"'), keyword=cst.Name("device_type"),
                         equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                               whitespace_after=cst.SimpleWhitespace("")))
        parent = self.model.parent(node)
        if isinstance(parent, cst.Decorator) and parent.decorator is node:
            new: cst.CSTNode = cst.Call(func=cst.parse_expression(func), args=[device])
            return RuleFix(SAFE, (Replace(node, new),))
        if not isinstance(parent, cst.Call) or parent.func is not node \
                or any(a.keyword is None for a in parent.args):
            return None  # a positional argument is the function itself: `custom_fwd(fn)`, left to the author
        args = list(parent.args)
        if args:
            args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        new = parent.with_changes(func=cst.parse_expression(func), args=[*args, device])
        return RuleFix(SAFE, (Replace(parent, new),))

    def _only_referenced(self, node: cst.CSTNode) -> bool:
        """`func is torch.cuda.amp.autocast`, `{torch.cuda.amp.autocast, ...}` (a registry or
        membership test), `isinstance(ctx, torch.cuda.amp.autocast)`: code that recognises
        the old API without using it."""
        model = self.model
        parent = model.parent(node)
        if isinstance(parent, (cst.Element, cst.DictElement)):
            return True
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
            return True
        if isinstance(parent, cst.Arg):
            call = model.parent(parent)
            return isinstance(call, cst.Call) and model.qualified_name(call.func) in _TYPE_CHECKS
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = canonical_name(_text(node.module))
        if module not in _MODULES:
            return
        names = [f"{module}.{_text(alias.name)}" for alias in node.names]
        deprecated = [q for q in names if q in self._flags]
        if deprecated and not self._compatibility_fallback(node):
            needs = max(_INTRODUCED[_REPLACEMENTS[q].split("(")[0]] for q in deprecated)
            if self._floor_lacks(deprecated[0], needs):
                self.report(node, _below_floor(deprecated[0], needs, self._floor, self._source), certain=False)
            else:
                self.report(node, _message(*deprecated))

    def _after_version_return(self, block: cst.CSTNode, stmt: cst.CSTNode) -> bool:
        """``stmt`` follows, in the same block, an ``if <torch version test>:`` that returns: the old
        API is the fallback for the torch versions the test turned away."""
        body = list(block.body)
        if stmt not in body:
            return False
        for prior in body[:body.index(stmt)]:
            if isinstance(prior, cst.If) and _returns(prior.body) \
                    and _VERSION_TEST.search(self.model.module.code_for_node(prior.test)):
                return True
        return False

    def _compatibility_fallback(self, node: cst.CSTNode) -> bool:
        """Old torch support: `except (ImportError, AttributeError):` after trying the new
        API, or a branch on `torch.__version__` / `hasattr(torch.amp, ...)`."""
        model = self.model
        child = node
        for anc in model.ancestors(node):
            if isinstance(anc, cst.ExceptHandler):
                if anc.type is None or _FALLBACK_ERRORS.search(model.module.code_for_node(anc.type)):
                    return True
            elif isinstance(anc, (cst.If, cst.IfExp)) and child is not anc.test \
                    and _VERSION_TEST.search(model.module.code_for_node(anc.test)):
                return True
            elif isinstance(anc, (cst.IndentedBlock, cst.Module)) and self._after_version_return(anc, child):
                return True
            elif isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
                return False
            child = anc
        return False


def _returns(block: cst.CSTNode) -> bool:
    return any(isinstance(small, (cst.Return, cst.Raise))
               for stmt in getattr(block, "body", ())
               for small in (stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ()))


def _message(*names: str) -> str:
    old = ", ".join(f"`{q.replace('.grad_scaler', '').replace('.autocast_mode', '')}`" for q in names)
    new = ", ".join(dict.fromkeys(f"`{_REPLACEMENTS[q]}`" for q in names))
    return f"{old} {'is' if len(names) == 1 else 'are'} deprecated: use {new}"


def _below_floor(q: str, needs: tuple[int, int], floor: tuple[int, int], source: str) -> str:
    old = q.replace(".grad_scaler", "").replace(".autocast_mode", "")
    return (f"`{old}` is deprecated; its replacement `{_REPLACEMENTS[q]}` needs torch {needs[0]}.{needs[1]}, "
            f"newer than the torch>={floor[0]}.{floor[1]} this project declares ({source}): raise that floor "
            f"to move to it")


def _text(node: cst.CSTNode) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_text(node.value)}.{node.attr.value}"
    return ""
