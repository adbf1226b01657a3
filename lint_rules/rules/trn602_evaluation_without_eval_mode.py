from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.rule import WARNING, Invalid, Rule, Valid
from lint_rules.analysis.evaluation import TRAIN, FileFacts
from lint_rules.analysis.modules import ModuleFacts

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel


DRAWN_BATCH_MESSAGE = ("A held-out batch is scored inside the training loop in training mode: dropout "
                       "stays on and batch norm updates its statistics with it")


class EvaluationWithoutEvalMode(Rule):
    """
    ## What it does
    Flags an evaluation loop (it iterates data, calls a model, and never calls
    `backward()` or steps an optimizer; see TRN601) when no `model.eval()` or
    `model.train(False)` has run before it. The mode counts as set by a call in
    the loop, by the last mode call before the loop in the same function (or in
    a helper of this file called there, such as `validate()` ending in
    `model.eval()`), or, for an evaluation function, by the last mode call before
    a call of that function in this file. A `model.train()` placed just before the
    loop with no training in between is taken as deliberate (re-estimating
    batch-norm statistics). Also flags an evaluation on one batch inside a
    training loop: a model called on a batch drawn with `next(iter(test_loader))`,
    `next(enumerate(test_loader))` or `next(test_iter)` (followed through
    unpacking, `Variable(x)`, `x.cuda()`, `x.transpose(...)`), with no `eval()`
    before it in the function, either under `torch.no_grad()` or from a loader
    spelled as a held-out split (`test`, `val`, `valid`, `dev`, `eval`) with no
    `backward()` after it in the iteration.

    ## Why is this bad?
    In training mode, dropout zeroes random activations and batch norm normalises
    with the statistics of the current batch, then folds the evaluation data into
    its running averages. The reported accuracy is noisy and too low, it depends
    on the batch size, and the model itself changes while being measured: a
    checkpoint chosen by this metric is not the best one.

    ## Example
    ```python
    def evaluate(model, loader):
        with torch.no_grad():
            for x, y in loader:
                correct += (model(x).argmax(1) == y).sum().item()
    ```

    Use instead:
    ```python
    def evaluate(model, loader):
        model.eval()
        with torch.no_grad():
            for x, y in loader:
                correct += (model(x).argmax(1) == y).sum().item()
    ```

    ## Known problems
    Models without dropout or batch norm give the same results in either mode:
    the rule stays quiet when every layer of the model is known and none depends
    on the mode (`nn.Linear`, an MLP class of this file). A model built in
    another module, or from a layer class it cannot see, is unknown and flagged;
    such a value counts as a model when an optimizer is built from its
    `.parameters()` in the same file. A held-out batch outside `no_grad()` is
    recognised only by the loader's spelling: a batch from `val_loader` that
    trains (a meta-learning step) is told apart only by a `backward()` after it
    in the same iteration.
    Any `.eval()` call counts, whichever module it is
    called on. An evaluation function called only from another module is judged
    by its own body. Loops are recognised as in TRN601: `while` loops and
    comprehensions are not checked.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval
    - https://pytorch.org/docs/stable/notes/autograd.html#evaluation-mode-nn-module-eval
    """

    CODE = "TRN602"
    NAME = "evaluation-without-eval-mode"
    MESSAGE = ("Evaluation loop runs the model in training mode: dropout stays on and batch norm "
               "updates its statistics with evaluation data")
    FIX_TITLE = "Call model.eval() before the evaluation loop (and model.train() after it)"
    SEVERITY = WARNING  # wrong on some paths only: not an error (see README, Severity)

    VALID = [
        Valid(
            """
            # the same helper, after model.eval()
            import torch
            class Runner:
                def eval_step(self, batch):
                    x, y = batch
                    return (self.model(x).argmax(1) == y).float().mean()
                @torch.no_grad()
                def validate(self, val_loader):
                    self.model.eval()
                    for batch in val_loader:
                        self.eval_step(batch)
            """
        ),
        Valid(
            """
            # no layer of this MLP depends on the mode: eval() would change nothing
            import torch
            import torch.nn as nn
            class MLP(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
                def forward(self, x):
                    return self.body(x)
            def evaluate(loader):
                model = MLP()
                with torch.no_grad():
                    for x, y in loader:
                        out = model(x)
            """
        ),
        Valid(
            """
            # a bare nn.Linear
            import torch
            model = torch.nn.Linear(4, 2)
            with torch.no_grad():
                for x, y in test_loader:
                    out = model(x)
            """
        ),
        Valid(
            """
            # a loader helper returns the model in eval mode
            import torch
            def load_model(path):
                m = Net()
                m.load_state_dict(torch.load(path))
                return m.cuda().eval()
            model = load_model("best.pt")
            with torch.no_grad():
                for x, y in test_loader:
                    out = model(x)
            """
        ),
        Valid(
            """
            # the mode set on the loop variable of an outer loop, through a device move
            import torch
            def check_all(models, loader):
                for model in models:
                    model.cuda().eval()
                    for x, y in loader:
                        acc = model(x)
            """
        ),
        Valid(
            """
            import torch
            def test(model, device, test_loader):
                model.eval()
                with torch.no_grad():
                    for data, target in test_loader:
                        output = model(data.to(device))
            """
        ),
        Valid(
            """
            # the caller sets eval mode before calling the evaluation function
            import torch
            @torch.no_grad()
            def run_validate(model, loader):
                for x, y in loader:
                    out = model(x)

            def validate(model, val_loader):
                model.eval()
                run_validate(model, val_loader)
            """
        ),
        Valid(
            """
            # the training loop, and a deliberate train-mode pass that re-estimates
            # batch-norm statistics
            import torch
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            model.train()
            with torch.no_grad():
                for x, _ in calib_loader:
                    model(x)
            """
        ),
        Valid(
            """
            # eval mode set by a helper of this file, and model.train(False)
            import torch
            def freeze(model):
                model.eval()
                for p in model.parameters():
                    p.requires_grad_(False)

            freeze(model)
            with torch.no_grad():
                for x in test_loader:
                    preds = model(x)

            def evaluate(net, val_data):
                net.train(False)
                with torch.no_grad():
                    for x, y in val_data:
                        out = net(x)
            """
        ),
        Valid(
            """
            # a test batch drawn inside the training loop, evaluated in eval mode
            import torch
            import torch.nn.functional as F
            def fit(net, opt, train_loader, test_loader, epochs):
                for epoch in range(epochs):
                    for i, (x, y) in enumerate(train_loader):
                        net.train()
                        opt.zero_grad()
                        F.nll_loss(net(x), y).backward()
                        opt.step()
                        if i % 10 == 0:
                            tx, ty = next(iter(test_loader))
                            net.eval()
                            with torch.no_grad():
                                print((net(tx).argmax(1) == ty).float().mean().item())
            """
        ),
        Valid(
            """
            # a second, unlabelled training batch drawn in the loop: backward() follows it
            import torch
            def fit(net, opt, train_loader, unlabelled_loader):
                for x, y in train_loader:
                    ux = next(iter(unlabelled_loader))
                    opt.zero_grad()
                    (criterion(net(x), y) + consistency(net(ux))).backward()
                    opt.step()
            """
        ),
        Valid(
            """
            # a validation batch whose loss a helper backpropagates: a training step
            import torch
            class MetaLearner:
                def outer_step(self, loss):
                    self.meta_opt.zero_grad()
                    loss.backward()
                    self.meta_opt.step()
                def fit(self, train_loader, val_loader):
                    for x, y in train_loader:
                        self.opt.zero_grad()
                        criterion(self.model(x), y).backward()
                        self.opt.step()
                        vx, vy = next(iter(val_loader))
                        self.outer_step(criterion(self.model(vx), vy))
            """
        ),
        Valid(
            """
            # a validation batch that trains (a meta-learning outer step), not a measurement
            import torch
            def fit(model, meta_opt, train_loader, val_loader):
                val_iter = iter(val_loader)
                for x, y in train_loader:
                    vx, vy = next(val_iter)
                    meta_opt.zero_grad()
                    criterion(model(vx), vy).backward()
                    meta_opt.step()
            """
        ),
        Valid(
            """
            # the fix: eval() before the held-out batch, train() at the top of the step
            import torch
            from torch.autograd import Variable
            from pointnet import PointNetCls
            classifier = PointNetCls(k=16)
            optimizer = torch.optim.SGD(classifier.parameters(), lr=0.01)
            for epoch in range(25):
                for i, (points, target) in enumerate(dataloader, 0):
                    classifier = classifier.train()
                    optimizer.zero_grad()
                    F.nll_loss(classifier(points), target).backward()
                    optimizer.step()
                    if i % 10 == 0:
                        j, data = next(enumerate(testdataloader, 0))
                        points, target = data
                        classifier = classifier.eval()
                        pred = classifier(Variable(points).cuda())
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            # a test batch scored every 10 steps, in training mode, outside no_grad
            import torch
            from torch.autograd import Variable
            from pointnet import PointNetCls
            classifier = PointNetCls(k=16)
            optimizer = torch.optim.SGD(classifier.parameters(), lr=0.01)
            for epoch in range(25):
                for i, (points, target) in enumerate(dataloader, 0):
                    optimizer.zero_grad()
                    F.nll_loss(classifier(points), target).backward()
                    optimizer.step()
                    if i % 10 == 0:
                        j, data = next(enumerate(testdataloader, 0))
                        points, target = data
                        points = Variable(points).transpose(2, 1).cuda()
                        pred = classifier(points)  # BUG
            """
        ),
        Invalid(
            """
            # a validation batch from an iterator made before the loop
            import torch
            def fit(net, opt, train_loader, val_loader, steps):
                val_batches = iter(val_loader)
                for step, (x, y) in enumerate(train_loader):
                    opt.zero_grad()
                    criterion(net(x), y).backward()
                    opt.step()
                    if step % 100 == 0:
                        vx, vy = next(val_batches)
                        log(criterion(net(vx.cuda()), vy).item())  # BUG
            """
        ),
        Invalid(
            """
            # a test batch drawn inside the training loop, evaluated in train mode
            import torch
            import torch.nn.functional as F
            def fit(net, opt, train_loader, test_loader, epochs):
                for epoch in range(epochs):
                    for i, (x, y) in enumerate(train_loader):
                        opt.zero_grad()
                        F.nll_loss(net(x), y).backward()
                        opt.step()
                        if i % 10 == 0:
                            tx, ty = next(iter(test_loader))
                            with torch.no_grad():
                                print((net(tx).argmax(1) == ty).float().mean().item())  # BUG
            """
        ),
        Invalid(
            """
            # the model call sits in a self.eval_step(batch) helper
            import torch
            class Runner:
                def eval_step(self, batch):
                    x, y = batch
                    return (self.model(x).argmax(1) == y).float().mean()
                @torch.no_grad()
                def validate(self, val_loader):
                    for batch in val_loader:  # BUG
                        self.eval_step(batch)
            """
        ),
        Invalid(
            """
            # a model of this file with dropout, evaluated in training mode
            import torch
            import torch.nn as nn
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.body = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))
                def forward(self, x):
                    return self.body(x)
            def evaluate(loader):
                model = Net()
                with torch.no_grad():
                    for x, y in loader:  # BUG
                        out = model(x)
            """
        ),
        Invalid(
            """
            import torch
            def evaluate(model, val_loader):
                correct = 0
                with torch.no_grad():
                    for x, y in val_loader:  # BUG
                        correct += (model(x).argmax(1) == y).sum().item()
                return correct
            """
        ),
        Invalid(
            """
            # model.train() at the top of the epoch, validation with no eval()
            import torch
            for epoch in range(epochs):
                model.train()
                for x, y in train_loader:
                    optimizer.zero_grad()
                    criterion(model(x), y).backward()
                    optimizer.step()
                with torch.no_grad():
                    for x, y in val_loader:  # BUG
                        val_loss += criterion(model(x), y).item()
            """
        ),
        Invalid(
            """
            # the caller trains and then evaluates without switching the mode
            import torch
            from torch.utils.data import DataLoader

            def accuracy(net, loader):
                hits = 0
                with torch.inference_mode():
                    for batch in loader:  # BUG
                        hits += (net(batch[0]).argmax(1) == batch[1]).sum().item()
                return hits

            def main(net, optimizer):
                loader = DataLoader(ds, batch_size=64)
                net.train()
                for x, y in loader:
                    optimizer.zero_grad()
                    criterion(net(x), y).backward()
                    optimizer.step()
                return accuracy(net, loader)
            """
        ),
        Invalid(
            """
            # the epoch's train() helper leaves the model in training mode
            import torch
            def train_epoch(model, loader, optimizer):
                model.train()
                for x, y in loader:
                    optimizer.zero_grad()
                    criterion(model(x), y).backward()
                    optimizer.step()

            for epoch in range(10):
                train_epoch(model, train_loader, optimizer)
                with torch.no_grad():
                    for x, y in val_loader:  # BUG
                        acc = (model(x).argmax(1) == y).float().mean()
            """
        ),
    ]

    def __init__(self, model: "FileModel") -> None:
        super().__init__(model)
        self._facts = model.fact(FileFacts)
        self._modules = model.fact(ModuleFacts)

    def visit_For(self, node: cst.For) -> None:
        calls = self._facts.evaluation_calls(node) or [
            inner for _, inner in self._facts.evaluation_helper_calls(node)]  # self.eval_step(batch)
        if calls and not self._facts.mode_set_for(node) and any(
                self._modules.mode_dependent(call.func) is not False for call in calls):
            self.report(node)

    def visit_Call(self, node: cst.Call) -> None:
        # tx, ty = next(iter(test_loader)); net(tx) -- one held-out batch inside a training loop
        facts = self._facts
        if facts.drawn_batch_scored(node) is None:
            return
        last = facts.last_mode_before(node, self.model.enclosing_function(node))
        if (last is None or last[0] == TRAIN) and self._modules.mode_dependent(node.func) is not False:
            self.report(node, DRAWN_BATCH_MESSAGE)
