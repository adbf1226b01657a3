"""Canonical qualified names: one spelling for every re-export of a PyTorch object.

PyTorch exposes most public objects under several module paths
(``torch.nn.DataParallel``, ``torch.nn.parallel.DataParallel`` and
``torch.nn.parallel.data_parallel.DataParallel`` are one class). Rules match
canonical names only, so every spelling a user can import resolves here first.
``tests/lint/test_names.py`` checks this table against the installed torch.
"""

from __future__ import annotations

# Exact re-exports: defining path -> public canonical path.
_EXACT: dict[str, str] = {
    "torch.nn.parallel.DataParallel": "torch.nn.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel": "torch.nn.DataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.data_parallel.data_parallel": "torch.nn.parallel.data_parallel",
    "torch.nn.parameter.Parameter": "torch.nn.Parameter",
    "torch.utils.data.distributed.DistributedSampler": "torch.utils.data.DistributedSampler",
    "torch.utils.data.dataloader.DataLoader": "torch.utils.data.DataLoader",
    "torch.autograd.grad_mode.no_grad": "torch.no_grad",
    "torch.autograd.no_grad": "torch.no_grad",
    "torch.autograd.grad_mode.enable_grad": "torch.enable_grad",
    "torch.autograd.enable_grad": "torch.enable_grad",
    "torch.autograd.grad_mode.set_grad_enabled": "torch.set_grad_enabled",
    "torch.autograd.set_grad_enabled": "torch.set_grad_enabled",
    "torch.autograd.grad_mode.inference_mode": "torch.inference_mode",
    "torch.autograd.inference_mode": "torch.inference_mode",
    "torch.amp.grad_scaler.GradScaler": "torch.amp.GradScaler",
    "torch.GradScaler": "torch.amp.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler": "torch.cuda.amp.GradScaler",
    "torch.autograd.backward": "torch.autograd.backward",
    "torch.nn.functional": "torch.nn.functional",
}

# Module prefixes whose public members are re-exported one level up.
# ``torch.nn.modules.linear.Linear`` -> ``torch.nn.Linear``.
_FLATTEN: tuple[tuple[str, str], ...] = (
    ("torch.nn.modules.", "torch.nn."),
    ("torch.optim.lr_scheduler.", "torch.optim.lr_scheduler."),
    ("torch.optim.", "torch.optim."),
    ("torch.nn.parallel.", "torch.nn.parallel."),
)

# Modules under torch.optim whose members are NOT re-exported as torch.optim.X.
_OPTIM_SUBMODULES = frozenset({"lr_scheduler", "swa_utils", "optimizer"})


def canonical_name(name: str) -> str:
    """Map any spelling of a torch object to its one canonical dotted name."""
    exact = _EXACT.get(name)
    if exact is not None:
        return exact
    if not name.startswith("torch."):
        return name
    if name.startswith("torch.nn.modules."):
        # torch.nn.modules.<file>.<Class>[.<attr>...] -> torch.nn.<Class>...
        parts = name.split(".")
        if len(parts) >= 5:
            return _EXACT.get(canonical := "torch.nn." + ".".join(parts[4:]), canonical)
        return name
    if name.startswith("torch.optim."):
        parts = name.split(".")
        # torch.optim.<file>.<Class> where <file> is a private implementation module
        if len(parts) >= 4 and parts[2] not in _OPTIM_SUBMODULES and parts[3][:1].isupper():
            return "torch.optim." + ".".join(parts[3:])
        if len(parts) >= 4 and parts[2] == "optimizer" and parts[3] == "Optimizer":
            return "torch.optim.Optimizer"
        return name
    return name


# Families of objects that rules ask about. Values are canonical names.
OPTIMIZER_BASES = frozenset({"torch.optim.Optimizer"})
GRAD_SCALERS = frozenset({"torch.amp.GradScaler", "torch.cuda.amp.GradScaler"})
DATA_LOADERS = frozenset({"torch.utils.data.DataLoader"})
DISTRIBUTED_SAMPLERS = frozenset({"torch.utils.data.DistributedSampler"})
DATA_PARALLEL = "torch.nn.DataParallel"
PARAMETER = "torch.nn.Parameter"
NO_GRAD_CONTEXTS = frozenset({"torch.no_grad", "torch.inference_mode"})
SET_GRAD_ENABLED = "torch.set_grad_enabled"

# torch functions that create a fresh leaf tensor and accept requires_grad=.
TENSOR_FACTORIES = frozenset(
    "torch." + n
    for n in (
        "tensor zeros ones empty full rand randn randint arange linspace logspace eye "
        "zeros_like ones_like empty_like full_like rand_like randn_like randint_like "
        "as_tensor empty_strided normal"
    ).split()
)

# torch functions that do not return tensors (so their results are not "tensor-like").
NON_TENSOR_TORCH = frozenset(
    "torch." + n
    for n in (
        "device dtype Size is_tensor is_floating_point numel manual_seed get_default_dtype "
        "set_default_dtype no_grad enable_grad inference_mode set_grad_enabled load save "
        "compile jit.script jit.trace cuda.is_available cuda.device_count "
        "cuda.current_device backends.cudnn.is_available distributed.get_rank "
        "distributed.get_world_size distributed.is_initialized distributed.is_available "
        "get_num_threads set_num_threads cuda.get_device_name Generator finfo iinfo "
        "autocast amp.autocast cuda.amp.autocast"
    ).split()
)


def is_optimizer_class(qualname: str) -> bool:
    """True for torch.optim optimizer classes (not schedulers or SWA helpers)."""
    if qualname in OPTIMIZER_BASES:
        return True
    parts = qualname.split(".")
    return (
        len(parts) == 3
        and parts[0] == "torch"
        and parts[1] == "optim"
        and parts[2][:1].isupper()
    )


def is_loss_function(qualname: str) -> bool:
    """``torch.nn.functional`` loss functions and ``torch.nn.*Loss`` classes."""
    if qualname.startswith("torch.nn.functional."):
        leaf = qualname.rsplit(".", 1)[1]
        return leaf.endswith("_loss") or leaf in {"cross_entropy", "binary_cross_entropy",
                                                   "binary_cross_entropy_with_logits", "nll_loss"}
    return qualname.startswith("torch.nn.") and qualname.endswith("Loss") and qualname.count(".") == 2

# The pre-0.4 autograd wrapper: `Variable(t, requires_grad=True)`, `Variable(t, volatile=True)`.
VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
