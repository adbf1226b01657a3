"""TRN804 at run time (pytest_torchcheck/watch/checks/trn804_ddp_model_moved_after_wrap.py): a model's
parameters moved or cast after DistributedDataParallel wrapped it. The programs run DDP in a gloo group
of one rank, in this process."""

from __future__ import annotations

from tests.plugin.watch_helpers import line_of, watch_program

PROGRAM = """
    import tempfile, os
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    folder = tempfile.mkdtemp()
    dist.init_process_group("gloo", init_method="file://" + os.path.join(folder, "rdzv"), rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        BEFORE
        ddp = DDP(model)  # <- wrap
        AFTER
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        x = torch.randn(4, 4, dtype=next(ddp.parameters()).dtype)
        ddp(x).sum().backward()
        opt.step()
    finally:
        dist.destroy_process_group()
"""


def program(before: str = "pass", after: str = "pass") -> str:
    return PROGRAM.replace("BEFORE", before).replace("AFTER", after)


def test_a_cast_of_the_wrapper_after_wrapping_is_reported_at_the_call(tmp_path) -> None:
    source = program(after="ddp.double()  # <- move")
    r = watch_program(tmp_path, source, ["TRN804"])
    assert r.errors == []
    assert r.lines == [("TRN804", line_of(source, "# <- move"))]
    assert r.messages("TRN804") == [
        ".double() changed the dtype of 4 parameters (of 4) from float32 to float64 after DistributedDataParallel "
        f"wrapped the model at line {line_of(source, '# <- wrap')}: DDP built its gradient buckets and broadcast "
        "for the parameters as they were then; move or cast the model before wrapping it"]


def test_a_cast_of_the_wrapped_module_or_a_submodule_is_reported(tmp_path) -> None:
    source = program(after="model[2].to(torch.float64)  # <- move")
    r = watch_program(tmp_path, source, ["TRN804"])
    assert r.lines == [("TRN804", line_of(source, "# <- move"))]
    assert r.messages("TRN804")[0].startswith(".to() changed the dtype of 2 parameters (of 2) from float32 to float64")


def test_moving_before_wrapping_is_clean(tmp_path) -> None:
    r = watch_program(tmp_path, program(before="model = model.double().to('cpu')"), ["TRN804"])
    assert (r.errors, r.code, r.findings) == ([], 0, [])


def test_a_move_that_changes_nothing_is_clean(tmp_path) -> None:
    # the parameters stay where and as they are: nothing moved under DDP
    r = watch_program(tmp_path, program(after="ddp.to('cpu'); ddp.module.float(); ddp.cpu()"), ["TRN804"])
    assert (r.errors, r.code, r.findings) == ([], 0, [])


def test_a_copy_ddp_did_not_wrap_is_clean(tmp_path) -> None:
    # an EMA copy of the model, cast after the wrap: not DDP's module
    source = program(after="import copy; ema = copy.deepcopy(model).double()")
    r = watch_program(tmp_path, source, ["TRN804"])
    assert (r.errors, r.code, r.findings) == ([], 0, [])
