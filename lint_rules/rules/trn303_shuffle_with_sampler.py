from __future__ import annotations

import libcst as cst

from lint_rules.analysis.model import ASSIGN, is_false, is_none, is_true, keyword_arg
from lint_rules.analysis.names import DATA_LOADERS
from lint_rules.rule import SAFE, UNSAFE, Replace, Rule, RuleFix
from lint_rules.rules.examples import trn303 as examples

# Samplers that shuffle by default: dropping shuffle=True beside them keeps shuffled batches.
_SHUFFLING_SAMPLERS = frozenset({"torch.utils.data.DistributedSampler", "torch.utils.data.RandomSampler",
                                 "torch.utils.data.sampler.RandomSampler"})


class ShuffleWithSampler(Rule):
    """
    ## What it does
    Flags `DataLoader(..., shuffle=True, sampler=...)` and
    `DataLoader(..., shuffle=True, batch_sampler=...)` with a sampler that is not
    `None`.

    ## Why is this bad?
    `DataLoader` raises `ValueError: sampler option is mutually exclusive with
    shuffle` when it is built. In a job script that line often runs only after the
    job has waited in the queue and loaded its data; caught here, it costs nothing.
    With a `DistributedSampler`, shuffling is the sampler's job (`shuffle=True` is
    its default).

    ## Example
    ```python
    loader = DataLoader(ds, batch_size=64, shuffle=True, sampler=DistributedSampler(ds))
    ```

    Use instead:
    ```python
    loader = DataLoader(ds, batch_size=64, sampler=DistributedSampler(ds, shuffle=True))
    ```

    ## Known problems
    Only a literal `shuffle=True` is flagged; `shuffle=(sampler is None)`, the usual
    correct idiom, stays quiet.

    ## Fix safety
    The fix removes `shuffle=True` (a positional `True` becomes `False`, so that the
    arguments after it keep their places); every other argument is kept. It is safe
    when the sampler is built in place, or assigned once, from `DistributedSampler`
    or `RandomSampler` without `shuffle=False`: they shuffle, so the batches stay
    shuffled, as `shuffle=True` asked. With any other sampler, or a `batch_sampler`,
    the fix is unsafe: the loader then iterates in whatever order that sampler
    produces, which may not be shuffled.

    ## References
    - https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader
    """

    CODE = "TRN303"
    REQUIRES = ("DataLoader",)
    NAME = "shuffle-with-sampler"
    MESSAGE = "DataLoader(shuffle=True) with a sampler raises ValueError at run time"
    FIX_TITLE = "Remove shuffle=True; let the sampler shuffle"

    VALID = examples.VALID
    INVALID = examples.INVALID

    def visit_Call(self, node: cst.Call) -> None:
        if self.model.qualified_name(node.func) not in DATA_LOADERS:
            return
        shuffle = _argument(node, "shuffle")
        if shuffle is None or not is_true(shuffle):
            return
        for name in ("sampler", "batch_sampler"):
            arg = _argument(node, name)
            if arg is not None and not is_none(arg):
                self.report(node, fix=self._fix(node, name, arg))
                return

    def _fix(self, call: cst.Call, name: str, sampler: cst.BaseExpression) -> RuleFix | None:
        safe = name == "sampler" and self._shuffling_sampler(sampler)
        args = list(call.args)
        i = next((i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == "shuffle"), None)
        if i is not None and len([a for a in args if a.keyword is None and not a.star]) > _POSITIONS["shuffle"]:
            return None  # shuffle given twice (a TypeError already): which one to drop is a guess
        if i is None:  # positional: keep the places of the arguments after it
            i = [j for j, a in enumerate(args) if a.keyword is None and not a.star][_POSITIONS["shuffle"]]
            args[i] = args[i].with_changes(value=cst.Name("False"))
        else:
            removed = args.pop(i)
            if i == len(args) and args:  # it was the last: the one before takes its comma (or none)
                args[-1] = args[-1].with_changes(comma=removed.comma)
        return RuleFix(SAFE if safe else UNSAFE, (Replace(call, call.with_changes(args=args)),))

    def _shuffling_sampler(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Name):
            bindings = self.model.bindings_of(expr)
            if not bindings or len(bindings) != 1 or bindings[0].kind != ASSIGN:
                return False
            expr = bindings[0].value
        if not isinstance(expr, cst.Call) or self.model.qualified_name(expr.func) not in _SHUFFLING_SAMPLERS:
            return False
        shuffle = keyword_arg(expr, "shuffle")
        return shuffle is None or not is_false(shuffle.value)


# DataLoader(dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, ...)
_POSITIONS = {"shuffle": 2, "sampler": 3, "batch_sampler": 4}


def _argument(call: cst.Call, name: str) -> cst.BaseExpression | None:
    arg = keyword_arg(call, name)
    if arg is not None:
        return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    index = _POSITIONS[name]
    return positional[index].value if index < len(positional) else None
