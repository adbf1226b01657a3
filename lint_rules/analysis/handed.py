"""Models handed to a function that runs them (used by TRN602).

``logits, loss = forward_step(model, batch)`` runs ``model`` as surely as ``model(batch)`` when
``forward_step`` (a function of this file, or of another file of the project) calls that
parameter, ``model(x)`` or ``model.forward(x)``, outside loops of its own. Such a function that
neither trains (backward, an optimizer step) nor sets a mode runs the model in whatever mode its
caller left it in. :func:`run_parameters` answers for one function (phase one: it goes into the
module's summary, see :mod:`lint_rules.analysis.summary`); :class:`HandedModels` answers for a
call of the linted file and for the loops that make such calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.scopes import PARAM, dotted
from lint_rules.analysis.summaries import BACKWARD, EVAL, STEP, TRAIN, Summaries

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

# what a function may do to the model it is handed and still only run it
_NOT_A_RUN = frozenset({BACKWARD, STEP, EVAL, TRAIN})


def run_parameters(model: "FileModel", fn: cst.FunctionDef) -> list[tuple[int, str]]:
    """The parameters that ``fn`` calls (``p(x)``, ``p.forward(x)``) in its own body, outside loops of
    its own, as (position among the positional parameters or -1 for a keyword-only one, name); empty
    when ``fn`` trains or sets a mode (then its caller's loop is judged by what ``fn`` does), or is a
    method (``self`` is no model handed over)."""
    helpers = model.fact(Summaries)
    positional = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    if positional[:1] in (["self"], ["cls"]) or any(e.kind in _NOT_A_RUN for e in helpers.of(fn).effects):
        return []
    keyword = [p.name.value for p in fn.params.kwonly_params]
    out: list[tuple[int, str]] = []
    for node in helpers.own_nodes(fn):
        if not isinstance(node, cst.Call) or model.enclosing_loops(node):
            continue
        func = node.func.value if isinstance(node.func, cst.Attribute) and node.func.attr.value == "forward" \
            else node.func
        if not isinstance(func, cst.Name) or func.value not in (*positional, *keyword):
            continue
        bindings = model.lookup(func.value, model.scope_at(func))
        if len(bindings) != 1 or bindings[0].kind != PARAM:
            continue  # rebound in the body: no longer what the caller handed over
        entry = (positional.index(func.value) if func.value in positional else -1, func.value)
        if entry not in out:
            out.append(entry)
    return out


class HandedModels:
    """The models the calls of one file hand to functions that run them."""

    def __init__(self, model: "FileModel") -> None:
        self.model = model
        self._runs: dict[int, list[tuple[int, str]]] = {}
        self._loops: dict[int, list[tuple[cst.Call, cst.BaseExpression]]] = {}

    def runs(self, call: cst.Call) -> list[cst.BaseExpression]:
        """The arguments of ``call`` that the function it calls runs as a module (see
        :func:`run_parameters`): a function of this file called by name, or one of another
        project file (:meth:`ProjectFacts.run_parameters`). Empty for anything else."""
        func = call.func
        if not isinstance(func, (cst.Name, cst.Attribute)):
            return []
        model = self.model
        fn = model.fact(Summaries).local_function(func)
        if fn is not None:
            if not isinstance(func, cst.Name):
                return []  # self.<method>(...): a method is no function handed a model
            params = self._runs.get(id(fn))
            if params is None:
                params = self._runs[id(fn)] = run_parameters(model, fn)
        else:
            project = getattr(model, "project_facts", None)
            params = project.run_parameters(model, func) if project is not None else None
        if not params or any(arg.star for arg in call.args):
            return []
        positional = [a.value for a in call.args if a.keyword is None]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        out = []
        for position, name in params:
            value = keywords.get(name)
            if value is None and 0 <= position < len(positional):
                value = positional[position]
            if value is not None:
                out.append(value)
        return out

    def in_loop(self, loop: cst.CSTNode) -> list[tuple[cst.Call, cst.BaseExpression]]:
        """(call, the model it hands over) for each call that ``loop`` makes itself (not an inner
        loop, not a nested function) handing a module spelled as a name or attribute to a function
        that runs it."""
        key = id(loop)
        found = self._loops.get(key)
        if found is None:
            model = self.model
            found = []
            own = model.enclosing_function(loop)
            for node in model.within(cst.Call, loop):
                if model.enclosing_function(node) is not own or model.enclosing_loops(node)[:1] != [loop]:
                    continue
                found.extend((node, arg) for arg in self.runs(node) if dotted(arg) is not None)
            self._loops[key] = found
        return found

    def evaluation_runs(self, loop: cst.CSTNode) -> list[tuple[cst.Call, cst.BaseExpression]]:
        """The (call, model) pairs of :meth:`in_loop` by which an evaluation loop runs its model, when the
        loop calls no model itself nor through a helper that :class:`FileFacts` follows: a loop over data
        handing a module over (``for x, y in val_loader: step(model, x)``), or a loop of an inference
        script handing over a model whose weights it restored, with something computed from the loop's
        target (``for i, batch in enumerate(problem.batches()): forward_step(model, batch)``). Nothing
        in the loop trains."""
        from lint_rules.analysis.evaluation import FileFacts

        facts = self.model.fact(FileFacts)
        if not isinstance(loop, (cst.For, cst.While)) or facts.evaluation_calls(loop) \
                or facts.evaluation_helper_calls(loop):
            return []
        data = facts.is_data_loop(loop)
        restored = facts.restored_for_inference(loop) if isinstance(loop, cst.For) and not data else set()
        if not data and not restored:
            return []  # most loops: asked before any call of the loop is resolved
        found = [(call, arg) for call, arg in self.in_loop(loop)
                 if data and facts.holds_module(arg)
                 or dotted(arg) in restored and isinstance(loop, cst.For) and facts.indexed_by(call, loop)]
        return found if found and facts.is_evaluation(loop) else []

    def helper_scores(self, call: cst.Call) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
        """(model, batch) pairs of ``call``'s arguments when it calls a function of this file that runs
        one parameter as a module on another with grad off (``with torch.no_grad(): net(batch)``, or
        handed to a function that runs it: ``forward_step(net, batch)``), outside loops of its own, and
        neither trains nor sets a mode: ``validate(model, val_batch)`` scores ``val_batch`` with
        ``model`` in whatever mode its caller left it. Empty otherwise."""
        func = call.func
        model = self.model
        if not isinstance(func, cst.Name) or not call.args:
            return []
        helpers = model.fact(Summaries)
        fn = helpers.local_function(func)
        if fn is None or any(e.kind in _NOT_A_RUN for e in helpers.of(fn).effects) \
                or any(arg.star for arg in call.args):
            return []
        params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)]
        positional = [a.value for a in call.args if a.keyword is None]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        given = {name: keywords.get(name, positional[i] if i < len(positional) else None)
                 for i, name in enumerate(params)}
        out = []
        for inner in helpers.own_nodes(fn):
            if not isinstance(inner, cst.Call) or model.enclosing_loops(inner) or not model.in_no_grad(inner):
                continue
            target = inner.func.value if isinstance(inner.func, cst.Attribute) \
                and inner.func.attr.value == "forward" else inner.func
            runs = [target] if isinstance(target, cst.Name) and target.value in given else self.runs(inner)
            for run in runs:
                if not isinstance(run, cst.Name) or given.get(run.value) is None:
                    continue
                for arg in inner.args:
                    if isinstance(arg.value, cst.Name) and arg.value.value != run.value \
                            and (batch := given.get(arg.value.value)) is not None:
                        out.append((given[run.value], batch))
        return out
