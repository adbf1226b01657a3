"""In-place aliasing inside one ``forward``: which names share storage with which, and
with the inputs, along a straight-line walk that merges the two sides of a branch.

The same walk over any function tells which of its parameters it writes in place
(:attr:`ForwardAliasing.written_params`); function summaries use it, and a walk
given ``writes_of`` applies a helper's writes at its call (``self._normalize_(x)``).

Facts, not findings: TRN109 reports the writes this walk finds.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import libcst as cst

from lint_rules.analysis.scopes import dotted, is_true, keyword_arg

if TYPE_CHECKING:
    from lint_rules.analysis.scopes import ScopeModel

# Tensor methods whose result shares storage with the receiver.
_VIEW_METHODS = frozenset(
    "view view_as reshape reshape_as flatten unflatten squeeze unsqueeze transpose permute t "
    "expand expand_as narrow select movedim moveaxis swapaxes swapdims diagonal as_strided "
    "detach contiguous unfold".split())
_SPLIT_METHODS = frozenset({"chunk", "split", "unbind", "tensor_split", "hsplit", "vsplit"})
_VIEW_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag", "data"})
# In-place methods that do not change the values other aliases see.
_NOT_VALUE_CHANGES = frozenset({"requires_grad_", "share_memory_", "retain_grad", "record_stream",
                                "detach_", "pin_memory_", "resize_", "set_"})
# Methods and attributes that are only meaningful on tensors: evidence that a name holds one.
_TENSOR_USES = frozenset(
    "shape size dim ndim ndimension device dtype view reshape permute transpose flatten unflatten "
    "squeeze unsqueeze contiguous mean sum softmax matmul float half to type_as expand chunk split "
    "narrow unbind numel masked_fill clamp sigmoid tanh relu pow norm std var max min argmax".split())
# torch.nn activation/dropout classes whose positional `inplace` argument sits at this index.
_INPLACE_POSITION = {
    **{f"torch.nn.{n}": 0 for n in "ReLU ReLU6 SELU SiLU Mish Hardswish Hardsigmoid".split()},
    **{f"torch.nn.{n}": 1 for n in "LeakyReLU ELU CELU Dropout Dropout1d Dropout2d Dropout3d "
                                   "AlphaDropout FeatureAlphaDropout".split()},
    "torch.nn.Hardtanh": 2,
    "torch.nn.Threshold": 2,
    "torch.nn.RReLU": 2,
}
_NOT_TENSOR_ANNOTATIONS = frozenset({"int", "float", "bool", "str", "bytes", "complex", "dict", "list", "tuple",
                                     "List", "Tuple", "Dict", "Sequence", "Mapping", "Iterable", "Callable",
                                     "Any"})
_BRANCHES = (cst.If, cst.IfExp)
_HOLDERS = frozenset({"append", "extend", "insert"})
_NOT_TENSOR_RESULTS = frozenset({"size", "dim", "numel", "item", "tolist", "ndimension", "nelement"})


@dataclass
class _Pending:
    """An in-place op whose other aliases have not been read yet."""

    node: cst.CSTNode
    aliases: set[str]


@dataclass
class _State:
    storage: dict[str, frozenset[int]] = field(default_factory=dict)
    tensors: set[str] = field(default_factory=set)

    def copy(self) -> "_State":
        return _State(dict(self.storage), set(self.tensors))


class ForwardAliasing:
    """Straight-line walk of one ``forward`` body: which names share storage, and with the inputs.

    After :meth:`run`: ``input_writes`` are in-place ops on the caller's input (or a view of
    it); ``aliased_writes`` are in-place ops on a tensor another live name shares storage
    with, when that name is read afterwards (autograd may need the old values).
    """

    def __init__(self, model: "ScopeModel", fn: cst.FunctionDef,
                 writes_of: Callable[[cst.Call], list[cst.CSTNode]] | None = None,
                 params_are_tensors: bool = False) -> None:
        """``writes_of(call)``: the argument expressions a call of a local helper writes in
        place. ``params_are_tensors``: an unannotated parameter counts as a tensor (a helper's
        summary says what it does to a tensor argument; the caller decides if it passes one)."""
        self.model = model
        self.input_writes: list[cst.CSTNode] = []
        self.aliased_writes: list[cst.CSTNode] = []
        self.written_params: set[str] = set()
        self.fn = fn
        self.writes_of = writes_of
        self.params_are_tensors = params_are_tensors
        self.ids = itertools.count()
        self.state = _State()
        self.inputs: set[int] = set()
        self.input_names: dict[int, str] = {}
        self.pending: list[_Pending] = []
        self._inplace_modules: dict[str, bool] = {}
        self.undecided: dict[str, frozenset[int]] = {}  # inputs whose tensor-ness their uses decide
        self.evidence: set[str] | None = None
        self._bind_inputs()

    # ------------------------------------------------------------ set-up
    def _bind_inputs(self) -> None:
        params = self.fn.params
        positional = [*params.posonly_params, *params.params]
        if positional and positional[0].name.value in ("self", "cls"):
            positional = positional[1:]
        for p in (*positional, *params.kwonly_params):
            sid = next(self.ids)
            name = p.name.value
            self.inputs.add(sid)
            self.input_names[sid] = name
            self.state.storage[name] = frozenset({sid})
            verdict = self._param_is_tensor(p)
            if verdict is None and self.params_are_tensors:
                verdict = True
            if verdict:
                self.state.tensors.add(name)
            elif verdict is None:
                self.undecided[name] = frozenset({sid})

    def _is_tensor_name(self, name: str) -> bool:
        if name in self.state.tensors:
            return True
        storage = self.undecided.get(name)
        if storage is None or self.state.storage.get(name) != storage:
            return False
        if self.evidence is None:
            self.evidence = self._tensor_evidence()
        return name in self.evidence

    def _param_is_tensor(self, p: cst.Param) -> bool | None:
        """True/False from the annotation or default; None when only its uses can tell."""
        if p.annotation is not None:
            ann = p.annotation.annotation
            q = self.model.qualified_name(ann)
            if q in ("torch.Tensor", "torch.nn.Parameter"):
                return True
            text = ann.attr.value if isinstance(ann, cst.Attribute) else getattr(ann, "value", None)
            if text == "Tensor":
                return True
            if isinstance(ann, cst.Subscript) or text in _NOT_TENSOR_ANNOTATIONS:
                return False
        if p.default is not None and isinstance(p.default, (cst.Integer, cst.Float, cst.SimpleString, cst.Name)) \
                and not (isinstance(p.default, cst.Name) and p.default.value == "None"):
            return False
        return None

    def _tensor_evidence(self) -> set[str]:
        """Parameter names used as tensors: `x.shape`, `x.view(...)`, `self.conv(x)`, `torch.f(x)`.

        Walks the body once, and only when an ``x += ...`` on an unannotated input needs it."""
        found: set[str] = set()
        stack: list[cst.CSTNode] = [self.fn.body]
        while stack:
            node = stack.pop()
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                continue
            if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) \
                    and node.attr.value in _TENSOR_USES:
                found.add(node.value.value)
            elif isinstance(node, cst.Call) and node.args:
                first = node.args[0].value
                # a helper that writes its argument says nothing about what the caller passes
                if isinstance(first, cst.Name) and self._is_tensor_function(node.func) \
                        and not (self.writes_of is not None and self.writes_of(node)):
                    found.add(first.value)
            stack.extend(node.children)
        return found

    def _is_tensor_function(self, func: cst.CSTNode) -> bool:
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            return True  # self.conv(x)
        q = self.model.qualified_name(func)
        return q is not None and q.startswith("torch.")

    # ------------------------------------------------------------ driver
    def run(self) -> None:
        self._block(self.fn.body)

    def _block(self, block: cst.CSTNode) -> None:
        body = block.body if isinstance(block, (cst.IndentedBlock, cst.SimpleStatementSuite)) else [block]
        for stmt in body:
            self._statement(stmt)

    def _statement(self, stmt: cst.CSTNode) -> None:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                self._small(small)
        elif isinstance(stmt, cst.If):
            self._eval(stmt.test)
            before = self.state.copy()
            self._block(stmt.body)
            after_body = self.state
            self.state = before.copy()
            if stmt.orelse is not None:
                if isinstance(stmt.orelse, cst.If):
                    self._statement(stmt.orelse)
                else:
                    self._block(stmt.orelse.body)
            self._merge(after_body)
        elif isinstance(stmt, (cst.For, cst.While)):
            if isinstance(stmt, cst.For):
                iter_storage, _ = self._eval(stmt.iter)
                before = self.state.copy()
                self._bind_loop_target(stmt.target, stmt.iter, iter_storage)
            else:
                self._eval(stmt.test)
                before = self.state.copy()
            self._block(stmt.body)
            if stmt.orelse is not None:
                self._block(stmt.orelse.body)
            self._merge(before)
        elif isinstance(stmt, cst.With):
            for item in stmt.items:
                self._eval(item.item)
                if item.asname is not None:
                    self._bind(item.asname.name, frozenset(), False)
            self._block(stmt.body)
        elif isinstance(stmt, (cst.Try, cst.TryStar)):
            self._block(stmt.body)
            for handler in stmt.handlers:
                self._block(handler.body)
            if stmt.orelse is not None:
                self._block(stmt.orelse.body)
            if stmt.finalbody is not None:
                self._block(stmt.finalbody.body)
        # nested defs and classes: not this forward's data flow

    def _merge(self, other: _State) -> None:
        """Keep what both paths agree on; a name bound differently becomes a new tensor."""
        merged = _State()
        for name in set(self.state.storage) | set(other.storage):
            a = self.state.storage.get(name)
            b = other.storage.get(name)
            if a is not None and a == b:
                merged.storage[name] = a
            else:
                merged.storage[name] = frozenset({next(self.ids)})
            if name in self.state.tensors and name in other.tensors:
                merged.tensors.add(name)
        self.state = merged

    def _small(self, stmt: cst.CSTNode) -> None:
        if isinstance(stmt, cst.Assign):
            self._assign([t.target for t in stmt.targets], stmt.value)
        elif isinstance(stmt, cst.AnnAssign):
            if stmt.value is not None:
                self._assign([stmt.target], stmt.value)
        elif isinstance(stmt, cst.AugAssign):
            self._aug_assign(stmt)
        elif isinstance(stmt, cst.Expr):
            self._eval(stmt.value)
        elif isinstance(stmt, cst.Return):
            if stmt.value is not None:
                self._eval(stmt.value)
        else:
            for child in stmt.children:
                if isinstance(child, cst.BaseExpression):
                    self._eval(child)

    # ------------------------------------------------------------ statements
    def _assign(self, targets: list[cst.CSTNode], value: cst.CSTNode) -> None:
        if len(targets) == 1 and isinstance(targets[0], (cst.Tuple, cst.List)) \
                and isinstance(value, (cst.Tuple, cst.List)) \
                and len(targets[0].elements) == len(value.elements):
            results = [self._eval(e.value) for e in value.elements]
            for el, (storage, tensor) in zip(targets[0].elements, results):
                self._bind(el.value, storage, tensor)
            return
        storage, tensor = self._eval(value)
        splits = isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
            and value.func.attr.value in _SPLIT_METHODS
        for target in targets:
            if isinstance(target, (cst.Tuple, cst.List)):
                for el in target.elements:
                    # `a, b = x.chunk(2)`: each part is inside x, and apart from the others
                    part = storage | {next(self.ids)} if splits and storage else frozenset()
                    self._bind(el.value, part, tensor)
            elif isinstance(target, cst.Subscript):
                self._subscript_store(target)
            else:
                self._bind(target, storage, tensor)

    def _aug_assign(self, stmt: cst.AugAssign) -> None:
        self._eval(stmt.value)
        target = stmt.target
        if isinstance(target, cst.Name):
            name = target.value
            self._read(name, target)
            if self._is_tensor_name(name):
                self._in_place(stmt, name, self.state.storage.get(name, frozenset()))
            else:
                self._bind(target, frozenset(), False)
        elif isinstance(target, cst.Subscript):
            self._subscript_store(target)
        else:
            self._eval(target)

    def _subscript_store(self, target: cst.Subscript) -> None:
        """``x[...] = v`` writes into ``x``'s storage."""
        base = target.value
        storage, tensor = self._eval(base)
        for el in target.slice:
            self._eval_slice(el.slice)
        if isinstance(base, cst.Name) and (tensor or self._is_tensor_name(base.value)):
            self._in_place(_statement_of(self.model, target), base.value, storage)

    def _bind(self, target: cst.CSTNode, storage: frozenset[int], tensor: bool) -> None:
        if isinstance(target, cst.Name):
            name = target.value
            for p in self.pending:
                p.aliases.discard(name)
            self.state.storage[name] = storage if storage else frozenset({next(self.ids)})
            if tensor:
                self.state.tensors.add(name)
            else:
                self.state.tensors.discard(name)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._bind(el.value, frozenset(), False)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, frozenset(), False)
        else:
            self._eval(target)

    def _bind_loop_target(self, target: cst.CSTNode, iterable: cst.CSTNode, storage: frozenset[int]) -> None:
        """``for f in feats`` aliases what ``feats`` holds; so does the last name of ``enumerate``."""
        model = self.model
        if isinstance(iterable, cst.Call) and isinstance(target, (cst.Tuple, cst.List)) and iterable.args:
            q = model.qualified_name(iterable.func)
            if q == "builtins.enumerate" and len(target.elements) == 2:
                inner, _ = self._storage_only(iterable.args[0].value)
                self._bind(target.elements[0].value, frozenset(), False)
                self._bind(target.elements[1].value, inner, False)
                return
            if q == "builtins.zip" and len(target.elements) == len(iterable.args):
                for el, arg in zip(target.elements, iterable.args):
                    inner, _ = self._storage_only(arg.value)
                    self._bind(el.value, inner, False)
                return
        if isinstance(target, cst.Name) and isinstance(iterable, cst.Name):
            self._bind(target, storage, False)
            return
        self._bind(target, frozenset(), False)

    def _storage_only(self, expr: cst.CSTNode) -> tuple[frozenset[int], bool]:
        if isinstance(expr, cst.Name):
            return self.state.storage.get(expr.value, frozenset()), expr.value in self.state.tensors
        return frozenset(), False

    # ------------------------------------------------------------ expressions
    def _eval(self, expr: cst.CSTNode) -> tuple[frozenset[int], bool]:
        """Evaluate ``expr`` in order: reads, in-place effects; returns (storage, is_tensor)."""
        if isinstance(expr, cst.Name):
            self._read(expr.value, expr)
            return self._storage_only(expr)
        if isinstance(expr, cst.Attribute):
            storage, tensor = self._eval(expr.value)
            if expr.attr.value in _VIEW_ATTRS:
                return storage, tensor
            return frozenset(), False
        if isinstance(expr, cst.Call):
            return self._call(expr)
        if isinstance(expr, cst.Subscript):
            storage, tensor = self._eval(expr.value)
            basic = True
            for el in expr.slice:
                basic = self._eval_slice(el.slice) and basic
            return (storage if basic else frozenset()), tensor
        if isinstance(expr, cst.BinaryOperation):
            _, lt = self._eval(expr.left)
            _, rt = self._eval(expr.right)
            return frozenset(), lt or rt
        if isinstance(expr, cst.UnaryOperation):
            _, t = self._eval(expr.expression)
            return frozenset(), t
        if isinstance(expr, cst.IfExp):
            self._eval(expr.test)
            if _mentions_inplace_option(expr.test):
                return frozenset(), False
            bs, bt = self._eval(expr.body)
            os_, ot = self._eval(expr.orelse)
            return (bs if bs == os_ else frozenset()), bt and ot
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            held: frozenset[int] = frozenset()
            for el in expr.elements:
                s, _ = self._eval(el.value)
                held |= s
            return held, False
        if isinstance(expr, cst.Comparison):
            self._eval(expr.left)
            for target in expr.comparisons:
                self._eval(target.comparator)
            return frozenset(), False
        if isinstance(expr, cst.BooleanOperation):
            self._eval(expr.left)
            self._eval(expr.right)
            return frozenset(), False
        if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Ellipsis)):
            return frozenset(), False
        if isinstance(expr, (cst.Lambda, cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp, cst.Dict)):
            self._read_all(expr)
            return frozenset(), False
        for child in expr.children:
            if isinstance(child, cst.BaseExpression):
                self._eval(child)
        return frozenset(), False

    def _eval_slice(self, sl: cst.CSTNode) -> bool:
        """Evaluate a subscript element; True for basic indexing (ints, slices, None, ...) that makes a view."""
        if isinstance(sl, cst.Slice):
            for part in (sl.lower, sl.upper, sl.step):
                if part is not None:
                    self._eval(part)
            return True
        if isinstance(sl, cst.Index):
            value = sl.value
            self._eval(value)
            if isinstance(value, (cst.Integer, cst.Ellipsis)) or (isinstance(value, cst.Name) and value.value == "None"):
                return True
            if isinstance(value, cst.UnaryOperation) and isinstance(value.expression, cst.Integer):
                return True
            return False
        return False

    def _call(self, call: cst.Call) -> tuple[frozenset[int], bool]:
        func = call.func
        if isinstance(func, cst.Attribute):
            recv = func.value
            if _rooted_at_self(recv):
                return self._module_call(call, func)
            q = self.model.qualified_name(func)
            if q is None or not q.startswith("torch."):
                return self._method_call(call, func)
            # a torch function spelled through its module: F.relu(x, inplace=True), torch.relu_(x)
        if isinstance(func, cst.Name):
            self._read(func.value, func)
        else:
            self._eval(func)
        args = [self._eval(a.value) for a in call.args]
        if isinstance(func, cst.Name) and self._helper_writes(call, args):
            return frozenset(), True
        q = self.model.qualified_name(func)
        if q is None or not q.startswith("torch."):
            return frozenset(), False
        leaf = q.rsplit(".", 1)[1]
        inplace_kw = keyword_arg(call, "inplace")
        if call.args and call.args[0].keyword is None and (
                (leaf.endswith("_") and not leaf.startswith("_") and not q.startswith("torch.nn.init."))
                or (inplace_kw is not None and is_true(inplace_kw.value))):
            return self._in_place_arg(call, call.args[0].value, args[0])
        return frozenset(), True

    def _module_call(self, call: cst.Call, func: cst.Attribute) -> tuple[frozenset[int], bool]:
        """``self.layer(x)``: a new tensor, unless the layer was built with ``inplace=True``."""
        self._eval(func.value)
        args = [self._eval(a.value) for a in call.args]
        if self._helper_writes(call, args):
            return frozenset(), True
        if call.args and call.args[0].keyword is None and self._is_inplace_module(func):
            return self._in_place_arg(call, call.args[0].value, args[0])
        return frozenset(), True

    def _helper_writes(self, call: cst.Call, args: list[tuple[frozenset[int], bool]]) -> bool:
        """Apply a local helper's in-place writes to the tensors passed to it."""
        if self.writes_of is None:
            return False
        written = self.writes_of(call)
        found = False
        for arg, evaluated in zip(call.args, args):
            if any(arg.value is w for w in written):
                value = arg.value
                if evaluated[1] or isinstance(value, cst.Name) and self._is_tensor_name(value.value):
                    self._in_place_arg(call, value, evaluated)
                    found = True
        return found

    def _method_call(self, call: cst.Call, func: cst.Attribute) -> tuple[frozenset[int], bool]:
        method = func.attr.value
        recv = func.value
        storage, tensor = self._eval(recv)
        args = [self._eval(a.value) for a in call.args]
        if method in _HOLDERS and isinstance(recv, cst.Name) and args:
            # `features.append(x)`: the list now holds x
            held = frozenset().union(*(s for s, _ in args))
            self.state.storage[recv.value] = self.state.storage.get(recv.value, frozenset()) | held
            return frozenset(), False
        if method.endswith("_") and not method.startswith("_") and method not in _NOT_VALUE_CHANGES:
            if storage and not self._guarded_by_option(call):
                self._in_place(call, recv.value if isinstance(recv, cst.Name) else None, storage)
            return storage, True
        if method in _VIEW_METHODS:
            return storage, True
        if method in _SPLIT_METHODS:
            return storage, False
        return frozenset(), tensor and method not in _NOT_TENSOR_RESULTS

    def _in_place_arg(self, call: cst.Call, arg: cst.CSTNode, evaluated: tuple[frozenset[int], bool]):
        storage, _ = evaluated
        if storage and not self._guarded_by_option(call):
            self._in_place(call, arg.value if isinstance(arg, cst.Name) else None, storage)
        return storage, True

    def _is_inplace_module(self, func: cst.Attribute) -> bool:
        """``self.act`` bound (everywhere) to a module built with ``inplace=True``."""
        key = dotted(func)
        if key is None:
            return False
        cached = self._inplace_modules.get(key)
        if cached is not None:
            return cached
        result = False
        bindings = self.model.bindings_of(func)
        if bindings:
            result = all(_builds_inplace_module(self.model, b.value) for b in bindings)
        self._inplace_modules[key] = result
        return result

    def _guarded_by_option(self, node: cst.CSTNode) -> bool:
        for anc in self.model.ancestors(node):
            if anc is self.fn:
                return False
            if isinstance(anc, _BRANCHES) and _mentions_inplace_option(anc.test) and not self.model.is_inside(node, anc.test):
                return True
        return False

    # ------------------------------------------------------------ effects
    def _read(self, name: str, node: cst.CSTNode) -> None:
        if not self.pending:
            return
        keep = []
        for p in self.pending:
            if name in p.aliases and not self.model.mutually_exclusive(p.node, node):
                self.aliased_writes.append(p.node)
            else:
                keep.append(p)
        self.pending = keep

    def _read_all(self, expr: cst.CSTNode) -> None:
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Name):
                self._read(node.value, node)
            elif isinstance(node, cst.Attribute):
                stack.append(node.value)
            elif isinstance(node, cst.Arg):
                stack.append(node.value)
            else:
                stack.extend(node.children)

    def _in_place(self, node: cst.CSTNode, target: str | None, storage: frozenset[int]) -> None:
        if not storage:
            return
        if storage & self.inputs:
            self.input_writes.append(node)
            self.written_params.update(self.input_names[i] for i in storage & self.inputs)
            return
        aliases = {name for name, s in self.state.storage.items() if name != target and _overlap(s, storage)}
        if aliases:
            self.pending.append(_Pending(node, aliases))


def _overlap(a: frozenset[int], b: frozenset[int]) -> bool:
    """Two values share memory: one is a view of (or is held by) the other.

    A storage set names the buffers a value lies in; a part of ``x`` (``x.chunk(2)[0]``)
    has ``x``'s ids plus its own, so two parts of one tensor do not overlap each other."""
    return bool(a) and bool(b) and (a <= b or b <= a)


def _statement_of(model, node: cst.CSTNode) -> cst.CSTNode:
    for anc in model.ancestors(node):
        if isinstance(anc, cst.BaseSmallStatement):
            return anc
    return node


def _rooted_at_self(expr: cst.CSTNode) -> bool:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return isinstance(expr, cst.Name) and expr.value == "self"


def _mentions_inplace_option(test: cst.CSTNode) -> bool:
    stack = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and "inplace" in node.value.lower():
            return True
        if isinstance(node, cst.Attribute):
            if "inplace" in node.attr.value.lower():
                return True
            stack.append(node.value)
            continue
        stack.extend(node.children)
    return False


def _builds_inplace_module(model, value: cst.CSTNode | None) -> bool:
    """An element-wise module that overwrites its input: ``nn.ReLU(inplace=True)``, ``nn.ReLU(True)``,
    ``act_layer(inplace=True)``. A layer with other arguments and ``inplace=True``
    (``norm_act_layer(c, inplace=True)``) applies it to an internal tensor, not its input."""
    if not isinstance(value, cst.Call):
        return False
    q = model.qualified_name(value.func)
    positional = [a for a in value.args if a.keyword is None and not a.star]
    kw = keyword_arg(value, "inplace")
    index = _INPLACE_POSITION.get(q or "")
    if index is not None:
        if kw is not None:
            return is_true(kw.value)
        return index < len(positional) and is_true(positional[index].value)
    if q is not None and q.startswith("torch."):
        return False
    # An unknown activation factory: called with nothing but `inplace=True`.
    return kw is not None and is_true(kw.value) and not positional \
        and all(a.keyword is not None and a.keyword.value == "inplace" for a in value.args)
