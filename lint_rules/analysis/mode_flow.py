"""Mode flow of a loop: the ``train()``/``eval()`` switches, training steps and calls of
the trained model in one iteration, in order, through the helpers of this file.

Helpers are followed :data:`MAX_DEPTH` calls deep (never recursively); an event found in
a helper is anchored at the helper's call in the loop, and its receiver is spelled in
the loop's own terms (a helper's parameter replaced by the caller's argument). A
statement under an ``if`` on a parameter that the call's constant argument decides
against is skipped. Facts for TRN603.

:meth:`ModeFlow.evals_never_undone` answers for a trainer class whose train and test passes are
separate methods, called in turn from elsewhere: ``_test`` switches ``self.model`` to eval mode,
``_train`` trains it, and nothing in the file ever switches it back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.evaluation import FileFacts, local_function, mode_call
from lint_rules.analysis.kinds import MODULE
from lint_rules.analysis.modules import ModuleFacts
from lint_rules.analysis.scopes import dotted
from lint_rules.analysis.summaries import EVAL as EVAL_MODE
from lint_rules.analysis.summaries import TRAIN as TRAIN_MODE
from lint_rules.analysis.summaries import Summaries, receiver_base
from lint_rules.analysis.training import BACKWARD, STEP

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

TRAINING = "training"  # a backward() or an optimizer step
CALL = "call"  # the model is called where it is trained
MAX_DEPTH = 3  # helper functions followed into, from the loop


@dataclass(frozen=True)
class ModeEvent:
    kind: str  # EVAL, TRAIN, TRAINING or CALL
    receiver: str | None  # the model's spelling in the loop's own terms
    anchor: cst.CSTNode  # the node in the loop's body that leads to it


class ModeFlow:
    """Mode flow of the loops of one file; get the shared one with ``model.fact(ModeFlow)``."""

    def __init__(self, model: "FileModel") -> None:
        self.model = model
        self._facts = model.fact(FileFacts)
        self._helpers = model.fact(Summaries)
        self._trained_functions: set[int] | None = None
        self._event_nodes = {id(e.node) for e in model.training.events if e.kind in (BACKWARD, STEP)}
        self._parameters_of: set[str] | None = None

    def loop_events(self, loop: cst.CSTNode) -> list[ModeEvent]:
        """The events of one iteration of ``loop``, in order."""
        return self._events(loop, loop, {}, (), 0, None, None)

    def _events(self, container: cst.CSTNode, loop: cst.CSTNode, subst: dict[str, str | None],
                stack: tuple[int, ...], depth: int, entry: cst.Call | None,
                top: cst.Call | None) -> list[ModeEvent]:
        """Mode, training and model-call events of one run of ``container``'s body, in order."""
        model = self.model
        facts = self._facts
        helpers = self._helpers
        out: list[ModeEvent] = []
        for node in facts.body_nodes(container):
            if not isinstance(node, cst.Call):
                continue
            if entry is not None and not helpers.runs_at(node, container, entry):
                continue  # set_mode(model, "train"): the other branch does not run
            # Events found in a helper are reported at its call in the loop.
            anchor = node if depth == 0 else None
            func = node.func
            callee = local_function(model, func) if isinstance(func, (cst.Name, cst.Attribute)) else None
            if entry is None or depth == 0:
                # loss = dsm_loss(score, x); loss.backward(): the model is trained through a loss
                # function this file cannot see into (imported, or a method of another object)
                for arg in self._models_in_loss(node):
                    out.append(ModeEvent(CALL, _spelling(arg, subst), node))
            if callee is not None:
                if depth < MAX_DEPTH and id(callee) not in stack and callee is not container:
                    inner = self._events(callee, loop, self._bind(callee, node, subst), (*stack, id(callee)),
                                         depth + 1, node, top or node)
                    out.extend(ModeEvent(e.kind, e.receiver, anchor or e.anchor) for e in inner)
                continue
            mode = mode_call(node)
            if mode is not None:
                out.append(ModeEvent(mode, _spelling(func.value, subst), anchor or node))
            elif id(node) in self._event_nodes:
                out.append(ModeEvent(TRAINING, None, anchor or node))
            elif facts.is_model_call(node) and (self._in_training(node) or self._loss_helper_call(node, top)):
                out.append(ModeEvent(CALL, _spelling(func, subst), anchor or node))
        return out

    def evals_never_undone(self) -> list[tuple[cst.Call, str]]:
        """(call, attribute) for each ``self.<attr>.eval()`` (or ``.train(False)``) in a method of a class
        that is no module, when another method of the class trains ``self.<attr>`` in a training loop
        (a loop with ``backward()`` or an optimizer step that uses it; the file asks for
        ``self.<attr>.parameters()``), the eval() is not in ``__init__``, and no call in this file ever
        switches ``self.<attr>`` to train mode (``train()``, ``train(flag)``). A trainer whose test pass
        and train pass are methods called in turn (``trainer.train(ts)``, ``trainer.test(vs)``, each
        epoch) trains every epoch after the first test pass in eval mode. A module class is left
        alone (its own ``train()`` switches its submodules back), and so is a model known to have no
        dropout or batch norm."""
        model = self.model
        facts = self._facts
        switched = {text for _, call, mode in facts.mode_calls() if mode == TRAIN_MODE
                    and isinstance(call.func, cst.Attribute)
                    and (text := dotted(receiver_base(call.func.value))) is not None}
        modules = model.fact(ModuleFacts)
        out = []
        for _, call, mode in facts.mode_calls():
            if mode != EVAL_MODE or mode_call(call) != EVAL_MODE or not isinstance(call.func, cst.Attribute):
                continue
            text = dotted(receiver_base(call.func.value))
            if text is None or not text.startswith("self.") or text.count(".") != 1 or text in switched:
                continue
            method = model.enclosing_function(call)
            owner = model.parent(model.parent(method)) if method is not None else None
            if not isinstance(owner, cst.ClassDef) or modules.is_module_class(owner) \
                    or method.name.value == "__init__" or text not in self._optimized() \
                    or self._attribute_mode_dependent(owner, text, receiver_base(call.func.value)) is False:
                continue  # set once at construction, a fixed model (an image optimised through it), or
                # a model without dropout or batch norm: the same in either mode
            if any(self._trains_in(other, text) for other in _methods(owner) if other is not method):
                out.append((call, text))
        return out

    def _attribute_mode_dependent(self, owner: cst.ClassDef, text: str, expr: cst.CSTNode) -> bool | None:
        """:meth:`ModuleFacts.mode_dependent` for ``self.<attr>``, also through what the class's methods
        assign to it (``self.net = MLP(...)`` in ``train()``): False when every value assigned is a
        module known to behave the same in both modes."""
        modules = self.model.fact(ModuleFacts)
        direct = modules.mode_dependent(expr)
        if direct is not None:
            return direct
        values = [a.value for a in self.model.within(cst.Assign, owner)
                  if any(dotted(t.target) == text for t in a.targets)
                  and dotted(receiver_base(a.value)) not in (text, "None")]  # self.net = self.net.cuda(): the same
        verdicts = [modules.mode_dependent(v) for v in values]
        return False if verdicts and all(v is False for v in verdicts) else None

    def _optimized(self) -> set[str]:
        """Spellings whose parameters this file asks for (``self.model.parameters()`` for an optimizer
        or gradient clipping): modules it trains, not inputs it optimises through a fixed model."""
        if self._parameters_of is None:
            self._parameters_of = {text for c in self.model.nodes(cst.Call)
                                   if isinstance(c.func, cst.Attribute)
                                   and c.func.attr.value in ("parameters", "named_parameters")
                                   and (text := dotted(c.func.value)) is not None}
        return self._parameters_of

    def _trains_in(self, method: cst.FunctionDef, text: str) -> bool:
        """A training loop of ``method`` calls ``text`` or a method of it (``self.model(x)``,
        ``self.model.loss(x)``, ``self.model.parameters()``)."""
        model = self.model
        if any(mode_call(c) is not None and isinstance(c.func, cst.Attribute)
               and dotted(receiver_base(c.func.value)) == text for c in model.within(cst.Call, method)):
            return False  # it sets the mode it trains in (an input optimised through a model kept in eval mode)
        for loop in model.training.training_loops():
            if model.enclosing_function(loop) is not method:
                continue
            if any((d := dotted(c.func)) == text or (d or "").startswith(text + ".")
                   for c in model.within(cst.Call, loop)):
                return True
        return False

    def _bind(self, callee: cst.FunctionDef, call: cst.Call, subst: dict[str, str | None]) -> dict[str, str | None]:
        """The callee's parameters, spelled in the loop's terms."""
        params = [p.name.value for p in (*callee.params.posonly_params, *callee.params.params)]
        out: dict[str, str | None] = {p.name.value: None for p in callee.params.kwonly_params}
        out.update({p: None for p in params})
        if isinstance(call.func, cst.Attribute) and params:
            out[params.pop(0)] = _spelling(call.func.value, subst)  # self.validate(): self is self
        positional = [a for a in call.args if a.keyword is None]
        for name, arg in zip(params, positional):
            out[name] = None if arg.star else _spelling(arg.value, subst)
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value in out:
                out[arg.keyword.value] = _spelling(arg.value, subst)
        return out

    def _models_in_loss(self, call: cst.Call) -> list[cst.CSTNode]:
        """Models passed to ``call`` when its result is assigned to a name that ``backward()`` is
        called on, outside no_grad."""
        model = self.model
        parent = model.parent(call)
        if not (isinstance(parent, cst.Assign) and parent.value is call and len(parent.targets) == 1):
            return []
        target = parent.targets[0].target
        if not isinstance(target, cst.Name) or not model.is_backward_receiver(target) or model.in_no_grad(call):
            return []
        return [a.value for a in call.args
                if isinstance(a.value, (cst.Name, cst.Attribute)) and model.kind_of(a.value) == MODULE]

    def _loss_helper_call(self, call: cst.Call, top: cst.Call | None) -> bool:
        """``loss = denoising_loss(net, x)`` in the training loop: the helper calls the model
        once, with autograd on, for the loop's training step."""
        model = self.model
        return top is not None and not model.enclosing_loops(call) and not model.in_no_grad(call) \
            and not model.in_no_grad(top) and self._in_training(top)

    def _in_training(self, call: cst.Call) -> bool:
        """A model call that runs where the model is trained."""
        facts = self.model.training
        loops = self.model.enclosing_loops(call)
        if loops:
            return facts.is_training_loop(loops[0])  # not a validation loop nested in the epoch loop
        if self._trained_functions is None:
            self._trained_functions = {id(self.model.enclosing_function(e.node)) for e in facts.events
                                       if e.kind in (BACKWARD, STEP)}
        return id(self.model.enclosing_function(call)) in self._trained_functions


def _methods(owner: cst.ClassDef) -> list[cst.FunctionDef]:
    """The methods defined directly in ``owner``'s body."""
    body = owner.body.body if isinstance(owner.body, cst.IndentedBlock) else ()
    return [stmt for stmt in body if isinstance(stmt, cst.FunctionDef)]


def _spelling(expr: cst.CSTNode, subst: dict[str, str | None]) -> str | None:
    """``expr``'s dotted spelling with a helper's parameters replaced by the caller's arguments."""
    text = dotted(expr)
    if text is None:
        return None
    root, _, rest = text.partition(".")
    if root in subst:
        mapped = subst[root]
        if mapped is None:
            return None
        return f"{mapped}.{rest}" if rest else mapped
    return text
