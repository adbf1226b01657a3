"""The examples of TRN802 (DeprecatedAmpApi): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import SAFE, Invalid, Valid

VALID = [
    Valid(
        """
        import torch
        scaler = torch.amp.GradScaler("cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x)
        """
    ),
    Valid(
        """
        # the device-generic spellings under aliases
        from torch import amp
        from torch.amp import GradScaler, autocast
        scaler = GradScaler("cuda", enabled=use_amp)
        ctx = autocast(device_type="cuda") if use_amp else amp.autocast("cpu", enabled=False)
        """
    ),
    Valid(
        """
        # fallbacks for old torch
        import torch
        try:
            from torch.amp import GradScaler
        except ImportError:
            from torch.cuda.amp import GradScaler
        try:
            scaler = torch.amp.GradScaler(device=device)
        except (AttributeError, TypeError):
            scaler = torch.cuda.amp.GradScaler()
        if TORCH_VERSION >= (2, 4):
            autocast = torch.autocast
        else:
            autocast = torch.cuda.amp.autocast
        """
    ),
    Valid(
        """
        # a helper that returns the new API where torch has it, the old one after that
        import torch
        from packaging import version
        def mixed_precision(enabled):
            if version.parse(torch.__version__) >= version.parse("2.4"):
                return torch.autocast("cuda", enabled=enabled)
            return torch.cuda.amp.autocast(enabled=enabled)

        def make_autocast():
            if _TORCH_GE_2_4:
                return torch.autocast("cuda")
            return torch.cuda.amp.autocast()

        def make_scaler():
            if not hasattr(torch.amp, "GradScaler"):
                from torch.cuda.amp import GradScaler
                return GradScaler()
            return torch.amp.GradScaler("cuda")
        """
    ),
    Valid(
        """
        # code that recognises the old API without using it
        import torch
        def is_autocast(func, ctx):
            if func in (torch.cuda.amp.autocast, torch.cpu.amp.autocast):
                return True
            supported = {torch.autocast, torch.cuda.amp.autocast_mode.autocast}
            return func is torch.cuda.amp.autocast or isinstance(ctx, torch.cuda.amp.autocast)
        """
    ),
    Valid(
        """
        # another library's autocast, and a feature check on the module
        import torch
        from apex.amp import GradScaler
        from mylib.amp import autocast
        scaler = GradScaler()
        has_amp = hasattr(torch.cuda, "amp")
        with autocast():
            pass
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch
        scaler = torch.cuda.amp.GradScaler(enabled=use_amp)  # BUG
        with torch.cuda.amp.autocast(dtype=torch.float16):  # BUG
            loss = model(x)
        """,
        fixed="""
        import torch
        scaler = torch.amp.GradScaler("cuda", enabled=use_amp)  # BUG
        with torch.autocast("cuda", dtype=torch.float16):  # BUG
            loss = model(x)
        """,
        applicability=SAFE,
    ),
    Invalid(
        """
        import torch
        scaler = torch.cuda.amp.GradScaler(2.0**12, 2.0)  # BUG
        with torch.cuda.amp.autocast(use_amp, torch.bfloat16):  # BUG
            loss = model(x)
        torch.set_autocast_dtype("cuda", torch.bfloat16)
        """,
        fixed="""
        import torch
        scaler = torch.amp.GradScaler("cuda", 2.0**12, 2.0)  # BUG
        with torch.autocast("cuda", enabled=use_amp, dtype=torch.bfloat16):  # BUG
            loss = model(x)
        torch.set_autocast_dtype("cuda", torch.bfloat16)
        """,
    ),
    Invalid(
        """
        from torch.cuda.amp import GradScaler, autocast  # BUG
        scaler = GradScaler()
        with autocast():
            loss = model(x)
        """
    ),
    Invalid(
        """
        import torch
        from torch.cuda import amp
        from functools import partial
        amp_autocast = partial(amp.autocast, dtype=torch.bfloat16)  # BUG
        scaler = amp.GradScaler()  # BUG
        """,
        fixed="""
        import torch
        from torch.cuda import amp
        from functools import partial
        amp_autocast = partial(amp.autocast, dtype=torch.bfloat16)  # BUG
        scaler = torch.amp.GradScaler("cuda")  # BUG
        """,
        applicability=SAFE,
    ),
    Invalid(
        """
        import torch
        class Model(torch.nn.Module):
            @torch.cpu.amp.autocast()  # BUG
            def forward(self, x):
                return self.net(x)
        """,
        fixed="""
        import torch
        class Model(torch.nn.Module):
            @torch.autocast("cpu")  # BUG
            def forward(self, x):
                return self.net(x)
        """,
        applicability=SAFE,
    ),
    Invalid(
        """
        # custom autograd functions: the decorators moved to torch.amp and take the device
        import torch
        from torch.cuda import amp as mixed
        class ScaledSwish(torch.autograd.Function):
            @staticmethod
            @mixed.custom_fwd(cast_inputs=torch.float32)  # BUG
            def forward(ctx, feats):
                return feats * torch.sigmoid(feats)

            @staticmethod
            @torch.cuda.amp.custom_bwd  # BUG
            def backward(ctx, grad):
                return grad
        """,
        fixed="""
        # custom autograd functions: the decorators moved to torch.amp and take the device
        import torch
        from torch.cuda import amp as mixed
        class ScaledSwish(torch.autograd.Function):
            @staticmethod
            @torch.amp.custom_fwd(cast_inputs=torch.float32, device_type="cuda")  # BUG
            def forward(ctx, feats):
                return feats * torch.sigmoid(feats)

            @staticmethod
            @torch.amp.custom_bwd(device_type="cuda")  # BUG
            def backward(ctx, grad):
                return grad
        """,
        applicability=SAFE,
    ),
    Invalid(
        """
        from torch.cuda.amp import custom_bwd, custom_fwd  # BUG
        apply_fp32 = custom_fwd(cast_inputs=None)
        """
    ),
]
