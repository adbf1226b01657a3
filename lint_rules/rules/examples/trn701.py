"""The examples of TRN701 (UnsafeTorchLoad): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import UNSAFE, Invalid, Valid

VALID = [
    Valid(
        """
        # a test reading back the file it has just written
        import torch
        def test_checkpoint_round_trip(tmp_path):
            torch.save({"step": 3}, tmp_path / "ck.pt")
            assert torch.load(tmp_path / "ck.pt")["step"] == 3
        """
    ),
    Valid(
        """
        import torch
        state = torch.load("model.pt", weights_only=True, map_location="cpu")
        """
    ),
    Valid(
        """
        # the caller decides; and another library's load()
        import torch
        from mylib import load
        def load_checkpoint(path, weights_only=True, **kwargs):
            a = torch.load(path, weights_only=weights_only)
            b = torch.load(path, **kwargs)
            return load(path)
        """
    ),
    Valid(
        """
        # a fallback for old torch builds that reject the weights_only argument
        import torch
        def load(path):
            try:
                return torch.load(path, map_location="cpu", weights_only=True)
            except TypeError:
                return torch.load(path, map_location="cpu")
        """
    ),
    Valid(
        """
        # torch.jit.load loads TorchScript, not a pickle
        import torch
        scripted = torch.jit.load("model.ts")
        """
    ),
]

INVALID = [
    Invalid(
        """
        # the pickle fallback of code that reads safetensors, and a file a downloader just wrote
        import os
        import torch
        from urllib.request import urlretrieve
        from safetensors.torch import load_file
        def load_weights(folder):
            if os.path.exists(os.path.join(folder, "model.safetensors")):
                return load_file(os.path.join(folder, "model.safetensors"))
            return torch.load(os.path.join(folder, "pytorch_model.bin"))  # BUG
        def fetch(url, target):
            urlretrieve(url, target)
            return torch.load(target)  # BUG
        """,
        fixed="""
        # the pickle fallback of code that reads safetensors, and a file a downloader just wrote
        import os
        import torch
        from urllib.request import urlretrieve
        from safetensors.torch import load_file
        def load_weights(folder):
            if os.path.exists(os.path.join(folder, "model.safetensors")):
                return load_file(os.path.join(folder, "model.safetensors"))
            return torch.load(os.path.join(folder, "pytorch_model.bin"), weights_only=True)  # BUG
        def fetch(url, target):
            urlretrieve(url, target)
            return torch.load(target, weights_only=True)  # BUG
        """,
        applicability=UNSAFE,
    ),
    Invalid(
        """
        import torch
        ckpt = torch.load(path, map_location="cpu", weights_only=False)  # BUG
        """,
        fixed="""
        import torch
        ckpt = torch.load(path, map_location="cpu", weights_only=True)  # BUG
        """,
        applicability=UNSAFE,
    ),
    Invalid(
        """
        # the project does not say which torch it supports: reported as a warning
        import torch
        model.load_state_dict(torch.load(args.resume))  # BUG
        """,
        fixed="""
        # the project does not say which torch it supports: reported as a warning
        import torch
        model.load_state_dict(torch.load(args.resume, weights_only=True))  # BUG
        """,
        applicability=UNSAFE,
    ),
    Invalid(
        """
        from torch import load as torch_load
        UNSAFE = False
        state = torch_load(f, weights_only=UNSAFE)  # BUG
        """,
        fixed="""
        from torch import load as torch_load
        UNSAFE = False
        state = torch_load(f, weights_only=True)  # BUG
        """,
        applicability=UNSAFE,
    ),
    Invalid(
        """
        import torch.serialization
        snapshot = torch.serialization.load(snapshot_path, map_location=loc)  # BUG
        state = torch.load(  # BUG
            snapshot_path,
            map_location="cpu",
        )
        """,
        fixed="""
        import torch.serialization
        snapshot = torch.serialization.load(snapshot_path, map_location=loc, weights_only=True)  # BUG
        state = torch.load(  # BUG
            snapshot_path,
            map_location="cpu",
            weights_only=True,
        )
        """,
        applicability=UNSAFE,
    ),
]
