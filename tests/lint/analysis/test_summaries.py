"""Function summaries on small snippets: effects, binding at call sites, branches, grad mode."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.model import FileModel
from lint_rules.analysis.summaries import BACKWARD, CLEAR, EVAL, STEP, TRAIN, Summaries


def _facts(src: str) -> tuple[FileModel, Summaries]:
    model = FileModel(cst.parse_module(textwrap.dedent(src)))
    return model, model.fact(Summaries)


def _fn(model: FileModel, name: str) -> cst.FunctionDef:
    return next(f for f in model.nodes(cst.FunctionDef) if f.name.value == name)


def _call(model: FileModel, text: str) -> cst.Call:
    return next(c for c in model.nodes(cst.Call) if model.module.code_for_node(c) == text)


def test_fact_is_built_once_per_file() -> None:
    model, s = _facts("x = 1\n")
    assert model.fact(Summaries) is s


def test_effects_name_parameters_and_self_attributes() -> None:
    model, s = _facts("""
        class Trainer:
            def step(self, loss, optimizer):
                loss.backward()
                optimizer.step()
                self.opt.zero_grad()
        """)
    summary = s.of(_fn(model, "step"))
    assert [(e.kind, e.target) for e in summary.effects] == [
        (BACKWARD, None), (STEP, "$optimizer"), (CLEAR, "self.opt")]


def test_call_site_binds_arguments_and_receiver() -> None:
    model, s = _facts("""
        def update(model, opt, loss):
            loss.backward()
            opt.step()
            model.eval()
        class T:
            def run(self):
                update(self.net, self.sgd, l)
        """)
    effects = s.effects_at(_call(model, "update(self.net, self.sgd, l)"))
    assert [(e.kind, e.target) for e in effects] == [(BACKWARD, None), (STEP, "self.sgd"), (EVAL, "self.net")]


def test_helpers_are_followed_two_calls_deep_and_recursion_stops() -> None:
    model, s = _facts("""
        def inner(opt):
            opt.step()
            inner(opt)
        def middle(optimizer):
            inner(optimizer)
        def outer(my_opt):
            middle(my_opt)
        outer(adam)
        """)
    assert [(e.kind, e.target) for e in s.effects_at(_call(model, "outer(adam)"))] == [(STEP, "adam")]


def test_depth_is_bounded() -> None:
    model, s = _facts("""
        def f0(o):
            o.zero_grad()
        def f1(o):
            f0(o)
        def f2(o):
            f1(o)
        def f3(o):
            f2(o)
        def f4(o):
            f3(o)
        f4(opt)
        f2(opt)
        """)
    assert [e.kind for e in s.effects_at(_call(model, "f2(opt)"))] == [CLEAR]
    assert s.effects_at(_call(model, "f4(opt)")) == []


def test_constant_argument_selects_branch() -> None:
    model, s = _facts("""
        def set_mode(model, mode):
            if mode == "train":
                model.train()
            else:
                model.eval()
        set_mode(net, "train")
        set_mode(net, "eval")
        set_mode(net, phase)
        """)
    assert [e.kind for e in s.effects_at(_call(model, 'set_mode(net, "train")'))] == [TRAIN]
    assert [e.kind for e in s.effects_at(_call(model, 'set_mode(net, "eval")'))] == [EVAL]
    assert [e.kind for e in s.effects_at(_call(model, "set_mode(net, phase)"))] == [TRAIN, EVAL]


def test_keyword_and_default_arguments_select_branches() -> None:
    model, s = _facts("""
        def prepare(model, training=True):
            if not training:
                model.eval()
        prepare(net)
        prepare(net, training=False)
        """)
    assert s.effects_at(_call(model, "prepare(net)")) == []
    assert [(e.kind, e.target) for e in s.effects_at(_call(model, "prepare(net, training=False)"))] == [(EVAL, "net")]


def test_returns_mode() -> None:
    model, s = _facts("""
        def load_a(path):
            m = Net()
            return m.cuda().eval()
        def load_b(path):
            m = Net()
            m.eval()
            return m.to("cuda")
        def load_c(path):
            m = Net()
            m.eval()
            m.train()
            return m
        def load_d(path):
            return Net()
        """)
    assert [s.of(_fn(model, n)).returns_mode for n in ("load_a", "load_b", "load_c", "load_d")] == [
        EVAL, EVAL, TRAIN, None]


def test_mode_target_strips_device_moves() -> None:
    model, s = _facts("""
        def f(model):
            model.cuda().eval()
        """)
    assert [(e.kind, e.target) for e in s.of(_fn(model, "f")).effects] == [(EVAL, "$model")]


def test_creates_follows_self_helpers() -> None:
    model, s = _facts("""
        class Net:
            def __init__(self):
                self.a = 1
                self._build()
            def _build(self):
                self.b = 2
                helper(self)
        """)
    assert s.of(_fn(model, "__init__")).creates == {"self.a", "self.b"}


def test_no_grad_from_decorators() -> None:
    model, s = _facts("""
        import functools
        import torch
        def evaluation(fn):
            @functools.wraps(fn)
            def wrapper(*a, **k):
                with torch.inference_mode():
                    return fn(*a, **k)
            return wrapper
        def logged(fn):
            return fn
        @torch.no_grad()
        def a(): pass
        @evaluation
        def b(): pass
        @logged
        def c(): pass
        """)
    assert [s.of(_fn(model, n)).no_grad for n in "abc"] == [True, True, False]


def test_writes_names_the_parameters_written_in_place() -> None:
    model, s = _facts("""
        import torch
        import torch.nn.functional as F
        class Norm:
            def _normalize_(self, x, mean, std):
                x -= mean
                x.div_(std)
            def _mask_(self, scores, mask):
                scores[mask] = float("-inf")
                return scores
            def _act(self, h):
                F.relu(h, inplace=True)
            def _view_write(self, x):
                flat = x.view(-1)
                flat.zero_()
            def _copies_first(self, x, mean):
                x = x.clone()
                x -= mean
                return x
            def _reads_only(self, x, mean):
                return (x - mean).abs()
        """)
    assert s.writes(_fn(model, "_normalize_")) == {"x"}
    assert s.writes(_fn(model, "_mask_")) == {"scores"}
    assert s.writes(_fn(model, "_act")) == {"h"}
    assert s.writes(_fn(model, "_view_write")) == {"x"}  # through a view
    assert s.writes(_fn(model, "_copies_first")) == frozenset()
    assert s.writes(_fn(model, "_reads_only")) == frozenset()
    assert s.of(_fn(model, "_normalize_")).writes == {"x"}  # kept on the summary


def test_writes_follow_helpers_with_arguments_bound_and_stop_at_recursion() -> None:
    model, s = _facts("""
        def clamp_(t):
            t.clamp_(min=0)
        def middle(a, b):
            clamp_(b)
        def top(p, q):
            middle(q, p)
        def loop(u):
            loop(u)
            u.add_(1)
        """)
    assert s.writes(_fn(model, "middle")) == {"b"}
    assert s.writes(_fn(model, "top")) == {"p"}  # middle's b is top's p
    assert s.writes(_fn(model, "loop")) == {"u"}
    call = _call(model, "middle(q, p)")
    assert [model.module.code_for_node(a) for a in s.written_args(call)] == ["p"]


def test_writes_are_bounded_in_depth() -> None:
    model, s = _facts("""
        def d0(t):
            t.add_(1)
        def d1(t):
            d0(t)
        def d2(t):
            d1(t)
        def d3(t):
            d2(t)
        """)
    assert s.writes(_fn(model, "d2")) == {"t"}
    assert s.writes(_fn(model, "d3")) == frozenset()  # the write is MAX_DEPTH calls down


def test_constructor_attributes_bind_arguments_to_the_self_attributes_init_keeps() -> None:
    model, s = _facts("""
        class Trainer:
            def __init__(self, model, loaders, samplers=None, lr=0.1):
                self.model = model
                self.loaders, self.samplers = loaders, samplers
                self.lr = lr * 2
        t = Trainer(net, loaders=dls, samplers=smp)
        u = Unknown(net, dls)
        """)
    call = _call(model, "Trainer(net, loaders=dls, samplers=smp)")
    got = [(attr, model.module.code_for_node(arg)) for attr, arg in s.constructor_attributes(call)]
    assert got == [("self.model", "net"), ("self.loaders", "dls"), ("self.samplers", "smp")]
    assert s.constructor_attributes(_call(model, "Unknown(net, dls)")) == []


# ------------------------------------------------ every implementation of a template method
TEMPLATE = """
class Loop:
    def fit(self, batches):
        for b in batches:
            self.update(b)
        self.finish()
        self.cleanup()

class Plain(Loop):
    def update(self, b):
        self.opt.zero_grad()
        self.loss(b).backward()
        self.opt.step()

    def finish(self):
        self.opt.step()
        self.model.eval()

    def cleanup(self):
        self.opt.zero_grad()
        self.opt.step()

class Scaled(Loop):
    def update(self, b):
        self.opt.zero_grad()
        self.scaler.scale(self.loss(b)).backward()
        self.scaler.step(self.opt)
        self.opt.step()

    def finish(self):
        self.model.eval()

    def cleanup(self):
        self.opt.step()
        self.opt.zero_grad()
"""


def test_a_call_of_several_implementations_has_what_every_one_does_in_their_order() -> None:
    model, s = _facts(TEMPLATE)
    update = _call(model, "self.update(b)")
    assert [(e.kind, e.target) for e in s.effects_at(update)] == [
        (CLEAR, "self.opt"), (BACKWARD, None), (STEP, "self.opt")]  # two steps in a row are one fact
    assert s.steps_optimizer(update)
    # only one implementation steps: the call may step nothing; both switch to eval
    finish = _call(model, "self.finish()")
    assert [(e.kind, e.target) for e in s.effects_at(finish)] == [(EVAL, "self.model")]
    assert not s.steps_optimizer(finish)
    # the same effects in another order: nothing is agreed
    assert s.effects_at(_call(model, "self.cleanup()")) == []
    # the fit() summary carries the agreed effects of its helpers
    assert [(e.kind, e.target) for e in s.of(_fn(model, "fit")).effects][:3] == [
        (CLEAR, "self.opt"), (BACKWARD, None), (STEP, "self.opt")]


def test_a_helper_of_several_implementations_is_a_training_event_at_its_call() -> None:
    model, s = _facts(TEMPLATE)
    calls = {model.module.code_for_node(c): [e.kind for e in evs] for c, evs in s.helper_calls()}
    assert calls["self.update(b)"] == [CLEAR, BACKWARD, STEP]
    assert "self.finish()" not in calls and "self.cleanup()" not in calls  # nothing agreed to train


def test_a_method_of_a_base_class_of_another_file_binds_its_arguments(tmp_path) -> None:
    from lint_rules.analysis.cross_file import ProjectFacts
    from lint_rules.analysis.project_index import ProjectIndex

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "steps.py").write_text(textwrap.dedent("""
        class Steps:
            def update(self, opt, other=None):
                opt.step()
                other.zero_grad()
                self.ema.step()
    """))
    model = FileModel(cst.parse_module(textwrap.dedent("""
        from steps import Steps
        class Trainer(Steps):
            def fit(self, x):
                self.update(self.opt_d)
                self.update(self.opt_g, other=self.model)
                self.update(opt=self.opt_g)
    """)))
    model.project_facts = ProjectFacts(ProjectIndex(), str(tmp_path / "train.py"))
    s = model.fact(Summaries)
    at = {model.module.code_for_node(c): [(e.kind, e.target) for e in s.effects_at(c)]
          for c in model.nodes(cst.Call) if model.module.code_for_node(c).startswith("self.update")}
    assert at == {
        "self.update(self.opt_d)": [(STEP, "self.opt_d")],  # `other` left to its default: no target
        "self.update(self.opt_g, other=self.model)": [(STEP, "self.opt_g"), (CLEAR, "self.model")],
        "self.update(opt=self.opt_g)": [(STEP, "self.opt_g")],
    }
    assert all(s.steps_optimizer(c) for c in model.nodes(cst.Call)
               if model.module.code_for_node(c).startswith("self.update"))


def test_a_reset_of_every_gradient_is_a_clear_of_its_function_and_of_its_callers() -> None:
    # The walk over the parameters is the reset, not a loop of the helper: its callers' loops clear.
    # A reset of parameters picked by name is a freeze, and one inside a loop of its own is that loop's.
    model, s = _facts("""
        import torch
        def reset(model):
            for p in model.parameters():
                p.grad = None
        def zero(net):
            for name, w in net.named_parameters():
                if w.grad is not None:
                    w.grad.data.zero_()
        def freeze(model, names):
            for name, p in model.named_parameters():
                if name in names:
                    p.grad = None
        def own_loop(model, batches):
            for b in batches:
                for p in model.parameters():
                    p.grad = None
        def outer(model):
            reset(model)
    """)
    effects = {name: [(e.kind, e.target, e.looped) for e in s.of(_fn(model, name)).effects]
               for name in ("reset", "zero", "freeze", "own_loop", "outer")}
    assert effects == {"reset": [(CLEAR, None, False)], "zero": [(CLEAR, None, False)], "freeze": [],
                       "own_loop": [(CLEAR, None, True)], "outer": [(CLEAR, None, False)]}
