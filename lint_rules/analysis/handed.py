"""Models handed to a function that runs them (used by TRN602).

``logits, loss = forward_step(model, batch)`` runs ``model`` as surely as ``model(batch)`` when
``forward_step`` (a function of this file, or of another file of the project) calls that
parameter, ``model(x)`` or ``model.forward(x)``, outside loops of its own. Such a function that
neither trains (backward, an optimizer step) nor sets a mode runs the model in whatever mode its
caller left it in. :func:`run_parameters` answers for one function (phase one: it goes into the
module's summary, see :mod:`lint_rules.analysis.summary`); :class:`HandedModels` answers for a
call of the linted file and for the loops that make such calls.

The same facts answer for a file that pairs a training function with an inference function over
a handed model (``train_seq2seq(model, ...)`` ending in ``model.train()`` mode, then
``predict_seq2seq(model, ...)`` decoding with ``model.encoder(x)``): see
:meth:`HandedModels.leaves_training` and :meth:`HandedModels.inference_runs`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.kinds import MODULE
from lint_rules.analysis.scopes import PARAM, dotted
from lint_rules.analysis.summaries import BACKWARD, EVAL, STEP, TRAIN, Summaries, mode_of_call

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

# what a function may do to the model it is handed and still only run it
_NOT_A_RUN = frozenset({BACKWARD, STEP, EVAL, TRAIN})
# The verb a training or inference function's name starts with: `train_seq2seq` and `predict_seq2seq`
# are a pair over one model.
_VERB = re.compile(r"^(train|fit|predict|infer|inference)(_|$)")
# Methods of a module that do not run it: `model.to(device)`, `model.parameters()`. Any other
# `model.<attr>(x)` of an inference function runs the model or a part of it (`model.encoder(x)`,
# `model.generate(ids)`).
_NO_RUN_METHODS = frozenset({
    "to", "cuda", "cpu", "float", "half", "double", "bfloat16", "type", "eval", "train", "requires_grad_",
    "parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children", "modules",
    "named_modules", "state_dict", "load_state_dict", "apply", "zero_grad", "share_memory", "get_parameter",
    "get_submodule", "get_buffer", "extra_repr", "add_module", "register_module", "register_buffer",
    "register_parameter", "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
})


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
        self._leaving: list[tuple[cst.FunctionDef, str]] | None = None

    def leaves_training(self) -> list[tuple[cst.FunctionDef, str]]:
        """(function, parameter) for each function of this file that trains (``backward()``, an
        optimizer step, itself or through its helpers) and leaves a module it was handed in training
        mode: the last mode its summary sets on that parameter is ``train()``, and no function of this
        file calls it (a caller may evaluate afterwards: ``train_epoch(net)`` then ``evaluate(net)``).
        ``def train_seq2seq(model, data, lr): model.train(); for batch in data: ...; opt.step()``."""
        if self._leaving is None:
            model = self.model
            helpers = model.fact(Summaries)
            found = []
            for fn in model.nodes(cst.FunctionDef):
                effects = helpers.of(fn).effects
                if not any(e.kind in (BACKWARD, STEP) for e in effects) \
                        or any(model.enclosing_function(site) is not None for site in helpers.call_sites(fn)):
                    continue
                last: dict[str, str | None] = {}
                for e in effects:
                    if e.kind in (EVAL, TRAIN) and e.target is not None and e.target.startswith("$") \
                            and "." not in e.target:
                        # model.train(was_training) restores the caller's mode: no mode this function leaves
                        last[e.target[1:]] = None if _restores(e.node) else e.kind
                found.extend((fn, name) for name, kind in last.items() if kind == TRAIN)
            self._leaving = found
        return self._leaving

    def paired_trainer(self, fn: cst.FunctionDef, param: str) -> cst.FunctionDef | None:
        """The function of :meth:`leaves_training` that ``fn`` is the inference half of for its
        parameter ``param``: their names differ only by the verb they start with
        (``train_seq2seq``/``predict_seq2seq``, ``fit``/``predict``) and the trainer leaves its own
        parameter of that name in training mode, so the model one trains is the model the other
        predicts with. None when there is no such function (then nothing says which model ``fn`` is
        handed)."""
        stem = _VERB.sub("", fn.name.value)
        return next((trainer for trainer, name in self.leaves_training()
                     if trainer is not fn and name == param and _VERB.sub("", trainer.name.value) == stem), None)

    def inference_runs(self, fn: cst.FunctionDef) -> list[tuple[cst.Call, str]]:
        """(call, parameter) for each call by which an inference function (``predict``, ``predict_*``,
        ``infer``, ``inference``, ``inference_*``) defined at the top of this file runs a module it is
        handed: ``model(x)``, ``model.forward(x)`` or a part of it, ``model.encoder(x)``,
        ``model.generate(ids)``; empty when it trains or sets a mode itself, or a caller of this file
        switches to eval mode before calling it. The parameter must be known as a module (by its
        annotation or spelling). It runs the model in whatever mode its caller left it in."""
        from lint_rules.analysis.evaluation import INFERENCE_METHOD, FileFacts

        model = self.model
        if not INFERENCE_METHOD.match(fn.name.value) or not isinstance(model.parent(fn), cst.Module):
            return []
        helpers = model.fact(Summaries)
        params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)]
        if not params or any(e.kind in _NOT_A_RUN for e in helpers.of(fn).effects):
            return []
        facts = model.fact(FileFacts)
        if any((last := facts.last_mode_before(site, model.enclosing_function(site))) is not None
               and last[0] == EVAL for site in helpers.call_sites(fn)):
            return []
        out = []
        for node in helpers.own_nodes(fn):
            if not isinstance(node, cst.Call) or mode_of_call(node) is not None:
                continue
            func = node.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
                if func.attr.value in _NO_RUN_METHODS or func.attr.value.startswith("_"):
                    continue
                func = func.value
            if not isinstance(func, cst.Name) or func.value not in params:
                continue
            bindings = model.lookup(func.value, model.scope_at(func))
            # not rebound in the body, and a module (`model`, `net: nn.Module`), not a tokenizer or vocabulary
            if len(bindings) == 1 and bindings[0].kind == PARAM and model.kind_of(func) == MODULE:
                out.append((node, func.value))
        return out

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


def _restores(call: cst.CSTNode) -> bool:
    """``model.train(flag)`` with a flag that is no constant: it puts back a mode saved before."""
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute) or call.func.attr.value != "train":
        return False
    return any(not (isinstance(a.value, cst.Name) and a.value.value in ("True", "False")) for a in call.args)
