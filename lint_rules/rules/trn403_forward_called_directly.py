from __future__ import annotations

import libcst as cst

from lint_rules.analysis.autograd_flow import class_has_base, enclosing_class, is_torch_module_class
from lint_rules.analysis.context import in_test, under_scripting_check
from lint_rules.analysis.model import CLASS
from lint_rules.rule import UNSAFE, WARNING, Replace, Rule, RuleFix
from lint_rules.analysis.modules import facts
from lint_rules.rules.examples import trn403 as examples


class ForwardCalledDirectly(Rule):
    """
    ## What it does
    Flags `module.forward(x)` on an `nn.Module` instance: a model built from a
    `torch.nn` class or a module class of the same file, `self.<submodule>`,
    `self` inside a module class, a layer taken from an `nn.ModuleList`, a value
    the file calls a method only modules have on (`self.actor.parameters()`), or,
    as a last resort, a variable named like a model (`model`, `net`, `*_model`). Quiet
    for `super().forward(x)` and for `Base.forward(self, x)` called on a class, for
    `self.forward(x)` in the module's own methods (a `predict` or `training_step`:
    the hooks of DDP and FSDP sit on the wrapper that called the outer method), in
    either branch of `if torch.jit.is_scripting():` and in tests (`def test_*`,
    `unittest.TestCase` methods).

    ## Why is this bad?
    `module(x)` runs `forward` through `nn.Module.__call__`, which also runs the
    forward pre-hooks and hooks and prepares backward hooks. Calling `forward`
    directly skips them all, silently: `DistributedDataParallel` does not prepare
    its gradient reduction (replicas diverge, or `find_unused_parameters` errors),
    FSDP does not gather its sharded parameters, and `register_forward_hook`-based
    tools (feature extractors, pruning and quantization observers, profilers,
    activation checkpointing wrappers) see nothing.

    ## Example
    ```python
    features = self.backbone.forward(x)
    logits = model.forward(batch)
    ```

    Use instead:
    ```python
    features = self.backbone(x)
    logits = model(batch)
    ```

    ## Known problems
    A receiver whose construction is out of sight is recognised only by its name,
    so `self.remote.forward(x)` on an object that is not a module stays quiet, and
    `model.forward(x)` on a non-module called `model` is flagged. Hooks registered
    directly on the module itself do not run for `self.forward(x)` from its own
    methods; that is not reported. An unbound `Class.forward(obj, x)` is never flagged.

    ## Fix safety
    The fix calls the module instead (`module.forward(x)` -> `module(x)`), with the
    same arguments. It is unsafe because that is a change in behaviour, usually the
    wanted one: the module's hooks now run (DDP, FSDP, forward hooks), and so does
    any `__call__` the class overrides; a receiver recognised only by its name may
    not be a module at all.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.forward
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_forward_hook
    - https://pytorch.org/docs/stable/notes/ddp.html
    """

    CODE = "TRN403"
    REQUIRES = ("forward",)
    NAME = "forward-called-directly"
    MESSAGE = "module.forward() called directly skips the module's hooks (DDP, FSDP, forward hooks)"
    FIX_TITLE = "Call the module itself: module(x)"
    SEVERITY = WARNING  # wrong on some paths only: not an error (see README, Severity)

    VALID = examples.VALID
    INVALID = examples.INVALID

    def __init__(self, model) -> None:
        super().__init__(model)
        self._facts = facts(model)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "forward":
            return
        receiver = func.value
        if isinstance(receiver, cst.Call):
            return  # super().forward(x), factory().forward(x)
        if not isinstance(receiver, (cst.Name, cst.Attribute, cst.Subscript)):
            return
        if self.model.qualified_name(receiver) is not None:
            return  # nn.Module.forward(self, x): an unbound call on a class
        if isinstance(receiver, cst.Name):
            bindings = self.model.bindings_of(receiver)
            if bindings and any(b.kind == CLASS for b in bindings):
                return
        if isinstance(receiver, cst.Name) and receiver.value == "self" and self._in_module_class(node):
            return  # the module's own method: the wrapper's hooks ran when its caller called it
        if not self._facts.is_module_value(receiver):
            return
        if under_scripting_check(self.model, node) or in_test(self.model, node):
            return
        self.report(node, fix=RuleFix(UNSAFE, (Replace(func, receiver),)))

    def _in_module_class(self, node: cst.CSTNode) -> bool:
        cls = enclosing_class(self.model, node)
        return cls is not None and class_has_base(self.model, cls, is_torch_module_class)
