from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.model import is_true
from lint_rules.analysis.summaries import Summaries
from lint_rules.analysis.names import SET_GRAD_ENABLED
from lint_rules.analysis.evaluation import FileFacts, FUNCTION_SCOPES
from lint_rules.rule import WARNING, Invalid, Rule, Valid

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

class EvaluationWithoutNoGrad(Rule):
    """
    ## What it does
    Flags an evaluation loop that calls the model with autograd on. An evaluation
    loop iterates data (a `DataLoader`, an iterable spelled like one: `val_loader`,
    `test_data`, `self.loaders["valid"]`, ..., or a `range` loop that fetches a batch: `X, Y =
    get_batch("val")`), calls a model, and neither calls `backward()`, steps or
    hands over an optimizer, nor asks for input gradients. It is quiet
    under `torch.no_grad()`, `torch.inference_mode()` (as a block or a decorator),
    `torch.set_grad_enabled(...)` (as a block, or called with `False` earlier in
    the function or module), after `stack.enter_context(torch.no_grad())` in a
    `with contextlib.ExitStack() as stack:`, under a decorator of this file that
    wraps one of those, and in a function that this file calls from inside such a
    block (up to three calls up).

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
            # the helper disables gradients itself
            import torch
            class Runner:
                @torch.no_grad()
                def eval_step(self, batch):
                    x, y = batch
                    return (self.model(x).argmax(1) == y).float().mean()
                def validate(self, val_loader):
                    self.model.eval()
                    for batch in val_loader:
                        self.eval_step(batch)
            """
        ),
        Valid(
            """
            # a helper that trains: a training loop, not an evaluation
            import torch
            class Runner:
                def train_step(self, batch):
                    x, y = batch
                    self.opt.zero_grad()
                    self.crit(self.model(x), y).backward()
                    self.opt.step()
                def fit(self, train_loader):
                    for batch in train_loader:
                        self.train_step(batch)
            """
        ),
        Valid(
            """
            # the same dicts, evaluated under no_grad
            import torch
            from torch.utils.data import DataLoader
            loaders = {"train": DataLoader(train_set), "dev": DataLoader(dev_set)}
            models = {"generator": torch.nn.Linear(8, 8)}
            models["generator"].eval()
            with torch.no_grad():
                for x, y in loaders["dev"]:
                    out = models["generator"](x)

            # a dict of loaders filled elsewhere: the training split, and the evaluation under no_grad
            class Runner:
                def fit(self):
                    for x, y in self.loaders["train"]:
                        self.opt.zero_grad()
                        self.loss_fn(self.net(x), y).backward()
                        self.opt.step()

                @torch.no_grad()
                def evaluate(self):
                    for x, y in self.loaders["valid"]:
                        print(self.net(x))
            """
        ),
        Valid(
            """
            # no-grad entered through an ExitStack
            import contextlib
            import torch
            def evaluate(model, val_loader):
                with contextlib.ExitStack() as stack:
                    stack.enter_context(torch.no_grad())
                    for x, y in val_loader:
                        acc = (model(x).argmax(1) == y).float().mean()
            """
        ),
        Valid(
            """
            # a project decorator of this file that wraps torch.inference_mode
            import functools
            import torch
            def evaluation(fn):
                @functools.wraps(fn)
                def wrapper(*args, **kwargs):
                    with torch.inference_mode():
                        return fn(*args, **kwargs)
                return wrapper
            @evaluation
            def evaluate(model, val_loader):
                for x, y in val_loader:
                    acc = (model(x).argmax(1) == y).float().mean()
            """
        ),
        Valid(
            """
            # the caller's caller disables gradients, two calls up
            import torch
            def evaluate(model, val_loader):
                for x, y in val_loader:
                    acc = (model(x).argmax(1) == y).float().mean()
            def run_eval(model, loader):
                evaluate(model, loader)
            def main(model, loader):
                with torch.no_grad():
                    run_eval(model, loader)
            """
        ),
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
            # the model call sits in a self.eval_step(batch) helper
            import torch
            class Runner:
                def eval_step(self, batch):
                    x, y = batch
                    return (self.model(x).argmax(1) == y).float().mean()
                def validate(self, val_loader):
                    self.model.eval()
                    for batch in val_loader:  # BUG
                        self.eval_step(batch)
            """
        ),
        Invalid(
            """
            # models and loaders kept in dicts
            import torch
            from torch.utils.data import DataLoader
            loaders = {"train": DataLoader(train_set), "dev": DataLoader(dev_set)}
            models = {"generator": torch.nn.Linear(8, 8)}
            models["generator"].eval()
            for x, y in loaders["dev"]:  # BUG
                out = models["generator"](x)

            class Runner:
                def evaluate(self):
                    self.net.eval()
                    for x, y in self.loaders["valid"]:  # BUG
                        print(self.net(x))
            """
        ),
        Invalid(
            """
            # the ExitStack enters no_grad only after the evaluation loop
            import contextlib
            import torch
            def evaluate(model, val_loader):
                with contextlib.ExitStack() as stack:
                    for x, y in val_loader:  # BUG
                        acc = (model(x).argmax(1) == y).float().mean()
                    stack.enter_context(torch.no_grad())
            """
        ),
        Invalid(
            """
            # a project decorator that only logs does not disable gradients
            import functools
            import torch
            def logged(fn):
                @functools.wraps(fn)
                def wrapper(*args, **kwargs):
                    print("running", fn.__name__)
                    return fn(*args, **kwargs)
                return wrapper
            @logged
            def evaluate(model, val_loader):
                for x, y in val_loader:  # BUG
                    acc = (model(x).argmax(1) == y).float().mean()
            """
        ),
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
        self._facts = model.fact(FileFacts)
        self._grad_disabled_at: list[tuple[int, cst.CSTNode | None]] | None = None

    def visit_For(self, node: cst.For) -> None:
        if any(not self._grad_managed(call, node) for call in self._facts.evaluation_calls(node)) \
                or any(not self._grad_managed_in_helper(site, inner, node)
                       for site, inner in self._facts.evaluation_helper_calls(node)):
            self.report(node)

    def _grad_managed_in_helper(self, site: cst.Call, inner: cst.Call, loop: cst.For) -> bool:
        """The model call in a helper: grad is off around the helper's call, or inside it."""
        model = self.model
        helper = model.enclosing_function(inner)
        return self._grad_managed(site, loop) or model.in_no_grad(inner) \
            or self._under_set_grad_enabled(inner) \
            or isinstance(helper, cst.FunctionDef) and model.fact(Summaries).of(helper).no_grad

    def _grad_managed(self, call: cst.Call, loop: cst.For) -> bool:
        model = self.model
        grad = model.fact(Summaries)
        if grad.in_no_grad(call) or self._under_set_grad_enabled(call):
            return True
        fn = model.enclosing_function(loop)
        if self._grad_disabled_before(loop, fn):
            return True
        if isinstance(fn, cst.FunctionDef):
            return any(grad.in_no_grad(site) or self._under_set_grad_enabled(site)
                       for site in self._facts.call_sites(fn))
        return False

    def _under_set_grad_enabled(self, node: cst.CSTNode) -> bool:
        """Inside ``with torch.set_grad_enabled(<anything>)``: the author manages grad mode."""
        for a in self.model.ancestors(node):
            if isinstance(a, FUNCTION_SCOPES):
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
