"""Seeded mutations of Python source, built on LibCST.

The same (source, seed, donors) always gives the same mutant, whatever the hash seed: nodes
are chosen from lists in document order by a ``random.Random`` seeded with an integer.
Each operation keeps the module parseable by LibCST (CPython may still reject it: a
``return`` moved out of its function, a ``break`` out of its loop). Two text-level steps may
follow: ``delete-line`` deletes one physical line (a syntax error, at times, on purpose) and
``line-endings`` turns every line end into ``\r\n`` or ``\r``.
"""

from __future__ import annotations

import dataclasses
import functools
import random
import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

import libcst as cst

# Names a rename draws from: the ones the rules look for, so that renaming turns a
# harmless name into one a rule resolves (and the reverse).
VOCABULARY = (
    "torch", "nn", "F", "model", "module", "optimizer", "opt", "loss", "criterion", "scaler", "scheduler",
    "loader", "sampler", "batch", "x", "y", "output", "logits", "self", "backward", "step", "zero_grad",
    "train", "eval", "forward", "item", "detach", "cuda", "to", "cpu", "no_grad", "DataParallel",
    "DistributedDataParallel", "load", "save", "state_dict", "parameters", "grad", "data", "softmax",
    "log_softmax", "sigmoid", "cross_entropy", "nll_loss", "epoch", "rank", "Module", "ModuleList",
    "Parameter", "__init__", "super", "retain_graph", "requires_grad", "empty_cache", "amp", "autocast",
    "GradScaler", "DataLoader", "set_epoch", "dropout", "training",
)

_CONDITIONS = ("epoch % 2 == 0", "rank == 0", "torch.cuda.is_available()", "not done", "step > 3",
               "self.training", "x is None", "dist.get_rank() == 0", "batch", "True")
_LOOPS = ("for _ in range(2):", "for batch in loader:", "for epoch in range(epochs):",
          "for i, (x, y) in enumerate(loader):", "while step < 10:", "async for item in stream:")
_CONTEXTS = ("torch.no_grad()", "torch.enable_grad()", "torch.autocast(\"cuda\")", "torch.cuda.amp.autocast()",
             "open(path) as fh", "torch.inference_mode()")
_KEYWORDS = ("retain_graph=True", "weights_only=False", "weights_only=True", "set_to_none=False",
             "shuffle=True", "non_blocking=True", "inplace=True", "dim=1", "create_graph=True",
             "device=\"cuda\"", "requires_grad=True", "enabled=False")
# Odd but valid statements around the calls the rules look at: no arguments, star arguments,
# attributes never called, rebinding, deleting, walrus, match, lambda, comprehension and async.
_ODDITIES = (
    "optimizer.step", "loss.backward", "del optimizer", "optimizer = None", "torch.load()",
    "torch.load(*args, **kwargs)", "torch.save(**kwargs)", "model = torch.nn.DataParallel",
    "model = torch.nn.DataParallel()", "x = torch.nn.DataParallel(*mods)", "loss.backward(*a)",
    "optimizer.zero_grad(**k)", "optimizer.step(closure)", "(optimizer.step)()", "getattr(optimizer, 'step')()",
    "[loss.backward() for loss in losses]", "steps = [opt.step() for opt in opts]",
    "lambda: optimizer.step()", "if (l := loss.item()) > 0:\n    total += l",
    "match batch:\n    case [x, y]:\n        loss = criterion(model(x), y)\n    case _:\n        pass",
    "async with torch.no_grad():\n    await model(x)", "global optimizer", "torch.nn.functional.softmax()",
    "F.log_softmax(x)[0].log()", "torch.log(torch.softmax())", "nn.CrossEntropyLoss()(torch.softmax(*z))",
    "x = x.cuda().requires_grad_()", "x.data = y", "p.grad.data.mul_()", "p.grad[0] = 0",
    "self.layers = [nn.Linear(1, 1)] * 3", "self.layers[0] = nn.Linear(1, 1)", "super(Model, self).__init__()",
    "super().__init__ = None", "model.train = True", "model.eval", "model()(x)", "model.forward",
    "model.forward(*inputs)", "torch.cuda.empty_cache", "scheduler.step(); optimizer.step()",
    "scaler.scale(loss).backward(); scaler.unscale_(); scaler.step()", "clip_grad_norm_()",
    "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)", "torch.cuda.amp.GradScaler",
    "with torch.cuda.amp.autocast(*a):\n    pass", "loader = DataLoader(ds, sampler=s, shuffle=True, **kw)",
    "sampler.set_epoch", "for epoch in range(3): sampler.set_epoch(epoch)", "dist.get_rank",
    "if dist.get_rank() == 0: torch.save(model, path)", "ddp = DistributedDataParallel(model); model.to()",
    "@torch.no_grad()\ndef evaluate(): model(x)", "class M(nn.Module, metaclass=Meta):\n    x = 1",
    "class M(torch.nn.Module):\n    def __init__(self, *a): self.w = torch.zeros(1)",
    "def train(self, mode=True): return self", "total_loss += loss", "total_loss = total_loss + loss",
    "losses.append(loss)", "x = torch.randn(3, requires_grad=True).to('cuda')", "x.add_(1)",
    "torch.nn.functional.dropout(x)", "F.dropout(x, training=self.training)", "torch.manual_seed()",
    "out = model(x); out += 1", "print(loss.item(), end='')", "float(loss)", "loss.cpu().numpy()",
)
_SUPPRESSIONS = ("# noqa", "# noqa", "# NOQA", "# torchcheck: ignore", "# noqa: E501", "# noqa:E501,TRN201")


@dataclass
class Mutant:
    """A mutated source and the operations that made it (for failure messages)."""

    source: str
    seed: int
    operations: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return f"seed {self.seed}: {', '.join(self.operations) or 'no change'}"


def mutate(source: str, seed: int, donors: Sequence[str] = (), steps: int | None = None,
           codes: Sequence[str] = ("TRN101",)) -> Mutant:
    """Apply ``steps`` (default 1-4) seeded mutations to ``source``.

    ``donors`` are other sources whose statements and calls may be spliced in; ``codes`` are the
    rule codes a ``# noqa: CODE`` comment may name.
    """
    rng = random.Random(seed)
    mutant = Mutant(source, seed)
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return mutant
    for _ in range(steps if steps is not None else rng.randint(1, 4)):
        name = rng.choice(OPERATION_NAMES)
        try:
            changed = _OPERATIONS[name](module, rng, _Donors(donors), codes)
            if changed is None:
                continue
            module = cst.parse_module(changed.code)  # fresh nodes for the next choice
        except (cst.ParserSyntaxError, cst.CSTValidationError):
            continue  # e.g. a call with double quotes swapped into a double-quoted f-string
        mutant.operations.append(name)
    mutant.source = module.code
    if rng.random() < 0.15:
        mutant.source = _delete_line(mutant.source, rng)
        mutant.operations.append("delete-line")
    if rng.random() < 0.1:  # positions and fixes must count \r\n and \r as one line end
        ending = rng.choice(("\r\n", "\r"))
        mutant.source = _NEWLINE.sub(ending, mutant.source)
        mutant.operations.append(f"line-endings {ending!r}")
    return mutant


def _parse(source: str) -> cst.Module | None:
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None


# ------------------------------------------------------------ what to mutate

class _Collect:
    """Every statement block, simple statement line, call and name of a tree.

    A plain walk over the dataclass fields: LibCST's visitor rebuilds every node it passes,
    which made collecting cost more than parsing.
    """

    def __init__(self, module: cst.Module) -> None:
        self.blocks: list[cst.Module | cst.IndentedBlock] = []
        self.statements: list[cst.BaseStatement] = []
        self.lines: list[cst.SimpleStatementLine] = []
        self.calls: list[cst.Call] = []
        self.compounds: list[cst.BaseCompoundStatement] = []
        self.names: list[str] = []
        stack: list[object] = [module]
        while stack:
            node = stack.pop()
            if isinstance(node, (cst.Module, cst.IndentedBlock)):
                self.blocks.append(node)
            elif isinstance(node, cst.SimpleStatementLine):
                self.lines.append(node)
                self.statements.append(node)
            elif isinstance(node, cst.BaseCompoundStatement):
                self.statements.append(node)
                if isinstance(getattr(node, "body", None), cst.IndentedBlock):
                    self.compounds.append(node)
            elif isinstance(node, cst.Call):
                self.calls.append(node)
            elif isinstance(node, cst.Name):
                self.names.append(node.value)
            children = []
            for name in _fields(type(node)):
                value = getattr(node, name)
                if isinstance(value, cst.CSTNode):
                    children.append(value)
                elif isinstance(value, (tuple, list)):
                    children.extend(v for v in value if isinstance(v, cst.CSTNode))
            stack.extend(reversed(children))  # pop in field order


@functools.lru_cache(maxsize=None)
def _fields(tp: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(tp))


def _collect(module: cst.Module) -> _Collect:
    return _Collect(module)


class _Donors:
    """Other sources to take statements and calls from, parsed (once per process) only when chosen."""

    def __init__(self, sources: Sequence[str]) -> None:
        self.sources = sources

    def __bool__(self) -> bool:
        return bool(self.sources)

    def choose(self, rng: random.Random) -> _Collect | None:
        return _donor_facts(rng.choice(self.sources))


@functools.lru_cache(maxsize=1024)  # LibCST trees are immutable: sharing them is safe
def _donor_facts(source: str) -> _Collect | None:
    module = _parse(source)
    return None if module is None else _Collect(module)


def _with_body(module: cst.Module, block: cst.Module | cst.IndentedBlock,
               body: Sequence[cst.BaseStatement]) -> cst.Module:
    if isinstance(block, cst.Module):
        return module.with_changes(body=tuple(body))
    if not body:
        body = [cst.SimpleStatementLine([cst.Pass()])]
    return module.deep_replace(block, block.with_changes(body=tuple(body)))


def _pick_block(module: cst.Module, rng: random.Random, least: int = 1):
    """A random block with at least ``least`` statements, and its statements as a list."""
    blocks = [b for b in _collect(module).blocks if len(b.body) >= least]
    if not blocks:
        return None, []
    block = rng.choice(blocks)
    return block, list(block.body)


def _span(rng: random.Random, n: int, longest: int) -> tuple[int, int]:
    i = rng.randrange(n)
    return i, min(n, i + rng.randint(1, longest))


def _statement(code: str) -> cst.BaseStatement:
    return cst.parse_statement(code)


# ------------------------------------------------------------ the operations
Operation = Callable[[cst.Module, random.Random, _Donors, Sequence[str]], "cst.Module | None"]


def _shuffle(module, rng, donors, codes):
    block, body = _pick_block(module, rng, 2)
    if block is None:
        return None
    i, j = _span(rng, len(body) - 1, 5)
    j = max(j, i + 2)
    part = body[i:j]
    rng.shuffle(part)
    return _with_body(module, block, body[:i] + part + body[j:])


def _delete(module, rng, donors, codes):
    block, body = _pick_block(module, rng, 1)
    if block is None:
        return None
    del body[rng.randrange(len(body))]
    return _with_body(module, block, body)


def _duplicate(module, rng, donors, codes):
    block, body = _pick_block(module, rng, 1)
    if block is None:
        return None
    i, j = _span(rng, len(body), 4)
    return _with_body(module, block, body[:j] + body[i:j] + body[j:])


def _branch(module, rng, donors, codes):
    """Wrap a run of statements in an if/else, a loop, a with, a try, a function or a class."""
    block, body = _pick_block(module, rng, 1)
    if block is None:
        return None
    i, j = _span(rng, len(body), 3)
    inner = cst.IndentedBlock(body=tuple(body[i:j]))
    kind = rng.randrange(8)
    if kind == 0:
        wrapper = _statement(f"if {rng.choice(_CONDITIONS)}:\n    pass\n")
    elif kind == 1:  # the else branch gets a copy of another statement of the block
        wrapper = _statement(f"if {rng.choice(_CONDITIONS)}:\n    pass\nelse:\n    pass\n")
        other = cst.IndentedBlock(body=(rng.choice(body),))
        wrapper = wrapper.with_changes(orelse=wrapper.orelse.with_changes(body=other))
    elif kind == 2:
        wrapper = _statement(f"{rng.choice(_LOOPS)}\n    pass\n")
    elif kind == 3:
        wrapper = _statement(f"with {rng.choice(_CONTEXTS)}:\n    pass\n")
    elif kind == 4:
        wrapper = _statement(rng.choice(("try:\n    pass\nexcept RuntimeError:\n    pass\n",
                                         "try:\n    pass\nfinally:\n    pass\n")))
    elif kind == 5:
        wrapper = _statement(rng.choice(("def helper(model, optimizer):\n    pass\n",
                                         "async def helper():\n    pass\n", "def train(self):\n    pass\n")))
    elif kind == 6:
        wrapper = _statement(rng.choice(("class Wrapped(torch.nn.Module):\n    pass\n",
                                         "class Plain:\n    pass\n")))
    else:
        wrapper = _statement("if __name__ == \"__main__\":\n    pass\n")
    wrapper = wrapper.with_changes(body=inner)
    return _with_body(module, block, body[:i] + [wrapper] + body[j:])


def _unwrap(module, rng, donors, codes):
    """Replace a compound statement by its body (an if without its test, a loop run once)."""
    c = _collect(module)
    if not c.compounds:
        return None
    target = rng.choice(c.compounds)
    for block in c.blocks:
        body = list(block.body)
        for k, stmt in enumerate(body):
            if stmt is target:
                return _with_body(module, block, body[:k] + list(target.body.body) + body[k + 1:])
    return None


def _splice(module, rng, donors, codes):
    """Insert a statement taken from a donor (or from this file) at a random place."""
    facts = donors.choose(rng) if donors and rng.random() < 0.7 else None
    statements = (facts or _collect(module)).statements
    if not statements:
        return None
    block, body = _pick_block(module, rng, 0)
    k = rng.randint(0, len(body))
    return _with_body(module, block, body[:k] + [rng.choice(statements)] + body[k:])


def _oddity(module, rng, donors, codes):
    """Insert an odd but valid statement about the calls the rules look at, at a random place."""
    block, body = _pick_block(module, rng, 0)
    k = rng.randint(0, len(body))
    return _with_body(module, block, body[:k] + [_statement(rng.choice(_ODDITIES) + "\n")] + body[k:])


def _rename(module, rng, donors, codes):
    """Rename every occurrence of one name (variables, attributes, keywords, imports alike)."""
    names = list(dict.fromkeys(_collect(module).names))
    if not names:
        return None
    old = rng.choice(names)
    pool = [n for n in names if n not in ("True", "False", "None")] + list(VOCABULARY)
    new = rng.choice(pool)
    if new == old:
        return None

    class Rename(cst.CSTTransformer):
        def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
            return updated.with_changes(value=new) if updated.value == old else updated

    return module.visit(Rename())


def _swap_call(module, rng, donors, codes):
    """Replace one call by another call of this file or a donor."""
    calls = _collect(module).calls
    if not calls:
        return None
    facts = donors.choose(rng) if donors and rng.random() < 0.5 else None
    others = (facts or _collect(module)).calls
    if not others:
        return None
    return module.deep_replace(rng.choice(calls), rng.choice(others))


def _arguments(module, rng, donors, codes):
    """Drop one argument of a call, or add a keyword the rules care about."""
    calls = _collect(module).calls
    if not calls:
        return None
    call = rng.choice(calls)
    args = list(call.args)
    if args and rng.random() < 0.5:
        del args[rng.randrange(len(args))]
        if args and args[-1].comma is not cst.MaybeSentinel.DEFAULT and not args[-1].star:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    else:
        keyword = rng.choice(_KEYWORDS)
        name, value = keyword.split("=", 1)
        if any(a.keyword is not None and a.keyword.value == name for a in args):
            return None
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        args.append(cst.Arg(value=cst.parse_expression(value), keyword=cst.Name(name),
                            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                  whitespace_after=cst.SimpleWhitespace(""))))
    return module.deep_replace(call, call.with_changes(args=tuple(args)))


def _suppress(module, rng, donors, codes):
    """End a simple statement line with a suppression comment (bare, for a rule, or for another tool)."""
    lines = _collect(module).lines
    if not lines:
        return None
    line = rng.choice(lines)
    kind = rng.randrange(4)
    if kind == 0:
        text = f"# noqa: {rng.choice(codes)}"
    elif kind == 1:
        text = f"# torchcheck: ignore[{rng.choice(codes)}]"
    else:
        text = rng.choice(_SUPPRESSIONS)
    trailing = line.trailing_whitespace.with_changes(
        whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(text))
    return module.deep_replace(line, line.with_changes(trailing_whitespace=trailing))


_OPERATIONS: dict[str, Operation] = {
    "shuffle": _shuffle, "delete": _delete, "duplicate": _duplicate, "branch": _branch, "unwrap": _unwrap,
    "splice": _splice, "oddity": _oddity, "rename": _rename, "swap-call": _swap_call, "arguments": _arguments,
    "suppress": _suppress,
}
OPERATION_NAMES = tuple(_OPERATIONS)

_NEWLINE = re.compile(r"\r\n?|\n")


def _delete_line(source: str, rng: random.Random) -> str:
    lines = _NEWLINE.split(source)
    ends = _NEWLINE.findall(source)
    if len(lines) < 2:
        return source
    k = rng.randrange(len(lines) - 1)
    return "".join(line + end for i, (line, end) in enumerate(zip(lines, ends + [""])) if i != k)


def splice_program(host: str, program: cst.Module, seed: int) -> str:
    """Insert the statements of ``program`` at a seeded place in ``host`` (a block at any depth)."""
    module = cst.parse_module(host)
    rng = random.Random(seed)
    block = rng.choice(_collect(module).blocks)
    body = list(block.body)
    k = rng.randint(0, len(body))
    return _with_body(module, block, body[:k] + list(program.body) + body[k:]).code
