from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.rule import WARNING, Rule
from lint_rules.analysis.evaluation import TRAIN, FileFacts, forward_target
from lint_rules.analysis.handed import HandedModels
from lint_rules.analysis.modules import ModuleFacts
from lint_rules.analysis.scopes import dotted
from lint_rules.analysis.preparation import Preparation
from lint_rules.rules.examples import trn602 as examples

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel


DRAWN_BATCH_MESSAGE = ("A held-out batch is scored inside the training loop in training mode: dropout "
                       "stays on and batch norm updates its statistics with it")


METHOD_MESSAGE = ("This inference method runs the module in whatever mode it was left in: after training, "
                  "dropout stays on and batch norm uses batch statistics; call self.eval() first")
INFERENCE_FUNCTION_MESSAGE = ("This inference function runs `{model}` in whatever mode it was left in, and "
                              "`{trainer}()` of this file trains its model and leaves it in training mode: "
                              "dropout stays on and batch norm uses batch statistics; call {model}.eval() first")
PARTIAL_MESSAGE = ("Evaluation runs `{forgotten}` in training mode: `{switched}.eval()` was called "
                   "but not `{forgotten}.eval()`, so its dropout and batch norm stay in training mode")


class EvaluationWithoutEvalMode(Rule):
    """
    ## What it does
    Flags an evaluation loop (it iterates data, calls a model, and never calls
    `backward()` or steps an optimizer; see TRN601) when no `model.eval()` or
    `model.train(False)` has run before it. The mode counts as set by a `with`
    block around the loop that switches to eval mode (a context manager of this
    file that calls `eval()`, or one named for it: `with eval_mode(model):`), by a call in
    the loop, by the last mode call before the loop in the same function (or in
    a helper of this file called there, such as `validate()` ending in
    `model.eval()`), or, for an evaluation function, by the last mode call before
    a call of that function in this file. A `model.train()` placed just before the
    loop with no training in between is taken as deliberate (re-estimating
    batch-norm statistics); a training step in a helper of this file called in between
    (`self.train_step(batch)`) makes it no such pass. Also flags an evaluation on one batch inside a
    training loop: a model called on a batch drawn with `next(iter(test_loader))`,
    `next(enumerate(test_loader))` or `next(test_iter)` (followed through
    unpacking, `Variable(x)`, `x.cuda()`, `x.transpose(...)`), with no `eval()`
    before it in the function, either under `torch.no_grad()` or from a loader
    spelled as a held-out split (`test`, `val`, `valid`, `dev`, `eval`) with no
    `backward()` after it in the iteration. Such a batch may also be scored one call deeper, by a
    function of this file that runs the model on it with grad off (`validation(model, data_valid)`
    in the training loop, after `data_valid = next(gen_valid)`); that finding is certain when the
    loop trains that model and nothing in the file can switch a module to eval mode.

    Also flags (possible) an inference method of a module class, `predict`, `predict_*`,
    `infer`, `inference` or `inference_*`, that runs the module (`self(x)`, `self.forward(x)`,
    or a helper of the class that does) with no mode set in it, no caller of this file
    switching to eval mode before calling it, and no `forward` of this file calling it.
    And (certain) an inference function at the top of a file, named like those, that runs a module
    it is handed (`model(x)`, `model.encoder(x)`, `model.generate(ids)`) with no mode set in it or
    by a caller of this file, when the file's training function of the same name with another verb
    (`train_seq2seq` for `predict_seq2seq`, `fit` for `predict`) trains its parameter of the same
    name and leaves it in training mode (its last mode call is `train()`, and no function of this
    file calls it).

    A call of the evaluation function from another file of the project counts too:
    an `eval()` before it there sets the mode.

    A model handed to a function that runs it counts as run by the loop:
    `logits, loss = forward_step(model, batch)` with `def forward_step(net, batch): return net(batch)`
    (a function of this file or of another file of the project that neither trains nor sets a
    mode), in a loop over data or in an inference script's loop over the model whose weights it
    restored.

    Confidence: these findings are *possible* (the mode may be set where this
    file cannot see it), reported with `--preview`. Two shapes are *certain* and
    reported by default: the model is known to have dropout or batch norm and every
    call of the function in the project is known (this file's and, for a module
    imported by a few scripts, theirs) with none setting eval mode before it; and
    an evaluation function (nothing in it trains) that calls
    `eval()` on some modules before a loop over data, then calls another module in
    the loop that this file puts in train mode elsewhere (`predictor.train()` in the
    training function) and that the function sets no mode on. Also certain: a model that this
    file trains and never switches to eval mode (nothing in the file calls `eval()` or
    `train(<anything but True>)` or enters a context named for eval mode), scored by the loop:
    an earlier loop of the same function trains it, a caller of this file trains it with a
    function of this file and then hands it to the loop's function (`train(model, ...)` then
    `test(model, ...)`), the file puts it in train mode (`self.model.train()` in another method;
    for a function, when its callers are known), or an inference script restored its weights
    with `load_state_dict(...)` and trains nothing. A `train()` before the call of a function
    that trains and then validates is the training's own mode, not a deliberate train-mode pass.
    Also certain: a call of a module that its function forgot in an evaluation block: another
    module was switched with `eval()` just before, in the same loops, nothing trains from there
    to the end of the iteration, and the last mode the function set on this module is `train()`
    (`style_encoder.train()` in the training step, then `style_encoder(ref)` after `net.eval()`).

    ## Why is this bad?
    In training mode, dropout zeroes random activations and batch norm normalises
    with the statistics of the current batch, then folds the evaluation data into
    its running averages. The reported accuracy is noisy and too low, it depends
    on the batch size, and the model itself changes while being measured: a
    checkpoint chosen by this metric is not the best one.

    ## Example
    ```python
    def evaluate(model, loader):
        with torch.no_grad():
            for x, y in loader:
                correct += (model(x).argmax(1) == y).sum().item()
    ```

    Use instead:
    ```python
    def evaluate(model, loader):
        model.eval()
        with torch.no_grad():
            for x, y in loader:
                correct += (model(x).argmax(1) == y).sum().item()
    ```

    ## Known problems
    A model loaded with `X.from_pretrained(...)` (and moved with `.to(device)`) counts
    as in eval mode: transformers and diffusers hand it back that way.
    Models without dropout or batch norm give the same results in either mode:
    the rule stays quiet when every layer of the model is known and none depends
    on the mode (`nn.Linear`, an MLP class of this file). A model built in
    another module, or from a layer class it cannot see, is unknown and flagged;
    such a value counts as a model when an optimizer is built from its
    `.parameters()` in the same file. A held-out batch outside `no_grad()` is
    recognised only by the loader's spelling: a batch from `val_loader` that
    trains (a meta-learning step) is told apart only by a `backward()` after it
    in the same iteration.
    A pass whose every caller hands its result to a function of this file that trains (a memory
    bank or centroids filled before each epoch) computes an input of the training and runs in the
    training's own mode: it is reported as *possible* only.
    Any `.eval()` call counts, whichever module it is
    called on. An evaluation function called only from another module is judged
    by its own body. Loops are recognised as in TRN601 (a `while` loop only when it
    fetches a batch); comprehensions and generation loops are not checked.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval
    - https://pytorch.org/docs/stable/notes/autograd.html#evaluation-mode-nn-module-eval
    """

    CODE = "TRN602"
    NAME = "evaluation-without-eval-mode"
    MESSAGE = ("Evaluation loop runs the model in training mode: dropout stays on and batch norm "
               "updates its statistics with evaluation data")
    FIX_TITLE = "Call model.eval() before the evaluation loop (and model.train() after it)"
    SEVERITY = WARNING  # wrong on some paths only: not an error (see README, Severity)

    VALID = examples.VALID
    INVALID = examples.INVALID

    # an evaluation function returns no loss (FileFacts reads the function's return statements)
    NEEDS = (cst.Return,)

    def __init__(self, model: "FileModel") -> None:
        super().__init__(model)
        self._facts = model.fact(FileFacts)
        self._modules = model.fact(ModuleFacts)

    def visit_For(self, node: cst.For | cst.While) -> None:
        direct = self._facts.evaluation_calls(node)
        helped = [] if direct else self._facts.evaluation_helper_calls(node)  # self.eval_step(batch)
        calls = direct or [inner for _, inner in helped]
        if calls and not self._facts.mode_set_for(node):
            # a model loaded with from_pretrained() comes back in eval mode
            if any(self._modules.mode_dependent(call.func) is not False
                   and not self._facts.loaded_in_eval_mode(call.func) for call in calls):
                # Certain when the model is known to behave differently in eval mode (dropout, batch
                # norm) and every call of the function in the project is known and none sets eval
                # mode before it; possible when a caller the linter cannot see may set it.
                certain = (any(self._modules.mode_dependent(call.func) is True for call in calls)
                           and self._callers_never_set_eval(node) or self._left_in_training(node, calls)
                           or self._hands_trained(node, [outer for outer, _ in helped])) \
                    and not self._prepares_training(node)
                self.report(node, certain=certain)
            return
        # for x, y in val_loader: forward_step(model, x) -- a function of this project runs the model
        if self._report_handed(node):
            return
        # Certain: the function switched some models to eval mode and forgot one it trains elsewhere.
        for call, forgotten, switched in self._facts.left_in_train_mode(node):
            if self._modules.mode_dependent(call.func) is not False:
                self.report(node, PARTIAL_MESSAGE.format(forgotten=forgotten, switched=switched), certain=True)
                return

    visit_While = visit_For  # while not batcher.last_batch(): batch = batcher.next_batch()

    def _hands_trained(self, loop: cst.For | cst.While, outer: list[cst.Call]) -> bool:
        """A helper call of the loop hands a model that is in training mode (see
        :meth:`~lint_rules.analysis.evaluation.FileFacts.never_evaluated_spellings`) to a parameter the
        helper runs: ``predict(model, x)`` with ``def predict(net, x): return net(x)``."""
        handed = self.model.fact(HandedModels)
        models = [arg for call in outer for arg in handed.runs(call)]
        if not models:
            return False
        trained = self._facts.never_evaluated_spellings(loop)
        return any(dotted(m) in trained and self._modules.mode_dependent(m) is not False
                   and not self._facts.loaded_in_eval_mode(m) for m in models)

    def _report_handed(self, loop: cst.For | cst.While) -> bool:
        """Judge a loop that runs its model by handing it to a function that runs it (see
        :meth:`~lint_rules.analysis.handed.HandedModels.evaluation_runs`) as if it called the model:
        True when it ran one."""
        handed = self.model.fact(HandedModels).evaluation_runs(loop)
        if not handed:
            return False
        models = [arg for _, arg in handed if self._modules.mode_dependent(arg) is not False
                  and not self._facts.loaded_in_eval_mode(arg)]
        if models and not self._facts.mode_set_for(loop):
            trained = self._facts.never_evaluated_spellings(loop)
            certain = (any(self._modules.mode_dependent(m) is True for m in models)
                       and self._callers_never_set_eval(loop) or any(dotted(m) in trained for m in models)) \
                and not self._prepares_training(loop)
            self.report(loop, certain=certain)
        return True

    def _left_in_training(self, loop: cst.For, calls: list[cst.Call]) -> bool:
        """A model that this file trains and never switches to eval mode (see
        :meth:`~lint_rules.analysis.evaluation.FileFacts.trained_never_evaluated`), not known to
        behave the same in both modes."""
        return any(self._modules.mode_dependent(c.func) is not False and not self._facts.loaded_in_eval_mode(c.func)
                   for c in self._facts.trained_never_evaluated(loop, calls))

    def _prepares_training(self, loop: cst.For) -> bool:
        """The loop's function computes an input of the training (a memory bank, centroids): its
        callers hand what it returns to a function of this file that trains, which runs in train mode
        too (see :meth:`~lint_rules.analysis.preparation.Preparation.feeds_training`)."""
        fn = self.model.enclosing_function(loop)
        return isinstance(fn, cst.FunctionDef) and self.model.fact(Preparation).feeds_training(fn)

    def _callers_never_set_eval(self, loop: cst.For) -> bool:
        fn = self.model.enclosing_function(loop)
        if not isinstance(fn, cst.FunctionDef):
            return False  # module level: a script's loop whose mode nothing set (judged as possible, as before)
        contexts = self._facts.caller_contexts(fn)
        return bool(contexts) and not any("eval" in c for c in contexts)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        # def predict(self, x): return self(x) -- in whatever mode training left the module (possible: a
        # caller may set it, as callers of library code do)
        runs = self._facts.inference_method_runs(node)
        owner = self.model.parent(self.model.parent(node))
        if runs and isinstance(owner, cst.ClassDef) and self._modules.class_mode_dependent(owner) is not False:
            self.report(runs[0], METHOD_MESSAGE, certain=False)
            return
        # def predict_seq(model, src): model.encoder(src) ... -- after this file's train_seq(model, ...)
        # ended in model.train(): certain, the file's own pair of functions leaves dropout on
        if isinstance(self.model.parent(node), cst.Module) and node.params.params:
            handed = self.model.fact(HandedModels)
            # the name first: most functions end there, before any summary of the file is built
            found = handed.inference_runs(node)
            for call, name in found if found and handed.leaves_training() else []:
                trainer = handed.paired_trainer(node, name)
                if trainer is not None:
                    self.report(call, INFERENCE_FUNCTION_MESSAGE.format(model=name, trainer=trainer.name.value),
                                certain=True)
                    return

    def visit_Call(self, node: cst.Call) -> None:
        facts = self._facts
        # net.eval(); style_encoder(ref) -- after style_encoder.train() in the training loop
        forgotten = facts.forgotten_after_eval(node)
        if forgotten is not None and self._modules.mode_dependent(node.func) is not False \
                and not any(id(lp) in self._reported for lp in self.model.enclosing_loops(node)):
            self.report(node, PARTIAL_MESSAGE.format(forgotten=forgotten[0], switched=forgotten[1]), certain=True)
            return
        # tx, ty = next(iter(test_loader)); net(tx) -- one held-out batch inside a training loop
        if facts.drawn_batch_scored(node) is None:
            self._helper_scores_drawn_batch(node)
            return
        last = facts.last_mode_before(node, self.model.enclosing_function(node))
        if (last is None or last[0] == TRAIN) and self._modules.mode_dependent(node.func) is not False:
            self.report(node, DRAWN_BATCH_MESSAGE)

    def _helper_scores_drawn_batch(self, call: cst.Call) -> None:
        """``validate(model, val_x)`` in a training loop, with ``val_x`` a held-out batch drawn with
        ``next(...)`` and ``validate`` a function of this file that scores it with grad off (see
        :meth:`~lint_rules.analysis.handed.HandedModels.helper_scores`): the drawn-batch finding, one
        call deeper."""
        facts = self._facts
        if not isinstance(call.func, cst.Name) or not call.args:
            return  # the cheap part of helper_scores' question first: most calls end here
        training = [lp for lp in self.model.enclosing_loops(call) if self.model.training.is_training_loop(lp)]
        if not training:
            return
        for net, batch in self.model.fact(HandedModels).helper_scores(call):
            data = facts.drawn_from(batch)
            if data is None or not facts.held_out(data) or not facts.holds_module(net) \
                    and dotted(net) not in facts.never_evaluated_spellings(call):
                continue
            last = facts.last_mode_before(call, self.model.enclosing_function(call))
            if (last is None or last[0] == TRAIN) and self._modules.mode_dependent(net) is not False \
                    and not facts.loaded_in_eval_mode(net):
                # certain when the enclosing training loop trains this very model and nothing in the file
                # can switch a module to eval mode: built in train mode, it is still in it
                self.report(call, DRAWN_BATCH_MESSAGE,
                            certain=facts.never_evaluates() and dotted(net) in self._run_by(training[-1], call))
                return

    def _run_by(self, loop: cst.For | cst.While, scoring: cst.Call) -> set[str]:
        """The models (dotted spellings) that ``loop`` runs itself or hands to a function that runs them,
        other than by the ``scoring`` call."""
        model = self.model
        out = {dotted(forward_target(c.func)) for c in model.within(cst.Call, loop)
               if model.enclosing_function(c) is model.enclosing_function(loop) and self._facts.is_model_call(c)}
        return out | {dotted(arg) for call, arg in model.fact(HandedModels).in_loop(loop) if call is not scoring}
