"""TRN302 at run time (pytest_torchcheck/watch/checks/trn302_sampler_epoch_repeated.py): two training passes
of a shuffling DistributedSampler with the same epoch and seed. No process group is needed: the sampler
takes its rank and world size as arguments."""

from __future__ import annotations

from tests.plugin.watch_helpers import line_of, watch_program

PROGRAM = """
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.distributed import DistributedSampler

    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 2))
    sampler = DistributedSampler(data, num_replicas=2, rank=0, SHUFFLE)  # <- built
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        SET_EPOCH
        for x, y in loader:  # <- loop
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        EVAL
"""


def program(shuffle: str = "shuffle=True", set_epoch: str = "pass", evaluate: str = "pass") -> str:
    return PROGRAM.replace("SHUFFLE", shuffle).replace("SET_EPOCH", set_epoch).replace("EVAL", evaluate)


def test_a_sampler_without_set_epoch_is_reported_at_the_loop(tmp_path) -> None:
    source = program()
    r = watch_program(tmp_path, source, ["TRN302"])
    assert r.errors == []
    assert r.lines == [("TRN302", line_of(source, "# <- loop"))]
    assert r.messages("TRN302") == [
        f"this loop trained on a DistributedSampler (built at line {line_of(source, '# <- built')}) whose "
        "shuffle had epoch 0 and seed 0 in 2 training passes: set_epoch() did not change it, so each pass "
        "visited the samples in the same order on every rank"]


def test_set_epoch_each_epoch_is_clean(tmp_path) -> None:
    r = watch_program(tmp_path, program(set_epoch="sampler.set_epoch(epoch)"), ["TRN302"])
    assert (r.errors, r.code, r.findings) == ([], 0, [])


def test_set_epoch_to_the_same_value_is_reported(tmp_path) -> None:
    source = program(set_epoch="loader.sampler.set_epoch(1)")
    r = watch_program(tmp_path, source, ["TRN302"])
    assert r.lines == [("TRN302", line_of(source, "# <- loop"))]
    assert "epoch 1 and seed 0 in 2 training passes" in r.messages("TRN302")[0]


def test_shuffle_false_is_clean(tmp_path) -> None:
    r = watch_program(tmp_path, program(shuffle="shuffle=False"), ["TRN302"])
    assert (r.errors, r.code, r.findings) == ([], 0, [])


def test_an_evaluation_sampler_read_each_epoch_without_steps_is_clean(tmp_path) -> None:
    # the evaluation loader shuffles (DistributedSampler's default) and never gets set_epoch: its order
    # changes no metric; a second evaluation that stops early is read partly while training goes on
    source = program(set_epoch="sampler.set_epoch(epoch)", evaluate="""
        with torch.no_grad():
            for x, y in val_loader:
                model(x)
            for i, (x, y) in enumerate(val_loader):
                if i == 1:
                    break""").replace(
        "model = nn.Linear", "val_loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data, 2, 0))\n"
        "    model = nn.Linear")
    r = watch_program(tmp_path, source, ["TRN302"])
    assert (r.errors, r.code, r.findings) == ([], 0, [])


def test_reading_a_sampler_twice_without_training_between_is_clean(tmp_path) -> None:
    # len(), a first look at the data, then one training pass per epoch with set_epoch
    source = program(set_epoch="sampler.set_epoch(epoch); n = len(loader); first = next(iter(loader))")
    r = watch_program(tmp_path, source, ["TRN302"])
    assert (r.errors, r.code, r.findings) == ([], 0, [])


def test_a_new_sampler_each_epoch_is_not_the_same_sampler(tmp_path) -> None:
    source = program(set_epoch="loader = DataLoader(data, batch_size=8, "
                               "sampler=DistributedSampler(data, 2, 0, seed=epoch))")
    r = watch_program(tmp_path, source, ["TRN302"])
    assert (r.errors, r.code, r.findings) == ([], 0, [])
