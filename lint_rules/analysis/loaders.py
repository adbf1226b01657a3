"""Data loaders and the distributed samplers that feed them (used by TRN302).

Which loaders a shuffling ``DistributedSampler`` feeds, through which names: the
variable it is assigned to, ``DataLoader(..., sampler=...)``, dict literals followed by
key (``loaders["train"]``), what an unknown call returns when given the loader
(``dl = accelerator.prepare(loader)``) and the ``self.<attr>`` a class of this file keeps
them in (``Trainer(loaders)`` whose ``__init__`` sets ``self.loaders = loaders``).
On top of that: whether some ``set_epoch()`` call may be on the sampler, which uses
of a loader run every epoch, and which sampler feeds a loop's iterable.
Facts, not findings: built once per file with ``model.fact(LoaderFacts)``.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.kinds import HELD_OUT_NAME, OPTIMIZER, SCALER
from lint_rules.analysis.names import DATA_LOADERS, DISTRIBUTED_SAMPLERS
from lint_rules.analysis.scopes import ASSIGN, PARAM, dotted, is_false, keyword_arg
from lint_rules.analysis.summaries import BACKWARD, CLEAR, STEP, Summaries

if TYPE_CHECKING:
    from collections.abc import Iterator

    from lint_rules.analysis.model import FileModel

_WRAPPERS = frozenset({"enumerate", "iter", "tqdm", "zip", "trange", "islice", "cycle"})
# Last resort, for a loader handed to a function of another file: its spelling says it evaluates.
_EVALUATES = re.compile(r"^(evaluate|validate|validation|eval|test|inference)($|_)"
                        r"|_(evaluate|validate|validation|eval|evaluation|test)$", re.I)
_TRAINS = re.compile(r"train|fit", re.I)  # train_and_evaluate(loader) trains on it as well
# Which of the names a wrapper's result is unpacked into is the loader, when the arguments
# do not line up with them: `(m, opt, distr_dl, sched) = backend.distribute(training_data=dl, ...)`.
_LOADER_NAME = re.compile(r"loader|(^|_)dl($|_)|batches", re.I)
# Node types these facts read with ``model.nodes(tp)``: a rule that asks for them lists these in NEEDS.
NEEDS = (cst.Name, cst.Attribute, cst.Subscript)


@dataclass
class SamplerFeed:
    """A shuffling ``DistributedSampler(...)`` call and what it feeds.

    ``variable``: the name (or ``d['key']``) it is assigned to; ``loaders``: the nodes
    that hold a loader it feeds, directly or derived (a wrapper's result, a class
    attribute: those have a stand-in node, see :meth:`LoaderFacts.path`); empty when it
    feeds no loader of this file.
    """

    sampler: cst.Call
    variable: cst.CSTNode | None
    loaders: list[cst.CSTNode] = field(default_factory=list)
    # the sampler is built in another file: ``sampler`` is the call that returns its loader
    remote: bool = False


class LoaderFacts:
    """The shuffling distributed samplers of one file and the loaders they feed."""

    def __init__(self, model: "FileModel") -> None:
        self.model = model
        # a loader or sampler in a dict literal, or handed to a constructor, has no node of its
        # own spelling: its path (`loaders['train']`) and root node stand in for it
        self._alias: dict[int, tuple[str, cst.CSTNode]] = {}
        self._assigns: list | None = None
        self._assigns_by_var: dict[tuple, list[int]] = {}
        self._kept: list | None = None
        self._kept_by_path: dict[str, list[int]] = {}
        self._receivers: tuple | None = None
        self._refs: dict[type, dict[str, list[cst.CSTNode]]] = {}
        self._refs_by_var: dict[tuple, dict] = {}
        self.feeds: list[SamplerFeed] = []
        self.set_epoch_receivers: list[cst.CSTNode] = []
        calls = model.nodes(cst.Call)
        samplers = [c for c in calls if shuffling_sampler(model, c)]
        remote = self._remote_loaders(calls)
        if not samplers and not remote:
            return
        loaders = [c for c in calls if model.qualified_name(c.func) in DATA_LOADERS]
        self.set_epoch_receivers = [
            c.func.value for c in calls
            if isinstance(c.func, cst.Attribute) and c.func.attr.value == "set_epoch"]
        # each loader's sampler argument, by node and by variable: a sampler looks only at its own
        sampler_args: list[cst.Arg | None] = []
        by_node: dict[int, list[int]] = {}
        by_var: dict[tuple, list[int]] = {}
        for i, loader in enumerate(loaders):
            arg = sampler_argument(loader)
            sampler_args.append(arg)
            if arg is not None:
                by_node.setdefault(id(arg.value), []).append(i)
                key = self._var_key(arg.value)
                if key is not None:
                    by_var.setdefault(key, []).append(i)
        for sampler in samplers:
            sampler_var = self._assigned_to(sampler)
            loader_vars: list[cst.CSTNode] = []
            var_key = self._var_key(sampler_var) if sampler_var is not None else None
            candidates = set(by_node.get(id(sampler), ()))
            candidates.update(by_var.get(var_key, ()) if var_key is not None else ())
            for i in sorted(candidates):
                loader, arg = loaders[i], sampler_args[i]
                if arg.value is sampler or (sampler_var is not None and self._same_var(arg.value, sampler_var)):
                    target = self._assigned_to(loader)
                    if target is not None:
                        loader_vars.append(target)
            if loader_vars:
                loader_vars = self._derived(loader_vars)
            self.feeds.append(SamplerFeed(sampler, sampler_var, loader_vars))
        for call in remote:  # loader = build_loader(...) of another file: its sampler is out of sight
            target = self._assigned_to(call)
            self.feeds.append(SamplerFeed(call, None, self._derived([target]), remote=True))

    def _remote_loaders(self, calls: list[cst.Call]) -> list[cst.Call]:
        """Calls, assigned to a name, of a function of another project file that returns a loader
        fed by a shuffling DistributedSampler (its summary's ``sampled_loaders``)."""
        model = self.model
        project = getattr(model, "project_facts", None)
        if project is None:
            return []
        out = []
        for call in calls:
            func = call.func
            if not isinstance(func, (cst.Name, cst.Attribute)) or not isinstance(model.parent(call), cst.Assign):
                continue
            head = func if isinstance(func, cst.Name) else None
            while head is None and isinstance(func, cst.Attribute):
                func = func.value
                head = func if isinstance(func, cst.Name) else None
            bindings = model.bindings_of(head) if head is not None else None
            if not bindings or not isinstance(bindings[0].node, (cst.Import, cst.ImportFrom)):
                continue  # only names imported from elsewhere can reach another file's function
            target = self._assigned_to(call)
            # the local question first: is the result used every epoch? Only then read the other file.
            if target is None or self._used_across_epochs(target) is None:
                continue
            if project.returns_sampled_loader(model, call.func):
                out.append(call)
        return out

    # ------------------------------------------------------------ queries
    def epoch_set(self, feed: SamplerFeed) -> bool:
        """Whether some set_epoch() call of this file may be on ``feed``'s sampler: ``sampler.set_epoch()``
        or ``loader.sampler.set_epoch()`` on its variables (same binding, not the same name in
        another function), or on a parameter that a call of this file binds to them. A
        helper that no call of this file reaches may get them from anywhere: it counts.

        Answered from an index of the file's receivers built once (see :meth:`_reached`), not
        by following every receiver again for each sampler."""
        if self._receivers is None:
            self._receivers = self._index_receivers()
        anywhere, plain_by_var, attr_by_var, holders = self._receivers
        if anywhere:
            return True
        sampler, variable = feed.sampler, feed.variable
        if variable is not None and self._var_key(variable) in plain_by_var:
            return True
        if id(sampler) in holders or any(id(a) in holders for a in self.model.ancestors(sampler)):
            return True
        return any(self._var_key(v) in attr_by_var for v in feed.loaders)

    def _index_receivers(self) -> tuple[bool, set, set, set]:
        anywhere = False
        plain: set[tuple] = set()
        attr: set[tuple] = set()
        holders: set[int] = set()
        for recv in self.set_epoch_receivers:
            if isinstance(recv, cst.Attribute) and recv.attr.value == "sampler":
                # `loader.sampler.set_epoch()`: on the loaders' variables, no sampler
                anywhere = self._reached(recv.value, 0, attr, set()) or anywhere
            else:
                anywhere = self._reached(recv, 0, plain, holders) or anywhere
        return anywhere, plain, attr, holders

    def _reached(self, expr: cst.CSTNode, depth: int, compared: set[tuple], holders: set[int]) -> bool:
        """Whether a set_epoch() on ``expr`` may be on any sampler at all (True); else records what
        decides it for a given one: in ``compared`` the :meth:`_var_key` of the expressions that may
        be one of its variables, in ``holders`` the assigned values that may hold it. Followed into the
        arguments a call of this file binds to a parameter, three calls deep."""
        model = self.model
        if dotted(expr) is None:
            return True  # get_sampler().set_epoch(): out of sight
        key = self._var_key(expr)
        if key is not None:  # None: the same variable as nothing
            compared.add(key)
        bindings = model.bindings_of(expr)
        if not bindings:
            return True  # bound elsewhere (a global set in another module)
        for b in bindings:
            if b.kind == ASSIGN and b.value is not None:
                holders.add(id(b.value))
            elif b.kind == PARAM and isinstance(b.value, cst.FunctionDef) and isinstance(expr, cst.Name):
                helpers = model.fact(Summaries)
                sites = helpers.call_sites(b.value)
                if not sites or depth >= 3:
                    return True
                for site in sites:
                    arg = helpers.bind(site, b.value).get(expr.value)
                    if arg is None or self._reached(arg, depth + 1, compared, holders):
                        return True
            elif b.kind != ASSIGN:
                return True  # a loop variable, a with target, ...: out of sight
        return False

    def per_epoch_use(self, var: cst.CSTNode) -> cst.CSTNode | None:
        """A use of the loader held by ``var`` that runs every epoch (iterated inside an outer
        loop or a function a loop calls, or used in a loop body, and not only evaluated)."""
        return self._used_across_epochs(var)

    def fed_by(self, loop: cst.For) -> list[SamplerFeed]:
        """The samplers that feed the loader ``loop`` iterates (``for b in enumerate(loader)``)."""
        refs = [loop.iter, *(a.value for a in loop.iter.args)] if isinstance(loop.iter, cst.Call) \
            and isinstance(loop.iter.func, cst.Name) and loop.iter.func.value in _WRAPPERS else [loop.iter]
        return [f for f in self.feeds
                if any(self._is_iterated_by(r, loop) and self._same_var(r, v) for r in refs for v in f.loaders)]

    def path(self, expr: cst.CSTNode) -> str | None:
        """``loader``, ``self.loader``, ``loaders['train']``; None for anything else."""
        return self._path(expr)

    # ------------------------------------------------------------ building
    def _derived(self, loader_vars: list[cst.CSTNode]) -> list[cst.CSTNode]:
        """The loader variables plus what an unknown call returns for them:
        ``loader = accelerator.prepare(loader)``, ``m, opt, dl = prepare(m, opt, loader)``."""
        out = list(loader_vars)
        assigns = self._call_assigns()
        by_var = self._assigns_by_var
        for _ in range(3):
            grown = False
            known = {self._path(v) for v in out}
            # Only an assignment with an argument that may be one of out's variables can take it:
            # visit those, in order, adding those of a variable appended on the way.
            pending = [i for v in out for i in by_var.get(self._var_key(v), ())]
            for position in _ascending(pending):
                assign, call, args, arg_paths = assigns[position]
                # The paths are a cheap necessary condition: _holds compares paths first.
                hits = [i for i, a in enumerate(args)
                        if arg_paths[i] & known and any(self._holds(a, v) for v in out)]
                if not hits or self._evaluates(call):
                    continue  # `stats = evaluate(loader)` returns numbers, not a loader
                for t in assign.targets:
                    target = t.target
                    if isinstance(target, (cst.Tuple, cst.List)):
                        elements = [e.value for e in target.elements]
                        if len(elements) == len(args) and all(call.args[i].keyword is None for i in hits):
                            picked = [elements[i] for i in hits]
                        else:  # distribute(model=m, training_data=dl) -> (m, opt, distr_dl, sched)
                            picked = [e for e in elements if _LOADER_NAME.search(dotted(e) or "")]
                    else:
                        picked = [target]
                    for p in picked:
                        if self._path(p) is not None and not any(p is v for v in out):
                            out.append(p)
                            grown = True
                            for i in by_var.get(self._var_key(p), ()):
                                if i > position:
                                    heapq.heappush(pending, i)
            grown = self._through_constructors(out) or grown
            if not grown:
                break
        return out

    def _call_assigns(self) -> list[tuple[cst.Assign, cst.Call, list[cst.CSTNode], list[frozenset]]]:
        """Every ``target = call(args)`` of the file, with the paths each argument may hold; built
        once per file (a file with many samplers asked this for each of them)."""
        if self._assigns is None:
            self._assigns = []
            for assign in self.model.nodes(cst.Assign):
                call = assign.value
                if isinstance(call, cst.Call):
                    args = [a.value for a in call.args]
                    arg_paths = [self._paths_held(a) for a in args]
                    keys = {key for a in args for key in self._keys_held(a)}
                    for key in keys:
                        self._assigns_by_var.setdefault(key, []).append(len(self._assigns))
                    self._assigns.append((assign, call, args, arg_paths))
        return self._assigns

    def _keys_held(self, arg: cst.CSTNode) -> list[tuple]:
        """The :meth:`_var_key` of each variable ``arg`` may stand for, as :meth:`_holds` reads it."""
        if isinstance(arg, cst.IfExp):
            return self._keys_held(arg.body) + self._keys_held(arg.orelse)
        key = self._var_key(arg)
        return [] if key is None else [key]

    def _paths_held(self, arg: cst.CSTNode) -> frozenset:
        """The paths ``arg`` may stand for (both branches of a conditional), as ``_holds`` reads it."""
        if isinstance(arg, cst.IfExp):
            return self._paths_held(arg.body) | self._paths_held(arg.orelse)
        path = self._path(arg)
        return frozenset() if path is None else frozenset({path})

    def _through_constructors(self, out: list[cst.CSTNode]) -> bool:
        """``Loop(loaders)`` whose ``__init__`` keeps ``self.loaders = loaders``: within the
        class, ``self.loaders['train']`` is the caller's ``loaders['train']``."""
        if self._kept is None:  # once per file: every constructor call's (attribute, argument)
            helpers = self.model.fact(Summaries)
            self._kept = [pair for call in self.model.nodes(cst.Call) if isinstance(call.func, cst.Name)
                          for pair in helpers.constructor_attributes(call)]
            for i, (_, arg) in enumerate(self._kept):
                path = self._path(arg)
                if path is not None:  # _suffix needs one
                    self._kept_by_path.setdefault(path, []).append(i)
        known = {self._path(v) for v in out}
        grown = False
        # Only a pair whose argument's path starts one of out's paths can add to it: visit those,
        # in order, adding the pairs a stand-in appended on the way makes candidates.
        pending = [i for v in out for i in self._kept_after(self._path(v), -1)]
        for position in _ascending(pending):
            attr, arg = self._kept[position]
            for v in list(out):
                suffix = self._suffix(arg, v)
                if suffix is None or attr + suffix in known:
                    continue
                stand_in = cst.Name("_")  # a node of its own, outside the tree
                self._alias[id(stand_in)] = (attr + suffix, stand_in)
                out.append(stand_in)
                known.add(attr + suffix)
                grown = True
                for i in self._kept_after(attr + suffix, position):
                    heapq.heappush(pending, i)
        return grown

    def _kept_after(self, path: str | None, position: int) -> list[int]:
        """Positions after ``position`` of the constructor pairs whose argument's path is ``path``
        or a prefix of it that :meth:`_suffix` accepts (``loaders`` of ``loaders['train']``)."""
        if path is None:
            return []
        ends = [k for k, ch in enumerate(path) if ch in "[."] + [len(path)]
        return [i for k in ends for i in self._kept_by_path.get(path[:k], ()) if i > position]

    def _suffix(self, arg: cst.CSTNode, var: cst.CSTNode) -> str | None:
        """What ``var``'s path adds to ``arg``'s (`['train']` for `loaders` and `loaders['train']`)."""
        pa, pv = self._path(arg), self._path(var)
        if pa is None or pv is None or not (pv == pa or pv.startswith((pa + "[", pa + "."))):
            return None
        ra, rv = self._root(arg), self._root(var)
        if ra is not None and rv is not None and not self._same_binding(ra, rv):
            return None
        return pv[len(pa):]

    def _holds(self, arg: cst.CSTNode, var: cst.CSTNode) -> bool:
        """``arg`` is ``var``, or a conditional that may give it (``ds if deepspeed else dl``)."""
        if isinstance(arg, cst.IfExp):
            return self._holds(arg.body, var) or self._holds(arg.orelse, var)
        return self._same_var(arg, var)

    def _assigned_to(self, value: cst.CSTNode) -> cst.CSTNode | None:
        """The Name/attribute/``d['key']`` that ``value`` is assigned to (through a ternary),
        or the element of a dict literal assigned to a name (``loaders = {'train': value}``)."""
        node = value
        for anc in self.model.ancestors(value):
            if isinstance(anc, (cst.IfExp, cst.Element, cst.Tuple)):
                node = anc
                continue
            if isinstance(anc, cst.DictElement) and anc.value is node:
                key = _constant_key(anc.key)
                holder = self._assigned_to(self.model.parent(anc))
                if key is None or holder is None or self._path(holder) is None:
                    return None
                self._alias[id(anc)] = (f"{self._path(holder)}[{key!r}]", holder)
                return anc
            if isinstance(anc, (cst.Assign, cst.AnnAssign)):
                targets = [t.target for t in anc.targets] if isinstance(anc, cst.Assign) else [anc.target]
                for t in targets:
                    if self._path(t) is not None and anc.value is node:
                        return t
            return None
        return None

    def _path(self, expr: cst.CSTNode) -> str | None:
        """``loader``, ``self.loader``, ``loaders['train']``; None for anything else."""
        alias = self._alias.get(id(expr))
        if alias is not None:
            return alias[0]
        if isinstance(expr, cst.Subscript):
            key = _constant_key(expr.slice[0].slice.value) if len(expr.slice) == 1 \
                and isinstance(expr.slice[0].slice, cst.Index) else None
            base = self._path(expr.value) if key is not None else None
            return None if base is None else f"{base}[{key!r}]"
        return dotted(expr)

    def _root(self, expr: cst.CSTNode) -> cst.Name | None:
        """The local name a path starts at (``loaders`` of ``loaders['train']``); None for an
        attribute path, which is compared by its spelling."""
        alias = self._alias.get(id(expr))
        if alias is not None:
            holder = alias[1]
            return None if holder is expr else self._root(holder)  # a stand-in is `self.x[...]`
        while isinstance(expr, cst.Subscript):
            expr = expr.value
        return expr if isinstance(expr, cst.Name) else None

    def _same_binding(self, a: cst.Name, b: cst.Name) -> bool:
        ba = self.model.bindings_of(a)
        bb = self.model.bindings_of(b)
        return bool(ba) and bool(bb) and ba[0].scope is bb[0].scope

    def _var_key(self, expr: cst.CSTNode) -> tuple | None:
        """Equal (and not None) for two expressions exactly when :meth:`_same_var` holds for them:
        their path, and the scope their root name is bound in (0 for a path without a root)."""
        path = self._path(expr)
        if path is None:
            return None
        root = self._root(expr)
        if root is None:
            return path, 0
        bindings = self.model.bindings_of(root)
        return (path, id(bindings[0].scope)) if bindings else None

    def _same_var(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        ta, tb = self._path(a), self._path(b)
        if ta is None or ta != tb:
            return False
        ra, rb = self._root(a), self._root(b)
        if ra is not None and rb is not None:
            return self._same_binding(ra, rb)
        return ra is None and rb is None

    def _used_across_epochs(self, var: cst.CSTNode) -> cst.CSTNode | None:
        model = self.model
        text = self._path(var)
        if text is None:
            return None
        if "[" in text:
            refs = self._refs_spelled(cst.Subscript, text, self._path, var)
        elif "." in text:
            refs = self._refs_spelled(cst.Attribute, text, dotted, var)
        else:
            refs = self._refs_spelled(cst.Name, text, _name_value, var)
        for ref in refs:
            if ref is var:
                continue
            loops = model.enclosing_loops(ref)
            if not loops or self._evaluated(ref, loops[0]):
                continue
            if self._is_iterated_by(ref, loops[0]):
                if len(loops) > 1 or self._runs_per_epoch(loops[0]):
                    return ref
            elif model.in_loop_body(ref, loops[0]):
                return ref
        return None

    def _refs_spelled(self, tp: type, text: str, spell, var: cst.CSTNode) -> list[cst.CSTNode]:
        """The nodes of type ``tp`` that ``spell`` spells ``text`` and that are the same variable as
        ``var`` (:meth:`_same_var`), in document order; indexed once per file and spelling."""
        index = self._refs.get(tp)
        if index is None:
            index = self._refs[tp] = {}
            for n in self.model.nodes(tp):
                index.setdefault(spell(n), []).append(n)
        by_var = self._refs_by_var.get((tp, text))
        if by_var is None:
            by_var = self._refs_by_var[(tp, text)] = {}
            for n in index.get(text, ()):
                by_var.setdefault(self._var_key(n), []).append(n)
        key = self._var_key(var)
        return by_var.get(key, []) if key is not None else []

    def _runs_per_epoch(self, loop: cst.CSTNode) -> bool:
        """The function holding ``loop`` is called inside a loop of this file
        (``while True: self._train_epoch()``)."""
        fn = self.model.enclosing_function(loop)
        if not isinstance(fn, cst.FunctionDef):
            return False
        return any(self.model.enclosing_loops(site) for site in self.model.fact(Summaries).call_sites(fn))

    def _evaluated(self, ref: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """This use of the loader only evaluates: iterated with autograd off, or handed to a
        no-grad helper of this file (or an imported ``evaluate``-like function) with no optimizer."""
        model = self.model
        if self._is_iterated_by(ref, loop):
            return model.in_no_grad(loop)
        arg = model.parent(ref)
        call = model.parent(arg) if isinstance(arg, cst.Arg) else None
        return isinstance(call, cst.Call) and self._evaluates(call)

    def _evaluates(self, call: cst.Call) -> bool:
        """A call that evaluates what it is given: a no-grad helper of this file, or an
        imported function spelled ``evaluate``/``validate``/..., with no optimizer passed."""
        model = self.model
        helpers = model.fact(Summaries)
        if not isinstance(call.func, (cst.Name, cst.Attribute)):
            return False
        if any(isinstance(a.value, (cst.Name, cst.Attribute)) and model.kind_of(a.value) in (OPTIMIZER, SCALER)
               for a in call.args):
            return False
        text = dotted(call.func)
        leaf = text.rsplit(".", 1)[-1] if text is not None else ""
        spelled = _EVALUATES.search(leaf) is not None and _TRAINS.search(leaf) is None
        fn = helpers.local_function(call.func)
        if fn is not None:  # its body says: it trains nothing, and turns grad off or is named for evaluating
            summary = helpers.of(fn)
            return (summary.no_grad or spelled) and not any(e.kind in (BACKWARD, STEP, CLEAR) for e in summary.effects)
        return spelled

    def held_out(self, feed: SamplerFeed) -> bool:
        """The sampler, or a loader it feeds, is spelled as held-out data (``val_sampler``,
        ``test_loader``): its order changes no metric, so its epoch does not matter."""
        names = [feed.variable, *feed.loaders] if feed.variable is not None else list(feed.loaders)
        return any(HELD_OUT_NAME.search((self._path(n) or "").rsplit(".", 1)[-1]) for n in names)

    def _is_iterated_by(self, ref: cst.CSTNode, loop: cst.CSTNode) -> bool:
        if not isinstance(loop, cst.For):
            return False
        it = loop.iter
        if it is ref:
            return True
        return self.model.is_inside(ref, it) and isinstance(it, cst.Call) and \
            isinstance(it.func, cst.Name) and it.func.value in _WRAPPERS


def _name_value(name: cst.Name) -> str:
    return name.value


def _constant_key(expr: cst.CSTNode) -> str | int | None:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(expr, cst.Integer):
        return int(expr.value)
    return None


def sampler_argument(loader: cst.Call) -> cst.Arg | None:
    """The ``sampler`` argument of a ``DataLoader(...)`` call (keyword, or the fourth positional)."""
    arg = keyword_arg(loader, "sampler")
    if arg is None:
        positional = [a for a in loader.args if a.keyword is None]
        arg = positional[3] if len(positional) > 3 else None
    return arg


def shuffling_sampler(model: "FileModel", call: cst.Call) -> bool:
    """A ``DistributedSampler(...)`` construction that shuffles (not ``shuffle=False``)."""
    return model.qualified_name(call.func) in DISTRIBUTED_SAMPLERS and not _no_shuffle(call)


def _no_shuffle(call: cst.Call) -> bool:
    arg = keyword_arg(call, "shuffle")
    if arg is None:
        positional = [a for a in call.args if a.keyword is None]
        arg = positional[3] if len(positional) > 3 else None
    return arg is not None and is_false(arg.value)


def _ascending(pending: list[int]) -> Iterator[int]:
    """The positions in ``pending`` in ascending order, each once; the caller may ``heapq.heappush``
    later positions onto ``pending`` while iterating (a worklist visited in document order)."""
    heapq.heapify(pending)
    done = -1
    while pending:
        position = heapq.heappop(pending)
        if position > done:
            done = position
            yield position
