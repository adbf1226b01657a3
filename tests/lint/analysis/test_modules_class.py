"""One answer to "is this an nn.Module class?" for every rule."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.autograd_flow import class_has_base, is_torch_module_class
from lint_rules.analysis.model import FileModel
from lint_rules.analysis.modules import ModuleFacts

_SRC = """
import pytorch_lightning as pl
import lightning as L
import torch
from torch import nn

class A(pl.LightningModule): pass
class B(L.LightningModule): pass
class C(nn.Module): pass
class D(C): pass
class E(nn.Parameter): pass
class F(object): pass
class G(pl.LightningDataModule): pass
class H(G): pass
"""


def test_lightning_and_torch_modules_are_module_classes_everywhere() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent(_SRC)))
    facts = model.fact(ModuleFacts)
    classes = {c.name.value: c for c in model.nodes(cst.ClassDef)}
    shared = {name: facts.is_module_class(c) for name, c in classes.items()}
    by_base = {name: class_has_base(model, c, is_torch_module_class) for name, c in classes.items()}
    expected = {"A": True, "B": True, "C": True, "D": True, "E": False, "F": False, "G": False, "H": False}
    assert shared == expected
    assert by_base == expected


def test_a_base_class_two_files_away_makes_a_module_class(tmp_path) -> None:
    # encoder.py's Encoder derives from layers/base.py's Stack, which derives from core.py's Base(nn.Module)
    from lint_rules.analysis.cross_file import ProjectFacts
    from lint_rules.analysis.project_index import index_for

    files = {
        "pkg/__init__.py": "",
        "pkg/core.py": "import torch\nclass Base(torch.nn.Module):\n    pass\n",
        "pkg/layers/__init__.py": "",
        "pkg/layers/base.py": "from pkg.core import Base\nclass Stack(Base, object):\n    pass\n",
        "pkg/util.py": "class Plain:\n    pass\n",
        "pkg/encoder.py": textwrap.dedent("""
            import torch
            from pkg.layers.base import Stack
            from pkg.util import Plain
            class Encoder(Stack):
                def __init__(self, n):
                    super().__init__()
                    self.blocks = list()
                    for _ in range(n):
                        self.blocks += [torch.nn.Linear(4, 4)]
            class Holder(Plain):
                pass
        """),
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    path = str(tmp_path / "pkg/encoder.py")
    model = FileModel(cst.parse_module((tmp_path / "pkg/encoder.py").read_text()))
    model.project_facts = ProjectFacts(index_for(None), path)
    facts = model.fact(ModuleFacts)
    classes = {c.name.value: c for c in model.nodes(cst.ClassDef)}
    assert facts.is_module_class(classes["Encoder"]) is True
    assert facts.is_module_class(classes["Holder"]) is False

    from lint_rules import api

    settings = api.Settings.resolve(isolated=True, select=["TRN401"])
    found = api.lint_file(path, settings, shown=path).findings
    assert [(f.code, f.line) for f in found] == [("TRN401", 8)]  # self.blocks = list(), grown with +=


def test_names_a_base_class_of_another_file_registers(tmp_path) -> None:
    # Base (core.py) registers "mask" by name; Mid (mid.py) adds "scale"; Outside's base is not in the project.
    from lint_rules import api

    files = {
        "core.py": textwrap.dedent("""
            import torch
            from torch import nn
            class Base(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("mask", torch.ones(3))
        """),
        "mid.py": textwrap.dedent("""
            import torch
            from core import Base
            class Mid(Base):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("scale", torch.ones(1))
        """),
        "head.py": textwrap.dedent("""
            import torch
            from mid import Mid
            from elsewhere import Outside
            class Head(Mid):
                def __init__(self):
                    super().__init__()
                    self.mask = torch.zeros(3)
                    self.scale = torch.zeros(1)
                    self.counts = torch.zeros(4)
            class Other(Outside):
                def __init__(self):
                    super().__init__()
                    self.counts = torch.zeros(4)
        """),
    }
    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    path = str(tmp_path / "head.py")
    settings = api.Settings.resolve(isolated=True, select=["TRN402"])
    found = api.lint_file(path, settings, shown=path).findings
    # mask and scale are registered up the chain; counts is not; Other's base may register anything
    assert [(f.code, f.line) for f in found] == [("TRN402", 10)]


def test_a_name_loaded_with_torch_load_is_no_module_by_its_name_alone() -> None:
    src = textwrap.dedent("""
        import torch
        def publish(path, out):
            model = torch.load(path)
            model = add_metadata(model, "me")
            use(model)
        def resume(args, config):
            if args.resume:
                model = torch.load(args.resume)
            else:
                model = Classifier(config)
            use(model)
        def plain(path):
            model = build(path)
            use(model)
    """)
    model = FileModel(cst.parse_module(src))
    facts = model.fact(ModuleFacts)
    used = {model.enclosing_function(c).name.value: c.args[0].value for c in model.nodes(cst.Call)
            if isinstance(c.func, cst.Name) and c.func.value == "use"}
    assert facts.is_module_value(used["publish"]) is False  # loaded, then only transformed: unknown
    assert facts.is_module_value(used["resume"]) is True    # or built by another call: the name counts
    assert facts.is_module_value(used["plain"]) is True     # a factory: the name counts


def test_runs_in_forward_follows_self_calls_from_forward() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent("""
        import torch
        class Block(torch.nn.Module):
            def forward(self, x):
                return self._mix(x)
            def _mix(self, x):
                return self._attend(x)
            def _attend(self, x):
                return x
            def training_step(self, batch):
                return self(batch)
            def generate(self, x):
                return self._attend(x)
        class Wrapper(torch.nn.Module):
            def __call__(self, x):
                return self.run(x)
            def run(self, x):
                return x
        """)))
    facts = model.fact(ModuleFacts)
    found = {f"{c.name.value}.{m.name.value}": facts.runs_in_forward(m, c)
             for c in model.nodes(cst.ClassDef) for m in c.body.body if isinstance(m, cst.FunctionDef)}
    assert found == {"Block.forward": True, "Block._mix": True, "Block._attend": True,
                     "Block.training_step": False, "Block.generate": False,
                     "Wrapper.__call__": True, "Wrapper.run": True}


def test_a_value_is_a_module_by_the_module_only_methods_called_on_it() -> None:
    src = textwrap.dedent("""
        import torch
        class Agent:
            def __init__(self, make_actor, critic_class):
                self.actor = make_actor()
                self.critic = critic_class()
                self.opt = torch.optim.Adam(self.actor.parameters())
                self.schedule = make_schedule()

            def act(self, obs):
                self.actor
                self.critic
                self.schedule.step()
                self.schedule

        def update(policy, target, buffer):
            for p, q in zip(policy.named_parameters(), target.parameters()):
                pass
            policy
            target
            buffer

        def other(policy):
            policy
        """)
    model = FileModel(cst.parse_module(src))
    facts = model.fact(ModuleFacts)
    bare = [s.body[0].value for fn in model.nodes(cst.FunctionDef) for s in fn.body.body
            if isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], cst.Expr)
            and isinstance(s.body[0].value, (cst.Name, cst.Attribute))]
    found = {f"{model.enclosing_function(e).name.value}:{model.module.code_for_node(e)}": facts.is_module_value(e)
             for e in bare}
    # a parameter of another function with the same name is another value: nothing is known of it
    assert found == {"act:self.actor": True, "act:self.critic": False, "act:self.schedule": False,
                     "update:policy": True, "update:target": True, "update:buffer": False, "other:policy": False}


def test_a_name_guessed_a_model_yields_to_its_last_word_and_its_uses() -> None:
    src = textwrap.dedent("""
        import torch

        def run(task, build, strip, trunk, weights):
            model_output = task.last_batch.model_output
            model_output
            model_dataset = build()
            model_dataset
            net_sd = strip(weights)
            net_sd
            converted_model = strip(trunk)
            converted_model.keys()
            converted_model
            model_ema = build()
            model_ema
            forward_model = build()
            forward_model
            model = task.last_batch.model
            model
        """)
    model = FileModel(cst.parse_module(src))
    facts = model.fact(ModuleFacts)
    fn = next(iter(model.nodes(cst.FunctionDef)))
    bare = [s.body[0].value for s in fn.body.body
            if isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], cst.Expr)
            and isinstance(s.body[0].value, cst.Name)]
    found = {e.value: facts.is_module_value(e) for e in bare}
    # an output, a dataset and a state dict by their last word; a mapping by its .keys(); the rest
    # are taken for models by their names, as before
    assert found == {"model_output": False, "model_dataset": False, "net_sd": False, "converted_model": False,
                     "model_ema": True, "forward_model": True, "model": True}


def test_a_builtin_or_a_trainer_base_is_no_module_whatever_the_class_defines() -> None:
    # `class Cat(object)` with a forward() is a helper of a module, not one; a subclass of an installed
    # package's trainer or callback with a forward() is a trainer. A module base of an installed
    # package (its name ends in Module) and an unknown base with a forward() still make a module.
    src = textwrap.dedent("""
        from some_rl_lib import PPOTrainer, LoggingCallback, BaseModule, Unknown

        class Cat(object):
            def forward(self, *xs): ...

        class Table(dict):
            def forward(self, x): ...

        class Trainer2(PPOTrainer):
            def forward(self, model, batch): ...

        class Hook(LoggingCallback):
            def forward(self, x): ...

        class Block(BaseModule):
            def forward(self, x): ...

        class Shaped(Unknown):
            def forward(self, x): ...

        class object2(object):
            pass

        class Mine(object2):
            def forward(self, x): ...
        """)
    model = FileModel(cst.parse_module(src))
    facts = model.fact(ModuleFacts)
    found = {c.name.value: facts.is_module_class(c) for c in model.nodes(cst.ClassDef)}
    assert found == {"Cat": False, "Table": False, "Trainer2": False, "Hook": False, "Block": True,
                     "Shaped": True, "object2": False, "Mine": False}


def test_a_parameter_named_like_a_model_that_every_caller_fills_with_data_is_no_model() -> None:
    src = textwrap.dedent("""
        import torch

        def save_to(path, model):
            torch.save(model, path)

        def export(path, net):
            torch.save(net, path)

        def main(path, state_dict, weights_sd, trained):
            save_to(path, state_dict)
            save_to(path + ".bak", weights_sd)
            export(path, trained)
            export(path, state_dict)
        """)
    model = FileModel(cst.parse_module(src))
    facts = model.fact(ModuleFacts)
    saved = {fn.name.value: facts.is_module_value(fn.body.body[0].body[0].value.args[0].value)
             for fn in model.nodes(cst.FunctionDef) if fn.name.value in ("save_to", "export")}
    # every call of save_to hands it a state dict; export is also handed something else
    assert saved == {"save_to": False, "export": True}
