from __future__ import annotations

import libcst as cst

from lint_rules.analysis.kinds import CRITERION, MODULE, PARAMETER, kind_of
from lint_rules.rule import Rule
from lint_rules.analysis.modules import facts, self_attribute
from lint_rules.rules.examples import trn404 as examples

# Methods of nn.Module that need Module.__init__ to have run.
_REGISTER_METHODS = frozenset({"register_buffer", "register_parameter", "add_module", "register_module"})
_CRASHING_KINDS = frozenset({MODULE, CRITERION, PARAMETER})
_COMPOUND = (cst.If, cst.Else, cst.For, cst.While, cst.With, cst.Try, cst.TryStar,
             cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally)


class MissingSuperInit(Rule):
    """
    ## What it does
    Flags the first attribute assignment (`self.x = ...`, or a
    `self.register_buffer(...)`-style registration) in the `__init__` of an
    `nn.Module` subclass that never calls `super().__init__()` (or
    `nn.Module.__init__(self)`, `Base.__init__(self)`), or that calls it only
    after the assignment.

    ## Why is this bad?
    `nn.Module.__init__` creates the dictionaries that hold parameters, buffers and
    submodules. Without it, assigning a submodule or parameter raises
    `AttributeError: cannot assign module before Module.__init__() call`, and a
    module that only stored plain values fails at its first call or `.to()` with
    `'Net' object has no attribute '_parameters'`. Plain values (ints, strings)
    assigned before `super().__init__()` work and are not reported.

    ## Example
    ```python
    class Net(nn.Module):
        def __init__(self, d):
            self.fc = nn.Linear(d, d)
            super().__init__()
    ```

    Use instead:
    ```python
    class Net(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.fc = nn.Linear(d, d)
    ```

    ## Known problems
    An `__init__` that delegates initialisation to a helper method (which then
    calls `super().__init__()`) is flagged. Classes whose base is imported from
    another file count as modules only when the base's name ends in `Module` or
    the class defines `forward`. Plain values (numbers, strings, configuration)
    assigned before `super().__init__()` are reported as warnings; modules,
    parameters, registrations and a missing call altogether are errors.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html
    - https://pytorch.org/tutorials/beginner/examples_nn/polynomial_module.html
    """

    CODE = "TRN404"
    REQUIRES = ("__init__",)
    NAME = "missing-super-init"
    MESSAGE = "nn.Module subclass assigns attributes without calling super().__init__() first"
    FIX_TITLE = "Call super().__init__() as the first statement of __init__"

    VALID = examples.VALID
    INVALID = examples.INVALID

    def __init__(self, model) -> None:
        super().__init__(model)
        self._facts = facts(model)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value != "__init__" or not node.params.params:
            return
        cls = self._facts.method_of(node)
        if cls is None or not self._facts.is_module_class(cls):
            return
        this = node.params.params[0].name.value
        calls_super = any(_calls_super_init(s, this) for s in _statements(node.body))
        for stmt in _statements(node.body):
            if _calls_super_init(stmt, this):
                return
            found = _attribute_write(stmt, node)
            if found is None:
                continue
            stmt, value = found
            if not calls_super:
                self.report(stmt, "nn.Module subclass never calls super().__init__(): the module is not "
                                  "initialised, so registering submodules or calling it fails")
                return
            if value is None or kind_of(self.model, value) in _CRASHING_KINDS:
                self.report(stmt, "Submodule, parameter or buffer set before super().__init__(): "
                                  "raises AttributeError (cannot assign before Module.__init__() call)")
                return
            # A plain value before super().__init__() works (Module.__init__ only sets its own
            # internals), so it is not reported.


def _statements(node: cst.CSTNode):
    """Small statements of a function body in source order, through compound
    statements (not into nested functions or classes)."""
    if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        yield from node.body
    elif isinstance(node, cst.IndentedBlock):
        for stmt in node.body:
            yield from _statements(stmt)
    elif isinstance(node, _COMPOUND):
        for field in ("body", "handlers", "orelse", "finalbody"):
            child = getattr(node, field, None)
            for item in child if isinstance(child, (tuple, list)) else (child,):
                if item is not None:
                    yield from _statements(item)


def _calls_super_init(stmt: cst.BaseSmallStatement, this: str) -> bool:
    """``super().__init__(...)``, ``super(C, self).__init__(...)``, ``Base.__init__(self, ...)``."""
    value = getattr(stmt, "value", None)
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return False
    if value.func.attr.value != "__init__":
        return False
    receiver = value.func.value
    if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) and receiver.func.value == "super":
        return True
    first = value.args[0].value if value.args else None
    return isinstance(first, cst.Name) and first.value == this


def _attribute_write(stmt: cst.BaseSmallStatement, method: cst.FunctionDef):
    """(statement, assigned value or None for a registration) when ``stmt`` sets state on self."""
    if isinstance(stmt, cst.Assign):
        for t in stmt.targets:
            targets = t.target.elements if isinstance(t.target, (cst.Tuple, cst.List)) else [t.target]
            for target in targets:
                target = getattr(target, "value", target) if isinstance(target, cst.Element) else target
                if self_attribute(target, method) is not None:
                    return stmt, stmt.value
    elif isinstance(stmt, cst.AnnAssign) and stmt.value is not None:
        if self_attribute(stmt.target, method) is not None:
            return stmt, stmt.value
    elif isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
        func = stmt.value.func
        if isinstance(func, cst.Attribute) and func.attr.value in _REGISTER_METHODS \
                and self_attribute(func, method) is not None:
            return stmt, None
    return None
