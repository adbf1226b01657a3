"""Evaluation loops and mode switches: loops that iterate data and call a model
without training it, ``model.eval()``/``model.train()`` calls (also through local
helpers), and where each model is trained. Shared by TRN601-TRN603.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from lint_rules.analysis.kinds import DISTRIBUTED_OPTIMIZER, LOADER, LOSS, MODULE, OPTIMIZER, SCALER, TENSOR_METHODS
from lint_rules.analysis.modules import ModuleFacts
from lint_rules.analysis.scopes import IMPORT, bind_arguments, dotted
from lint_rules.analysis.summaries import BACKWARD, CLEAR, EVAL, STEP, TRAIN, Summaries  # noqa: F401
from lint_rules.analysis.summaries import mode_of_call as mode_call

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

# Last-resort hint that a loop iterates data: the iterable's spelling.
_DATA_NAME = re.compile(
    r"loader|(^|_)dl($|_)|batches|dataset|(^|_)ds$|(^|_)data($|_)|samples"
    r"|(^|_)(val|valid|validation|test|testing|eval|evaluation|dev|holdout)(_|$)",
    re.I)
# A container of loaders, subscripted: `loaders["valid"]`, `self.dataloaders[split]`,
# `self.data_loader["dev"]`.
_LOADERS_NAME = re.compile(r"loaders?$", re.I)
# Wrappers around an iterable that keep its items: enumerate(loader), tqdm(loader), ...
_ITER_WRAPPERS = frozenset({"enumerate", "zip", "iter", "islice", "tqdm", "trange"})
FUNCTION_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
_STEPPERS = frozenset({OPTIMIZER, DISTRIBUTED_OPTIMIZER, SCALER})
# A batch fetched inside a counting loop: `X, Y = get_batch("val")`, `next(val_iter)`.
# The name ends in the noun (`get_batch`, `next_sample`): `sample_from(dist)` draws, it fetches nothing.
_FETCH_NAME = re.compile(r"(^|_)(batch|batches|sample)$|^next$", re.I)
# Data held out for measuring: `testdataloader`, `val_loader`, `loaders["dev"]`, `eval_iter`.
_HELD_OUT_NAME = re.compile(r"(^|_)(val|dev|eval)|test|valid", re.I)
# A step of a pass over held-out data, by its name: `evaluate_batch`, `validation_step`, `test_step`.
_EVALUATING_NAME = re.compile(r"^_*(evaluat|valid|val_|eval_|test_)|(^|_)(val|eval|test)_?step$", re.I)
# Methods of a module that run it on data (see FileFacts.runs_module_method).
_RUNNING_METHOD = re.compile(r"^_*(predict|infer|inference|encode|decode|detect|embed|extract_feat|val_step"
                             r"|validation_step|test_step|eval_step|forward_)", re.I)
# A trainer's own evaluation pass: `validate`, `val`, `validation_step`, `evaluate_epoch`, `test`.
_EVALUATION_METHOD_NAME = re.compile(r"^_*(val|valid|validate|validation|evaluate|evaluation|eval|test)"
                                     r"(_step|_epoch|_batch|_iter|_one_epoch|_model)?$", re.I)
# A function named for one evaluation step: `evaluate_batch`, `validation_step`, `EvaluatingModel`, `test_step`,
# or for one inference: `predict_one`, `detect_image`.
_EVALUATION_STEP_NAME = re.compile(r"^_*(evaluat|valid|val_|eval_|test_|predict|infer|detect)"
                                   r"|(^|_)(val|eval|test)_?step$", re.I)
# A context manager defined elsewhere, named for switching to eval mode: `eval_mode(model)`,
# `model_eval_mode(model)`, `evaluating(net)`.
_EVAL_CONTEXT = re.compile(r"(^|_)eval(_mode)?$|eval_mode|^evaluating$", re.I)
# A helper defined elsewhere that may switch a model to eval mode: `set_eval(model)`,
# `evaluation_mode(net)`, `freeze_bn(model)`.
_MODE_SWITCH_NAME = re.compile(r"(^|_)eval(uation)?_?mode|(^|_)(set_)?eval$|freeze", re.I)
# The methods a module offers for inference: `predict`, `predict_batch`, `infer`, `inference`.
INFERENCE_METHOD = re.compile(r"^(predict|inference)(_\w+)?$|^infer$")
# Calls that hand a batch on as it is (or moved, reshaped): `x.cuda()`, `Variable(x)`, `x[0]`.
_BATCH_DEPTH = 8


def forward_target(func: cst.BaseExpression) -> cst.BaseExpression:
    """What a call runs: ``model`` for ``model.forward(x)`` (the same module call, spelled out),
    else the callee itself."""
    if isinstance(func, cst.Attribute) and func.attr.value == "forward":
        return func.value
    return func


def names_in(expr: cst.CSTNode) -> set[str]:
    """The variable names ``expr`` reads or binds (not attribute names: ``a.b`` gives ``a``)."""
    out: set[str] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            out.add(node.value)
        elif isinstance(node, (cst.Attribute, cst.Arg)):  # not `b` of `a.b`, nor `key` of `f(key=v)`
            stack.append(node.value)
        else:
            stack.extend(node.children)
    return out


def local_function(model: "FileModel", expr: cst.CSTNode) -> cst.FunctionDef | None:
    """The function of this file that a Name or ``self.<method>`` refers to, if exactly one."""
    return model.local_function(expr)


class FileFacts:
    """Evaluation loops and model-mode calls of one file, computed lazily once per rule."""

    def __init__(self, model: "FileModel") -> None:
        self.model = model
        self._evaluation_calls: dict[int, list[cst.Call]] = {}
        self._helper_calls: dict[int, list[tuple[cst.Call, cst.Call]]] = {}
        self._fetches: dict[int, bool] = {}
        self._mode_calls: list[tuple[int, cst.Call, str]] | None = None
        self._mode_indices: list[int] = []
        self._mode_call_ids: set[int] = set()
        self._modes_by_function: dict[int, list[tuple[int, cst.Call, str]]] = {}
        self._optimized: set[tuple[int, str]] | None = None
        self._draws: bool | None = None
        self._bodies: dict[int, list[cst.CSTNode]] = {}
        self._generation_calls: dict[int, list[cst.Call]] = {}
        self._no_eval: bool | None = None
        self._trains: bool | None = None
        self._restored: list[tuple[int, cst.CSTNode | None, str, bool]] | None = None
        self._handed_out: dict[int, bool | None] = {}

    # ------------------------------------------------------- structure
    def body_nodes(self, container: cst.CSTNode) -> list[cst.CSTNode]:
        """Ordered nodes inside ``container`` that run in its own function (not nested defs);
        worked out once per container (rules ask for the same loop many times)."""
        key = id(container)
        found = self._bodies.get(key)
        if found is None:
            found = self._bodies[key] = list(self._body_nodes(container))
        return found

    def _body_nodes(self, container: cst.CSTNode) -> Iterator[cst.CSTNode]:
        model = self.model
        start = model.order.get(id(container))
        if start is None:
            return
        ordered = model.ordered
        own = model.enclosing_function(container) if not isinstance(container, FUNCTION_SCOPES) else container
        for i in range(start + 1, len(ordered)):
            node = ordered[i]
            if not model.is_inside(node, container):
                return
            if model.enclosing_function(node) is own:
                yield node

    def is_model_call(self, call: cst.Call) -> bool:
        func = forward_target(call.func)
        if not isinstance(func, (cst.Name, cst.Attribute, cst.Subscript)):
            return False
        if isinstance(func, cst.Attribute) and func is call.func and local_function(self.model, func) is not None:
            return False  # self.model_forward(batch): a method of this file, whatever its name says
        if self.model.kind_of(func) == MODULE:
            return True
        if isinstance(func, cst.Subscript):  # an item of a module container: self.model["generator"]
            return self.model.kind_of(func.value) == MODULE
        if not isinstance(func, cst.Name):
            return False
        # self(x), self.forward(x) in a method of a module class: the module runs itself
        return self._binding_key(func) in self._optimized_names() or self._is_self_module(func)

    def _is_self_module(self, name: cst.Name) -> bool:
        """``name`` is ``self`` in a method of a module class (not any module value: a loss
        function is an ``nn.Module`` too)."""
        modules = self.model.fact(ModuleFacts)
        found = modules.module_method(name)
        return found is not None and modules.is_self(name, found[0])

    def _binding_key(self, name: cst.Name) -> tuple[int, str]:
        bindings = self.model.lookup(name.value, self.model.scope_at(name))
        return (id(bindings[0].scope) if bindings else 0), name.value

    def _optimized_names(self) -> set[tuple[int, str]]:
        """Names whose ``.parameters()`` an optimizer is built from: modules, whatever their class
        (``optimizer = optim.SGD(classifier.parameters())`` with the class in another file)."""
        if self._optimized is None:
            found: set[tuple[int, str]] = set()
            model = self.model
            for call in model.nodes(cst.Call):
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value in ("parameters", "named_parameters") \
                        and isinstance(func.value, cst.Name):
                    outer = model.parent(model.parent(call))  # Call <- Arg <- the optimizer's call
                    if isinstance(outer, cst.Call) and model.kind_of(outer) == OPTIMIZER:
                        found.add(self._binding_key(func.value))
            self._optimized = found
        return self._optimized

    def call_sites(self, fn: cst.FunctionDef) -> list[cst.Call]:
        """Calls of ``fn`` (by name, or ``self.<method>``) in this file."""
        return self.model.call_sites(fn)

    # ------------------------------------------------------ eval loops
    def evaluation_calls(self, loop: cst.For) -> list[cst.Call]:
        """The model calls of ``loop`` when it is an evaluation loop, else nothing.

        An evaluation loop iterates data (a DataLoader, or an iterable spelled like
        one, or a counting loop that fetches a batch), calls the model, and neither
        calls backward(), steps an optimizer, hands an optimizer to anything, nor
        asks for input gradients. A model call belongs to the innermost such loop.
        """
        key = id(loop)
        if key in self._evaluation_calls:
            return self._evaluation_calls[key]
        calls: list[cst.Call] = []
        if self.is_data_loop(loop):
            for node in self.body_nodes(loop):
                if isinstance(node, cst.Call) and self.is_model_call(node) and self._innermost_data_loop(node) is loop:
                    calls.append(node)
        elif isinstance(loop, cst.For) and (trained := self._trained_by_sibling(loop)):
            # for i, batch in enumerate(genval): ... net(images_val), after a loop of the same function
            # that trains net: whatever it iterates, it scores the model that loop trains
            for node in self.body_nodes(loop):
                if isinstance(node, cst.Call) and dotted(forward_target(node.func)) in trained \
                        and self.model.enclosing_loops(node)[:1] == [loop]:
                    calls.append(node)
        elif not self.model.enclosing_loops(loop):
            # Not a data loop, but the outermost loop of a function that put the model in eval mode
            # first (`model.eval()` ... `for t in steps: x = model(x)`): evaluation by declaration.
            # The model's input must change with the loop's target (`x[i:i + n]`, `get(data, i)`):
            # a loop that walks data by index. Loops fed by something else (an environment's
            # observations, a while loop) are left alone: their graphs are freed every iteration.
            receivers = self.eval_receivers(loop) if isinstance(loop, cst.For) else None
            if receivers:
                for node in self.body_nodes(loop):
                    if isinstance(node, cst.Call) and self._innermost_data_loop(node) is None \
                            and dotted(forward_target(node.func)) in receivers and self._indexed_by(node, loop):
                        calls.append(node)
        if not calls and isinstance(loop, cst.For) and (restored := self.restored_for_inference(loop)):
            # for name, (x, y) in enumerate(problem.generator()): model(x), after model.load_state_dict(...)
            # in a file that trains nothing: an inference script runs the weights it restored
            for node in self.body_nodes(loop):
                if isinstance(node, cst.Call) and self.model.enclosing_loops(node)[:1] == [loop] \
                        and dotted(forward_target(node.func)) in restored and self._indexed_by(node, loop):
                    calls.append(node)
        if calls and not self._is_evaluation(loop):
            calls = []
        self._evaluation_calls[key] = calls
        return calls

    def evaluation_pass_calls(self, loop: cst.CSTNode) -> tuple[list[cst.Call], list[cst.Call]]:
        """For a loop that trains only when a flag parameter of its function says so (``if is_train:
        loss.backward(); opt.step()``): (the loop's model calls that run either way, the calls of the
        function in this file that pass ``False`` for the flag). Such a call runs the loop as an
        evaluation pass. Two empty lists when the loop trains unconditionally, or no call of the
        function turns its training off."""
        none: tuple[list[cst.Call], list[cst.Call]] = ([], [])
        model = self.model
        if not isinstance(loop, (cst.For, cst.While)) or not model.training.is_training_loop(loop):
            return none
        fn = model.enclosing_function(loop)
        if not isinstance(fn, cst.FunctionDef):
            return none
        flags: set[str] | None = None
        for event in model.training.loop_events.get(id(loop), ()):
            if event.kind not in (BACKWARD, STEP):
                continue
            guards = self._flag_guards(event.node, loop)
            flags = guards if flags is None else flags & guards
            if not flags:
                return none
        params = {p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)}
        flags = (flags or set()) & params
        if not flags or any(e.kind in (BACKWARD, STEP) for e in model.fact(Summaries).helper_events(loop)):
            return none  # a helper that trains whatever the flag says
        sites = [site for site in self.call_sites(fn)
                 if any(_is_false(bind_arguments(site, fn).get(flag)) for flag in flags)]
        if not sites:
            return none
        calls = [node for node in self.body_nodes(loop)
                 if isinstance(node, cst.Call) and self.is_model_call(node)
                 and model.enclosing_loops(node)[:1] == [loop] and not self._flag_guards(node, loop) & flags]
        return calls, sites

    def _flag_guards(self, node: cst.CSTNode, loop: cst.CSTNode) -> set[str]:
        """The names ``node`` runs only when true: ``if flag:`` (also ``if flag and ...:``) around it,
        inside ``loop``; ``else`` branches and other tests guard nothing here."""
        out: set[str] = set()
        child = node
        for a in self.model.ancestors(node):
            if a is loop:
                break
            if isinstance(a, cst.If) and child is a.body:
                test = a.test
                parts = [test.left, test.right] if isinstance(test, cst.BooleanOperation) \
                    and isinstance(test.operator, cst.And) else [test]
                out.update(p.value for p in parts if isinstance(p, cst.Name))
            child = a
        return out

    def comprehension_evaluation_calls(self, comp: cst.CSTNode) -> list[cst.Call]:
        """The model calls of a comprehension that evaluates: it iterates data (``[model(x) for x, _ in
        val_loader]``), or its function put the model in eval mode first and the model's input is its
        target (``net.eval(); outs = [net(v) for v in views]``); in a function that trains nothing, is no
        ``forward`` and hands no loss back."""
        if not isinstance(comp, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            return []
        model = self.model
        targets: set[str] = set()
        node: cst.BaseCompFor | None = comp.for_in
        while node is not None:
            targets |= names_in(node.target)
            node = node.inner_for_in
        # the model calls fed the comprehension's targets first: most comprehensions have none, and
        # the questions below cost more
        element = [comp.key, comp.value] if isinstance(comp, cst.DictComp) else [comp.elt]
        candidates = []
        for part in element:
            stack: list[cst.CSTNode] = [part]
            while stack:
                n = stack.pop()
                if isinstance(n, (cst.Lambda, cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
                    continue
                if isinstance(n, cst.Call) and any(names_in(a.value) & targets for a in n.args) \
                        and self.is_model_call(n):
                    candidates.append(n)
                stack.extend(n.children)
        if not candidates:
            return []
        fn = model.enclosing_function(comp)
        if isinstance(fn, cst.FunctionDef) and (fn.name.value == "forward" or self._returns_loss(fn)) \
                or any(e.kind in (BACKWARD, STEP) for e in model.training.function_events(fn)):
            return []
        data = False
        node = comp.for_in
        while node is not None and not data:
            data = self._iterates_data(node.iter)
            node = node.inner_for_in
        switched = self.eval_receivers(comp) if not data else set()
        out = [n for n in candidates if data or dotted(forward_target(n.func)) in switched]
        return out

    def restored_for_inference(self, node: cst.CSTNode, state_dict_only: bool = False) -> set[str]:
        """The models (dotted spellings) whose weights ``node``'s function (or the module's body) restored
        before it, ``m.load_state_dict(...)`` or ``m = torch.load(...)``/``torch.jit.load(...)`` (not with
        ``state_dict_only``: a pickled module keeps the mode it was saved in), in a file that trains
        nothing: no backward(), no optimizer step, no optimizer built. Empty when the file trains."""
        restores = self._restores()
        if not restores or self._trains_anything():
            return set()
        model = self.model
        fn = model.enclosing_function(node)
        index = model.order[id(node)]
        return {text for at, where, text, whole in restores
                if at < index and where is fn and not (whole and state_dict_only)}

    def restored_model_run(self, call: cst.Call) -> bool:
        """``call`` runs ``self.<model>`` outside any loop in a method of an inference wrapper: another
        method of the same class restored the model's weights (``def __init__(self):
        self.net.load_state_dict(...)``, then ``def detect(self, image): self.net(image)``), in a file
        that trains nothing. Each call of the method runs the model once more. Not in a ``forward``,
        nor in a function that hands a loss back. (A one-shot script's single call is left alone: its
        graph dies with the script.)"""
        restores = self._restores()
        if not restores or not self.is_model_call(call):
            return False
        model = self.model
        text = dotted(forward_target(call.func))
        fn = model.enclosing_function(call)
        if text is None or model.enclosing_loops(call) or self._trains_anything():
            return False
        if isinstance(fn, cst.FunctionDef) and (fn.name.value == "forward" or self._returns_loss(fn)):
            return False
        if not text.startswith("self.") or not isinstance(fn, cst.FunctionDef):
            return False
        owner = self._class_of(fn)
        return owner is not None and any(
            spelled == text and isinstance(where, cst.FunctionDef) and where is not fn
            and self._class_of(where) is owner for _, where, spelled, _ in restores)

    def _class_of(self, fn: cst.FunctionDef) -> cst.ClassDef | None:
        """The class whose method ``fn`` is (directly in its body)."""
        parent = self.model.parent(self.model.parent(fn))  # FunctionDef <- IndentedBlock <- ClassDef
        return parent if isinstance(parent, cst.ClassDef) else None

    def _restores(self) -> list[tuple[int, cst.CSTNode | None, str, bool]]:
        """Every restore of weights in the file, in order: (index, function, the model's spelling,
        whether a whole pickled module was loaded)."""
        if self._restored is None:
            model = self.model
            found = []
            for call in model.nodes(cst.Call):
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value == "load_state_dict":
                    text, whole = dotted(func.value), False
                elif isinstance(func, (cst.Name, cst.Attribute)) and dotted(func) is not None \
                        and dotted(func).rsplit(".", 1)[-1] == "load" \
                        and model.qualified_name(func) in ("torch.load", "torch.jit.load"):
                    parent = model.parent(call)
                    text = dotted(parent.targets[0].target) if isinstance(parent, cst.Assign) \
                        and len(parent.targets) == 1 else None
                    whole = True
                else:
                    continue
                if text is not None and id(call) in model.order:
                    found.append((model.order[id(call)], model.enclosing_function(call), text, whole))
            self._restored = found
        return self._restored

    def _trains_anything(self) -> bool:
        if self._trains is None:
            model = self.model
            self._trains = any(e.kind in (BACKWARD, STEP) for e in model.training.events) \
                or any(model.kind_of(c) in _STEPPERS for c in model.nodes(cst.Call))
        return self._trains

    # ------------------------------------------------- what a function hands out
    def hands_out_gradient(self, fn: cst.CSTNode | None) -> bool | None:
        """Whether what ``fn`` hands out may carry a gradient from its own model calls: False when
        nothing computed from their outputs leaves the function with its graph (it returns, yields
        or stores only numbers, indices, strings, detached copies: ``.item()``, ``.tolist()``,
        ``argmax``, ``float(...)``) and it reads some output as such a value; True when an output
        may leave it with its graph (returned, yielded, stored on ``self``, a parameter or a global,
        or handed to a call that may keep it: ``self.log("val_loss", loss)``); None when it cannot
        tell: no model call, outputs read only for their shape (a probe), or an output turned into
        an array with ``.numpy()`` (which raises on a tensor that records a graph, so grad is off
        where it runs). A function that hands out nothing differentiable cannot be trained on by
        any caller: with autograd on, the graphs of its model calls are recorded for nothing."""
        if not isinstance(fn, cst.FunctionDef):
            return None
        key = id(fn)
        if key not in self._handed_out:
            self._handed_out[key] = _hands_out(self, fn)
        return self._handed_out[key]

    def inference_loop_calls(self, loop: cst.CSTNode) -> list[cst.Call]:
        """The model calls of a loop that runs the model over what its target picks (``chunk = audio[i:i +
        n]; model(chunk).item()``) or over its own output (a generation loop, see :meth:`generation_calls`)
        in a function that hands out nothing differentiable (:meth:`hands_out_gradient` is False) and
        trains nothing: every graph the loop records is thrown away. Empty otherwise."""
        model = self.model
        if not isinstance(loop, (cst.For, cst.While)):
            return []
        fn = model.enclosing_function(loop)
        calls = [node for node in self.body_nodes(loop) if type(node) is cst.Call and self.is_model_call(node)
                 and model.enclosing_loops(node)[:1] == [loop]]
        if not calls or not isinstance(fn, cst.FunctionDef) or fn.name.value in ("forward", "__init__"):
            return []
        if any(e.kind in (BACKWARD, STEP) for e in model.training.function_events(fn)) \
                or any(model.enclosing_function(c) is fn and any(e.kind in (BACKWARD, STEP) for e in events)
                       for c, events in model.fact(Summaries).helper_calls()) \
                or not self._is_evaluation(loop) or self.hands_out_gradient(fn) is not False:
            return []
        generated = {id(c) for c, _ in self.generation_calls(loop)}
        rebuilt = {n for node in self.body_nodes(loop) if isinstance(node, cst.Assign)
                   for t in node.targets for n in _bound(t.target)}
        # a model built anew in each iteration (`for arch in names: model = build(arch); model(img)`) runs
        # once: a one-off per model, not an inference loop
        return [c for c in calls if (id(c) in generated or isinstance(loop, cst.For) and self._indexed_by(c, loop))
                and self._runs_a_module(c) and _root_name(forward_target(c.func)) not in rebuilt]

    def _runs_a_module(self, call: cst.Call) -> bool:
        """A model call whose callee is no function imported or defined under a model's name
        (``query_chat_model(...)``, ``load_model(path)``): a value, not a ``def``."""
        func = forward_target(call.func)
        if not isinstance(func, cst.Name):
            return True
        bindings = self.model.lookup(func.value, self.model.scope_at(func)) or []
        return not any(b.kind == IMPORT or isinstance(b.node, (cst.FunctionDef, cst.ClassDef)) for b in bindings)

    def evaluation_step_call(self, call: cst.Call) -> bool:
        """``call`` runs the model once, outside loops, in a function named for evaluating
        (``evaluate_batch``, ``validation_step``, ``EvaluatingModel``) that trains nothing, feeds the model
        what a parameter hands it (a batch, not a constant: a shape probe), and hands out nothing
        differentiable (:meth:`hands_out_gradient` is False): an evaluation step whose graph no caller
        can use."""
        model = self.model
        if not call.args:
            return False
        # the function's name first: it is asked of every call of the file, and most functions are not steps
        fn = model.enclosing_function(call)
        if not isinstance(fn, cst.FunctionDef) or not _EVALUATION_STEP_NAME.search(fn.name.value):
            return False
        if model.enclosing_loops(call) or not self.is_model_call(call) or not self._runs_a_module(call):
            return False
        if any(e.kind in (BACKWARD, STEP) for e in model.training.function_events(fn)) \
                or any(model.enclosing_function(c) is fn and any(e.kind in (BACKWARD, STEP) for e in events)
                       for c, events in model.fact(Summaries).helper_calls()) \
                or not self._is_evaluation(fn) or self.hands_out_gradient(fn) is not False:
            return False
        params = {p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)}
        params.discard("self")
        return bool(self._inputs_of(call, fn) & params)

    def runs_module_method(self, call: cst.Call) -> bool:
        """``call`` runs a module through a method named for running it on data: ``model.inference(text)``,
        ``self.model.val_step(batch)``, ``codec.decode(codes)``, ``tagger._predict_scores(batch)`` (not
        ``generate``: a library's generate turns grad off itself). Methods of this file's own classes
        called on ``self`` are helpers, not this."""
        func = call.func
        if not call.args or not isinstance(func, cst.Attribute) or not _RUNNING_METHOD.match(func.attr.value):
            return False
        receiver = func.value
        if isinstance(receiver, cst.Name) and receiver.value in ("self", "cls"):
            return False
        return isinstance(receiver, (cst.Name, cst.Attribute)) and self.holds_module(receiver) \
            and self.model.local_function(func) is None

    def eval_declared_run(self, call: cst.Call) -> bool:
        """``call`` runs a module (a call of it, or :meth:`runs_module_method`) outside loops, after its
        function put that module in eval mode (``model.eval(); _, _, att = model.inference(text)``), in a
        function that trains nothing and hands out nothing differentiable (:meth:`hands_out_gradient` is
        False: it plots, prints or returns numbers). The eval() declares an inference and no caller can
        train on what it hands out."""
        model = self.model
        fn = model.enclosing_function(call)
        if not isinstance(fn, cst.FunctionDef) or fn.name.value in ("forward", "__init__") \
                or not self.eval_receivers(call):
            return False  # cheap first: most calls sit in no function that put a module in eval mode
        if model.enclosing_loops(call) or not (self.is_model_call(call) or self.runs_module_method(call)):
            return False
        target = forward_target(call.func) if self.is_model_call(call) else call.func.value
        if dotted(target) not in self.eval_receivers(call) or self._trains_in(fn):
            return False
        return self.hands_out_gradient(fn) is False

    def evaluation_method_run(self, call: cst.Call) -> bool:
        """``call`` runs a module once, outside loops, in a method named for evaluating (``validate``,
        ``val``, ``validation_step``, ``evaluate``) of a class whose other methods train (a backward, an
        optimizer step, an optimizer handed to a call), after the method put that module in eval mode
        (``self.module_.eval()``): directly, through a method of the module (:meth:`runs_module_method`) or
        through a method of this class that calls it (``self.infer(x)``). The trainer's own evaluation
        pass, whatever it hands back, runs with autograd on."""
        model = self.model
        if model.enclosing_loops(call) or not call.args:
            return False
        fn = model.enclosing_function(call)
        if not isinstance(fn, cst.FunctionDef) or not _EVALUATION_METHOD_NAME.match(fn.name.value):
            return False
        owner = self._class_of(fn)
        if owner is None:
            return False
        switched = self.eval_receivers(call)
        if not switched:
            return False
        if self.is_model_call(call):
            targets = [forward_target(call.func)]
        elif self.runs_module_method(call):
            targets = [call.func.value]
        else:
            helper = self.model.fact(Summaries).local_function(call.func) \
                if isinstance(call.func, (cst.Name, cst.Attribute)) else None
            if helper is None or helper is fn or self._class_of(helper) is not owner:
                return False
            targets = [forward_target(c.func) for c in self._helper_model_calls(helper)]
        if not any(dotted(t) in switched for t in targets) or self._trains_in(fn):
            return False
        return any(self._trains_in(other) for other in model.within(cst.FunctionDef, owner)
                   if other is not fn and self._class_of(other) is owner)

    def _trains_in(self, fn: cst.FunctionDef) -> bool:
        """``fn`` trains: a backward or an optimizer step of its own or of a helper it calls, or an optimizer
        handed to a call (``self.model.train_step(batch, self.optimizer)``)."""
        model = self.model
        if any(e.kind in (BACKWARD, STEP) for e in model.training.function_events(fn)) \
                or any(model.enclosing_function(c) is fn and any(e.kind in (BACKWARD, STEP) for e in events)
                       for c, events in model.fact(Summaries).helper_calls()):
            return True
        return any(model.enclosing_function(c) is fn and any(
            isinstance(a.value, (cst.Name, cst.Attribute)) and model.kind_of(a.value) in _STEPPERS for a in c.args)
            for c in model.within(cst.Call, fn))

    def repeated_step(self, fn: cst.FunctionDef) -> bool:
        """``fn`` is a step that runs once per item: named for evaluating (``evaluate_batch``,
        ``validation_step``: one batch of a pass over held-out data), or called from inside a loop of this
        file (``for path in images: finder.detect_image(path)``). A one-off prediction (``predict(net,
        sentence)`` in a tutorial) records one small graph: worth little."""
        if _EVALUATING_NAME.match(fn.name.value):
            return True
        model = self.model
        return any(model.enclosing_loops(site) for site in (*self.call_sites(fn), *self.instance_call_sites(fn)))

    def _inputs_of(self, call: cst.Call, fn: cst.FunctionDef) -> set[str]:
        """The names an argument of ``call`` is computed from, through the assignments and loops of ``fn``."""
        values: dict[str, list[cst.CSTNode]] = {}
        for node in self.body_nodes(fn):
            if isinstance(node, cst.Assign):
                for t in node.targets:
                    for name in names_in(t.target):
                        values.setdefault(name, []).append(node.value)
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign)) and node.value is not None:
                for name in names_in(node.target):
                    values.setdefault(name, []).append(node.value)
            elif isinstance(node, cst.For):
                for name in names_in(node.target):
                    values.setdefault(name, []).append(node.iter)
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                    and node.func.attr.value in _STORING_METHODS and node.args:
                for name in _bound(node.func.value):  # images.append(photo)
                    values.setdefault(name, []).extend(a.value for a in node.args)
        return _names_behind(call, lambda name: values.get(name, ()))

    # ---------------------------------------------------- generation loops
    def generation_calls(self, loop: cst.CSTNode) -> list[tuple[cst.Call, bool]]:
        """The model calls of a loop that feeds the model its own output: sampling, decoding,
        a diffusion sampler (``for t in steps: eps = model(x, t); x = update(x, eps)``), each
        with whether the output comes back through a discrete choice (``argmax``,
        ``multinomial``, ``topk``, ``.item()``, ``.data``, ``detach()``): a token or an index,
        which no gradient flows through, so the loop cannot be a recurrent forward pass.

        The loop iterates no data (data loops are judged by :meth:`evaluation_calls`), nothing
        in its function trains (no backward, no optimizer step, no loss handed back), and an
        input of the call in the next iteration is computed from its output in this one,
        through tensor arithmetic, torch functions, tensor methods and the module's own calls
        (``tokens = torch.cat([tokens, logits.argmax(-1)])``, ``xs.append(x_next)``,
        ``token.data.fill_(index)``). A value that goes through anything else (``obs =
        env.step(action)``: an environment's observation) ends the chain: such loops are left alone.
        """
        key = id(loop)
        found = self._generation_calls.get(key)
        if found is not None:
            return found
        found = self._generation_calls[key] = []
        model = self.model
        if not isinstance(loop, (cst.For, cst.While)):
            return found
        body = self.body_nodes(loop)
        # the loop's own model calls first: most loops have none, and the questions below cost more
        calls = [node for node in body if type(node) is cst.Call and self.is_model_call(node)
                 and model.enclosing_loops(node)[:1] == [loop]]
        if not calls or self.is_data_loop(loop):
            return found
        fn = model.enclosing_function(loop)
        if any(e.kind in (BACKWARD, STEP) for e in model.training.function_events(fn)) \
                or not self._is_evaluation(loop):
            return found
        flows: list[tuple[set[str], cst.CSTNode]] = []  # (names bound, the value they get)
        for node in body:
            if isinstance(node, cst.Assign):
                flows.append(({n for t in node.targets for n in _bound(t.target)}, node.value))
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign)) and node.value is not None:
                flows.append((_bound(node.target), node.value))
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.args:
                method = node.func.attr.value
                if method in ("append", "extend", "insert"):
                    flows.append((_bound(node.func.value), node.args[-1].value))  # xs.append(x_next)
                elif method.endswith("_") and not method.startswith("_"):
                    flows.append((_bound(node.func.value), node))  # token.data.fill_(index): in place
        # what each value computes with, and whether it chooses, asked once per loop
        reading = [(bound, self._tensor_reads(value), _chooses(value)) for bound, value in flows]
        for call in calls:
            # 1: computed from the call's output; 2: through a discrete choice
            level = {n: 1 for bound, value in flows if value is call or model.is_inside(call, value) for n in bound}
            changed = True
            while changed:
                changed = False
                for bound, reads, chooses in reading:
                    got = max((level.get(n, 0) for n in reads), default=0)
                    if got == 1 and chooses:
                        got = 2
                    for n in bound:
                        if got > level.get(n, 0):
                            level[n] = got
                            changed = True
            fed = max((level.get(n, 0) for n in self._call_inputs(call, flows)), default=0)
            if fed:
                found.append((call, fed == 2))
        return found

    def _call_inputs(self, call: cst.Call, flows: list[tuple[set[str], cst.CSTNode]]) -> set[str]:
        """The names an argument of ``call`` is computed from, through the loop's assignments."""
        return _names_behind(call, lambda name: [value for bound, value in flows if name in bound])

    def _tensor_reads(self, expr: cst.CSTNode) -> set[str]:
        """The names whose tensors ``expr`` computes with: operands, subscripts, the receiver of a
        method, and the arguments of torch functions and of the module's own calls; not the
        arguments of other calls (``env.step(action)`` hands back an observation, no tensor of
        the model's)."""
        out: set[str] = set()
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Name):
                out.add(node.value)
            elif isinstance(node, cst.Attribute):
                stack.append(node.value)
            elif isinstance(node, cst.Call):
                func = node.func
                if isinstance(func, cst.Attribute):
                    stack.append(func.value)  # logits.argmax(-1), x.to(device)
                q = self.model.qualified_name(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
                if q is not None and q.startswith("torch.") or self.is_model_call(node) \
                        or isinstance(func, cst.Attribute) and self._is_module(func.value):
                    stack.extend(a.value for a in node.args)
            elif isinstance(node, cst.Arg):
                stack.append(node.value)
            elif not isinstance(node, cst.Lambda):
                stack.extend(node.children)
        return out

    def _is_module(self, expr: cst.CSTNode) -> bool:
        """``expr`` holds a module (``self.decoder``, ``model``, ``self`` in a module class)."""
        if isinstance(expr, (cst.Name, cst.Attribute)) and self.model.kind_of(expr) == MODULE:
            return True
        return isinstance(expr, cst.Name) and self._is_self_module(expr)

    def _trained_by_sibling(self, loop: cst.For) -> set[str]:
        """The models (dotted spellings) that an earlier top-level loop of ``loop``'s function trains
        (calls, then backward or step in the same loop), when ``loop`` is itself a top-level loop of
        that function: the function's training pass, followed by a pass that only scores."""
        model = self.model
        fn = model.enclosing_function(loop)
        if not isinstance(fn, cst.FunctionDef) or model.enclosing_loops(loop):
            return set()
        facts = model.training
        out: set[str] = set()
        for other in model.within(cst.For, fn):
            if other is loop or model.enclosing_loops(other) or model.enclosing_function(other) is not fn \
                    or model.order[id(other)] > model.order[id(loop)] or not facts.is_training_loop(other):
                continue
            for node in self.body_nodes(other):
                if isinstance(node, cst.Call) and self.is_model_call(node) \
                        and (text := dotted(forward_target(node.func))) is not None:
                    out.add(text)
        return out

    def _indexed_by(self, call: cst.Call, loop: cst.For) -> bool:
        """An argument of ``call`` is computed from ``loop``'s target, through the assignments of
        the loop's body (``batch = x[i:i + n]; model(batch)``)."""
        targets = names_in(loop.target)
        values: dict[str, list[cst.BaseExpression]] = {}
        for node in self.body_nodes(loop):
            if isinstance(node, cst.Assign):
                for t in node.targets:
                    for name in names_in(t.target):
                        values.setdefault(name, []).append(node.value)
        todo = [n for a in call.args for n in names_in(a.value)]
        seen: set[str] = set()
        while todo and len(seen) < 64:
            name = todo.pop()
            if name in targets:
                return True
            if name in seen:
                continue
            seen.add(name)
            for value in values.get(name, ()):
                todo.extend(names_in(value))
        return False

    def left_in_train_mode(self, loop: cst.For) -> list[tuple[cst.Call, str, str]]:
        """The module calls of an evaluation loop over data whose module its function forgot: the
        function put other modules in eval mode before the loop, not this one, and this file puts
        it in train mode elsewhere (``model.eval()`` then ``predictor(h)``, with ``predictor.train()``
        in the training function). Each as (call, the module's spelling, a module that was switched)."""
        if not self.is_data_loop(loop):
            return []
        switched = self.eval_receivers(loop)
        if not switched:
            return []
        model = self.model
        fn = model.enclosing_function(loop)
        # An evaluation function: nothing in it trains (a training loop may set a frozen part to eval
        # mode), and it sets no mode on the forgotten module itself.
        if any(e.kind in (BACKWARD, STEP) for e in model.training.function_events(fn)):
            return []
        own = {dotted(call.func.value) for _, call, _ in self._modes_by_function.get(id(fn), ())
               if mode_call(call) is not None}
        trained = self._trained_spellings() - own
        if not trained:
            return []
        out = []
        for call in self.body_nodes(loop):
            if not isinstance(call, cst.Call) or self._innermost_data_loop(call) is not loop:
                continue
            text = dotted(forward_target(call.func))
            if text in trained and not any(text.startswith(s + ".") or s.startswith(text + ".") for s in switched):
                out.append((call, text, sorted(switched)[0]))
        return out if out and self._is_evaluation(loop) else []

    def trained_never_evaluated(self, loop: cst.CSTNode, calls: list[cst.Call]) -> list[cst.Call]:
        """The model calls of the evaluation loop ``loop`` (``calls``) whose model this file trains and
        never switches to eval mode: it is put in train mode here (``model.train()``), or an earlier
        loop of the same function trains it, and nothing in the file calls ``eval()``,
        ``train(<anything but True>)`` or enters a context manager named for eval mode. Such a model
        is in training mode when the loop scores it. Spellings put in train mode elsewhere in the file
        count only when every caller of the loop's function is known."""
        if not calls:
            return []
        trained = self.never_evaluated_spellings(loop)
        return [c for c in calls if dotted(forward_target(c.func)) in trained]

    def never_evaluated_spellings(self, loop: cst.CSTNode) -> set[str]:
        """The models (dotted spellings) that are in training mode when ``loop`` runs, by the reasoning of
        :meth:`trained_never_evaluated`: trained or restored on a path this file shows, or put in train
        mode here, and never switched to eval mode anywhere in the file."""
        if not self._never_evaluates():
            return set()
        fn = self.model.enclosing_function(loop)
        # trained on a path this file shows: by an earlier loop of the function, or by a caller that
        # trains it and then hands it over
        trained = self.trained_by_callers(fn)
        if isinstance(loop, cst.For):
            trained = trained | self._trained_by_sibling(loop)
        trained = trained | self.restored_for_inference(loop, state_dict_only=True)  # built in train mode
        if not isinstance(fn, cst.FunctionDef) or self.caller_contexts(fn) is not None:
            # put in train mode somewhere in the file, same spelling: the same model when every caller
            # of the function is known (a script's loop, a method, a function of a script)
            trained = trained | self._trained_spellings()
        return trained

    def trained_by_callers(self, fn: cst.CSTNode | None) -> set[str]:
        """The parameters of ``fn`` that a caller in this file hands a model it has just trained: before
        the call, the same caller calls a function of this file that trains (backward, an optimizer
        step) with that model among its arguments (``train(model, ...)`` then ``test(model, ...)``)."""
        if not isinstance(fn, cst.FunctionDef):
            return set()
        model = self.model
        helpers = model.fact(Summaries)
        out: set[str] = set()
        for site in self.call_sites(fn):
            given = {text: name for name, value in bind_arguments(site, fn).items()
                     if value is not None and (text := dotted(value)) is not None}
            if not given:
                continue
            for other in helpers.training_calls_beside(site, fn, after=False):
                for arg in other.args:
                    name = given.get(dotted(arg.value) or "")
                    if name is not None:
                        out.add(name)
        return out

    def never_evaluates(self) -> bool:
        """Nothing in this file can switch a module to eval mode (see :meth:`_never_evaluates`)."""
        return self._never_evaluates()

    def _never_evaluates(self) -> bool:
        """Nothing in this file can switch a module to eval mode: no ``eval()`` call (on anything), no
        ``train(x)`` with ``x`` other than ``True``, no ``with`` block entering a context manager named for
        eval mode, no helper of another file spelled like one (``set_eval(model)``)."""
        if self._no_eval is None:
            found = True
            for call in self.model.nodes(cst.Call):
                func = call.func
                leaf = func.attr.value if isinstance(func, cst.Attribute) else \
                    func.value if isinstance(func, cst.Name) else None
                if leaf is None:
                    continue
                if leaf == "eval" and isinstance(func, cst.Attribute) or _EVAL_CONTEXT.search(leaf) \
                        or _MODE_SWITCH_NAME.search(leaf):
                    found = False
                elif leaf == "train" and isinstance(func, cst.Attribute) and call.args \
                        and not (isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "True"):
                    found = False
                if not found:
                    break
            self._no_eval = found
        return self._no_eval

    def forgotten_after_eval(self, call: cst.Call) -> tuple[str, str] | None:
        """(the module, a module switched) when ``call`` runs a module that its function forgot in an
        evaluation block: the function put another module in eval mode just before (``net.eval()``,
        with no backward or optimizer step between it and the call, in the same loops), while the
        last mode the function set on this module, before that ``eval()``, is ``train()``
        (``style_encoder.train()`` inside the training loop, ``style_encoder(ref)`` after
        ``net.eval()``). None otherwise."""
        model = self.model
        fn = model.enclosing_function(call)
        own = self._modes_by_function.get(id(fn)) if self.mode_calls() else None
        # the callee needs no kind: train() was called on it (checked below)
        if not own or not isinstance(call.func, (cst.Name, cst.Attribute)):
            return None
        text = dotted(forward_target(call.func))
        if text is None:
            return None
        index = model.order[id(call)]
        loops = model.enclosing_loops(call)
        switch = None
        for i, mode_at, _ in own:
            if i >= index:
                break
            mode = mode_call(mode_at)
            receiver = dotted(mode_at.func.value) if mode is not None else None
            if receiver is None:
                continue
            if receiver == text or text.startswith(receiver + ".") or receiver.startswith(text + "."):
                switch = None  # this module's own switch after any other: nothing forgotten since
                continue
            if mode == EVAL and model.enclosing_loops(mode_at) == loops:
                switch = (i, receiver)
        # nothing trains from the switch to the end of the outermost loop's iteration (or of the function): an
        # evaluation block, not a step whose loss a later backward() takes
        if switch is None:
            return None
        end = loops[-1] if loops else fn
        events = model.training.events_within(end) if end is not None else model.training.events
        if any(e.kind in (BACKWARD, STEP) and e.index > switch[0] for e in events):
            return None
        last = None
        for i, mode_at, _ in own:
            if i >= switch[0]:
                break
            if mode_call(mode_at) is not None and dotted(mode_at.func.value) == text:
                last = mode_call(mode_at)
        return (text, switch[1]) if last == TRAIN else None

    def inference_method_runs(self, fn: cst.FunctionDef) -> list[cst.Call]:
        """The calls by which an inference method of a module class (``predict``, ``predict_*``,
        ``infer``, ``inference``, ``inference_*``) that no ``forward`` of this file calls runs its own
        module, ``self(x)``/``self.forward(x)`` or a helper of this file that does (see
        :meth:`_helper_model_calls`), when neither the method nor those helpers set a mode: it predicts
        in whatever mode the module was left in (training mode after training)."""
        model = self.model
        modules = model.fact(ModuleFacts)
        if not INFERENCE_METHOD.match(fn.name.value):
            return []
        parent = model.parent(model.parent(fn))
        if not isinstance(parent, cst.ClassDef) or not modules.is_module_class(parent):
            return []
        name = fn.name.value
        if any(isinstance(c.func, cst.Attribute) and c.func.attr.value == name
               and (outer := model.enclosing_function(c)) is not None and getattr(outer, "name", None) is not None
               and outer.name.value == "forward" for c in model.nodes(cst.Call)):
            return []  # a forward of this file runs it (`self.separator.predict_masks(x)`): any mode, training too
        helpers = model.fact(Summaries)
        own = [n for n in helpers.own_nodes(fn) if isinstance(n, cst.Call)]
        if any(mode_call(n) is not None for n in own) or any(
                (last := self.last_mode_before(site, model.enclosing_function(site))) is not None and last[0] == EVAL
                for site in self.call_sites(fn)):
            return []  # it sets a mode, or a caller of this file switched to eval mode before calling it
        out = []
        for call in own:
            if self.is_model_call(call) and dotted(forward_target(call.func)) == "self":
                out.append(call)
                continue
            if not isinstance(call.func, (cst.Name, cst.Attribute)) or dotted(call.func) is None \
                    or not dotted(call.func).startswith("self."):
                continue
            helper = helpers.local_function(call.func)
            if helper is None or helper is fn or any(e.kind in (EVAL, TRAIN) for e in helpers.of(helper).effects):
                continue
            if any(dotted(forward_target(c.func)) == "self" for c in self._helper_model_calls(helper)):
                out.append(call)
        return out

    def _trained_spellings(self) -> set[str]:
        """Spellings of the modules this file puts in train mode with ``m.train()``."""
        return {text for _, call, mode in self.mode_calls()
                if mode == TRAIN and mode_call(call) == TRAIN and (text := dotted(call.func.value)) is not None}

    def is_data_loop(self, loop: cst.CSTNode) -> bool:
        """A ``for`` loop over data (a loader, an iterable spelled like one), or a counting
        ``for`` loop or a ``while`` loop that fetches a batch (see :meth:`fetches_data`)."""
        if isinstance(loop, cst.For):
            return self._iterates_data(loop.iter) or self._fetches_data(loop)
        return isinstance(loop, cst.While) and self._fetches_data(loop)

    def eval_receivers(self, node: cst.CSTNode) -> set[str]:
        """The modules (dotted spellings) that ``node``'s function put in eval mode before it with
        ``m.eval()``/``m.train(False)`` and did not put back in train mode."""
        self.mode_calls()
        region = self.model.enclosing_function(node)
        index = self.model.order[id(node)]
        out: set[str] = set()
        for i, call, _ in self._modes_by_function.get(id(region), ()):
            if i >= index:
                break
            mode = mode_call(call)
            text = dotted(call.func.value) if mode is not None else None  # a helper's call names no module
            if text is None:
                continue
            if mode == EVAL:
                out.add(text)
            else:
                out.discard(text)
        return out

    def evaluation_helper_calls(self, loop: cst.For) -> list[tuple[cst.Call, cst.Call]]:
        """For an evaluation loop whose model runs one or two helper calls deep (``for batch in
        val_loader: self.eval_step(batch)``): (the helper's call in the loop, the model call
        in the helper, see :meth:`_helper_model_calls`) pairs. Empty when the loop calls the model itself (see
        :meth:`evaluation_calls`) or a helper trains."""
        key = id(loop)
        if key in self._helper_calls:
            return self._helper_calls[key]
        out: list[tuple[cst.Call, cst.Call]] = []
        model = self.model
        if not self.evaluation_calls(loop) and self.is_data_loop(loop):
            helpers = model.fact(Summaries)
            for node in self.body_nodes(loop):
                if not isinstance(node, cst.Call) or self._innermost_data_loop(node) is not loop \
                        or not isinstance(node.func, (cst.Name, cst.Attribute)):
                    continue
                fn = helpers.local_function(node.func)
                if fn is None:
                    continue
                # a module clearing its own gradients (`self.zero_grad()` at the top of its forward)
                # prepares no step; an optimizer's zero_grad() in a helper is a training step we cannot see
                if any(e.kind in (BACKWARD, STEP) or e.kind == CLEAR and e.target != "self"
                       for e in helpers.of(fn).effects):
                    out = []
                    break  # a training step in a helper: not an evaluation loop
                out.extend((node, inner) for inner in self._helper_model_calls(fn))
            if out and not self._is_evaluation(loop):
                out = []
        self._helper_calls[key] = out
        return out

    def _helper_model_calls(self, fn: cst.FunctionDef) -> list[cst.Call]:
        """The model calls a helper makes outside loops of its own (a helper's own loop is judged there):
        its own, else those of the helpers it calls outside loops, one level down (``eval_batch(batch)``
        calling ``self.model_forward(batch)``)."""
        model = self.model
        helpers = model.fact(Summaries)
        own = [inner for inner in helpers.own_nodes(fn)
               if isinstance(inner, cst.Call) and not model.enclosing_loops(inner)]
        found = [inner for inner in own if self.is_model_call(inner)]
        if found:
            return found
        for inner in own:  # grad turned off around a call here reaches the deeper call (see in_no_grad)
            if not isinstance(inner.func, (cst.Name, cst.Attribute)):
                continue
            deeper = helpers.local_function(inner.func)
            if deeper is not None and deeper is not fn:
                found.extend(c for c in helpers.own_nodes(deeper) if isinstance(c, cst.Call)
                             and self.is_model_call(c) and not model.enclosing_loops(c))
        return found

    def _innermost_data_loop(self, call: cst.Call) -> cst.For | None:
        for lp in self.model.enclosing_loops(call):
            if self.is_data_loop(lp):
                return lp
        return None

    def is_evaluation(self, loop: cst.CSTNode) -> bool:
        """Nothing in ``loop`` trains: no backward(), no optimizer step, no optimizer handed to a call, no
        gradients asked for, and its function is no forward nor hands a loss back."""
        return self._is_evaluation(loop)

    def indexed_by(self, call: cst.Call, loop: cst.For) -> bool:
        """An argument of ``call`` is computed from ``loop``'s target (see :meth:`_indexed_by`)."""
        return self._indexed_by(call, loop)

    def holds_module(self, expr: cst.CSTNode) -> bool:
        """``expr`` holds a module: of a module kind, or a name an optimizer takes the parameters of."""
        return self._is_module(expr) or isinstance(expr, cst.Name) \
            and self._binding_key(expr) in self._optimized_names()

    def _is_evaluation(self, loop: cst.For) -> bool:
        model = self.model
        facts = model.training
        if facts.is_training_loop(loop):
            return False
        fn = model.enclosing_function(loop)
        if isinstance(fn, cst.FunctionDef) and (fn.name.value == "forward" or id(fn) in facts.step_closures()
                                                or self._returns_loss(fn)):
            return False
        for node in self.body_nodes(loop):
            if not isinstance(node, cst.Call):
                continue
            func = node.func
            if isinstance(func, cst.Attribute):
                method = func.attr.value
                if method in ("requires_grad_", "backward"):
                    return False  # also distributed autograd's backward(context_id, losses)
                if method == "step" and self._steps_environment(node):
                    return False  # a rollout: what the policy computes may be trained on (log-probs)
                if method == "zero_grad" and not self._scored_without_grad(loop):
                    return False  # gradients cleared for a step to come, unless no model call can make any
                if method == "step" and model.kind_of(func.value) in _STEPPERS:
                    return False
            q = model.qualified_name(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
            if q is not None and q.startswith(("torch.autograd.grad", "torch.autograd.functional.")):
                return False  # gradients with respect to the inputs are the point
            for arg in node.args:
                if isinstance(arg.value, (cst.Name, cst.Attribute)) and model.kind_of(arg.value) in _STEPPERS:
                    return False  # loss_scaler(loss, optimizer): a training step we cannot see into
        return True

    def feeds_model(self, value: cst.CSTNode) -> bool:
        """What ``value`` computes may reach a forward: it is inside the arguments of a model call, or
        of a call that is neither a loss nor a torch or builtin function (``encoder(Variable(x))``), or
        it is assigned to names that a later such call of the same function reads (``inp =
        Variable(x); net(inp)``). A value stored on an object (``self.priors = Variable(...)``, a
        constant) or handed only to a loss (the targets) feeds no forward."""
        model = self.model
        for anc in model.ancestors(value):
            if isinstance(anc, cst.Call) and anc is not value and self._may_run_model(anc):
                return True
            if isinstance(anc, (cst.SimpleStatementLine, cst.FunctionDef)):
                break
        parent = model.parent(value)
        if not isinstance(parent, cst.Assign) or not all(isinstance(t.target, cst.Name) for t in parent.targets):
            return False
        targets = {t.target.value for t in parent.targets}
        fn = model.enclosing_function(value)
        after = model.order[id(parent)]
        return any(model.order[id(c)] > after and model.enclosing_function(c) is fn and self._may_run_model(c)
                   and any(targets & names_in(a.value) for a in c.args)
                   for c in (self.body_nodes(fn) if fn is not None else model.nodes(cst.Call))
                   if isinstance(c, cst.Call))

    def _may_run_model(self, call: cst.Call) -> bool:
        if self.is_model_call(call):
            return True
        func = call.func
        if not isinstance(func, (cst.Name, cst.Attribute)) or self.model.kind_of(func) == LOSS:
            return False
        q = self.model.qualified_name(func) or ""
        return not q.startswith(("torch.", "builtins.")) and not (isinstance(func, cst.Attribute)
                                                                and func.attr.value in TENSOR_METHODS)

    def _steps_environment(self, call: cst.Call) -> bool:
        """``call`` (a ``.step(...)``) steps an environment: ``env.step(action)``, or a step whose result
        unpacks into an observation, a reward, a done flag and more (``s, r, done, info = world.step(a)``).
        A loop around it is a rollout fed by the environment's observations, not data to evaluate."""
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
        if receiver is None or self.model.kind_of(receiver) in _STEPPERS:
            return False
        if re.search(r"env", dotted(receiver) or "", re.I):
            return True
        parent = self.model.parent(call)
        return isinstance(parent, cst.Assign) and any(
            isinstance(t.target, (cst.Tuple, cst.List)) and len(t.target.elements) >= 4 for t in parent.targets)

    def _scored_without_grad(self, loop: cst.CSTNode) -> bool:
        """Every model call of ``loop`` runs under ``no_grad()`` (there is at least one): nothing the
        loop computes can be trained, so a stray ``optimizer.zero_grad()`` in it is no training step."""
        model = self.model
        calls = [n for n in self.body_nodes(loop) if isinstance(n, cst.Call) and self.is_model_call(n)]
        return bool(calls) and all(model.in_no_grad(c) for c in calls)

    def _returns_loss(self, fn: cst.FunctionDef) -> bool:
        """``fn`` hands a loss back to its caller (``return loss.mean()``): a backward comes there."""
        model = self.model
        return any(isinstance(node, cst.Return) and node.value is not None and model.kind_of(node.value) == LOSS
                   for node in self.body_nodes(fn))

    def fetches_data(self, loop: cst.CSTNode) -> bool:
        """A loop that takes its data inside rather than from its iterable: a counting loop
        (``range``, also wrapped: ``tqdm(range(n))``) or a ``while`` loop that assigns a fetched
        batch (``X, Y = get_batch("val")``, ``batch = batcher.next_batch()``), or a counting loop
        that indexes data by its target (``mix = test_set[idx]``)."""
        return self._fetches_data(loop)

    def _fetches_data(self, loop: cst.CSTNode) -> bool:
        key = id(loop)
        if key not in self._fetches:
            found = False
            counting = isinstance(loop, cst.For) and self._counts(loop.iter)
            if counting or isinstance(loop, cst.While):
                targets = names_in(loop.target) if counting else set()
                for node in self.body_nodes(loop):
                    if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call) \
                            and (text := dotted(node.value.func)) is not None \
                            and _FETCH_NAME.search(text.rsplit(".", 1)[-1]):
                        found = True
                    elif targets and isinstance(node, cst.Assign) \
                            and any(self._indexes_data(sub, targets) for sub in _subscripts(node.value)):
                        found = True  # mix = to_device(test_set[idx]): the loop walks data by its index
                    if found:
                        break
            self._fetches[key] = found
        return self._fetches[key]

    def _indexes_data(self, node: cst.Subscript, targets: set[str]) -> bool:
        """``node`` picks an item of data (spelled as data) by one of the loop's ``targets``."""
        index = node.slice[0].slice if len(node.slice) == 1 else None
        if isinstance(index, cst.Index):
            read = names_in(index.value)
        elif isinstance(index, cst.Slice):  # samples[i:i + step]
            read = {n for part in (index.lower, index.upper) if part is not None for n in names_in(part)}
        else:
            return False
        return bool(read & targets) and self._iterates_data(node.value)

    def _counts(self, expr: cst.BaseExpression) -> bool:
        """``expr`` counts: ``range(n)``, also inside a wrapper that keeps its items (``tqdm(range(n))``)."""
        for _ in range(3):
            if not isinstance(expr, cst.Call) or not isinstance(expr.func, (cst.Name, cst.Attribute)):
                return False
            if isinstance(expr.func, cst.Name) and self.model.qualified_name(expr.func) == "builtins.range":
                return True
            text = dotted(expr.func)
            if text is not None and text.rsplit(".", 1)[-1] == "trange":  # tqdm's range
                return True
            first = next((a.value for a in expr.args if a.keyword is None and not a.star), None)
            if text is None or text.rsplit(".", 1)[-1] not in _ITER_WRAPPERS or first is None:
                return False
            expr = first
        return False

    def iterates_data(self, expr: cst.CSTNode) -> bool:
        """``expr`` is data to iterate: a loader, ``loaders["dev"]``, an iterable spelled like one."""
        return self._iterates_data(expr)

    def _iterates_data(self, expr: cst.CSTNode, depth: int = 0) -> bool:
        if depth > 3:
            return False
        if isinstance(expr, cst.Call):
            text = dotted(expr.func)
            leaf = text.rsplit(".", 1)[-1] if text else None
            if leaf in _ITER_WRAPPERS:
                return any(a.keyword is None and not a.star and self._iterates_data(a.value, depth + 1)
                           for a in expr.args)
            return bool(leaf) and _DATA_NAME.search(leaf) is not None  # self.val_dataloader()
        if isinstance(expr, cst.Subscript):
            if self.model.kind_of(expr) == LOADER:  # loaders["dev"] from a literal
                return True
            # self.loaders["valid"] filled elsewhere: the container's spelling, as for names
            text = dotted(expr.value)
            return text is not None and _LOADERS_NAME.search(text.rsplit(".", 1)[-1]) is not None
        if isinstance(expr, (cst.Name, cst.Attribute)):
            if self.model.kind_of(expr) == LOADER:
                return True
            text = dotted(expr)
            return text is not None and _DATA_NAME.search(text.rsplit(".", 1)[-1]) is not None
        return False

    # --------------------------------------------------- drawn batches
    def drawn_from(self, expr: cst.CSTNode, _depth: int = 0) -> cst.CSTNode | None:
        """The data a batch was drawn from with ``next(iter(<data>))``, ``next(enumerate(<data>))``
        or ``next(<it>)`` where ``it = iter(<data>)``, followed through the latest assignment
        before each use, tuple unpacking, subscripts and calls on it (``x.cuda()``,
        ``Variable(x)``, ``x.transpose(2, 1)``); None when ``expr`` is not such a batch."""
        if _depth > _BATCH_DEPTH:
            return None
        model = self.model
        if isinstance(expr, cst.Name):
            value = self._latest_value(expr)
            return None if value is None else self.drawn_from(value, _depth + 1)
        if isinstance(expr, (cst.Subscript, cst.Attribute)):
            return self.drawn_from(expr.value, _depth + 1)
        if not isinstance(expr, cst.Call):
            return None
        func = expr.func
        if isinstance(func, cst.Name) and model.qualified_name(func) == "builtins.next" and expr.args:
            return self._iterator_data(expr.args[0].value, _depth + 1)
        if isinstance(func, cst.Attribute):  # points.cuda(), data.to(device), x.transpose(2, 1)
            return self.drawn_from(func.value, _depth + 1)
        if isinstance(func, cst.Name) and not self.is_model_call(expr):  # Variable(points)
            first = next((a.value for a in expr.args if a.keyword is None and not a.star), None)
            return None if first is None else self.drawn_from(first, _depth + 1)
        return None

    def _iterator_data(self, expr: cst.CSTNode, depth: int) -> cst.CSTNode | None:
        if isinstance(expr, cst.Name) and depth <= _BATCH_DEPTH:  # it = iter(val_loader); next(it)
            value = self._latest_value(expr)
            if value is None:  # made elsewhere: the iterator's own spelling (`valid_iter` as a parameter)
                return expr if self._iterates_data(expr) else None
            found = self._iterator_data(value, depth + 1)
            if found is None and isinstance(value, cst.Call) and self._iterates_data(expr):
                return expr  # made by a call of the project's (`gen_valid = task.batches()`): its own spelling
            return found
        if isinstance(expr, cst.Attribute):  # next(self.valid_dl_iter), made in __init__
            return expr if self._iterates_data(expr) else None
        if isinstance(expr, cst.Call) and expr.args \
                and self.model.qualified_name(expr.func) in ("builtins.iter", "builtins.enumerate"):
            data = expr.args[0].value
            return data if self._iterates_data(data) else None
        return None

    def _latest_value(self, name: cst.Name) -> cst.CSTNode | None:
        """The value of the last assignment to ``name`` before it is read, in its own function:
        for ``a, b = <call>`` the call itself, for ``a, b = x, y`` the matching element."""
        model = self.model
        bindings = model.lookup(name.value, model.scope_at(name))
        if not bindings:
            return None
        index = model.order.get(id(name))
        if index is None:
            index = next((model.order[id(a)] for a in model.ancestors(name) if id(a) in model.order), None)
        if index is None:
            return None
        best = None
        for b in bindings:
            b_index = model.order.get(id(b.node))
            if b_index is not None and b_index <= index and not model.is_inside(name, b.node) \
                    and (best is None or b_index > model.order[id(best.node)]):
                best = b
        if best is None or not isinstance(best.node, cst.Assign):
            return None
        return best.value if best.value is not None else best.node.value

    def loaded_in_eval_mode(self, func: cst.CSTNode) -> bool:
        """The module that ``func`` calls was loaded with ``X.from_pretrained(...)`` (also moved:
        ``.to(device)``, ``.cuda()``), which hands a model back in eval mode (transformers,
        diffusers): ``model = AutoModel.from_pretrained(name); model(**batch)``."""
        target = forward_target(func)
        value = self._latest_value(target) if isinstance(target, cst.Name) else None
        for _ in range(4):
            if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
                return False
            method = value.func.attr.value
            if method == "from_pretrained":
                return True
            if method not in ("to", "cuda", "cpu", "half", "float", "bfloat16"):
                return False
            value = value.func.value
        return False

    def held_out(self, data: cst.CSTNode) -> bool:
        """``data`` is spelled as a test, validation or dev split (``testdataloader``, ``loaders["val"]``)."""
        if isinstance(data, cst.Subscript):
            keys = [e.slice.value for e in data.slice if isinstance(e.slice, cst.Index)]
            if any(isinstance(k, cst.SimpleString) and _HELD_OUT_NAME.search(k.evaluated_value or "")
                   for k in keys):
                return True
            data = data.value
        if isinstance(data, cst.Call):
            data = data.func
        text = dotted(data)
        return text is not None and _HELD_OUT_NAME.search(text.rsplit(".", 1)[-1]) is not None

    # ---------------------------------------------------- mode calls
    def mode_calls(self) -> list[tuple[int, cst.Call, str]]:
        """Every call that sets a model's mode, in document order: (index, call, EVAL or TRAIN).

        ``.eval()`` / ``.train(...)`` calls, and calls of functions of this file
        that leave the mode set (a helper ending in ``model.eval()``).
        """
        if self._mode_calls is None:
            model = self.model
            direct: dict[int, str] = {}  # per function: its last own mode call's mode
            for c in model.nodes(cst.Call):
                m = mode_call(c)
                if m is not None:
                    direct[id(model.enclosing_function(c))] = m
            found = []
            for call in model.nodes(cst.Call):
                mode = mode_call(call)
                if mode is None and isinstance(call.func, (cst.Name, cst.Attribute)):
                    fn = local_function(model, call.func)
                    if fn is not None:
                        # the mode the helper leaves behind: its last own mode call
                        mode = direct.get(id(fn))
                if mode is not None:
                    found.append((model.order[id(call)], call, mode))
            self._mode_calls = found
            self._mode_indices = [i for i, _, _ in found]
            self._mode_call_ids = {id(call) for _, call, _ in found}
            for entry in found:
                self._modes_by_function.setdefault(id(model.enclosing_function(entry[1])), []).append(entry)
        return self._mode_calls

    def mode_calls_within(self, container: cst.CSTNode) -> list[tuple[int, cst.Call, str]]:
        """The :meth:`mode_calls` inside ``container``."""
        found = self.mode_calls()
        return self.model.sorted_within(found, self._mode_indices, container, _call_of)

    def last_mode_before(self, node: cst.CSTNode, region: cst.CSTNode | None) -> tuple[str, cst.Call] | None:
        """The last mode call before ``node`` in the body of ``region`` (a function, or
        None for module level), in document order, with the mode it sets."""
        model = self.model
        index = model.order[id(node)]
        self.mode_calls()
        own = self._modes_by_function.get(id(region), [])
        i = bisect_left(own, index, key=_index_of)
        if i == 0:
            return None
        _, call, mode = own[i - 1]
        return mode, call

    def mode_set_for(self, loop: cst.For) -> bool:
        """A mode call sets the model's mode for ``loop``: one in its body, the last one before
        it in its function (``eval()``, or ``train()`` with no training between it and the
        loop: a deliberate train-mode pass), one before a call of that function in a caller
        (two callers deep), an ``eval()`` before a call of it in another file, or a ``with``
        block around it that switches to eval mode (``with eval_mode(model):``, a context
        manager of this file that calls ``eval()``)."""
        self.mode_calls()
        for inner in self.body_nodes(loop):
            if isinstance(inner, cst.Call) and id(inner) in self._mode_call_ids:
                return True
        if any(self._evaluating_block(a) for a in self.model.ancestors(loop) if isinstance(a, cst.With)):
            return True
        fn = self.model.enclosing_function(loop)
        if self._set_before(loop, fn):
            return True
        if not isinstance(fn, cst.FunctionDef):
            return False
        # A train() before the call of a function that trains before this loop is the training's own
        # mode, not a deliberate train-mode pass over the loop's data (`net.train(); fit(net, ...)`
        # with `fit` training, then validating).
        if self._set_by_callers(fn, 0, deliberate=not self._trains_before(loop, fn)):
            return True
        # a caller in another file of the project set eval mode before calling it
        return self.model.enclosing_function(fn) is None and any(
            "eval" in c for c in self.caller_contexts(fn) or ())

    def _evaluating_block(self, block: cst.With) -> bool:
        """``block`` enters a context manager that puts a model in eval mode: a function of this
        file that calls ``eval()`` (``@contextmanager def evaluating(m): m.eval(); yield``), or,
        for one defined elsewhere, one named for it (``model_eval_mode(model)``, ``eval_mode()``)."""
        for item in block.items:
            call = item.item
            if not isinstance(call, cst.Call) or not isinstance(call.func, (cst.Name, cst.Attribute)):
                continue
            fn = local_function(self.model, call.func)
            if fn is not None:
                if any(isinstance(n, cst.Call) and mode_call(n) == EVAL for n in self.body_nodes(fn)):
                    return True
                continue
            text = dotted(call.func)
            if text is not None and _EVAL_CONTEXT.search(text.rsplit(".", 1)[-1]):
                return True
        return False

    def _trains_before(self, node: cst.CSTNode, fn: cst.FunctionDef) -> bool:
        """``fn`` calls backward() or steps an optimizer before ``node`` (its own statements)."""
        index = self.model.order[id(node)]
        return any(e.kind in (BACKWARD, STEP) and e.index < index for e in self.model.training.function_events(fn))

    def _set_before(self, node: cst.CSTNode, region: cst.CSTNode | None, deliberate: bool = True) -> bool:
        last = self.last_mode_before(node, region)
        if last is None:
            return False
        mode, call = last
        if mode == EVAL:
            return True
        if not deliberate:
            return False
        # train() with no training between it and the loop is a deliberate train-mode pass;
        # a helper that trains (train_one_epoch) is not.
        model = self.model
        helper = local_function(model, call.func) if mode_call(call) is None else None
        start, end = model.order[id(call)], model.order[id(node)]
        facts = model.training
        # a helper of this file called in between that trains (`self.train_step(batch)`) counts too
        stepped = any(start < model.order[id(call)] < end and any(e.kind in (BACKWARD, STEP) for e in events)
                      and model.enclosing_function(call) is region
                      for call, events in model.fact(Summaries).helper_calls())
        return mode == TRAIN and not stepped and not any(
            e.kind in (BACKWARD, STEP)
            for e in (*facts.events_between(start, end), *(facts.events_within(helper) if helper is not None else ())))

    def caller_contexts(self, fn: cst.FunctionDef) -> list[set[str]] | None:
        """What holds at every call of ``fn`` in the project: a set per call, with ``"no_grad"``
        (grad is off there) and ``"eval"`` (the caller's last mode call before it is ``eval()``).
        Calls in this file, and, for a top-level function, in the project's other files (see
        :meth:`~lint_rules.analysis.cross_file.ProjectFacts.caller_contexts`); None when the
        other files' calls cannot be told (a library module with many importers)."""
        model = self.model
        out: list[set[str]] = []
        for site in self.call_sites(fn):
            context = set()
            if model.in_no_grad(site):
                context.add("no_grad")
            last = self.last_mode_before(site, model.enclosing_function(site))
            if last is not None and last[0] == EVAL:
                context.add("eval")
            out.append(context)
        if model.enclosing_function(fn) is not None:  # a method or nested function: this file's calls only
            return out
        project = getattr(model, "project_facts", None)
        remote = project.caller_contexts(fn.name.value) if project is not None else []
        return None if remote is None else out + remote

    def instance_call_sites(self, fn: cst.FunctionDef) -> list[cst.Call]:
        """For a method ``fn`` whose name no other ``def`` of this file has, the calls of that name on
        a value other than ``self`` (``model.inference(x, loader)`` in the script's ``test()``): the
        instance is not traced, the name is the method's own."""
        model = self.model
        if not isinstance(model.parent(model.parent(fn)), cst.ClassDef):  # FunctionDef <- IndentedBlock <- ClassDef
            return []
        name = fn.name.value
        if sum(1 for d in model.nodes(cst.FunctionDef) if d.name.value == name) != 1:
            return []
        return [c for c in model.nodes(cst.Call) if isinstance(c.func, cst.Attribute) and c.func.attr.value == name
                and not (isinstance(c.func.value, cst.Name) and c.func.value.value in ("self", "cls"))]

    def called_with_grad_off(self, fn: cst.FunctionDef) -> bool:
        """Some call of ``fn`` runs with grad off: in this file (see :meth:`caller_contexts`), or, for
        a top-level function, in any other file of the project that imports it, a script or not
        (:meth:`~lint_rules.analysis.cross_file.ProjectFacts.called_with_grad_off`)."""
        if any("no_grad" in c for c in self.caller_contexts(fn) or ()) \
                or any(self.model.in_no_grad(site) for site in self.instance_call_sites(fn)):
            return True
        project = getattr(self.model, "project_facts", None)
        return project is not None and self.model.enclosing_function(fn) is None \
            and project.called_with_grad_off(fn.name.value)

    def _set_by_callers(self, fn: cst.FunctionDef, depth: int, deliberate: bool = True) -> bool:
        for site in self.call_sites(fn):
            caller = self.model.enclosing_function(site)
            if self._set_before(site, caller, deliberate):
                return True
            if depth < 2 and isinstance(caller, cst.FunctionDef) and caller is not fn \
                    and self._set_by_callers(caller, depth + 1, deliberate):
                return True
        return False

    # ---------------------------------------------------- drawn batches
    def drawn_batch_scored(self, call: cst.Call) -> cst.CSTNode | None:
        """The held-out data whose batch the model call ``call`` scores inside a training loop
        (``tx, ty = next(iter(test_loader)); net(tx)``), or None.

        The batch is drawn with ``next(...)`` (see :meth:`drawn_from`); the call is a
        measurement: under no_grad, or on a held-out split (:meth:`held_out`) with no
        backward() after it in the iteration (else it is a second training batch).
        """
        model = self.model
        # cheapest tests first: this runs for every call of the file
        if not call.args or not isinstance(call.func, (cst.Name, cst.Attribute, cst.Subscript)):
            return None
        if self._draws is None:  # a file that never calls next() draws no batch
            self._draws = any(isinstance(c.func, cst.Name) and c.func.value == "next" for c in model.nodes(cst.Call))
        if not self._draws or not self.is_model_call(call):
            return None
        loops = model.enclosing_loops(call)
        if not loops or not any(model.training.is_training_loop(lp) for lp in loops):
            return None
        data = next((d for a in call.args if a.keyword is None and not a.star
                     and (d := self.drawn_from(a.value)) is not None), None)
        if data is None:
            return None
        if not model.in_no_grad(call) and not (self.held_out(data) and not self.backward_after(call, loops[0])):
            return None
        return data

    def held_out_batch_after_eval(self, call: cst.Call) -> cst.CSTNode | None:
        """The held-out data whose batch the model call ``call`` scores after its function put that model
        in eval mode (``model.eval(); wave, = next(self.valid_iter); model(wave)``), with nothing training
        after it in the function: a measurement by declaration. None otherwise."""
        model = self.model
        if not call.args or not isinstance(call.func, (cst.Name, cst.Attribute)):
            return None
        self.mode_calls()  # asked first: most functions put nothing in eval mode, and the rest cost more
        if not any(mode == EVAL for _, _, mode in self._modes_by_function.get(id(model.enclosing_function(call)), ())) \
                or not self.is_model_call(call):
            return None
        text = dotted(forward_target(call.func))
        if text is None or text not in self.eval_receivers(call):
            return None
        data = next((d for a in call.args if a.keyword is None and not a.star
                     and (d := self.drawn_from(a.value)) is not None and self.held_out(d)), None)
        if data is None:
            return None
        fn = model.enclosing_function(call)
        index = model.order[id(call)]
        if any(e.kind in (BACKWARD, STEP) and e.index > index for e in model.training.function_events(fn)) \
                or any(model.order[id(c)] > index and model.enclosing_function(c) is fn
                       and any(e.kind in (BACKWARD, STEP) for e in events)
                       for c, events in model.fact(Summaries).helper_calls()):
            return None
        return data

    def backward_after(self, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """A backward() after ``node`` in the loop's body, also one a helper call runs."""
        model = self.model
        index = model.order[id(node)]
        helpers = model.fact(Summaries)
        # an event call around the model call (`step(loss(net(vx)))`) comes first in document order
        return any(e.kind == BACKWARD and (e.index > index or model.is_inside(node, e.node))
                   for e in (*model.training.loop_events.get(id(loop), ()), *helpers.helper_events(loop)))


# Steps that pick a token or an index from a model's output, or leave autograd: no gradient
# flows back through them.
_CHOICES = frozenset({"argmax", "argmin", "multinomial", "topk", "argsort", "sample", "item", "tolist",
                      "detach", "numpy"})


def _chooses(expr: cst.CSTNode) -> bool:
    """``expr`` makes a discrete choice or leaves autograd: ``logits.argmax(-1)``,
    ``torch.multinomial(p, 1)``, ``out.data``, ``x.detach()``."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call):
            func = node.func
            leaf = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
            if leaf in _CHOICES:
                return True
        elif isinstance(node, cst.Attribute) and node.attr.value == "data":
            return True
        if not isinstance(node, cst.Lambda):
            stack.extend(node.children)
    return False


def _bound(target: cst.CSTNode) -> set[str]:
    """The names an assignment to ``target`` changes: ``x`` for ``x``, ``x[i]`` and ``x.attr``
    (not the index ``i``), each name of a tuple."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Subscript, cst.Attribute)):
        return _bound(target.value)
    if isinstance(target, (cst.Tuple, cst.List)):
        return {n for e in target.elements for n in _bound(e.value)}
    if isinstance(target, cst.StarredElement):
        return _bound(target.value)
    return set()


def _is_false(expr: cst.CSTNode | None) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False"


def _subscripts(expr: cst.CSTNode) -> Iterator[cst.Subscript]:
    """The subscripts in ``expr`` (not in lambdas or comprehensions, which run elsewhere)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Subscript):
            yield node
        if not isinstance(node, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            stack.extend(node.children)


def _call_of(entry: tuple[int, cst.Call, str]) -> cst.CSTNode:
    return entry[1]


def _index_of(entry: tuple[int, cst.Call, str]) -> int:
    return entry[0]


# ------------------------------------------------------- what a function hands out
# Steps whose result carries no gradient from their operand: a Python number or list, an index, a mask,
# a detached copy. `size()`/`dim()` only read the shape (see _SHAPE_ONLY).
_SEVERING_METHODS = frozenset({"item", "tolist", "detach", "argmax", "argmin", "argsort", "size", "dim", "numel",
                               "nelement", "nonzero", "long", "int", "bool", "byte", "eq", "ne", "lt", "le", "gt",
                               "ge", "isnan", "isinf", "isfinite", "multinomial", "data_ptr", "tobytes",
                               "equal", "allclose"})
_SEVERING_BUILTINS = frozenset({"float", "int", "bool", "str", "len", "repr", "isinstance", "print", "format",
                                "hash", "id", "type", "round"})
_SEVERING_TORCH = frozenset({"argmax", "argmin", "argsort", "multinomial", "nonzero", "eq", "ne", "lt", "le", "gt",
                             "ge", "isnan", "isinf", "isfinite", "equal", "allclose", "searchsorted", "bucketize",
                             "count_nonzero"})
_SEVERED_ATTRIBUTES = frozenset({"data", "shape", "dtype", "device", "is_cuda", "indices", "requires_grad", "ndim"})
# Reading only the shape of an output is a probe (`self.backbone(dummy).shape[-1]` in a constructor),
# not a use of its values.
_SHAPE_ONLY = frozenset({"size", "dim", "numel", "nelement", "shape", "dtype", "device", "is_cuda", "ndim",
                         "requires_grad", "data_ptr"})
# `values, indices = x.topk(k)`, `x.max(1)[1]`: the second item of these is an index.
_VALUES_INDICES = frozenset({"max", "min", "sort", "topk", "kthvalue", "mode", "median"})
# Calls that store their argument in their receiver.
_STORING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "put", "put_nowait", "setdefault",
                              "appendleft", "__setitem__"})
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


class _GradientFlow:
    """Which values of one function carry a gradient from its own model calls, and whether any leaves the
    function (see :meth:`FileFacts.hands_out_gradient`)."""

    def __init__(self, facts: "FileFacts", fn: cst.FunctionDef) -> None:
        self.facts = facts
        self.model = facts.model
        self.fn = fn
        self.carry: set[str] = set()
        self.consumed = False  # a model output was read as a value (a number, an index), not only its shape
        self.contradiction = False  # `.numpy()` on a model output: grad must be off where this runs
        self.escapes = False
        self.sources = 0
        params = fn.params
        # `*args` and `**kwargs` are fresh containers of this call: storing in them hands out nothing
        self.params = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}

    # ------------------------------------------------------------------ values
    def carries(self, expr: cst.CSTNode, extra: frozenset[str] = frozenset()) -> bool:
        """``expr`` may hold a tensor whose graph reaches a model call of the function."""
        model = self.model
        if isinstance(expr, cst.Name):
            return expr.value in self.carry or expr.value in extra
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in _SEVERED_ATTRIBUTES:
                self._severed(expr.value, expr.attr.value, extra)
                return False
            return self.carries(expr.value, extra)
        if isinstance(expr, cst.Subscript):
            value = expr.value
            if isinstance(value, cst.Call) and self._picks_indices(value, expr):
                self._severed(value, "indices", extra)
                return False
            return self.carries(value, extra)
        if isinstance(expr, cst.Call):
            return self._call_carries(expr, extra)
        if isinstance(expr, (cst.Comparison, cst.FormattedString, cst.SimpleString, cst.ConcatenatedString,
                             cst.Integer, cst.Float, cst.Imaginary, cst.Lambda)):
            if isinstance(expr, cst.Comparison) and any(
                    self.carries(n, extra) for n in (expr.left, *(c.comparator for c in expr.comparisons))):
                self.consumed = True
            elif isinstance(expr, cst.FormattedString) and any(self.carries(n, extra) for n in expr.parts):
                self.consumed = True
            return False
        if isinstance(expr, cst.FormattedStringExpression):
            return self.carries(expr.expression, extra)
        if isinstance(expr, cst.UnaryOperation):
            inner = self.carries(expr.expression, extra)
            if isinstance(expr.operator, cst.Not):
                self.consumed = self.consumed or inner
                return False
            return inner
        if isinstance(expr, _COMPREHENSIONS):
            return self._comprehension_carries(expr, extra)
        if isinstance(expr, (cst.Yield, cst.Await)):
            return expr.value is not None and not isinstance(expr.value, cst.From) \
                and self.carries(expr.value, extra) if isinstance(expr, cst.Yield) else self.carries(expr.expression, extra)
        found = False
        for child in expr.children:  # operators, containers, conditional expressions, starred items
            if isinstance(child, cst.CSTNode) and self.carries(child, extra):
                found = True
        return found

    def _call_carries(self, call: cst.Call, extra: frozenset[str]) -> bool:
        facts, model = self.facts, self.model
        func = call.func
        if facts.is_model_call(call) and facts._runs_a_module(call) or facts.runs_module_method(call):
            self.sources += 1
            return True
        args = [a.value for a in call.args]
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = self.carries(func.value, extra)
            if method == "numpy" and receiver:
                self.contradiction = True  # a tensor that records a graph cannot become an array
                return False
            if method in _SEVERING_METHODS or method == "sample" and not call.args:
                if receiver or any(self.carries(a, extra) for a in args):
                    self._severed(None, method, extra)
                return False
            q = model.qualified_name(func) or ""
            if q.startswith("numpy."):
                if any(self.carries(a, extra) for a in args):
                    self.consumed = True
                return False
            if q.startswith("torch.") and q.rsplit(".", 1)[-1] in _SEVERING_TORCH:
                if any(self.carries(a, extra) for a in args):
                    self.consumed = True
                return False
            return any([receiver, *(self.carries(a, extra) for a in args)])
        if isinstance(func, cst.Name):
            q = model.qualified_name(func) or ""
            leaf = q.rsplit(".", 1)[-1] if q else func.value
            if q.startswith("builtins.") and leaf in _SEVERING_BUILTINS or q.startswith("numpy.") \
                    or q.startswith("torch.") and leaf in _SEVERING_TORCH:
                if any(self.carries(a, extra) for a in args):
                    self.consumed = True
                return False
        return any([self.carries(func, extra), *(self.carries(a, extra) for a in args)])

    def _severed(self, value: cst.CSTNode | None, step: str, extra: frozenset[str]) -> None:
        """A value step cuts the graph: a model output read as a value counts as consumed."""
        if step in _SHAPE_ONLY:
            if value is not None:
                self.carries(value, extra)  # count the sources it reads, nothing more
            return
        if value is None or self.carries(value, extra):
            self.consumed = True

    @staticmethod
    def _picks_indices(call: cst.Call, sub: cst.Subscript) -> bool:
        """``x.max(1)[1]``, ``torch.topk(x, k)[1]``: the index half of a (values, indices) pair."""
        func = call.func
        leaf = func.attr.value if isinstance(func, cst.Attribute) else None
        index = sub.slice[0].slice if len(sub.slice) == 1 else None
        return leaf in _VALUES_INDICES and isinstance(index, cst.Index) \
            and isinstance(index.value, cst.Integer) and index.value.value == "1"

    def _comprehension_carries(self, comp: cst.CSTNode, extra: frozenset[str]) -> bool:
        inner = set(extra)
        node = comp.for_in
        while node is not None:
            if self.carries(node.iter, frozenset(inner)):
                inner |= names_in(node.target)
            node = node.inner_for_in
        frozen_inner = frozenset(inner)
        parts = [comp.key, comp.value] if isinstance(comp, cst.DictComp) else [comp.elt]
        return any([self.carries(p, frozen_inner) for p in parts])

    # ------------------------------------------------------------- statements
    def run(self) -> None:
        nodes = list(_own_statements(self.fn))
        # in order, a few times over: a pass starts with what the last one ended with, as a loop's next
        # iteration does
        for _ in range(4):
            before = (set(self.carry), self.escapes)
            for node in nodes:
                self._step(node)
            if (self.carry, self.escapes) == before:
                break

    def _step(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.Assign):
            if self.carries(node.value):
                for t in node.targets:
                    self._bind(t.target, node.value)
            elif self._unconditional(node):
                # `scores = torch.log(scores.detach())`: the name holds no graph from here on
                for t in node.targets:
                    if isinstance(t.target, cst.Name):
                        self.carry.discard(t.target.value)
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            if node.value is not None and self.carries(node.value):
                self._bind(node.target, node.value)
        elif isinstance(node, cst.NamedExpr):
            if self.carries(node.value):
                self._bind(node.target, node.value)
        elif isinstance(node, cst.For):
            if self.carries(node.iter):
                self._bind(node.target, node.iter)
        elif isinstance(node, cst.With):
            for item in node.items:
                if item.asname is not None and self.carries(item.item):
                    self._bind(item.asname.name, item.item)
        elif isinstance(node, cst.Return):
            if node.value is not None and self.carries(node.value):
                self.escapes = True
        elif isinstance(node, cst.Yield):
            if node.value is not None and (isinstance(node.value, cst.From) or self.carries(node.value)):
                self.escapes = True
        elif isinstance(node, cst.Expr) and isinstance(node.value, cst.Call):
            self._statement_call(node.value)
        elif isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) and node is not self.fn:
            if names_in(node) & self.carry:
                self.escapes = True  # a closure over a model output may hand it out later

    def _unconditional(self, node: cst.CSTNode) -> bool:
        """``node`` runs whenever its loop's iteration (or its function) does: no branch around it."""
        for a in self.model.ancestors(node):
            if a is self.fn or isinstance(a, (cst.For, cst.While)):
                return True
            if isinstance(a, (cst.If, cst.Try, cst.Match, cst.ExceptHandler, cst.With)):
                return False
        return False

    def _statement_call(self, call: cst.Call) -> None:
        """A call whose result is dropped: it keeps what it is given only by storing it somewhere."""
        func = call.func
        given = [a.value for a in call.args]
        if isinstance(func, cst.Attribute) and self._own_value(func.value):
            # a method of a value of this call's own (`kwargs.pop("cache")`, `xs.sort()`): it stays here
            if any(self.carries(a) for a in given):
                self._store(func.value)
            return
        if isinstance(func, cst.Attribute) and func.attr.value in _STORING_METHODS:
            if any(self.carries(a) for a in given):
                self._store(func.value)
            return
        if not self.carries(call) and not any(self.carries(a) for a in given):
            return
        q = self.model.qualified_name(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
        if q == "builtins.print":
            self.consumed = True
            return
        if isinstance(func, cst.Attribute) and func.attr.value.endswith("_") and not func.attr.value.startswith("_") \
                and self.carries(func.value):
            return  # out.clamp_(0, 1): in place on the output itself
        self.escapes = True  # handed to something that may keep it (`self.log("val_loss", loss)`)

    def _bind(self, target: cst.CSTNode, value: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            self.carry.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            # values, indices = x.topk(k): the indices carry nothing
            if len(elements) == 2 and isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                    and value.func.attr.value in _VALUES_INDICES:
                elements = elements[:1]
            for e in elements:
                self._bind(e.value if isinstance(e, cst.StarredElement) else e, value)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, value)
        elif isinstance(target, (cst.Attribute, cst.Subscript)):
            self._store(target.value)

    def _store(self, container: cst.CSTNode) -> None:
        """A model output stored in ``container``: a local variable carries it from now on; an attribute of
        ``self``, a parameter or a global hands it out."""
        root = container
        while isinstance(root, (cst.Attribute, cst.Subscript)):
            root = root.value
        if isinstance(root, cst.Name) and root.value not in self.params and self._local(root):
            self.carry.add(root.value)
        else:
            self.escapes = True

    def _own_value(self, expr: cst.CSTNode) -> bool:
        """``expr`` is a local name that holds a model output or a container built here (a literal, a
        comprehension, ``list()``/``dict()``), not an alias of an object from outside."""
        if not isinstance(expr, cst.Name) or expr.value in self.params or not self._local(expr):
            return False
        if expr.value in self.carry:
            return True
        bindings = self.model.lookup(expr.value, self.model.scope_at(expr)) or []
        return all(isinstance(b.node, cst.Param) or isinstance(b.node, cst.Assign) and (
            isinstance(b.node.value, (cst.List, cst.Dict, cst.Set, cst.Tuple, *_COMPREHENSIONS))
            or isinstance(b.node.value, cst.Call) and isinstance(b.node.value.func, cst.Name)
            and b.node.value.func.value in ("list", "dict", "set", "tuple")) for b in bindings)

    def _local(self, name: cst.Name) -> bool:
        bindings = self.model.lookup(name.value, self.model.scope_at(name))
        # a binding in the function's own body, or its `*args`/`**kwargs` (other parameters are excluded)
        return bool(bindings) and all(isinstance(b.node, cst.Param) and b.scope is bindings[0].scope
                                      or self.model.enclosing_function(b.node) is self.fn for b in bindings) \
            and not any(b.kind == IMPORT for b in bindings)


_FLOW_NODES = (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.For, cst.With, cst.Return, cst.Yield,
               cst.Expr)


def _names_behind(call: cst.Call, values_of) -> set[str]:
    """The names ``call``'s arguments are computed from, following ``values_of(name)`` (the values a
    name was assigned) back up to 64 names."""
    todo = [n for a in call.args for n in names_in(a.value)]
    seen: set[str] = set()
    while todo and len(seen) < 64:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for value in values_of(name):
            todo.extend(names_in(value))
    return seen

def _own_statements(fn: cst.FunctionDef) -> Iterator[cst.CSTNode]:
    """The nodes of ``fn``'s own body that move values, in document order, and the functions, lambdas
    and classes defined in it (not their bodies). Walked here: the file model records only some types."""
    stack: list[cst.CSTNode] = [fn.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            yield node
            continue
        if isinstance(node, _FLOW_NODES):
            yield node
        stack.extend(reversed([c for c in node.children if isinstance(c, cst.CSTNode)]))


def _root_name(expr: cst.CSTNode) -> str | None:
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _hands_out(facts: "FileFacts", fn: cst.FunctionDef) -> bool | None:
    flow = _GradientFlow(facts, fn)
    flow.run()
    if flow.contradiction or not flow.sources:
        return None
    if flow.escapes:
        return True
    return None if not flow.consumed else False
