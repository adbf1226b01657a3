from __future__ import annotations

import libcst as cst

from lint_rules.analysis.containers import ContainerFacts
from lint_rules.rule import UNSAFE, Invalid, Replace, Rule, RuleFix, Valid
from lint_rules.analysis.modules import facts, self_attribute
from lint_rules.analysis.spelling import spelling

_ADDERS = frozenset({"append", "extend", "insert"})


class UnregisteredSubmodules(Rule):
    """
    ## What it does
    Flags an attribute of an `nn.Module` subclass that is assigned a plain Python
    `list`, `tuple` or `dict` holding modules, `nn.Parameter`s or tensors created
    with `requires_grad=True`: a literal, a comprehension, `[...] * n`, or an empty
    container filled with `.append()`/`.extend()`/`[key] = ...` in the class, also
    with elements of unknown type when the class annotates the attribute as a
    container of modules (`self.branches: Optional[List[nn.Module]]`).
    Quiet when the container is later wrapped (`self.layers =
    nn.ModuleList(self.layers)`, `nn.Sequential(*self.layers)`) or registered with
    `add_module`/`register_parameter`.

    ## Why is this bad?
    `nn.Module` registers only modules, parameters and buffers assigned directly,
    or held in `nn.ModuleList`/`nn.ModuleDict`/`nn.ParameterList`/
    `nn.ParameterDict`. Modules in a plain list are invisible to `parameters()`, so
    the optimizer never updates them: those layers keep their random
    initialisation and the model trains only partly, with no error. They are also
    not moved by `.to(device)` (a device-mismatch error on the GPU), not switched by
    `.train()`/`.eval()`, and missing from `state_dict()`, so checkpoints silently
    lose them.

    ## Example
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Linear(64, 64) for _ in range(4)]
    ```

    Use instead:
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(nn.Linear(64, 64) for _ in range(4))
    ```

    ## Known problems
    An element is recognised as a module when it is built in place from a
    `torch.nn` class, a module class defined in the same file or in another file
    of the project (followed through its imports), or a local variable assigned
    one; modules built from classes of installed packages, or passed in as
    arguments, are not recognised. A list kept unregistered on
    purpose (a reference to a parent or teacher model that must not be trained or
    saved) is flagged; suppress it with `# noqa: TRN401`. Containers handed to your
    own helper that registers them are recognised only when the helper's result
    is assigned to an attribute.

    ## Fix safety
    When the attribute is assigned a list or tuple literal or a list comprehension
    (or an empty list filled with `append`/`extend`) whose elements are all modules,
    the fix wraps it: `nn.ModuleList([...])`; all `nn.Parameter`s: `nn.ParameterList`;
    a dict literal with string keys: `nn.ModuleDict` / `nn.ParameterDict`. The
    elements and their order are kept. It is unsafe because registering changes what
    the model is: the optimizer built from `parameters()` now trains those layers,
    `.to()` moves them, `state_dict()` gains keys (old checkpoints then fail to load
    strictly), and code that relies on list-only behaviour (`+` with a list,
    `isinstance(x, list)`) may break. There is no fix for containers mixing modules
    with other values, for tensors with `requires_grad=True` (a `ParameterList` would
    turn them into parameters), for `[module] * n` (the same module n times), for a
    container built in a local variable, or where no import names `torch.nn`.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.ModuleList.html
    - https://pytorch.org/docs/stable/generated/torch.nn.ModuleDict.html
    - https://pytorch.org/docs/stable/generated/torch.nn.ParameterList.html
    """

    CODE = "TRN401"
    REQUIRES = ("class",)
    NAME = "unregistered-submodules"
    MESSAGE = ("Modules or parameters held in a plain list/dict/tuple attribute are not registered: "
               "never trained, never moved by .to(), missing from state_dict()")
    FIX_TITLE = "Hold them in nn.ModuleList / nn.ModuleDict / nn.ParameterList"

    VALID = [
        Valid(
            """
            import torch.nn as nn
            class Net(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(n)])
                    self.heads = nn.ModuleDict({"a": nn.Linear(8, 2), "b": nn.Linear(8, 3)})
                    self.sizes = [8, 16, 32]
                    self.names = ("a", "b")
                    self.anchors = [torch.zeros(4), torch.ones(4)]
            """
        ),
        Valid(
            """
            # built in a list, then wrapped or unpacked into a registering container
            import torch.nn as nn
            class Net(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.blocks = []
                    for _ in range(n):
                        self.blocks.append(nn.Linear(8, 8))
                    self.blocks = nn.ModuleList(self.blocks)
                    self.stages = [nn.Conv2d(3, 3, 3), nn.ReLU()]
                    self.body = nn.Sequential(*self.stages)
            """
        ),
        Valid(
            """
            # a list of registered attributes, runtime caches, and a non-module class
            import torch.nn as nn
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.enc = nn.Linear(8, 8)
                    self.dec = nn.Linear(8, 8)
                    self.parts = [self.enc, self.dec]
                    self.features = []

                def forward(self, x):
                    self.features.append(self.enc(x))
                    return self.dec(self.features[-1])

            class Builder:
                def __init__(self):
                    self.layers = [nn.Linear(8, 8) for _ in range(3)]
            """
        ),
        Valid(
            """
            # registered one by one with add_module
            import torch.nn as nn
            class Net(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.layers = [nn.Linear(8, 8) for _ in range(n)]
                    for i, layer in enumerate(self.layers):
                        self.add_module(f"layer{i}", layer)
            """
        ),
        Valid(
            """
            # annotated containers: registered, of names, or of modules never added
            from typing import List, Optional
            import torch.nn as nn
            class Parallel(nn.Module):
                def __init__(self, layers, names):
                    super().__init__()
                    self.branches: Optional[nn.ModuleList] = None
                    if layers:
                        self.branches = nn.ModuleList()
                        for layer in layers:
                            self.branches.append(layer)
                    self.names: List[str] = []
                    for n in names:
                        self.names.append(n)
                    self.hooks: List[nn.Module] = []
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            # modules passed in, kept in a list the class annotates as holding modules
            from typing import List, Optional
            import torch
            import torch.nn as nn
            class Parallel(nn.Module):
                def __init__(self, layers):
                    super().__init__()
                    self.branches: Optional[List[nn.Module]] = None
                    if layers:
                        self.branches = []  # BUG
                        for layer in layers:
                            self.branches.append(layer)

                def forward(self, x):
                    return torch.cat([b(x) for b in self.branches], dim=-1)
            """
        ),
        Invalid(
            """
            import torch.nn as nn
            class Net(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.layers = [nn.Linear(8, 8) for _ in range(n)]  # BUG
                    self.heads = {"a": nn.Linear(8, 2), "b": nn.Linear(8, 3)}  # BUG

                def forward(self, x):
                    for layer in self.layers:
                        x = layer(x)
                    return self.heads["a"](x)
            """,
            fixed="""
            import torch.nn as nn
            class Net(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(n)])  # BUG
                    self.heads = nn.ModuleDict({"a": nn.Linear(8, 2), "b": nn.Linear(8, 3)})  # BUG

                def forward(self, x):
                    for layer in self.layers:
                        x = layer(x)
                    return self.heads["a"](x)
            """,
            applicability=UNSAFE,
        ),
        Invalid(
            """
            from torch import nn
            class Block(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)

            class Net(Block):
                def __init__(self, n):
                    super().__init__()
                    self.blocks = []  # BUG
                    for _ in range(n):
                        self.blocks.append(Block())
                    self.pair = (nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))  # BUG
            """,
            fixed="""
            from torch import nn
            class Block(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)

            class Net(Block):
                def __init__(self, n):
                    super().__init__()
                    self.blocks = nn.ModuleList([])  # BUG
                    for _ in range(n):
                        self.blocks.append(Block())
                    self.pair = nn.ModuleList((nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)))  # BUG
            """,
            applicability=UNSAFE,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Mixture(nn.Module):
                def __init__(self, k):
                    super().__init__()
                    self.scales = [nn.Parameter(torch.ones(8)) for _ in range(k)]  # BUG
                    offsets = []
                    for _ in range(k):
                        offsets.append(torch.zeros(8, requires_grad=True))
                    self.offsets = offsets  # BUG
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Mixture(nn.Module):
                def __init__(self, k):
                    super().__init__()
                    self.scales = nn.ParameterList([nn.Parameter(torch.ones(8)) for _ in range(k)])  # BUG
                    offsets = []
                    for _ in range(k):
                        offsets.append(torch.zeros(8, requires_grad=True))
                    self.offsets = offsets  # BUG
            """,
            applicability=UNSAFE,
        ),
        Invalid(
            """
            # no fix: a tensor that is not a parameter, a repeated module, no torch.nn import
            import torch
            from torch.nn import Linear
            class Net(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.mixed = [Linear(2, 2), torch.zeros(2, requires_grad=True)]  # BUG
                    self.same = [Linear(2, 2)] * 3  # BUG
            from torch.nn import Module
            class Other(Module):
                def __init__(self):
                    super().__init__()
                    self.layers = [Linear(2, 2)]  # BUG
            """,
            fixed="""
            # no fix: a tensor that is not a parameter, a repeated module, no torch.nn import
            import torch
            from torch.nn import Linear
            class Net(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.mixed = [Linear(2, 2), torch.zeros(2, requires_grad=True)]  # BUG
                    self.same = [Linear(2, 2)] * 3  # BUG
            from torch.nn import Module
            class Other(Module):
                def __init__(self):
                    super().__init__()
                    self.layers = torch.nn.ModuleList([Linear(2, 2)])  # BUG
            """,
            applicability=UNSAFE,
        ),
    ]

    def __init__(self, model) -> None:
        super().__init__(model)
        self._facts = facts(model)
        self._containers = model.fact(ContainerFacts)
        # (class, attribute, statement, container, assigned through a local variable):
        # judged in finish(), once every append() and later wrapping has been seen.
        self._candidates: list[tuple[cst.ClassDef, str, cst.CSTNode, cst.CSTNode, bool]] = []
        # (class id, attribute) -> values stored with self.<attribute>[key] = value
        self._subscript_items: dict[tuple[int, str], list[cst.CSTNode]] = {}

    # ------------------------------------------------------------------ visits
    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            target = t.target
            if isinstance(target, cst.Attribute):
                self._on_attribute(target, node.value, node)
            elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Attribute):
                # self.heads[name] = nn.Linear(...)
                found = self._facts.module_method(node)
                attr = found and self_attribute(target.value, found[0])
                if attr:
                    self._subscript_items.setdefault((id(found[1]), attr), []).append(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Attribute) and node.value is not None:
            self._on_attribute(node.target, node.value, node)

    def _on_attribute(self, target: cst.Attribute, value: cst.BaseExpression, stmt: cst.CSTNode) -> None:
        container, local = value, False
        if isinstance(value, cst.Name):
            container, local = self._containers.local_container(value), True
        if container is None or not self._containers.is_container(container):
            return
        found = self._facts.module_method(stmt)
        if found is None:
            return
        attr = self_attribute(target, found[0])
        if attr is not None:
            self._candidates.append((found[1], attr, stmt, container, local))

    # ------------------------------------------------------------------ finish
    def finish(self) -> None:
        if not self._candidates:
            return
        added, passed = self._scan_calls()
        for cls, attr, stmt, container, local in self._candidates:
            key = (id(cls), attr)
            if key in passed or self._wrapped(cls, attr):
                continue
            if local and id(container) in passed:
                continue
            items = self._containers.elements(container)
            items += self._subscript_items.get(key, [])
            items += added.get(key, [])
            if local:
                items += added.get(id(container), [])
            held = self._containers
            if any(held.trainable(item) for item in items) or (items and held.declared_modules(cls, attr)):
                self.report(stmt, fix=None if local else self._fix(stmt, container, items))

    def _fix(self, stmt: cst.CSTNode, container: cst.CSTNode, items: list[cst.CSTNode]) -> RuleFix | None:
        """Wrap the container in the registering class that matches all of its elements."""
        kinds = {self._containers.element_kind(item) for item in items}
        if len(kinds) != 1 or None in kinds or getattr(stmt, "value", None) is not container:
            return None
        if isinstance(container, cst.Dict):
            if len(items) != len(container.elements) or not all(
                    isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) for e in container.elements):
                return None  # keys that are not strings, or items stored later under unknown keys
            cls = "ModuleDict" if kinds == {"module"} else "ParameterDict"
        elif isinstance(container, (cst.List, cst.Tuple, cst.ListComp)):
            cls = "ModuleList" if kinds == {"module"} else "ParameterList"
        else:
            return None
        nn = spelling(self.model, stmt, "torch.nn")
        if nn is None:
            return None
        # The container becomes the one argument: a tuple needs its own parentheses there.
        parens = ([cst.LeftParen()], [cst.RightParen()]) if isinstance(container, cst.Tuple) else ([], [])
        inner = container.with_changes(lpar=parens[0], rpar=parens[1])
        wrapped = cst.Call(func=cst.parse_expression(f"{nn}.{cls}"), args=[cst.Arg(inner)])
        return RuleFix(UNSAFE, (Replace(container, wrapped),))

    def _scan_calls(self) -> tuple[dict, set]:
        """Elements added with ``append``/``extend``/``insert``, and containers handed to a
        call that registers them (``nn.Sequential(*self.layers)``)."""
        attrs = {attr for _, attr, _, _, _ in self._candidates}
        locals_ = {id(c): c for _, _, _, c, local in self._candidates if local}
        added: dict = {}
        passed: set = set()
        fx = self._facts
        for call in self.model.nodes(cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in _ADDERS and call.args:
                key = self._container_key(func.value, attrs, locals_)
                if key is not None:
                    arg = call.args[-1].value
                    extra = self._containers.elements(arg) if func.attr.value == "extend" else [arg]
                    added.setdefault(key, []).extend(extra)
                continue
            for arg in call.args:
                key = self._container_key(arg.value, attrs, locals_)
                if key is not None and (fx.is_registering_call(call) or self._assigned_to_attribute(call)):
                    passed.add(key)
        return added, passed

    def _container_key(self, expr: cst.CSTNode, attrs: set[str], locals_: dict):
        if isinstance(expr, cst.Attribute) and expr.attr.value in attrs:
            found = self._facts.enclosing_method(expr)
            if found is not None:
                attr = self_attribute(expr, found[0])
                if attr is not None:
                    return (id(found[1]), attr)
        elif isinstance(expr, cst.Name) and locals_:
            container = self._containers.local_container(expr)
            if container is not None and id(container) in locals_:
                return id(container)
        return None

    def _assigned_to_attribute(self, call: cst.Call) -> bool:
        parent = self.model.parent(call)
        if isinstance(parent, cst.Assign):
            return any(isinstance(t.target, cst.Attribute) for t in parent.targets)
        return False

    def _wrapped(self, cls: cst.ClassDef, attr: str) -> bool:
        """Another assignment makes ``self.<attr>`` a module, or the class registers by name."""
        fx = self._facts
        names = fx.registered_names(cls)
        if names is None or attr in names:
            return True
        for b in fx.attr_bindings(cls, attr):
            if isinstance(b.value, cst.Call) and fx.is_registering_call(b.value):
                return True
        return False

