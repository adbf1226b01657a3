"""The examples of TRN702 (WholeModelSaved): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        # names that start or end like a model's but hold something else: the last word says what
        import torch
        def dump(task, generate, strip_prefix, trunk, path):
            model_output = task.last_batch.model_output
            torch.save(model_output, path)
            model_dataset = generate()
            torch.save(model_dataset, path)
            converted_model = strip_prefix(trunk)
            print(len(converted_model.keys()))
            torch.save(converted_model, path)
        """
    ),
    Valid(
        """
        # a unittest case that pickles a module on purpose to check it survives the trip
        import unittest
        import torch
        class TestPickling(unittest.TestCase):
            def check_round_trip(self):
                net = torch.nn.Linear(2, 2)
                torch.save(net, "net.pt")
        """
    ),
    Valid(
        """
        import torch
        import torch.nn as nn
        model = nn.Linear(8, 2)
        torch.save(model.state_dict(), "model.pt")
        torch.save({"model": model.state_dict(), "epoch": 3}, "ckpt.pt")
        snapshot = {"MODEL_STATE": model.state_dict(), "EPOCHS_RUN": 3}
        torch.save(snapshot, "snapshot.pt")
        """
    ),
    Valid(
        """
        # values that come from a state dict, and TorchScript archives
        import copy
        import torch
        def save(model, path):
            model_state = model.state_dict()
            torch.save(model_state, path)
            best_model_wts = copy.deepcopy(model.state_dict())
            torch.save(best_model_wts, path)
            torch.jit.save(torch.jit.script(model), path)

        def export(model_state_dict, path):
            torch.save(model_state_dict, path)
        """
    ),
    Valid(
        """
        # not torch.save, and tensors
        import numpy as np
        import torch
        np.save("x.npy", model)
        torch.save(torch.randn(3), "t.pt")
        torch.save(optimizer.state_dict(), "opt.pt")
        """
    ),
    Valid(
        """
        # a state_dict attribute of something that is not a module (a loaded checkpoint)
        import torch
        def export(ckpt, path):
            torch.save(ckpt.state_dict, path)
            torch.save({"weights": ckpt.state_dict}, path)
        """
    ),
    Valid(
        """
        # parameters named like a model that the author declared to hold plain data
        import torch
        def publish(model, token, out=None):
            '''Upload a packaged checkpoint.

            Args:
                model (dict): the package, with its state dict and metadata.
                token (str): access token.
            '''
            torch.save(model, out)

        def archive(net: dict, out):
            torch.save(net, out)
        """
    ),
]

INVALID = [
    Invalid(
        """
        # one name, two checkpoints: each save holds the dict assigned just before it
        import torch
        def save(self, model, epoch, path):
            if self.sharded:
                state = {"epoch": epoch, "model": model.state_dict()}
                torch.save(state, path)
            else:
                state = {"epoch": epoch, "model": self.gather_sd(model)}
                torch.save(state, path)
            state = {"epoch": epoch, "model": model}
            torch.save(state, path)  # BUG
        """
    ),
    Invalid(
        """
        import torch
        import torch.nn as nn
        model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
        torch.save(model, "model.pt")  # BUG
        """
    ),
    Invalid(
        """
        import torch
        from torch import nn
        class Net(nn.Module):
            def save(self, path):
                torch.save(self, path)  # BUG

        def checkpoint(net, ddp_model, epoch):
            torch.save(ddp_model.module, "last.pt")  # BUG
            torch.save({"epoch": epoch, "model": net}, "ckpt.pt")  # BUG
            state = {"epoch": epoch, "model": Net()}
            torch.save(state, "state.pt")  # BUG
        """
    ),
    Invalid(
        """
        from torch import save as torch_save
        from torch import nn
        def train(model: nn.Module):
            torch_save(model.cpu(), "final.pt")  # BUG
        """
    ),
    Invalid(
        """
        # the state_dict method saved without calling it
        import torch
        class Session:
            def save(self, folder):
                torch.save(self.model.state_dict, f"{folder}/model.pt")  # BUG
                torch.save({"model": self.model.state_dict}, f"{folder}/ckpt.pt")  # BUG
                torch.save(self.optimizer.state_dict, f"{folder}/optim.pt")  # BUG

        class Frame:
            def __init__(self, model_def, optimizer_def):
                self.net = model_def()
                self.opt = optimizer_def(self.net.parameters())

            def save(self, path):
                torch.save(self.net.state_dict, path)  # BUG
        """
    ),
]
