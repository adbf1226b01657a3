from __future__ import annotations

import libcst as cst

from lint_rules.analysis.model import DEF
from lint_rules.analysis.mutations import in_place_writes
from lint_rules.rule import Rule
from lint_rules.rules.examples import trn104 as examples

# Registration method -> positions of the gradient parameters of the hook.
_HOOKS: dict[str, tuple[int, ...]] = {
    "register_hook": (0,),
    "register_full_backward_hook": (1, 2),
    "register_full_backward_pre_hook": (1,),
}


class InPlaceGradientModificationInHook(Rule):
    """
    ## What it does
    Flags a backward hook registered with `register_hook`,
    `register_full_backward_hook` or `register_full_backward_pre_hook` (a function
    or a lambda) that modifies its gradient argument in place (`grad.mul_(...)`,
    `grad *= ...`, `grad[mask] = 0`, `grad_input[0].clamp_(...)`) instead of
    returning a new tensor.

    ## Why is this bad?
    The gradient a hook receives may be shared with other parts of the graph.
    PyTorch documents that hooks must not modify their argument: an in-place change
    either raises (`a view of a leaf Variable ... modified inplace`, version-counter
    errors for full backward hooks) or silently changes gradients elsewhere, and the
    change may be dropped because the hook's return value is what autograd uses.

    ## Example
    ```python
    param.register_hook(lambda g: g.clamp_(-1, 1))
    ```

    Use instead:
    ```python
    param.register_hook(lambda g: g.clamp(-1, 1))
    ```

    ## Known problems
    Hooks are followed when they are lambdas, functions defined in the same file, or
    `self.<method>`; hooks imported from elsewhere are not. Hooks registered with
    `register_post_accumulate_grad_hook` are meant to work in place and are not flagged.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.Tensor.register_hook.html
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook
    """

    CODE = "TRN104"
    REQUIRES = ("hook",)
    NAME = "in-place-gradient-modification-in-hook"
    MESSAGE = "Backward hook modifies its gradient argument in place; return a new tensor instead"
    FIX_TITLE = "Use the out-of-place op and return its result"

    VALID = examples.VALID
    INVALID = examples.INVALID

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in _HOOKS or not node.args:
            return
        positions = _HOOKS[func.attr.value]
        hook = node.args[0].value
        target = self._resolve_hook(hook)
        if target is None:
            return
        params = _positional_params(target)
        if isinstance(target, cst.FunctionDef) and _is_method(self.model, target):
            params = params[1:]  # drop self
        grad_names = {params[i] for i in positions if i < len(params)}
        if not grad_names:
            return
        body = target.body
        for mutation in in_place_writes(body, grad_names):
            self.report(mutation)

    def _resolve_hook(self, hook: cst.CSTNode) -> cst.Lambda | cst.FunctionDef | None:
        if isinstance(hook, cst.Lambda):
            return hook
        if isinstance(hook, cst.Name):
            bindings = self.model.bindings_of(hook)
            if bindings and len(bindings) == 1 and bindings[0].kind == DEF:
                return bindings[0].value
            return None
        if isinstance(hook, cst.Attribute) and isinstance(hook.value, cst.Name) and hook.value.value == "self":
            cls = self.model.scope_at(hook)
            while cls is not None and cls.kind != "class":
                cls = cls.parent
            if cls is None:
                return None
            found = cls.bindings.get(hook.attr.value)
            if found and len(found) == 1 and found[0].kind == DEF:
                return found[0].value
        return None


def _is_method(model, fn: cst.FunctionDef) -> bool:
    scope = model.scope_for_node.get(id(fn))
    return scope is not None and scope.parent is not None and scope.parent.kind == "class"


def _positional_params(fn: cst.Lambda | cst.FunctionDef) -> list[str]:
    p = fn.params
    return [param.name.value for param in (*p.posonly_params, *p.params)]
