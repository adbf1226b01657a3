from __future__ import annotations

import libcst as cst

from lint_rules.analysis.containers import ContainerFacts
from lint_rules.rule import UNSAFE, Replace, Rule, RuleFix
from lint_rules.analysis.modules import facts, self_attribute
from lint_rules.analysis.spelling import spelling
from lint_rules.rules.examples import trn401 as examples

_ADDERS = frozenset({"append", "extend", "insert"})
_ONE_BY_ONE = ("Modules registered one by one with add_module are also kept in a plain list: nn.DataParallel "
               "replicas copy the registered modules but share the list, so a forward that iterates it runs "
               "the originals on every replica; hold them in an nn.ModuleList instead")


class UnregisteredSubmodules(Rule):
    """
    ## What it does
    Flags an attribute of an `nn.Module` subclass that is assigned a plain Python
    `list`, `tuple` or `dict` holding modules, `nn.Parameter`s or tensors created
    with `requires_grad=True`: a literal, a comprehension, `[...] * n`, or an empty
    container filled with `.append()`/`.extend()`/`[key] = ...` in the class or in a
    function of the same file that builds it in a local variable and returns it
    (`self.info, self.layers = create_modules(cfg)`), also
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
    is assigned to an attribute. `torch.nn` layers that hold no parameters or
    buffers and ignore train/eval mode (pooling, activations, `nn.Identity`,
    `nn.Upsample`) lose nothing in a plain list and are not flagged, nor is a
    direct `nn.Module` subclass of the same file made only of such layers and
    plain values (a moving average built of one `nn.AvgPool1d`). Modules registered one by one
    under computed names (`self.add_module(f"block_{i}", block)`) and also kept in
    a plain list that `forward` reads are registered, but `nn.DataParallel`
    replicas share that list and run the original modules: that finding is only
    *possible* (`--preview`), since it matters only under `DataParallel`. So is
    a container whose every module is also handed to a call that puts it into
    another object (`set_module_by_path(net, path, wrapper)`): it is most likely
    registered there, and the container only an index of it.

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

    VALID = examples.VALID
    INVALID = examples.INVALID

    def __init__(self, model) -> None:
        super().__init__(model)
        self._facts = facts(model)
        self._containers = model.fact(ContainerFacts)
        # (class, attribute, statement, container, assigned through a local variable):
        # judged in finish(), once every append() and later wrapping has been seen.
        self._candidates: list[tuple[cst.ClassDef, str, cst.CSTNode, cst.CSTNode, bool]] = []
        # (class id, attribute) -> values stored with self.<attribute>[key] = value
        self._subscript_items: dict[tuple[int, str], list[cst.CSTNode]] = {}
        # self.<attribute> += [...]: the list grows as with extend()
        self._augmented: list[cst.AugAssign] = []

    # ------------------------------------------------------------------ visits
    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            target = t.target
            if isinstance(target, cst.Attribute):
                self._on_attribute(target, node.value, node)
            elif isinstance(target, cst.Tuple):
                # self.info, self.layers = build(cfg): a helper of this file returns a plain list
                for i, element in enumerate(target.elements):
                    if isinstance(element.value, cst.Attribute):
                        container = self._containers.returned_container(node.value, i)
                        if container is not None:
                            self._on_container(element.value, container, True, node)
            elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Attribute):
                # self.heads[name] = nn.Linear(...)
                found = self._facts.module_method(node)
                attr = found and self_attribute(target.value, found[0])
                if attr:
                    self._subscript_items.setdefault((id(found[1]), attr), []).append(node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign):
            self._augmented.append(node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Attribute) and node.value is not None:
            self._on_attribute(node.target, node.value, node)

    def _on_attribute(self, target: cst.Attribute, value: cst.BaseExpression, stmt: cst.CSTNode) -> None:
        container, local = value, False
        if isinstance(value, cst.Name):
            container, local = self._containers.local_container(value), True
        elif isinstance(value, cst.Call) and not self._containers.is_container(value):
            container, local = self._containers.returned_container(value), True
        if container is None or not self._containers.is_container(container):
            return
        self._on_container(target, container, local, stmt)

    def _on_container(self, target: cst.Attribute, container: cst.CSTNode, local: bool, stmt: cst.CSTNode) -> None:
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
            if key in passed or local and id(container) in passed:
                continue
            items = self._containers.elements(container)
            items += self._subscript_items.get(key, [])
            items += added.get(key, [])
            if local:
                items += added.get(id(container), [])
            if self._wrapped(cls, attr):
                if self._registered_one_by_one(cls, items) and self._read_in_forward(cls, attr):
                    self.report(stmt, _ONE_BY_ONE, certain=False)
                continue
            held = self._containers
            if any(held.trainable(item) for item in items) or (items and held.declared_modules(cls, attr)):
                # Every module also handed to a call that puts it elsewhere (`set_module_by_path(net,
                # path, wrapper)`): registered there, the container an index; possible at most.
                elsewhere = all(held.handed_elsewhere(item) for item in items)
                self.report(stmt, fix=None if local else self._fix(stmt, container, items),
                            certain=False if elsewhere else None)

    def _read_in_forward(self, cls: cst.ClassDef, attr: str) -> bool:
        """``self.<attr>`` is read in ``forward`` or a method that forward calls."""
        body = cls.body
        if not isinstance(body, cst.IndentedBlock):
            return False
        for method in body.body:
            if not isinstance(method, cst.FunctionDef) or not self._facts.runs_in_forward(method, cls):
                continue
            stack: list[cst.CSTNode] = [method.body]
            while stack:
                node = stack.pop()
                if isinstance(node, cst.Attribute) and node.attr.value == attr \
                        and self._facts.is_self(node.value, method):
                    return True
                stack.extend(node.children)
        return False

    def _registered_one_by_one(self, cls: cst.ClassDef, items: list[cst.CSTNode]) -> bool:
        """Every element is a local name that the class also registers under a computed name
        (``self.add_module(f"block_{i}", block); self.blocks.append(block)``)."""
        if not items or not all(isinstance(item, cst.Name) for item in items):
            return False
        registered = set()
        for call in self._facts.self_calls(cls):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("add_module", "register_module") \
                    and len(call.args) >= 2 and isinstance(call.args[1].value, cst.Name):
                registered.add(call.args[1].value.value)
        return all(item.value in registered for item in items)

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
        for aug in self._augmented:  # self.norms += [LayerNorm(n)]
            key = self._container_key(aug.target, attrs, locals_)
            if key is not None:
                added.setdefault(key, []).extend(self._containers.elements(aug.value))
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
        # The class's own registrations: what its bases register does not matter here (a plain container
        # assigned over a registered buffer or submodule raises TypeError in __setattr__).
        names = fx.registered_names(cls, own=True)
        if names is None or attr in names:
            return True
        for b in fx.attr_bindings(cls, attr):
            if isinstance(b.value, cst.Call) and fx.is_registering_call(b.value):
                return True
        return False

