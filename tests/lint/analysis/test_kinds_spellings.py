"""Value kinds for spellings real code uses: Variable, star imports, backward receivers."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.kinds import LEAF, LOSS, MODULE, OPTIMIZER, TENSOR
from lint_rules.analysis.model import FileModel


def _kinds(src: str) -> dict[str, str | None]:
    """Kind of each name at its last use as a bare expression statement."""
    model = FileModel(cst.parse_module(textwrap.dedent(src)))
    out = {}
    for stmt in model.module.body:
        if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Expr) \
                and isinstance(stmt.body[0].value, cst.Name):
            name = stmt.body[0].value
            out[name.value] = model.kind_of(name)
    return out


def test_variable_with_requires_grad_is_a_leaf() -> None:
    assert _kinds("""
        import torch
        from torch.autograd import Variable
        a = torch.autograd.Variable(torch.zeros(3), requires_grad=True)
        b = Variable(torch.zeros(3))
        a
        b
        """) == {"a": LEAF, "b": TENSOR}


def test_star_import_from_torch_resolves() -> None:
    assert _kinds("""
        from torch import *
        opt = optim.SGD(params, lr=0.1)
        t = zeros(3, requires_grad=True)
        opt
        t
        """) == {"opt": OPTIMIZER, "t": LEAF}


def test_what_backward_is_called_on_is_a_loss() -> None:
    assert _kinds("""
        import torch
        objective = torch.mean(pred - target)
        objective.backward()
        total = torch.mean(pred)
        objective
        total
        """) == {"objective": LOSS, "total": TENSOR}


def test_a_name_that_starts_with_a_verb_names_a_function_not_a_model() -> None:
    # nothing binds these names: only their spelling speaks, and a verb phrase names what acts on a model
    kinds = _kinds("""
        build_model
        evaluate_model
        update_registry_for_model
        load_net
        get_network
        teacher_model
        eval_net
        model
    """)
    assert kinds == {"build_model": None, "evaluate_model": None, "update_registry_for_model": None,
                     "load_net": None, "get_network": None, "teacher_model": MODULE, "eval_net": MODULE,
                     "model": MODULE}


def test_an_attribute_of_a_class_is_not_a_model_by_its_spelling() -> None:
    model = FileModel(cst.parse_module("ModelRegistry.model_families\nregistry.model_families\n"))
    exprs = [stmt.body[0].value for stmt in model.module.body]
    assert [model.kind_of(e) for e in exprs] == [None, MODULE]


def test_a_name_about_a_model_or_an_optimizer_is_neither() -> None:
    # The last word says what a compound name holds: a config, a path, an index, a state dict.
    # Models and optimizers spelled with a qualifier stay what their names say.
    from lint_rules.analysis.kinds import SCHEDULER, name_hint

    about = ["model_config", "model_cfg", "model_path", "model_name", "model_dir", "model_args",
             "model_kwargs", "net_params", "model_sd", "model_state_dict", "optimizer_idx", "optimizer_config",
             "opt_state", "model_outputs", "model_type", "model_id", "model_list", "model_lr"]
    assert {n: name_hint(n) for n in about} == {n: None for n in about}
    objects = {"model": MODULE, "net": MODULE, "model_ema": MODULE, "net_g": MODULE, "teacher_model": MODULE,
               "model_without_ddp": MODULE, "optimizer": OPTIMIZER, "opt": OPTIMIZER, "optimizer_d": OPTIMIZER,
               "lr_scheduler": SCHEDULER}
    assert {n: name_hint(n) for n in objects} == objects
