from __future__ import annotations

from lint_rules.analysis.loaders import NEEDS as LOADER_NEEDS
from lint_rules.analysis.loaders import LoaderFacts
from lint_rules.analysis.scopes import dotted
from lint_rules.rule import WARNING, Rule
from lint_rules.rules.examples import trn302 as examples


class DistributedSamplerWithoutSetEpoch(Rule):
    """
    ## What it does
    Flags a `DistributedSampler` (one that shuffles: not `shuffle=False`) whose
    `DataLoader` is used inside an epoch loop, when nothing in the file calls
    `set_epoch` on it (`sampler.set_epoch(epoch)` or
    `loader.sampler.set_epoch(epoch)`). Names are resolved by binding: a
    `sampler.set_epoch()` in one function does not count for another function's
    `sampler`; a helper's parameter counts when a call of this file passes the
    sampler (or loader) to it. What an unknown call returns when given the loader
    (`accelerator.prepare(loader)`, `model, opt, dl = prepare(model, opt, loader)`)
    is taken to be fed by the same sampler; when the call's arguments do not line
    up with the names its result is unpacked into (`(m, opt, distr_dl, sched) =
    backend.distribute(training_data=ds if deepspeed else dl)`), the names spelled
    like a loader (`loader`, `dl`, `batches`) are. Loaders and samplers in a dict
    literal are followed by key (`loaders["train"]`), also into a class of this file
    whose `__init__` keeps them (`self.loaders = loaders`), where a method iterating
    `self.loaders["train"]` that a loop calls runs every epoch. A loader that is
    only evaluated each epoch (iterated under `torch.no_grad()`, handed to a
    helper of this file that trains nothing and turns grad off or is named for
    evaluating, or to an imported `evaluate(...)`/`validate(...)` with no
    optimizer) is left alone, and so is a sampler or loader spelled as held-out
    data (`val_sampler`, `test_loader`): the order of evaluation batches changes no
    metric. A loader built in another file of the project counts too: `loader =
    build_loader(...)` of a function that returns a `DataLoader` over a shuffling
    `DistributedSampler`, used every epoch here with no `loader.sampler.set_epoch()`,
    is reported at that call.

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
    A loader handed to a function of another file counts as evaluated when the
    function's name says so (`evaluate`, `validate`, `test`, `*_eval`): a
    training function with such a name is missed. A wrapper whose result is
    unpacked into names that do not say which one is the loader is not followed,
    nor is a class of another module. A `set_epoch()` on a subscript (`self.samplers[k].set_epoch(epoch)`)
    counts for every sampler.

    ## References
    - https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler
    """

    CODE = "TRN302"
    REQUIRES = ("ampler", "oader", "epoch")  # a loader built in another file may hold the sampler
    NAME = "distributed-sampler-without-set-epoch"
    MESSAGE = "DistributedSampler is used across epochs but set_epoch() is never called: every epoch sees the same order"
    FIX_TITLE = "Call sampler.set_epoch(epoch) at the start of every epoch"
    SEVERITY = WARNING  # wrong on some paths only: not an error (see README, Severity)
    NEEDS = LOADER_NEEDS

    VALID = examples.VALID
    INVALID = examples.INVALID

    def finish(self) -> None:
        facts = self.model.fact(LoaderFacts)
        for feed in facts.feeds:
            if feed.loaders and not facts.epoch_set(feed) and not facts.held_out(feed) \
                    and any(facts.per_epoch_use(var) is not None for var in feed.loaders):
                if feed.remote:
                    name = dotted(feed.sampler.func) or "the call"
                    self.report(feed.sampler, f"The DataLoader that {name}() returns draws from a shuffling "
                                              f"DistributedSampler; it is used across epochs here but set_epoch() "
                                              f"is never called: every epoch sees the same order")
                else:
                    self.report(feed.sampler)
