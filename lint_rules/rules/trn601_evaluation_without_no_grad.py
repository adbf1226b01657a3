from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis import names as N
from lint_rules.analysis.context import hands_over_its_model, test_file
from lint_rules.analysis.evaluation import FileFacts, forward_target
from lint_rules.analysis.grad_mode import GradMode
from lint_rules.analysis.modules import ModuleFacts
from lint_rules.analysis.requires_grad import frozen
from lint_rules.analysis.scopes import dotted, is_true
from lint_rules.analysis.summaries import BACKWARD, STEP, Summaries
from lint_rules.rule import WARNING, Rule
from lint_rules.rules.examples import trn601 as examples

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

GENERATION_MESSAGE = ("Generation loop feeds the model its own output with autograd on: the graph of every "
                      "step is recorded and kept alive for a backward that never comes")
PASS_MESSAGE = ("A call of this function turns its training off, but the loop still runs the model with "
                "autograd on: that evaluation pass records graphs and keeps activations for nothing")
HELD_OUT_MESSAGE = ("A held-out batch is scored after eval() with autograd on: the graph of the forward "
                    "and its activations are kept for a backward that never comes")
RESTORED_MESSAGE = ("Inference with restored weights runs the model with autograd on: nothing in this file "
                    "trains it, yet every call records a graph and keeps its activations")
INFERENCE_MESSAGE = ("Inference loop runs the model with autograd on, yet its function hands out only values "
                     "that carry no gradient (numbers, indices, strings): every graph it records is thrown away")
STEP_MESSAGE = ("Evaluation step runs the model with autograd on, yet hands out only values that carry no "
                "gradient: the graph of the forward and its activations are recorded for nothing")
DECLARED_MESSAGE = ("The model runs in eval mode for an evaluation with autograd on: the graph of the forward "
                    "and its activations are recorded for a backward that never comes")
# Methods whose name says they evaluate: a module's own inference entry points.
_EVALUATION_METHOD = re.compile(r"_*(predict|evaluat|eval_|valid|test|score|infer|visuali|sample|generate|decode"
                                r"|translate|beam_search|greedy)", re.I)
VOLATILE_MESSAGE = ("volatile=True has had no effect since PyTorch 0.4: autograd records this computation "
                    "and keeps its activations; use torch.no_grad()")


class EvaluationWithoutNoGrad(Rule):
    """
    ## What it does
    Flags an evaluation loop that calls the model with autograd on. An evaluation
    loop iterates data (a `DataLoader`, an iterable spelled like one: `val_loader`,
    `test_data`, `self.loaders["valid"]`, ..., or a `range` loop, also wrapped as in
    `tqdm(range(n))`, or a `while` loop, that fetches a batch: `X, Y =
    get_batch("val")`, `batch = batcher.next_batch()`, or a `range` loop that indexes
    data by its target: `test_set[idx]`), calls a model, and neither calls `backward()`, steps or
    hands over an optimizer, nor asks for input gradients. A counting loop is also
    an evaluation loop when its function put the model in eval mode before it
    (`model.eval()`) and the model's input is computed from the loop's index
    (`x[i:i + n]`). So is a loop of an inference script: its model's weights were restored
    before it (`model.load_state_dict(...)`, `model = torch.load(...)`), the file trains
    nothing (no `backward()`, no optimizer step or optimizer), and the model's input is
    computed from the loop's target (`for i, (x, y) in enumerate(task.episodes()):
    model(x)`). A `zero_grad()` in a loop does not make it a training loop when every model
    call of the loop runs under `no_grad()`. A training loop whose `backward()` and optimizer
    steps all run under `if <flag>:`, a parameter of its function, is flagged when a call of
    that function in the file passes `False` for the flag outside `no_grad()`
    (`run_epoch(model, valid_loader, is_train=False)`): that call is an evaluation pass with
    autograd on. So is a method of an inference wrapper that runs `self.<model>` once per call
    when another method of its class restored the model's weights and the file trains
    nothing (`self.net.load_state_dict(...)` in `__init__`, `self.net(image)` in
    `detect()`). So is a model call on a batch drawn from held-out data (`next(val_iter)`,
    `next(iter(test_loader))`) after its function put that model in eval mode, with nothing
    training after it in the function. `model.forward(x)` counts as a model call (also one
    or two helper calls deep: `self.eval_batch(batch)` calling `self.forward_loss(batch)`;
    a method of this file is never taken for a model, whatever its name), and so do `self(x)` and
    `self.forward(x)` in a method of a module class. A generation loop is flagged too:
    a loop of a function that does not train, where the model's input in the next
    iteration is computed from its output in this one (a sampler, a decoder:
    `tokens = torch.cat([tokens, model(tokens).argmax(-1)])`), through tensor
    arithmetic, torch functions, tensor methods and the module's own calls. Such a
    finding is certain when the function put that model in eval mode first, else
    possible (`--preview`): a caller may train on what the loop returns (certain again when
    its function hands out nothing that can carry a gradient, see below). A loop is flagged
    too when its function hands out nothing that can carry a gradient (it returns, yields
    or stores only numbers, indices, strings or detached copies: `.item()`, `.tolist()`,
    `argmax`, `float(...)`, `"".join(words)`) and trains nothing, and the loop feeds the
    model what its target picks (`chunk = audio[i:i + n]; p = vad(chunk).item()`) or the
    model's own output: no caller can train on what such a function hands out, so every
    graph it records is waste (possible when the model is a parameter and nothing in the
    project is seen calling the function, or in a method of a module class that does not
    train itself: its callers decide). So is a single model call, outside loops, of a function named
    for evaluating (`evaluate_batch`, `validation_step`) that feeds the model a batch it is
    handed and hands out only such values (possible for a one-off prediction: a function
    not named for evaluating that no loop of its file calls); one after its function put that model in eval
    mode (`model.eval(); att = model.inference(text)`, also through a method named for
    running on data: `inference`, `predict_*`, `encode`, `decode`, `val_step`) in a function
    that hands out only such values; and one in a trainer's own evaluation method
    (`validate`, `val`, `validation_step`, `evaluate`) after it put that model in eval mode,
    in a class whose other methods train, whatever it hands back. `Variable(x,
    volatile=True)` is flagged too: PyTorch 0.4 made `volatile` a no-op, so code
    written to skip autograd with it records graphs. It is quiet
    under `torch.no_grad()`, `torch.inference_mode()` (as a block or a decorator),
    `torch.set_grad_enabled(...)` (as a block, or called with `False` earlier in
    the function or module, or after `torch.no_grad().__enter__()`), after
    `stack.enter_context(torch.no_grad())` in a
    `with contextlib.ExitStack() as stack:`, under a decorator of this file that
    wraps one of those, and in a function that this file calls from inside such a
    block (up to three calls up), or that another file of the project calls from
    inside one (a script or not). It is quiet for a model whose parameters the file
    froze (`model.requires_grad_(False)`, `for p in model.parameters(): p.requires_grad
    = False`, unless a part is unfrozen again: its forward records no graph), for a
    loop that steps an environment (`obs, reward, done, info = env.step(action)`: a
    rollout, whose policy outputs may be trained on), and in test code. `volatile=True`
    is flagged only on a `Variable` that may reach a forward (not a constant stored on
    an object, nor targets handed only to a loss).

    Confidence: findings are *certain*, except where the evidence leaves the
    choice to someone else: a method of a module class runs under its callers'
    grad mode (they may fine-tune through it), so its loop is *possible* unless
    the method declares an evaluation (its name: `predict`, `evaluate`, `test_*`,
    `sample`, `generate`, ...; `volatile=True`; a class that trains itself; or a method
    that hands out nothing that can carry a gradient), and
    quiet when this file calls it on an instance under `no_grad()`; a function of an importable package (a library
    module) that evaluates a model its caller hands it leaves grad mode to that
    caller, so its loop is *possible* (`--preview`) unless a caller in the same
    file runs it with grad on (certain). A generation loop is certain only as
    said above.

    ## Why is this bad?
    With autograd on, every forward pass records its graph and keeps every
    intermediate activation alive for a backward that never comes. Evaluation
    runs 1.5-2x slower and needs several times the memory of the forward alone:
    a validation batch size that fits under `no_grad` runs out of memory, and
    outputs collected across the loop (`preds.append(model(x))`) keep each
    batch's whole graph alive until the loop ends.

    ## Example
    ```python
    model.eval()
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()
    ```

    Use instead:
    ```python
    model.eval()
    with torch.no_grad():
        for x, y in val_loader:
            correct += (model(x).argmax(1) == y).sum().item()
    ```

    ## Known problems
    A loop is recognised as iterating data from a `DataLoader` built in the file
    or, as a last resort, from the spelling of the iterable or of the call that
    fetches the batch; other loops (`while` loops, `for batch in queue`) are not
    checked, nor are loops after `model.eval()` whose input comes from elsewhere (an
    environment's observations: a generation chain ends at any call other than a torch
    function, a tensor method or a module's call). A model is recognised from
    its construction, a `nn.Module` annotation, or a name such as `model` or
    `net`. A comprehension is checked when it iterates data (`[model(x) for x in
    loader]`) or when its function put the model in eval mode first and feeds it the
    comprehension's target (`[net(v) for v in views]`), in a function that trains nothing.
    Calls from other files are read only for a module that a few scripts import: a
    library function called under `no_grad` by many modules, or one whose model
    has `requires_grad_(False)` parameters, is still flagged.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.no_grad.html
    - https://pytorch.org/docs/stable/generated/torch.autograd.grad_mode.inference_mode.html
    - https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation
    """

    CODE = "TRN601"
    NAME = "evaluation-without-no-grad"
    MESSAGE = "Evaluation loop runs the model with autograd on: it records graphs and keeps activations for nothing"
    FIX_TITLE = "Wrap the evaluation loop in torch.no_grad() or torch.inference_mode()"
    SEVERITY = WARNING

    VALID = examples.VALID
    INVALID = examples.INVALID

    # an evaluation function returns no loss (FileFacts reads the function's return statements)
    NEEDS = (cst.Return,)

    def __init__(self, model: "FileModel") -> None:
        super().__init__(model)
        self._facts = model.fact(FileFacts)

    def visit_For(self, node: cst.For | cst.While) -> None:
        if test_file(self.model):
            return  # a test runs a few small batches: what it records costs nothing worth a change
        facts = self._facts
        bare = [call for call in facts.evaluation_calls(node)
                if not self._grad_managed(call, node) and not frozen(self.model, forward_target(call.func))]
        if bare or any(not self._grad_managed_in_helper(site, inner, node)
                       for site, inner in facts.evaluation_helper_calls(node)):
            self.report(node, certain=not self._left_to_callers(node, bare))
            return
        # A training loop whose training steps all hang on a flag that a call of its function turns
        # off (`run_epoch(model, valid_loader, False)`): that call runs it as an evaluation pass
        calls, sites = facts.evaluation_pass_calls(node)
        if calls and any(not self._grad_managed(call, node) for call in calls) \
                and any(not (self.model.in_no_grad(site) or self.model.fact(GradMode).managed(site)) for site in sites):
            self.report(node, PASS_MESSAGE)
            return
        # A generation loop: certain when its function put that model in eval mode first (it
        # declared the loop an inference); possible when the output comes back as a token or an
        # index (a decoder, whose results a caller may still train on); a differentiable feedback
        # with no eval() is a recurrent forward pass as often as a sampler: left alone.
        switched = facts.eval_receivers(node)
        certain = possible = False
        # what its function hands out carries no gradient (tokens, strings, numbers): no caller can train on it
        inference = {id(call) for call in facts.inference_loop_calls(node)}
        for call, chosen in facts.generation_calls(node):
            if self._grad_managed(call, node) or frozen(self.model, forward_target(call.func)):
                continue
            if dotted(forward_target(call.func)) in switched or id(call) in inference:
                certain = True
            possible = possible or chosen
        if certain or possible:
            self.report(node, GENERATION_MESSAGE, certain=certain)
            return
        # for i in range(0, n, step): p = model(audio[i:i + step]).item() -- in a function that hands out
        # only numbers, indices or strings: an inference loop whatever its function is called
        inferring = [call for call in facts.inference_loop_calls(node)
                     if not self._grad_managed(call, node) and not frozen(self.model, forward_target(call.func))]
        if inferring:
            # a library helper running the model its caller hands it leaves grad mode to that caller
            self.report(node, INFERENCE_MESSAGE, certain=not self._left_to_callers(node, inferring, anywhere=True)
                        and not self._module_method_of_callers(node))

    visit_While = visit_For

    def visit_ListComp(self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp) -> None:
        # net.eval(); outs = [net(v) for v in views] -- an evaluation written as a comprehension
        calls = self._facts.comprehension_evaluation_calls(node)
        if any(not self._grad_managed(call, node) for call in calls) and not test_file(self.model) \
                and not any(id(lp) in self._reported for lp in self.model.enclosing_loops(node)):
            self.report(node)

    visit_SetComp = visit_GeneratorExp = visit_DictComp = visit_ListComp

    def visit_Call(self, node: cst.Call) -> None:
        # model.eval(); x, = next(self.valid_iter); model(x) -- one held-out batch scored by declaration
        if self._facts.held_out_batch_after_eval(node) is not None and not self._grad_managed(node, node) \
                and not any(id(lp) in self._reported for lp in self.model.enclosing_loops(node)):
            if not self._settled_elsewhere(node):
                self.report(node, HELD_OUT_MESSAGE)
            return
        # def evaluate_batch(model, batch): out = model(batch.x); return float(loss_fn(out, batch.y)) -- an
        # evaluation step that hands out only numbers: the graph of its forward is recorded for nothing
        if self._facts.evaluation_step_call(node) and not self._grad_managed(node, node) \
                and not self._settled_elsewhere(node) and not self._reported_at_caller(node):
            # certain for a step that runs once per batch or item; a one-off prediction is possible
            fn = self.model.enclosing_function(node)
            certain = isinstance(fn, cst.FunctionDef) and self._facts.repeated_step(fn) \
                and not self._left_to_callers(node, [node]) and not self._module_method_of_callers(node)
            if certain or not self._facts.restored_model_run(node):  # else the restored weights say more
                self.report(node, STEP_MESSAGE, certain=certain)
                return
        # model.eval(); att = model.inference(text); plot(att.detach().numpy()) -- inference by declaration in
        # a function that hands out nothing differentiable; or a trainer's own validate() after eval()
        declared = self._facts.eval_declared_run(node)
        if (declared or self._facts.evaluation_method_run(node)) \
                and not self._grad_managed(node, node) and not self._settled_elsewhere(node) \
                and not self._reported_at_caller(node):
            # a trainer's validate() runs once per pass; an eval()-declared one-off run is possible
            fn = self.model.enclosing_function(node)
            self.report(node, DECLARED_MESSAGE, certain=self._facts.evaluation_method_run(node)
                        or isinstance(fn, cst.FunctionDef) and self._facts.repeated_step(fn))
            return
        # an inference wrapper: weights restored in this file, which trains nothing, then the model run once
        # per call with autograd on (`self.net.load_state_dict(...)` ... `boxes = self.net(image)`)
        if self._facts.restored_model_run(node) and not self._grad_managed(node, node) \
                and not self._settled_elsewhere(node):
            self.report(node, RESTORED_MESSAGE)

    def _module_method_of_callers(self, node: cst.CSTNode) -> bool:
        """``node`` is in a method of a module class that does not train itself: a framework runs such
        methods (``predict_class``) from its own evaluation, often under ``no_grad``."""
        found = self.model.fact(ModuleFacts).module_method(node)
        return found is not None and not any(
            e.kind in (BACKWARD, STEP) for e in self.model.training.events_within(found[1]))

    def _reported_at_caller(self, call: cst.Call) -> bool:
        """The function of ``call`` is a helper of an evaluation loop of this file (``for batch in loader:
        self.eval_step(batch)``): the loop's finding covers it."""
        model, facts = self.model, self._facts
        fn = model.enclosing_function(call)
        return isinstance(fn, cst.FunctionDef) and any(
            any(site is s for lp in model.enclosing_loops(site) for s, _ in facts.evaluation_helper_calls(lp))
            for site in facts.call_sites(fn))

    def _settled_elsewhere(self, call: cst.Call) -> bool:
        """Test code, or a model the file froze: no finding (asked last, once a finding is due)."""
        return test_file(self.model) or frozen(self.model, forward_target(call.func))

    def visit_Arg(self, node: cst.Arg) -> None:
        # Variable(x, volatile=True): ignored since PyTorch 0.4, so autograd records what it was meant to skip
        if node.keyword is not None and node.keyword.value == "volatile" and is_true(node.value) \
                and not self.model.in_no_grad(node) and not test_file(self.model) \
                and not any(id(loop) in self._reported for loop in self.model.enclosing_loops(node)) \
                and isinstance(call := self.model.parent(node), cst.Call) \
                and self.model.qualified_name(call.func) in N.VARIABLE and self._facts.feeds_model(call):
            self.report(node, VOLATILE_MESSAGE)  # inside a loop reported already: one finding is enough

    def report(self, node: cst.CSTNode, message: str | None = None, severity: str | None = None,
               fix=None, certain: bool | None = None) -> None:
        # A method of a module class runs under its callers' grad mode: they may fine-tune through it
        # (an embedding's get_representation(), a retriever's embed_query()). Possible, unless the
        # method declares an evaluation: by its name (predict(), evaluate(), sample()), by volatile=True,
        # or by a class that trains itself (a trainer module's periodic evaluation).
        if certain is not False and message != VOLATILE_MESSAGE:
            found = self.model.fact(ModuleFacts).module_method(node)
            if found is not None and not _EVALUATION_METHOD.match(found[0].name.value) \
                    and not any(e.kind in (BACKWARD, STEP) for e in self.model.training.events_within(found[1])) \
                    and self._facts.hands_out_gradient(found[0]) is not False:  # a string or tokens: none to tune
                certain = False
        super().report(node, message, severity, fix, certain)

    def _left_to_callers(self, loop: cst.CSTNode, bare: list[cst.Call], anywhere: bool = False) -> bool:
        """A library function that evaluates the model its caller hands it leaves grad mode to that
        caller (:func:`~lint_rules.analysis.context.hands_over_its_model`): possible, unless the
        project's own callers are known, and none of them turned grad off (they got it wrong:
        certain). With ``anywhere``, a function of any module counts (a helper of an application's
        ``utils`` that many files import)."""
        model = self.model
        fn = model.enclosing_function(loop)
        if not bare or not all(hands_over_its_model(model, fn, forward_target(call.func))
                               or anywhere and _handed(model, fn, forward_target(call.func)) for call in bare):
            return False
        return not (self._facts.call_sites(fn) or self._facts.caller_contexts(fn))

    def _grad_managed_in_helper(self, site: cst.Call, inner: cst.Call, loop: cst.For) -> bool:
        """The model call in a helper: grad is off around the helper's call, or inside it."""
        model = self.model
        helper = model.enclosing_function(inner)
        return self._grad_managed(site, loop) or model.in_no_grad(inner) or model.fact(GradMode).managed(inner) \
            or frozen(model, forward_target(inner.func)) \
            or isinstance(helper, cst.FunctionDef) and model.fact(Summaries).of(helper).no_grad

    def _grad_managed(self, call: cst.Call, loop: cst.CSTNode) -> bool:
        model = self.model
        modes = model.fact(GradMode)
        if model.in_no_grad(call) or modes.managed(call) or modes.set_before(loop):
            return True
        fn = model.enclosing_function(loop)
        if isinstance(fn, cst.FunctionDef):
            if any(model.in_no_grad(site) or modes.managed(site) for site in self._facts.call_sites(fn)):
                return True
            # a caller in another file of the project calls it under no_grad
            return self._facts.called_with_grad_off(fn)
        return False


def _handed(model: "FileModel", fn: cst.CSTNode | None, receiver: cst.CSTNode) -> bool:
    """``receiver`` (the model a call runs) is reached from a parameter of ``fn`` other than ``self``."""
    while isinstance(receiver, (cst.Attribute, cst.Subscript)):
        receiver = receiver.value
    if not isinstance(fn, cst.FunctionDef) or not isinstance(receiver, cst.Name) or receiver.value in ("self", "cls"):
        return False
    bindings = model.bindings_of(receiver)
    return bool(bindings) and all(isinstance(b.node, cst.Param) and b.value is fn for b in bindings)
