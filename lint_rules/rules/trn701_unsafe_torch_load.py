from __future__ import annotations

import os

import libcst as cst

from lint_rules.analysis.context import in_test, loads_a_module, reads_safe_format, third_party_file
from lint_rules.analysis.edits import append_keyword
from lint_rules.analysis.model import ASSIGN, is_false, keyword_arg
from lint_rules.rule import ERROR, UNSAFE, WARNING, Replace, Rule, RuleFix
from lint_rules.rules.examples import trn701 as examples

# torch.load defaults to weights_only=True from this version on.
_SAFE_DEFAULT = (2, 6)
_HAS_WEIGHTS_ONLY = (1, 13)  # torch.load(weights_only=...) raises TypeError before torch 1.13


class UnsafeTorchLoad(Rule):
    """
    ## What it does
    Flags `torch.load(..., weights_only=False)`, and `torch.load(...)` without
    `weights_only` when the project supports a torch older than 2.6, where the
    default is `False`. The oldest supported torch is the lower bound of `torch`
    in the nearest project files: in each directory from the file's up to the
    project root (a `pyproject.toml`, `setup.py`, `setup.cfg` or `.git`), the
    dependencies of `pyproject.toml` (PEP 621 or Poetry), `setup.cfg`, a literal
    `install_requires` of `setup.py`, every `requirements*.txt` (and
    `requirements/*.txt`, following `-r`), then `environment.yml`; the first bound
    found wins.

    - `torch>=2.6` or newer: a bare `torch.load(path)` is safe, nothing is reported;
    - a lower bound from 1.13 to below 2.6 (`torch>=2.0`): reported as an error;
    - a lower bound below 1.13: reported as a warning that asks to raise the floor,
      without a fix (the keyword does not exist there);
    - no lower bound on torch in those files: reported as a warning.

    Confidence: a finding is *certain*, and reported by default, when the file
    comes from someone else: the path is a URL, a download's result (on any of
    the assignments that reach it, or a file a downloader writes in the same
    function: `urlretrieve(url, cached_file)`), or spelled as a pretrained,
    fine-tuning or downloaded checkpoint (`args.pretrained`, `cached_path`, a
    parameter of `def load_pretrained(net, path)`); or the function also reads
    safetensors (`safe_open`, `safetensors.torch.load_file`): the pickle read is
    the fallback for published model weights that the code already loads safely
    in their other format. A checkpoint the project reads back from its
    own runs (a resume, a best model, a feature cache, a library's `load()` of
    what its `save()` wrote) is *possible*: reported with `--preview`.
    An explicit `weights_only=False` is a decision: certain only for a file that
    comes from elsewhere by its path. A checkpoint used as a whole pickled module
    (`torch.load(w)["model"].float().eval()`, `ckpt["model"].state_dict()`) is
    never certain: `weights_only=True` cannot load it, the fix is a new format.
    Loads in tests (`def test_*`, `unittest.TestCase` methods) are not reported:
    they read files the test itself wrote.

    A bare `torch.load` in an `except TypeError:` fallback for old torch builds
    that do not accept `weights_only` is not flagged, nor is a call that passes
    `**kwargs` (which may hold `weights_only`).

    ## Why is this bad?
    With `weights_only=False`, `torch.load` unpickles the file with Python's full
    `pickle`, which runs whatever code the file tells it to: loading a checkpoint
    downloaded from a model hub, a shared drive or a pull request executes
    arbitrary code on the machine (and the training cluster's credentials) the
    moment it is loaded. With `weights_only=True` only tensors, primitive types
    and allow-listed classes are accepted.

    ## Example
    ```python
    state = torch.load("checkpoint.pt", weights_only=False)
    model.load_state_dict(torch.load(args.resume))  # torch < 2.6: unsafe default
    ```

    Use instead:
    ```python
    state = torch.load("checkpoint.pt", weights_only=True)
    model.load_state_dict(torch.load(args.resume, weights_only=True))
    ```

    ## Known problems
    `weights_only=False` is sometimes needed for a trusted checkpoint that holds
    whole modules or other Python objects; suppress the finding there with
    `# noqa: TRN701` and a comment saying why the file is trusted, or allow its
    classes with `torch.serialization.add_safe_globals`. A `weights_only=flag`
    variable is not followed unless it is assigned a literal `False`. The torch
    bound is read from `pyproject.toml`, `setup.cfg`, a literal `install_requires`
    in `setup.py`, `requirements*.txt` and `environment.yml`; a bound computed at
    install time is not seen, so a bare `torch.load` there is reported as a warning.
    In a project that supports torch older than 1.13, `weights_only=` raises
    `TypeError`, so a bare `torch.load` there gets a warning asking to raise the
    floor, and no fix. Other
    loaders that unpickle (`torch.hub.load_state_dict_from_url`, `pickle.load`)
    are not checked.

    ## Fix safety
    The fix passes `weights_only=True`: it replaces the `False` value (a literal, or
    the name bound to one) or adds the argument after the others, keeping every
    other argument. It is unsafe: a checkpoint that holds more than tensors and
    allow-listed types (a whole pickled module, a custom class, an optimizer built
    around one) then fails to load with an `UnpicklingError`, where it loaded before.
    Only apply it after checking what your checkpoints hold.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.load.html
    - https://pytorch.org/docs/stable/notes/serialization.html#weights-only
    """

    CODE = "TRN701"
    REQUIRES = ("load",)
    NAME = "unsafe-torch-load"
    MESSAGE = "torch.load(weights_only=False) unpickles the file: loading an untrusted checkpoint runs arbitrary code"
    FIX_TITLE = "Pass weights_only=True to torch.load"
    SEVERITY = ERROR

    VALID = examples.VALID
    INVALID = examples.INVALID

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            if func.attr.value != "load":
                return
        elif not isinstance(func, cst.Name):
            return
        if self.model.qualified_name(func) not in ("torch.load", "torch.serialization.load"):
            return
        if in_test(self.model, node):
            return
        # Certain where the file comes from someone else: a pretrained or downloaded checkpoint was
        # published by another party, and code that also reads safetensors reads published model
        # weights. A file the project reads back from its own runs is only possible, in a library too:
        # a library's resume state, caches and save/load pairs read what its user's run wrote.
        first = node.args[0].value if node.args and node.args[0].keyword is None else None
        third_party = first is not None and third_party_file(self.model, first)
        # A checkpoint that holds a whole pickled module (`ckpt["model"].float().eval()`) cannot load with
        # weights_only=True: the fix is a new checkpoint format, not the keyword.
        whole_module = loads_a_module(self.model, node)
        certain = (third_party or reads_safe_format(self.model, node)) and not whole_module
        arg = keyword_arg(node, "weights_only")
        if arg is not None:
            if self._is_false(arg.value):
                true = arg.value.with_changes(value="True") if isinstance(arg.value, cst.Name) else cst.Name("True")
                # an explicit False is a decision: certain only for a file that comes from someone else
                self.report(node, fix=RuleFix(UNSAFE, (Replace(arg.value, true),)),
                            certain=third_party and not whole_module)
            return
        if any(a.star == "**" for a in node.args) or self._old_torch_fallback(node):
            return
        project = getattr(self.model, "project", None)
        floor = project.torch_min_version if project is not None else None
        fix = RuleFix(UNSAFE, (Replace(node, append_keyword(node, "weights_only", cst.Name("True"))),))
        if floor is None:
            self.report(node, "torch.load without weights_only unpickles the file on torch < 2.6 (the default "
                              "is weights_only=False there): declare torch>=2.6 or pass weights_only=True",
                        severity=WARNING, fix=fix, certain=certain)
        elif floor < _HAS_WEIGHTS_ONLY:
            source = os.path.basename(getattr(project, "source", None) or "") or "the project's requirements"
            self.report(node, f"torch.load without weights_only unpickles the file; weights_only=True needs torch "
                              f"1.13, newer than the torch>={floor[0]}.{floor[1]} this project declares ({source}): "
                              f"raise that floor and pass weights_only=True", severity=WARNING, certain=certain)
        elif floor < _SAFE_DEFAULT:
            self.report(node, f"torch.load without weights_only unpickles the file on torch < 2.6, which this "
                              f"project supports (torch>={floor[0]}.{floor[1]}): pass weights_only=True", fix=fix,
                        certain=certain)

    def _is_false(self, expr: cst.CSTNode) -> bool:
        if is_false(expr):
            return True
        if isinstance(expr, cst.Name):
            bindings = self.model.bindings_of(expr)
            return bool(bindings) and all(b.kind == ASSIGN and is_false(b.value) for b in bindings)
        return False

    def _old_torch_fallback(self, node: cst.Call) -> bool:
        """In ``except TypeError:`` after a ``try`` that passed ``weights_only``."""
        for a in self.model.ancestors(node):
            if isinstance(a, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return False
            if isinstance(a, cst.Try):
                handler = next((h for h in a.handlers if self.model.is_inside(node, h)), None)
                if handler is None or not _catches_type_error(handler):
                    return False
                return any(keyword_arg(c, "weights_only") is not None
                           for c in self.model.within(cst.Call, a.body))
        return False


def _catches_type_error(handler: cst.ExceptHandler) -> bool:
    kinds = handler.type
    if kinds is None:
        return True  # a bare except
    names = kinds.elements if isinstance(kinds, cst.Tuple) else [kinds]
    for el in names:
        expr = el.value if isinstance(el, cst.Element) else el
        if isinstance(expr, cst.Name) and expr.value in ("TypeError", "Exception", "BaseException"):
            return True
    return False
