"""Name resolution through imports, aliases and shadowing, and the canonical-name table."""

from __future__ import annotations

import importlib
import textwrap

import libcst as cst
import pytest

from lint_rules.analysis.model import FileModel
from lint_rules.analysis.names import canonical_name


def _resolve_last_call(src: str) -> str | None:
    module = cst.parse_module(textwrap.dedent(src))
    model = FileModel(module)
    calls = model.nodes(cst.Call)
    return model.qualified_name(calls[-1].func)


DP_SPELLINGS = [
    "import torch\ntorch.nn.DataParallel(m)",
    "import torch\ntorch.nn.parallel.DataParallel(m)",
    "import torch\ntorch.nn.parallel.data_parallel.DataParallel(m)",
    "import torch.nn as nn\nnn.DataParallel(m)",
    "import torch.nn.parallel as par\npar.DataParallel(m)",
    "from torch import nn\nnn.DataParallel(m)",
    "from torch import nn as tnn\ntnn.parallel.DataParallel(m)",
    "from torch.nn import DataParallel\nDataParallel(m)",
    "from torch.nn import DataParallel as DP\nDP(m)",
    "from torch.nn.parallel import DataParallel as DP\nDP(m)",
    "from torch.nn.parallel.data_parallel import DataParallel as DP\nDP(m)",
    "import torch.nn.parallel.data_parallel as dp\ndp.DataParallel(m)",
    "from torch.nn import *\nDataParallel(m)",
    "import torch.nn as nn\nW = nn.DataParallel\nW(m)",
    "import torch\ndef f():\n    import torch.nn as nn\n    return nn.DataParallel(m)",
]


@pytest.mark.parametrize("src", DP_SPELLINGS)
def test_every_data_parallel_spelling_resolves_to_one_name(src):
    assert _resolve_last_call(src) == "torch.nn.DataParallel"


@pytest.mark.parametrize(
    "src",
    [
        # a parameter named torch shadows the module
        "import torch\ndef f(torch):\n    return torch.nn.DataParallel(m)",
        # a local assignment shadows the import
        "import torch.nn as nn\ndef f():\n    nn = object()\n    return nn.DataParallel(m)",
        # a local class of the same name
        "import torch\nclass DataParallel: pass\nDataParallel(m)",
        # a relative import is the user's own module
        "from .parallel import DataParallel\nDataParallel(m)",
        # never imported
        "nn.DataParallel(m)",
        # rebound later in the same scope: ambiguous, so no claim
        "import torch.nn as nn\nif x:\n    nn = mylib\nnn.DataParallel(m)",
    ],
)
def test_shadowed_or_unknown_names_do_not_resolve(src):
    assert _resolve_last_call(src) != "torch.nn.DataParallel"


def test_class_scope_is_not_visible_in_methods():
    src = """
    import torch
    class A:
        torch = None
        def f(self):
            return torch.nn.DataParallel(m)
    """
    assert _resolve_last_call(src) == "torch.nn.DataParallel"


def test_global_declaration_resolves_to_module_binding():
    src = """
    import torch.nn as nn
    def f():
        global nn
        return nn.DataParallel(m)
    """
    assert _resolve_last_call(src) == "torch.nn.DataParallel"


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("torch.nn.parallel.DataParallel", "torch.nn.DataParallel"),
        ("torch.nn.parallel.data_parallel.DataParallel", "torch.nn.DataParallel"),
        ("torch.nn.parallel.distributed.DistributedDataParallel", "torch.nn.parallel.DistributedDataParallel"),
        ("torch.utils.data.distributed.DistributedSampler", "torch.utils.data.DistributedSampler"),
        ("torch.utils.data.dataloader.DataLoader", "torch.utils.data.DataLoader"),
        ("torch.nn.parameter.Parameter", "torch.nn.Parameter"),
        ("torch.nn.modules.linear.Linear", "torch.nn.Linear"),
        ("torch.nn.modules.loss.CrossEntropyLoss", "torch.nn.CrossEntropyLoss"),
        ("torch.optim.adam.Adam", "torch.optim.Adam"),
        ("torch.optim.sgd.SGD", "torch.optim.SGD"),
        ("torch.optim.optimizer.Optimizer", "torch.optim.Optimizer"),
        ("torch.autograd.grad_mode.no_grad", "torch.no_grad"),
        ("torch.autograd.no_grad", "torch.no_grad"),
        ("torch.autograd.grad_mode.inference_mode", "torch.inference_mode"),
        ("torch.amp.grad_scaler.GradScaler", "torch.amp.GradScaler"),
        ("torch.GradScaler", "torch.amp.GradScaler"),
        ("torch.cuda.amp.grad_scaler.GradScaler", "torch.cuda.amp.GradScaler"),
    ],
)
def test_canonical_table_matches_installed_torch(spelling, canonical):
    """Both spellings must name the very same object in the installed torch."""
    assert canonical_name(spelling) == canonical
    assert canonical_name(canonical) == canonical

    def load(dotted: str):
        module_name, _, attr = dotted.rpartition(".")
        while True:
            try:
                obj = importlib.import_module(module_name)
                break
            except ImportError:
                module_name, _, parent_attr = module_name.rpartition(".")
                attr = f"{parent_attr}.{attr}"
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj

    assert load(spelling) is load(canonical)


def test_lr_scheduler_is_not_an_optimizer_reexport():
    assert canonical_name("torch.optim.lr_scheduler.StepLR") == "torch.optim.lr_scheduler.StepLR"
