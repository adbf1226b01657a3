from __future__ import annotations

import libcst as cst

from lint_rules.rule import WARNING, Rule
from lint_rules.analysis.context import in_test
from lint_rules.analysis.kinds import MODULE, OPTIMIZER
from lint_rules.analysis.model import dotted
from lint_rules.analysis.modules import facts
from lint_rules.rules.examples import trn702 as examples

_SAVE = "torch.save"
# Methods only models and optimizers have: what an object with a state_dict() method is used for.
_STATEFUL_METHODS = frozenset({"parameters", "named_parameters", "load_state_dict", "zero_grad", "step"})
_UNCALLED_MESSAGE = ("torch.save(x.state_dict) saves the bound method, which pickles the whole "
                     "model or optimizer object: call state_dict()")


class WholeModelSaved(Rule):
    """
    ## What it does
    Flags `torch.save(obj, f)` where `obj` is an `nn.Module` instance (a model
    built from a `torch.nn` class or a module class of the same file, `self`
    inside a module class, `model.module`, or, as a last resort, a variable named
    like a model), or a dict/list/tuple literal holding one
    (`{"model": model, "epoch": epoch}`). Also flags the method itself,
    `torch.save(model.state_dict, path)` without the call, on a model or an
    optimizer (known by its construction, or by the file calling its
    `parameters()`, `step()`, `zero_grad()` or `load_state_dict()`): pickling a
    bound method pickles the object it is bound to. Quiet for `model.state_dict()` and
    for values assigned from a `state_dict()`.

    ## Why is this bad?
    `torch.save(model)` pickles the module object, which records the import path
    of every class it uses. The checkpoint loads only with the same code layout
    (rename or move a class and it is unreadable), and only with
    `torch.load(..., weights_only=False)`: since PyTorch 2.6 the default
    `torch.load(path)` refuses it with `UnpicklingError: Weights only load
    failed`, and loading with `weights_only=False` runs arbitrary code from the
    file, so a shared checkpoint is a code-execution risk for whoever loads it.

    ## Example
    ```python
    torch.save(model, "checkpoint.pt")
    ```

    Use instead:
    ```python
    torch.save(model.state_dict(), "checkpoint.pt")
    ...
    model = Net()
    model.load_state_dict(torch.load("checkpoint.pt", weights_only=True))
    ```

    A module saved into an in-memory buffer (`torch.save(model, io.BytesIO())`, a
    deep copy) is not a checkpoint and is not reported.

    ## Known problems
    Tests (`def test_*`, `unittest.TestCase` methods) are not reported.
    A variable whose value is out of sight is taken for a module only by its name
    (`model`, `net`, `*_model`), so `torch.save(model, path)` on something else
    called `model` is flagged, unless its annotation or the function's docstring
    declares plain data (`model: dict`, `model (dict): ...`), its last word names
    something else (`model_output`, `model_dataset`, `model_sd`), or the file uses
    it as a mapping (`converted_model.keys()`). A dict saved under a name holds
    what the assignment that reaches the save put in it, not every dict that name
    is given in the function. Saving a whole model on purpose (a
    `torch.package`-free export for one fixed codebase) is a legitimate but
    fragile choice; suppress with `# noqa: TRN702`. TorchScript archives
    (`torch.jit.save`) are not affected and not flagged.

    ## References
    - https://pytorch.org/tutorials/beginner/saving_loading_models.html
    - https://pytorch.org/docs/stable/generated/torch.load.html
    - https://pytorch.org/docs/stable/notes/serialization.html
    """

    CODE = "TRN702"
    REQUIRES = ("save",)
    NAME = "whole-model-saved"
    MESSAGE = ("torch.save() of a whole nn.Module pickles its classes: tied to the code layout, "
               "and unloadable with weights_only=True (the default since PyTorch 2.6)")
    FIX_TITLE = "Save model.state_dict() and rebuild the model before load_state_dict()"
    SEVERITY = WARNING

    VALID = examples.VALID
    INVALID = examples.INVALID

    def __init__(self, model) -> None:
        super().__init__(model)
        self._facts = facts(model)
        self._stateful: set[str] | None = None

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        if name is None or "save" not in name or not node.args:
            return
        if self.model.qualified_name(func) != _SAVE:
            return
        obj = node.args[0].value
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "obj":
                obj = arg.value
        if self._in_memory(node):
            return  # torch.save(model, io.BytesIO()): a deep copy in memory, no file anyone loads later
        if self._holds_module(obj, at=node) and not in_test(self.model, node):
            uncalled = isinstance(obj, cst.Attribute) and obj.attr.value == "state_dict"
            self.report(node, _UNCALLED_MESSAGE if uncalled else None)

    def _in_memory(self, node: cst.Call) -> bool:
        """The destination (second argument, or ``f=``) is an ``io.BytesIO`` buffer."""
        dest = node.args[1].value if len(node.args) > 1 and node.args[1].keyword is None else None
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "f":
                dest = arg.value
        model = self.model
        if isinstance(dest, cst.Name):
            bindings = model.bindings_of(dest)
            dest = bindings[0].value if bindings and len(bindings) == 1 else dest
        return isinstance(dest, cst.Call) and model.qualified_name(dest.func) in ("io.BytesIO", "_io.BytesIO")

    def _has_state(self, expr: cst.CSTNode) -> bool:
        """A model or optimizer by use: the file calls ``<expr>.parameters()``, ``.step()``, ..."""
        text = dotted(expr)
        if text is None:
            return False
        if self.model.kind_of(expr) in (MODULE, OPTIMIZER):
            return True
        if self._stateful is None:  # once per file: the receivers of those methods
            self._stateful = {dotted(c.func.value) for c in self.model.nodes(cst.Call)
                              if isinstance(c.func, cst.Attribute) and c.func.attr.value in _STATEFUL_METHODS}
        return text in self._stateful

    def _holds_module(self, obj: cst.CSTNode, depth: int = 0, at: cst.CSTNode | None = None) -> bool:
        """``obj`` holds a module; ``at``, the save, picks the assignments of a name that reach it."""
        if depth > 3:
            return False
        if isinstance(obj, cst.Attribute) and obj.attr.value == "state_dict":
            # model.state_dict without the call: a bound method, pickled with its module
            return self._facts.is_module_value(obj.value) or self._has_state(obj.value)
        if isinstance(obj, cst.Name):
            # checkpoint = {"model": model, ...}; torch.save(checkpoint, path). Only the assignments that
            # reach this save: a function that saves two different dicts under one name is two saves.
            bindings = (self.model.reaching_bindings(obj, at) if at is not None else self.model.bindings_of(obj)) or ()
            literals = [b.value for b in bindings if isinstance(b.value, (cst.Dict, cst.List, cst.Tuple))]
            if literals:
                return any(self._holds_module(v, depth + 1) for v in literals)
        if isinstance(obj, cst.Dict):
            return any(isinstance(e, cst.DictElement) and self._holds_module(e.value, depth + 1)
                       for e in obj.elements)
        if isinstance(obj, (cst.List, cst.Tuple)):
            return any(isinstance(e, cst.Element) and self._holds_module(e.value, depth + 1)
                       for e in obj.elements)
        if isinstance(obj, cst.Call) and not isinstance(obj.func, cst.Attribute):
            # nn.Linear(...) built in place; dict(model=model)
            q = self.model.qualified_name(obj.func)
            if q == "builtins.dict":
                return any(self._holds_module(a.value, depth + 1) for a in obj.args)
        return self._facts.is_module_value(obj)
