from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from lint_rules.analysis.kinds import DISTRIBUTED_OPTIMIZER, LOADER, MODULE, OPTIMIZER, SCALER
from lint_rules.analysis.model import DEF, dotted, is_false, is_true, keyword_arg
from lint_rules.analysis.names import SET_GRAD_ENABLED
from lint_rules.rule import WARNING, Invalid, Rule, Valid

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

# Last-resort hint that a loop iterates data: the iterable's spelling.
_DATA_NAME = re.compile(
    r"loader|(^|_)dl($|_)|batches|dataset|(^|_)ds$|(^|_)data($|_)|samples|(^|_)(val|valid|validation|test|eval)(_|$)",
    re.I)
# Wrappers around an iterable that keep its items: enumerate(loader), tqdm(loader), ...
_ITER_WRAPPERS = frozenset({"enumerate", "zip", "iter", "islice", "tqdm", "trange"})
_FUNCTIONS = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
_STEPPERS = frozenset({OPTIMIZER, DISTRIBUTED_OPTIMIZER, SCALER})
# A batch fetched inside a counting loop: `X, Y = get_batch("val")`, `next(val_iter)`.
_FETCH_NAME = re.compile(r"(^|_)(batch|batches|sample)($|_)|^next$", re.I)
EVAL = "eval"
TRAIN = "train"


def mode_call(call: cst.Call) -> str | None:
    """``EVAL`` for ``m.eval()`` / ``m.train(False)``, ``TRAIN`` for ``m.train()`` / ``m.train(<expr>)``."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return None
    method = func.attr.value
    if method == "eval":
        return EVAL if not call.args else None
    if method == "train":
        arg = keyword_arg(call, "mode") or (call.args[0] if call.args else None)
        if arg is not None and is_false(arg.value):
            return EVAL
        return TRAIN  # train() / train(True) / train(flag): the author sets the mode
    return None


def local_function(model: "FileModel", expr: cst.CSTNode) -> cst.FunctionDef | None:
    """The function of this file that a Name or ``self.<method>`` refers to, if exactly one."""
    if isinstance(expr, cst.Name):
        bindings = model.bindings_of(expr)
    elif isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        cls = model.scope_at(expr)
        while cls is not None and cls.kind != "class":
            cls = cls.parent
        bindings = cls.bindings.get(expr.attr.value) if cls is not None else None
    else:
        return None
    if bindings and len(bindings) == 1 and bindings[0].kind == DEF:
        return bindings[0].value
    return None


class FileFacts:
    """Evaluation loops and model-mode calls of one file, computed lazily once per rule."""

    def __init__(self, model: "FileModel") -> None:
        self.model = model
        self._evaluation_calls: dict[int, list[cst.Call]] = {}
        self._fetches: dict[int, bool] = {}
        self._call_sites: dict[int, list[cst.Call]] = {}
        self._mode_calls: list[tuple[int, cst.Call, str]] | None = None

    # ------------------------------------------------------- structure
    def body_nodes(self, container: cst.CSTNode) -> Iterator[cst.CSTNode]:
        """Ordered nodes inside ``container`` that run in its own function (not nested defs)."""
        model = self.model
        start = model.order.get(id(container))
        if start is None:
            return
        ordered = model.ordered
        own = model.enclosing_function(container) if not isinstance(container, _FUNCTIONS) else container
        for i in range(start + 1, len(ordered)):
            node = ordered[i]
            if not model.is_inside(node, container):
                return
            if model.enclosing_function(node) is own:
                yield node

    def is_model_call(self, call: cst.Call) -> bool:
        func = call.func
        return isinstance(func, (cst.Name, cst.Attribute)) and self.model.kind_of(func) == MODULE

    def call_sites(self, fn: cst.FunctionDef) -> list[cst.Call]:
        """Calls of ``fn`` (by name, or ``self.<method>``) in this file."""
        key = id(fn)
        if key not in self._call_sites:
            name = fn.name.value
            self._call_sites[key] = [
                c for c in self.model.nodes(cst.Call)
                if (isinstance(c.func, cst.Name) and c.func.value == name
                    or isinstance(c.func, cst.Attribute) and c.func.attr.value == name)
                and local_function(self.model, c.func) is fn]
        return self._call_sites[key]

    # ------------------------------------------------------ eval loops
    def evaluation_calls(self, loop: cst.For) -> list[cst.Call]:
        """The model calls of ``loop`` when it is an evaluation loop, else nothing.

        An evaluation loop iterates data (a DataLoader, or an iterable spelled like
        one, or a counting loop that fetches a batch), calls the model, and neither
        calls backward(), steps an optimizer, hands an optimizer to anything, nor
        asks for input gradients. A model call belongs to the innermost such loop.
        """
        key = id(loop)
        if key in self._evaluation_calls:
            return self._evaluation_calls[key]
        calls: list[cst.Call] = []
        if self._iterates_data(loop.iter) or self._fetches_data(loop):
            for node in self.body_nodes(loop):
                if isinstance(node, cst.Call) and self.is_model_call(node) and self._innermost_data_loop(node) is loop:
                    calls.append(node)
            if calls and not self._is_evaluation(loop):
                calls = []
        self._evaluation_calls[key] = calls
        return calls

    def _innermost_data_loop(self, call: cst.Call) -> cst.For | None:
        for lp in self.model.enclosing_loops(call):
            if isinstance(lp, cst.For) and (self._iterates_data(lp.iter) or self._fetches_data(lp)):
                return lp
        return None

    def _is_evaluation(self, loop: cst.For) -> bool:
        model = self.model
        facts = model.training
        if facts.is_training_loop(loop):
            return False
        fn = model.enclosing_function(loop)
        if isinstance(fn, cst.FunctionDef) and (fn.name.value == "forward" or id(fn) in facts.step_closures()):
            return False
        for node in self.body_nodes(loop):
            if not isinstance(node, cst.Call):
                continue
            func = node.func
            if isinstance(func, cst.Attribute):
                method = func.attr.value
                if method in ("zero_grad", "requires_grad_", "backward"):
                    return False  # also distributed autograd's backward(context_id, losses)
                if method == "step" and model.kind_of(func.value) in _STEPPERS:
                    return False
            q = model.qualified_name(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
            if q is not None and q.startswith(("torch.autograd.grad", "torch.autograd.functional.")):
                return False  # gradients with respect to the inputs are the point
            for arg in node.args:
                if isinstance(arg.value, (cst.Name, cst.Attribute)) and model.kind_of(arg.value) in _STEPPERS:
                    return False  # loss_scaler(loss, optimizer): a training step we cannot see into
        return True

    def _fetches_data(self, loop: cst.For) -> bool:
        """``for k in range(eval_iters): X, Y = get_batch("val")``: the batch is fetched inside."""
        key = id(loop)
        if key not in self._fetches:
            counting = isinstance(loop.iter, cst.Call) and isinstance(loop.iter.func, cst.Name) \
                and self.model.qualified_name(loop.iter.func) == "builtins.range"
            self._fetches[key] = counting and any(
                isinstance(node, cst.Assign) and isinstance(node.value, cst.Call)
                and (text := dotted(node.value.func)) is not None and _FETCH_NAME.search(text.rsplit(".", 1)[-1])
                for node in self.body_nodes(loop))
        return self._fetches[key]

    def _iterates_data(self, expr: cst.CSTNode, depth: int = 0) -> bool:
        if depth > 3:
            return False
        if isinstance(expr, cst.Call):
            text = dotted(expr.func)
            leaf = text.rsplit(".", 1)[-1] if text else None
            if leaf in _ITER_WRAPPERS:
                return any(a.keyword is None and not a.star and self._iterates_data(a.value, depth + 1)
                           for a in expr.args)
            return bool(leaf) and _DATA_NAME.search(leaf) is not None  # self.val_dataloader()
        if isinstance(expr, (cst.Name, cst.Attribute)):
            if self.model.kind_of(expr) == LOADER:
                return True
            text = dotted(expr)
            return text is not None and _DATA_NAME.search(text.rsplit(".", 1)[-1]) is not None
        return False

    # ---------------------------------------------------- mode calls
    def mode_calls(self) -> list[tuple[int, cst.Call, str]]:
        """Every call that sets a model's mode, in document order: (index, call, EVAL or TRAIN).

        ``.eval()`` / ``.train(...)`` calls, and calls of functions of this file
        that leave the mode set (a helper ending in ``model.eval()``).
        """
        if self._mode_calls is None:
            model = self.model
            direct = [(model.order[id(c)], c, m) for c in model.nodes(cst.Call) if (m := mode_call(c)) is not None]
            summaries: dict[int, str | None] = {}
            found = []
            for call in model.nodes(cst.Call):
                mode = mode_call(call)
                if mode is None and isinstance(call.func, (cst.Name, cst.Attribute)):
                    fn = local_function(model, call.func)
                    if fn is not None:
                        if id(fn) not in summaries:
                            # the mode the helper leaves behind: its last own mode call
                            own = [m for _, c, m in direct if model.enclosing_function(c) is fn]
                            summaries[id(fn)] = own[-1] if own else None
                        mode = summaries[id(fn)]
                if mode is not None:
                    found.append((model.order[id(call)], call, mode))
            self._mode_calls = found
        return self._mode_calls

    def last_mode_before(self, node: cst.CSTNode, region: cst.CSTNode | None) -> tuple[str, cst.Call] | None:
        """The last mode call before ``node`` in the body of ``region`` (a function, or
        None for module level), in document order, with the mode it sets."""
        model = self.model
        index = model.order[id(node)]
        last = None
        for i, call, mode in self.mode_calls():
            if i >= index:
                break
            if model.enclosing_function(call) is region:
                last = (mode, call)
        return last


class EvaluationWithoutNoGrad(Rule):
    """
    ## What it does
    Flags an evaluation loop that calls the model with autograd on. An evaluation
    loop iterates data (a `DataLoader`, an iterable spelled like one: `val_loader`,
    `test_data`, ..., or a `range` loop that fetches a batch: `X, Y =
    get_batch("val")`), calls a model, and neither calls `backward()`, steps or
    hands over an optimizer, nor asks for input gradients. It is quiet
    under `torch.no_grad()`, `torch.inference_mode()` (as a block or a decorator),
    `torch.set_grad_enabled(...)` (as a block, or called with `False` earlier in
    the function or module), and in a function that this file calls from inside
    such a block.

    ## Why is this bad?
    With autograd on, every forward pass records its graph and keeps every
    intermediate activation alive for a backward that never comes. Evaluation
    runs 1.5-2x slower and needs several times the memory of the forward alone:
    a validation batch size that fits under `no_grad` runs out of memory, and
    outputs collected across the loop (`preds.append(model(x))`) keep each
    batch's whole graph alive until the loop ends.

    ## Example
    ```python
    model.eval()
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()
    ```

    Use instead:
    ```python
    model.eval()
    with torch.no_grad():
        for x, y in val_loader:
            correct += (model(x).argmax(1) == y).sum().item()
    ```

    ## Known problems
    A loop is recognised as iterating data from a `DataLoader` built in the file
    or, as a last resort, from the spelling of the iterable or of the call that
    fetches the batch; other loops (`while` loops, `for batch in queue`) are not
    checked. A model is recognised from
    its construction, a `nn.Module` annotation, or a name such as `model` or
    `net`. Comprehensions (`[model(x) for x in loader]`) are not checked. A
    function that is only called from another module under `no_grad`, or whose
    model has `requires_grad_(False)` parameters, is still flagged.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.no_grad.html
    - https://pytorch.org/docs/stable/generated/torch.autograd.grad_mode.inference_mode.html
    - https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation
    """

    CODE = "TRN601"
    NAME = "evaluation-without-no-grad"
    MESSAGE = "Evaluation loop runs the model with autograd on: it records graphs and keeps activations for nothing"
    FIX_TITLE = "Wrap the evaluation loop in torch.no_grad() or torch.inference_mode()"
    SEVERITY = WARNING

    VALID = [
        Valid(
            """
            import torch
            def evaluate(model, val_loader):
                model.eval()
                with torch.no_grad():
                    for x, y in val_loader:
                        correct = (model(x).argmax(1) == y).sum()
            """
        ),
        Valid(
            """
            # decorated evaluation function, and inference_mode
            import torch

            @torch.no_grad()
            def validate(model, loader):
                for x, y in loader:
                    out = model(x)

            @torch.inference_mode()
            def predict(model, test_loader):
                return [model(x) for x in test_loader]
            """
        ),
        Valid(
            """
            # the training loop: backward() and step()
            import torch
            for x, y in train_loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # the caller disables gradients around the evaluation function
            import torch
            def run_eval(model, loader):
                total = 0
                for x, y in loader:
                    total += (model(x).argmax(1) == y).sum().item()
                return total

            with torch.no_grad():
                acc = run_eval(model, test_loader)
            """
        ),
        Valid(
            """
            # a training step hidden in a helper that receives the optimizer, and an
            # adversarial evaluation that needs input gradients
            import torch
            for x, y in train_loader:
                loss = criterion(model(x), y)
                loss_scaler(loss, optimizer, clip_grad=1.0)
            for x, y in test_loader:
                x.requires_grad_()
                loss = criterion(model(x), y)
                grad, = torch.autograd.grad(loss, x)
            """
        ),
        Valid(
            """
            # the mode is set explicitly: once for the script, or per phase
            import torch
            torch.set_grad_enabled(False)
            for x in test_loader:
                preds = model(x)

            def run(phase, loader):
                with torch.set_grad_enabled(phase == "train"):
                    for x, y in loader:
                        out = model(x)
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            def evaluate(model, val_loader):
                model.eval()
                for x, y in val_loader:  # BUG
                    correct = (model(x).argmax(1) == y).sum()
            """
        ),
        Invalid(
            """
            import torch
            from torch.utils.data import DataLoader
            loader = DataLoader(test_set, batch_size=256)
            net = torch.nn.Sequential(torch.nn.Linear(8, 2))
            preds = []
            for i, (batch, _) in enumerate(loader):  # BUG
                preds.append(net(batch))
            """
        ),
        Invalid(
            """
            # no_grad covers the first loop only; enable_grad turns it back on
            import torch
            class Trainer:
                def validate(self):
                    self.model.eval()
                    with torch.no_grad():
                        for x, y in self.val_loader:
                            out = self.model(x)
                    with torch.enable_grad():
                        for x, y in self.test_loader:  # BUG
                            out = self.model(x)
            """
        ),
        Invalid(
            """
            # the caller calls the evaluation function outside no_grad
            import torch
            def test(model, dataset):
                losses = []
                for x, y in tqdm(dataset):  # BUG
                    losses.append(criterion(model(x), y))
                return losses

            model.eval()
            test(model, test_set)
            """
        ),
    ]

    def __init__(self, model: "FileModel") -> None:
        super().__init__(model)
        self._facts = FileFacts(model)
        self._grad_disabled_at: list[tuple[int, cst.CSTNode | None]] | None = None

    def visit_For(self, node: cst.For) -> None:
        if any(not self._grad_managed(call, node) for call in self._facts.evaluation_calls(node)):
            self.report(node)

    def _grad_managed(self, call: cst.Call, loop: cst.For) -> bool:
        model = self.model
        if model.in_no_grad(call) or self._under_set_grad_enabled(call):
            return True
        fn = model.enclosing_function(loop)
        if self._grad_disabled_before(loop, fn):
            return True
        if isinstance(fn, cst.FunctionDef):
            return any(model.in_no_grad(site) or self._under_set_grad_enabled(site)
                       for site in self._facts.call_sites(fn))
        return False

    def _under_set_grad_enabled(self, node: cst.CSTNode) -> bool:
        """Inside ``with torch.set_grad_enabled(<anything>)``: the author manages grad mode."""
        for a in self.model.ancestors(node):
            if isinstance(a, _FUNCTIONS):
                return False
            if isinstance(a, cst.With):
                for item in a.items:
                    expr = item.item
                    if isinstance(expr, cst.Call) and self.model.qualified_name(expr.func) == SET_GRAD_ENABLED:
                        return True
        return False

    def _grad_disabled_before(self, loop: cst.For, fn: cst.CSTNode | None) -> bool:
        """``torch.set_grad_enabled(False)`` as a statement earlier in the function or module."""
        if self._grad_disabled_at is None:
            found = []
            for call in self.model.nodes(cst.Call):
                if call.args and not is_true(call.args[0].value) \
                        and isinstance(self.model.parent(call), cst.Expr) \
                        and self.model.qualified_name(call.func) == SET_GRAD_ENABLED:
                    found.append((self.model.order[id(call)], self.model.enclosing_function(call)))
            self._grad_disabled_at = found
        index = self.model.order[id(loop)]
        return any(i < index and (region is None or region is fn) for i, region in self._grad_disabled_at)
