from __future__ import annotations

from collections import Counter

import libcst as cst

from lint_rules.analysis.devices import moved_by_trainer, pinned_to_accelerator
from lint_rules.analysis.kinds import kind_of
from lint_rules.analysis.model import ASSIGN, is_true, keyword_arg
from lint_rules.analysis.names import NON_TENSOR_TORCH, PARAMETER, TENSOR_FACTORIES
from lint_rules.rule import ERROR, WARNING, Rule
from lint_rules.analysis.modules import facts, self_attribute
from lint_rules.analysis.summaries import Summaries
from lint_rules.analysis.tensor_state import (accumulated_at_run_time, created_if_none, differentiated_against,
                                              moved_where_read, queued_at_run_time, read_at_run_time,
                                              restores_own_state, scalar_tensor, written_at_run_time)
from lint_rules.rules.examples import trn402 as examples

TENSOR = "tensor"
LEAF = "leaf"  # requires_grad=True
PINNED = "pinned"  # a tensor put on an accelerator that __init__ picks itself ("cuda", .cuda())
LAZY = "lazy"  # created at run time for an attribute that __init__ declares as None
REDRAWN = "redrawn"  # made by a method that __init__ calls and that runs again later (a noise redraw)

# Legacy typed constructors: torch.FloatTensor(3, 4) and friends.
_TYPED_CONSTRUCTORS = frozenset(
    "torch." + n for n in
    "Tensor FloatTensor DoubleTensor HalfTensor BFloat16Tensor LongTensor IntTensor ShortTensor "
    "ByteTensor CharTensor BoolTensor".split())
# torch.<lowercase> functions that do not return one tensor.
_NOT_ONE_TENSOR = frozenset(
    "torch." + n for n in
    "meshgrid split chunk unbind tensor_split broadcast_tensors sort topk max min std_mean var_mean "
    "svd qr eig lu unique_consecutive frexp aminmax histogram hub typename result_type "
    "promote_types can_cast compile load save".split())
# Tensor methods that do not return one tensor.
_NOT_TENSOR_METHODS = frozenset(
    "item tolist numpy size dim ndimension numel nelement element_size data_ptr stride storage "
    "untyped_storage is_contiguous is_floating_point is_complex get_device chunk split unbind "
    "tensor_split sort topk unique register_hook backward apply_ map_ share_memory_ "
    "to_sparse_csr".split())


class TensorAttributeNotRegistered(Rule):
    """
    ## What it does
    Flags `self.x = <tensor>` in the `__init__` of an `nn.Module` subclass (or in
    a method only `__init__` calls), where
    the tensor is created there (`torch.zeros(...)`, `torch.tensor(...)`,
    `torch.arange(n).float()`, a local variable holding one). With
    `requires_grad=True` it should be an `nn.Parameter`; otherwise a buffer
    registered with `register_buffer`. Quiet when the class registers the name
    (`register_buffer("x", ...)` before assigning, `register_parameter`) or assigns
    `self.x = nn.Parameter(...)` elsewhere. Also flags state that `__init__`
    declares as `None` and a later method creates and then writes into
    (`self.center = None`, later `self.center = batch.clone()` and
    `self.center = self.center * m + batch * (1 - m)`; a memory queue allocated
    on first use and filled with `self.keys[i:j] = k`).

    ## Why is this bad?
    A tensor stored as a plain attribute is not part of the module's state:
    - with `requires_grad=True` it is missing from `parameters()`, so the optimizer
      never updates it: the value stays at its initialisation while the loss
      plateaus, with no error;
    - otherwise `model.to("cuda")` leaves it on the CPU (`RuntimeError: Expected all
      tensors to be on the same device` at the first forward on the GPU, or a
      host-to-device copy every step when `forward` calls `.to(x.device)`), and it
      is missing from `state_dict()`, so a running statistic kept in it is lost
      when the checkpoint is reloaded.

    ## Example
    ```python
    class Attention(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.mask = torch.tril(torch.ones(n, n))
            self.temperature = torch.ones(1, requires_grad=True)
    ```

    Use instead:
    ```python
    class Attention(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.register_buffer("mask", torch.tril(torch.ones(n, n)))
            self.temperature = nn.Parameter(torch.ones(1))
    ```

    Confidence: a tensor created with `requires_grad=True` and kept as a plain
    attribute is never trained: *certain*, reported by default. A plain tensor
    attribute is *possible* (`--preview`): on code nobody here had read, none of
    the sampled ones was worth a change (a constant that never leaves the CPU, a
    cache the module refreshes), except one that `__init__` puts on an accelerator
    it picks itself (`device="cuda"`, `.cuda()`, `torch.device("cuda" if
    torch.cuda.is_available() else "cpu")`): that module cannot be moved or
    replicated, so that finding is *certain*, unless the module moves it wherever
    it reads it (`self.cache = self.cache.to(x)`, `self.w.view(1, -1).to(x.device)`):
    it then works on any device. A device handed in (`.to(device)`) keeps the
    finding possible. A tensor that a method other than `__init__` updates from its
    own value (`self.pulls[arm] += 1`, `self.total.add_(n)`, `self.avg = self.avg *
    m + x * (1 - m)`), or a memory queue it fills at a position it keeps itself
    (`self.queue[:, ptr:ptr + n] = keys` with `ptr = int(self.queue_ptr)`, unless
    every use moves it), is state the module builds while it runs, and a reloaded
    checkpoint restarts it: *certain*, unless a run-time method also starts it
    afresh (`self.trace = torch.zeros(b)` at each sequence: a scratch, possible;
    creating it under `if self.x is None:` is not starting afresh).
    A tensor attribute of a `LightningModule` (a subclass of one, here or in
    another file of the project) that a step reads is *certain* too: the
    Lightning `Trainer` moves the module to the GPU it trains on and leaves a
    plain tensor behind (`device=self.device` in `__init__` is still the CPU),
    unless it holds one number (`torch.tensor(0.5)`, which mixes with tensors on
    any device) or every use moves it. So is a tensor moved to a device handed in
    when every construction of the class in the file passes an accelerator it
    picks itself (`Sharpen(0.5, "cuda" if torch.cuda.is_available() else "cpu")`).
    A tensor made by a method that `__init__` calls and that code outside the
    class calls again (`head.resample()` between steps: noise redrawn on the
    CPU each time), read in `forward`, is *possible*.
    A tensor with `requires_grad=True` that the module differentiates against
    (`torch.autograd.grad(loss, [self.scale])`, a gradient-penalty dummy) is not
    reported.

    ## Known problems
    Only tensors created in `__init__`, or in a method of the class that only
    `__init__` calls (`self.reset_state(width)`, up to 3 calls deep, called
    nowhere else in the file), are seen: tensors passed in as arguments, built by
    free helper functions, or created lazily in `forward` without being declared
    `None` in `__init__` (or never written into afterwards) are not flagged. A
    lazily created attribute of a class whose base is defined in an installed
    package is at most possible (the base may register the name), unless the
    class overrides how its checkpoint is saved or restored (`load_state_dict`,
    `state_dict`): the state it keeps is then its own. A
    helper that `__init__` calls and code in another file calls again at run time
    is still taken for construction. An attribute that another method reassigns from values that do not
    read it (directly or through its local variables; a cache refreshed at run time, `self.x = self.build(n)`) is taken for
    a cache and not flagged, even when that method is a `reset()` of real state. A constant that is deliberately kept out of `state_dict()`
    should be a buffer with `persistent=False`; suppress the finding only if the
    attribute is never used on another device. Findings for tensors that do not
    require grad are warnings (the run fails loudly on the GPU or loses state in
    checkpoints); those that require grad are errors (never trained).

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer
    - https://pytorch.org/docs/stable/generated/torch.nn.parameter.Parameter.html
    """

    CODE = "TRN402"
    REQUIRES = ("class",)
    NAME = "tensor-attribute-not-registered"
    MESSAGE = ("Tensor assigned to a module attribute is not registered: not moved by .to(), "
               "missing from state_dict()")
    FIX_TITLE = "Use self.register_buffer(name, tensor), or nn.Parameter for a trainable tensor"
    SEVERITY = WARNING

    VALID = examples.VALID
    INVALID = examples.INVALID

    def __init__(self, model) -> None:
        super().__init__(model)
        self._facts = facts(model)
        self._candidates: list[tuple[cst.ClassDef, str, cst.CSTNode, str]] = []
        self._method_calls: Counter[str] | None = None
        self._outside_calls: Counter[str] | None = None

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._check(t.target, node.value, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._check(node.target, node.value, node)

    def _check(self, target: cst.BaseExpression, value: cst.BaseExpression, stmt: cst.CSTNode) -> None:
        if not isinstance(target, cst.Attribute) or not isinstance(target.value, cst.Name):
            return
        kind = self._tensor_kind(value, 0)
        if kind is None and not isinstance(value, cst.Call):
            return
        found = self._facts.module_method(stmt)
        if found is None:
            return
        attr = self_attribute(target, found[0])
        if attr is None:
            return
        if kind is None:
            # A tensor by what the file knows of its calls (`Variable(self._noise(n))`), made by no
            # factory seen here: judged only when a method redraws it.
            if kind_of(self.model, value) != TENSOR or self._init_time(found[0], found[1], 0) \
                    or not self._called_at_init(found[0], found[1]):
                return
            self._candidates.append((found[1], attr, stmt, REDRAWN))
            return
        if not self._init_time(found[0], found[1], 0):
            # `self.center = None` in __init__, the tensor made later: lazily created state
            if kind == TENSOR and self._declared_none(found[1], attr):
                self._candidates.append((found[1], attr, stmt, LAZY))
            elif kind == TENSOR and self._called_at_init(found[0], found[1]):
                self._candidates.append((found[1], attr, stmt, REDRAWN))
            return
        if kind == TENSOR and pinned_to_accelerator(self.model, value):
            kind = PINNED
        self._candidates.append((found[1], attr, stmt, kind))

    def finish(self) -> None:
        fx = self._facts
        lazy_seen: set[tuple[int, str]] = set()
        for cls, attr, stmt, kind in self._candidates:
            names = fx.registered_names(cls)
            # A base defined elsewhere may register the name; one that __init__ sets to None and a
            # later method fills is still worth a look, in preview.
            unknown_base = names is None and kind == LAZY
            if unknown_base:
                names = fx.registered_names(cls, own=True)
            if names is None or attr in names:
                continue
            bindings = fx.attr_bindings(cls, attr)
            if any(self._is_parameter(b.value) for b in bindings):
                continue
            construction = self._construction(cls)
            if kind == LAZY:
                # One finding per attribute; a refreshed cache (nothing written into it) is left alone.
                if (id(cls), attr) in lazy_seen:
                    continue
                lazy_seen.add((id(cls), attr))
                # State a run-time method starts afresh (`self.cumulative = torch.zeros(b, t)` at each
                # sequence) is a per-call scratch, not a statistic to keep: possible at most.
                restarted = any(_recomputed(self.model, b, attr) and not self._init_time_binding(b, cls)
                                and not self._created_once(b, attr) for b in bindings)
                # A base from elsewhere may register the name, unless the class saves and restores its
                # own state (it overrides load_state_dict): then the attribute is its own, and missing.
                if self._run_time_state(cls, attr, construction) and not restarted \
                        and (not unknown_base or restores_own_state(cls)):
                    self._report_state(stmt)
                elif written_at_run_time(self.model, cls, attr, construction):
                    self.report(stmt)
                continue
            if kind == REDRAWN:
                # Drawn at construction and again at run time (`reset_noise()`): where the module is
                # moved between the two the new tensor is made on the CPU; possible at most.
                if self._read_in_forward(cls, attr):
                    self.report(stmt)
                continue
            if any(_recomputed(self.model, b, attr) and not self._init_time_binding(b, cls) for b in bindings):
                continue
            if kind == PINNED and moved_where_read(self.model, cls, attr):
                kind = TENSOR  # every use follows the input's device: it works wherever the module goes
            if kind == TENSOR and self._run_time_state(cls, attr, construction):
                self._report_state(stmt)
            elif kind == LEAF:
                # torch.autograd.grad(loss, [self.scale]): a dummy for a gradient penalty, kept out of
                # the optimizer on purpose
                if not differentiated_against(self.model, cls, attr):
                    self.report(stmt, "Tensor with requires_grad=True assigned to a module attribute is not "
                                      "an nn.Parameter: the optimizer never sees it, so it is never trained",
                                ERROR, certain=True)
            elif kind == PINNED:
                self.report(stmt, "Tensor attribute placed on a GPU chosen at construction is not registered: "
                                  "model.to()/.cpu() and DataParallel replicas leave it where it is, and "
                                  "state_dict() misses it; register it with register_buffer", certain=True)
            elif kind == TENSOR and moved_by_trainer(self.model, cls) and not moved_where_read(self.model, cls, attr) \
                    and not scalar_tensor(self.model, getattr(stmt, "value", None)) \
                    and read_at_run_time(self.model, cls, attr, construction):
                self.report(stmt, "Tensor attribute of a LightningModule is not registered: the Trainer moves "
                                  "the module to the GPU it trains on and leaves this tensor where it was made, "
                                  "and state_dict() misses it; register it with register_buffer", certain=True)
            else:
                self.report(stmt)

    def _called_at_init(self, method: cst.FunctionDef, cls: cst.ClassDef) -> bool:
        """``method`` is called as ``self.<method>()`` by ``__init__`` (or what only it calls), and
        also from outside the class (``head.resample()`` in a training loop or a parent module):
        something else redraws it between steps. One that only the module's own methods call again
        is a state it refreshes itself when it needs to."""
        if self._outside_calls is None:  # `layer.resample()`: called on another object than self
            self._outside_calls = Counter(
                c.func.attr.value for c in self.model.nodes(cst.Call)
                if isinstance(c.func, cst.Attribute) and not (isinstance(c.func.value, cst.Name)
                                                              and c.func.value.value in ("self", "cls")))
        if not self._outside_calls[method.name.value]:
            return False
        for call in self.model.fact(Summaries).call_sites(method):
            func = call.func
            caller = self._facts.module_method(call)
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) \
                    and caller is not None and caller[1] is cls and self._init_time(caller[0], cls, 0):
                return True
        return False

    def _read_in_forward(self, cls: cst.ClassDef, attr: str) -> bool:
        """``self.<attr>`` is read in ``forward`` or a method that ``forward`` calls."""
        body = cls.body
        if not isinstance(body, cst.IndentedBlock):
            return False
        for method in body.body:
            if isinstance(method, cst.FunctionDef) and self._facts.runs_in_forward(method, cls) \
                    and read_at_run_time(self.model, cls, attr, lambda fn: fn is not method):
                return True
        return False

    def _construction(self, cls: cst.ClassDef):
        """Whether a method of ``cls`` only builds the module: ``__init__`` and what only it calls."""
        return lambda fn: self._init_time(fn, cls, 0)

    def _run_time_state(self, cls: cst.ClassDef, attr: str, construction) -> bool:
        """Updated from its own value at run time, or a queue filled at a position the module
        keeps (unless every use moves it: a queue that follows its inputs loses only checkpoints)."""
        return bool(accumulated_at_run_time(self.model, cls, attr, construction)) \
            or queued_at_run_time(self.model, cls, attr, construction) \
            and not moved_where_read(self.model, cls, attr)

    def _created_once(self, binding, attr: str) -> bool:
        """The binding runs only under ``if self.<attr> is None:``, itself or through the calls of a
        method of its own (``if self.bank is None: self._allocate(dim)``)."""
        if created_if_none(self.model, binding.node, attr):
            return True
        fn = binding.scope.node
        sites = self.model.fact(Summaries).call_sites(fn) if isinstance(fn, cst.FunctionDef) else None
        return bool(sites) and all(created_if_none(self.model, site, attr) for site in sites)

    def _report_state(self, stmt: cst.CSTNode) -> None:
        self.report(stmt, "Tensor attribute updated at run time (a running statistic, a count, a memory "
                          "queue) is not registered: state_dict() leaves it out, so a reloaded checkpoint "
                          "restarts it, and model.to() does not move it; register it with register_buffer",
                    certain=True)

    def _declared_none(self, cls: cst.ClassDef, attr: str) -> bool:
        """``self.<attr> = None`` in ``__init__`` or a method only ``__init__`` calls."""
        return any(isinstance(b.value, cst.Name) and b.value.value == "None" and self._init_time_binding(b, cls)
                   for b in self._facts.attr_bindings(cls, attr))

    def _init_time(self, method: cst.FunctionDef, cls: cst.ClassDef, depth: int) -> bool:
        """``__init__`` itself, or a method of ``cls`` that only init-time methods call, as
        ``self.<method>(...)``; no other call of that name anywhere in the file."""
        if method.name.value == "__init__":
            return True
        if depth >= 3:
            return False
        name = method.name.value
        sites = self.model.fact(Summaries).call_sites(method)
        if not sites:
            return False
        for call in sites:
            func = call.func
            if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
                    and func.value.value == "self"):
                return False
            caller = self._facts.module_method(call)
            if caller is None or caller[1] is not cls or not self._init_time(caller[0], cls, depth + 1):
                return False
        # obj.reset_state() from a training loop re-creates the state at run time: a cache
        if self._method_calls is None:
            self._method_calls = Counter(c.func.attr.value for c in self.model.nodes(cst.Call)
                                         if isinstance(c.func, cst.Attribute))
        return self._method_calls[name] == len(sites)

    def _init_time_binding(self, binding, cls: cst.ClassDef) -> bool:
        fn = binding.scope.node
        return isinstance(fn, cst.FunctionDef) and self._init_time(fn, cls, 0)

    def _is_parameter(self, value: cst.CSTNode | None) -> bool:
        return isinstance(value, cst.Call) and self.model.qualified_name(value.func) == PARAMETER

    # ------------------------------------------------------------------ tensors
    def _tensor_kind(self, expr: cst.CSTNode, depth: int) -> str | None:
        """TENSOR or LEAF when ``expr`` creates a tensor here, else None."""
        if depth > 6:
            return None
        if isinstance(expr, cst.Call):
            return self._call_kind(expr, depth)
        if isinstance(expr, cst.Subscript):
            return TENSOR if self._tensor_kind(expr.value, depth + 1) else None
        if isinstance(expr, cst.BinaryOperation):
            if self._tensor_kind(expr.left, depth + 1) or self._tensor_kind(expr.right, depth + 1):
                return TENSOR
            return None
        if isinstance(expr, cst.UnaryOperation):
            return TENSOR if self._tensor_kind(expr.expression, depth + 1) else None
        if isinstance(expr, cst.Name):
            bindings = self.model.bindings_of(expr)
            if not bindings or any(b.kind != ASSIGN for b in bindings):
                return None
            kinds = {self._tensor_kind(b.value, depth + 1) for b in bindings if b.value is not None}
            kinds.discard(None)
            if not kinds:
                return None
            return LEAF if kinds == {LEAF} else TENSOR
        return None

    def _call_kind(self, call: cst.Call, depth: int) -> str | None:
        func = call.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method[:1].islower() and method not in _NOT_TENSOR_METHODS:
                inner = self._tensor_kind(func.value, depth + 1)
                if inner is not None:
                    if method == "requires_grad_":
                        return LEAF if not call.args or is_true(call.args[0].value) else TENSOR
                    return inner if method.endswith("_") else TENSOR
        q = self.model.qualified_name(func)
        if q is None:
            return None
        if q in TENSOR_FACTORIES:
            arg = keyword_arg(call, "requires_grad")
            return LEAF if arg is not None and is_true(arg.value) else TENSOR
        if q in _TYPED_CONSTRUCTORS:
            return TENSOR
        parts = q.split(".")
        if len(parts) == 2 and parts[0] == "torch" and parts[1][:1].islower() \
                and q not in NON_TENSOR_TORCH and q not in _NOT_ONE_TENSOR \
                and not parts[1].startswith(("is_", "get_", "set_", "use_", "are_", "manual_")):
            return TENSOR
        return None


def _recomputed(model, binding, attr: str) -> bool:
    """Assigned afresh in another method from values that do not read it: a cache
    refreshed at run time (``self.rel_indices = self.get_rel_indices(n)``), not state."""
    fn = binding.scope.node
    if not isinstance(fn, cst.FunctionDef) or fn.name.value == "__init__" or binding.value is None:
        return False
    return not _reads_attribute(model, binding.value, attr, fn)


def _reads_attribute(model, expr: cst.CSTNode, attr: str, fn: cst.FunctionDef) -> bool:
    """``expr`` reads ``self.<attr>``, directly or through local variables of ``fn``
    (``ct = f * self.ct_1 + i; self.ct_1 = ct.detach()``): a recurrent state updated from
    itself. A setter's parameter named like the attribute (``self.src_lengths =
    src_lengths``) does not read it."""
    stack = [(expr, 0)]
    seen: set[int] = set()
    while stack:
        node, depth = stack.pop()
        if isinstance(node, cst.Attribute) and node.attr.value == attr \
                and isinstance(node.value, cst.Name) and node.value.value == "self":
            return True
        if isinstance(node, cst.Name) and depth < 4:
            for b in model.bindings_of(node) or ():
                if b.kind == ASSIGN and b.value is not None and b.scope.node is fn and id(b.value) not in seen:
                    seen.add(id(b.value))
                    stack.append((b.value, depth + 1))
        stack.extend((child, depth) for child in node.children)
    return False
