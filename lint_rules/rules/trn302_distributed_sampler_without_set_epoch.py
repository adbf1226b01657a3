from __future__ import annotations

import libcst as cst

from lint_rules.analysis.model import ASSIGN, dotted, is_false, keyword_arg
from lint_rules.analysis.names import DATA_LOADERS, DISTRIBUTED_SAMPLERS
from lint_rules.rule import WARNING, Invalid, Rule, Valid

_WRAPPERS = frozenset({"enumerate", "iter", "tqdm", "zip", "trange", "islice", "cycle"})


class DistributedSamplerWithoutSetEpoch(Rule):
    """
    ## What it does
    Flags a `DistributedSampler` (one that shuffles: not `shuffle=False`) whose
    `DataLoader` is used inside an epoch loop, when nothing in the file calls
    `set_epoch` on it (`sampler.set_epoch(epoch)` or
    `loader.sampler.set_epoch(epoch)`).

    ## Why is this bad?
    `DistributedSampler` seeds its shuffle with `seed + epoch`. Without
    `set_epoch(epoch)` the epoch stays 0, so every epoch visits the samples in the
    same order, on every rank. Training still runs and converges worse, and nothing
    says why.

    ## Example
    ```python
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, sampler=sampler)
    for epoch in range(epochs):
        for x, y in loader:
            ...
    ```

    Use instead:
    ```python
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            ...
    ```

    ## Known problems
    To stay quiet on code that calls `set_epoch` through a helper, any
    `set_epoch(...)` call in the file on this sampler, on `<loader>.sampler`, or on
    a receiver that cannot be told apart from it counts as setting the epoch.

    ## References
    - https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler
    """

    CODE = "TRN302"
    NAME = "distributed-sampler-without-set-epoch"
    MESSAGE = "DistributedSampler is used across epochs but set_epoch() is never called: every epoch sees the same order"
    FIX_TITLE = "Call sampler.set_epoch(epoch) at the start of every epoch"
    SEVERITY = WARNING  # wrong on some paths only: not an error (see README, Severity)
    NEEDS = (cst.Name, cst.Attribute)

    VALID = [
        Valid(
            """
            from torch.utils.data import DataLoader, DistributedSampler
            sampler = DistributedSampler(ds)
            loader = DataLoader(ds, sampler=sampler)
            for epoch in range(10):
                sampler.set_epoch(epoch)
                for x, y in loader:
                    step(x, y)
            """
        ),
        Valid(
            """
            from torch.utils.data import DataLoader
            from torch.utils.data.distributed import DistributedSampler
            loader = DataLoader(ds, sampler=DistributedSampler(ds))
            for epoch in range(10):
                loader.sampler.set_epoch(epoch)
                train_one_epoch(model, loader)
            """
        ),
        Valid(
            """
            # a sampler that does not shuffle needs no epoch
            import torch
            sampler = torch.utils.data.DistributedSampler(val_ds, shuffle=False)
            loader = torch.utils.data.DataLoader(val_ds, sampler=sampler)
            for epoch in range(10):
                for x, y in loader:
                    evaluate(x, y)
            """
        ),
        Valid(
            """
            # one pass over the data: no epoch loop
            from torch.utils.data import DataLoader, DistributedSampler
            sampler = DistributedSampler(ds)
            loader = DataLoader(ds, sampler=sampler)
            for x, y in loader:
                step(x, y)
            """
        ),
        Valid(
            """
            # set_epoch inside the helper that runs each epoch
            from torch.utils.data import DataLoader, DistributedSampler
            def train_one_epoch(loader, epoch):
                loader.sampler.set_epoch(epoch)
                for batch in loader:
                    step(batch)
            sampler = DistributedSampler(ds)
            loader = DataLoader(ds, sampler=sampler)
            for epoch in range(3):
                train_one_epoch(loader, epoch)
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            from torch.utils.data import DataLoader, DistributedSampler
            sampler = DistributedSampler(ds)  # BUG
            loader = DataLoader(ds, batch_size=32, sampler=sampler)
            for epoch in range(10):
                for x, y in loader:
                    step(x, y)
            """
        ),
        Invalid(
            """
            import torch.utils.data as tud
            loader = tud.DataLoader(ds, sampler=tud.distributed.DistributedSampler(ds, shuffle=True))  # BUG
            for epoch in range(epochs):
                train_one_epoch(model, loader, epoch)
            """
        ),
        Invalid(
            """
            from torch.utils.data import DataLoader, DistributedSampler
            def main(args):
                train_sampler = DistributedSampler(train_ds) if args.distributed else None  # BUG
                train_loader = DataLoader(train_ds, shuffle=(train_sampler is None), sampler=train_sampler)
                epoch = 0
                while epoch < args.epochs:
                    for i, batch in enumerate(train_loader):
                        step(batch)
                    epoch += 1
            """
        ),
    ]

    def finish(self) -> None:
        model = self.model
        calls = model.nodes(cst.Call)
        samplers = [c for c in calls if model.qualified_name(c.func) in DISTRIBUTED_SAMPLERS
                    and not _no_shuffle(c)]
        if not samplers:
            return
        loaders = [c for c in calls if model.qualified_name(c.func) in DATA_LOADERS]
        set_epoch_receivers = [
            c.func.value for c in calls
            if isinstance(c.func, cst.Attribute) and c.func.attr.value == "set_epoch"]
        for sampler in samplers:
            sampler_var = self._assigned_to(sampler)
            loader_vars: list[cst.CSTNode] = []
            for loader in loaders:
                arg = keyword_arg(loader, "sampler")
                if arg is None:
                    positional = [a for a in loader.args if a.keyword is None]
                    arg = positional[3] if len(positional) > 3 else None
                if arg is None:
                    continue
                if arg.value is sampler or (sampler_var is not None and self._same_var(arg.value, sampler_var)):
                    target = self._assigned_to(loader)
                    if target is not None:
                        loader_vars.append(target)
            if not loader_vars:
                continue
            if self._epoch_set(set_epoch_receivers, sampler):
                continue
            if any(self._used_across_epochs(var) for var in loader_vars):
                self.report(sampler)

    def _assigned_to(self, value: cst.CSTNode) -> cst.CSTNode | None:
        """The Name/attribute that ``value`` is assigned to (through a ternary)."""
        node = value
        for anc in self.model.ancestors(value):
            if isinstance(anc, (cst.IfExp, cst.Element, cst.Tuple)):
                node = anc
                continue
            if isinstance(anc, (cst.Assign, cst.AnnAssign)):
                targets = [t.target for t in anc.targets] if isinstance(anc, cst.Assign) else [anc.target]
                for t in targets:
                    if dotted(t) is not None and anc.value is node:
                        return t
            return None
        return None

    def _same_var(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        ta, tb = dotted(a), dotted(b)
        if ta is None or ta != tb:
            return False
        if isinstance(a, cst.Name):
            ba = self.model.bindings_of(a)
            bb = self.model.bindings_of(b)
            return bool(ba) and bool(bb) and ba[0].scope is bb[0].scope
        return True

    def _epoch_set(self, receivers: list[cst.CSTNode], sampler: cst.Call) -> bool:
        """Whether some set_epoch() call may be on this sampler.

        Only a receiver provably bound to something else (another sampler) is
        ruled out: helpers that take the loader or sampler as a parameter count.
        """
        model = self.model
        for recv in receivers:
            if isinstance(recv, cst.Attribute) and recv.attr.value == "sampler":
                return True  # <loader>.sampler.set_epoch(...)
            bindings = model.bindings_of(recv) if dotted(recv) is not None else None
            if not bindings or any(b.kind != ASSIGN or b.value is None for b in bindings):
                return True
            if any(b.value is sampler or model.is_inside(sampler, b.value) for b in bindings):
                return True
        return False

    def _used_across_epochs(self, var: cst.CSTNode) -> bool:
        model = self.model
        text = dotted(var)
        refs = [n for n in model.nodes(cst.Attribute) if dotted(n) == text] if not isinstance(var, cst.Name) \
            else [n for n in model.nodes(cst.Name) if n.value == text and n is not var]
        for ref in refs:
            if ref is var or not self._same_var(ref, var):
                continue
            loops = model.enclosing_loops(ref)
            if not loops:
                continue
            if self._is_iterated_by(ref, loops[0]):
                if len(loops) > 1:
                    return True
            elif model.in_loop_body(ref, loops[0]):
                return True
        return False

    def _is_iterated_by(self, ref: cst.CSTNode, loop: cst.CSTNode) -> bool:
        if not isinstance(loop, cst.For):
            return False
        it = loop.iter
        if it is ref:
            return True
        return self.model.is_inside(ref, it) and isinstance(it, cst.Call) and \
            isinstance(it.func, cst.Name) and it.func.value in _WRAPPERS


def _no_shuffle(call: cst.Call) -> bool:
    arg = keyword_arg(call, "shuffle")
    if arg is None:
        positional = [a for a in call.args if a.keyword is None]
        arg = positional[3] if len(positional) > 3 else None
    return arg is not None and is_false(arg.value)
