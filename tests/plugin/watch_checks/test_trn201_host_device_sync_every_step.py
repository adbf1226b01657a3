"""TRN201 at run time (pytest_torchcheck/watch/checks/trn201_host_device_sync_every_step.py): a host-device
sync from one line in every optimizer step; on a CPU run, a call on a tensor of the autograd graph."""

from __future__ import annotations

from tests.plugin.watch_helpers import line_of, watch_program

LOOP = """
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 4), torch.randn(8, 2)
    total = 0.0
    for step in range(STEPS):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        {body}
"""


def program(body: str, steps: int = 6) -> str:
    return LOOP.replace("STEPS", str(steps)).replace("{body}", body)


def test_item_of_the_loss_every_step_is_reported_at_its_line(tmp_path) -> None:
    source = program("total += loss.item()  # <-")
    r = watch_program(tmp_path, source, ["TRN201"])
    assert r.errors == []
    assert r.lines == [("TRN201", line_of(source, "# <-"))]
    (message,) = r.messages("TRN201")
    assert message.startswith(".item() ran 6 times from this line, in each of 6 consecutive optimizer steps "
                              "(of 6), on a tensor of the autograd graph, on the CPU here; on a GPU")


def test_print_and_float_of_the_loss_are_syncs_too(tmp_path) -> None:
    source = program("print(f'{loss:.3f}', float(loss))  # <-")
    r = watch_program(tmp_path, source, ["TRN201"])
    assert r.errors == []
    assert r.lines == [("TRN201", line_of(source, "# <-"))]
    assert r.messages("TRN201")[0].startswith("format() and float() ran 12 times")


def test_logging_every_n_steps_is_not_every_step(tmp_path) -> None:
    source = program("if step % 3 == 0: print(loss.item())", steps=9)
    r = watch_program(tmp_path, source, ["TRN201"])
    assert (r.errors, r.code, r.findings) == ([], 0, [])


def test_a_detached_or_data_tensor_on_the_cpu_would_not_sync_a_gpu_either(tmp_path) -> None:
    # x is data prepared on the CPU; a detached loss on a CPU run: nothing says it would be on a GPU
    source = program("total += x.sum().item() + loss.detach().item() + y.tolist()[0][0]")
    r = watch_program(tmp_path, source, ["TRN201"])
    assert (r.errors, r.code, r.findings) == ([], 0, [])


def test_a_sync_once_per_epoch_and_in_evaluation_is_not_reported(tmp_path) -> None:
    source = """
        import torch
        from torch import nn

        model = nn.Linear(4, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(8, 4), torch.randn(8, 2)
        for epoch in range(3):
            for step in range(4):
                opt.zero_grad()
                loss = nn.functional.mse_loss(model(x), y)
                loss.backward()
                opt.step()
            print(epoch, loss.item())
            model.eval()
            for _ in range(2):
                print(model(x).sum().item())
        print(model.weight.sum().item())
    """
    r = watch_program(tmp_path, source, ["TRN201"])
    assert (r.errors, r.code, r.findings) == ([], 0, [])


def test_torchs_own_syncs_inside_its_functions_do_not_count(tmp_path) -> None:
    # clip_grad_norm_ and the optimizer read tensors inside torch: not the user's calls
    source = program("torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)")
    source = source.replace("torch.optim.SGD(model.parameters(), lr=0.1)",
                            "torch.optim.Adam(model.parameters(), lr=0.1, capturable=False)")
    r = watch_program(tmp_path, source, ["TRN201"])
    assert (r.errors, r.code, r.findings) == ([], 0, [])


def test_a_sync_an_installed_package_makes_is_not_the_users(tmp_path) -> None:
    # a framework's logger reading the loss every step: not a line of the user's to change
    (tmp_path / "site-packages").mkdir()
    (tmp_path / "site-packages" / "framework.py").write_text("def log(loss):\n    return loss.item()\n")
    source = program("framework.log(loss)").replace(
        "import torch\n", "import sys, os\n    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "
                          "'site-packages'))\n    import framework\n    import torch\n", 1)
    r = watch_program(tmp_path, source, ["TRN201"])
    assert (r.errors, r.code, r.findings) == ([], 0, [])
    # the same call in the user's own module is the user's
    r = watch_program(tmp_path, source.replace("framework.log(loss)", "mine.log(loss)").replace(
        "import framework", "import mine"), ["TRN201"], files={"mine.py": "def log(loss):\n    return loss.item()\n"})
    assert [(f.path, f.line) for f in r.findings] == [("mine.py", 2)]
