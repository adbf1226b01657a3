"""Call sites: the user's line that made a call, outside torch's and torchcheck's own frames."""

from __future__ import annotations

import contextlib
import linecache
import os
import sys
from dataclasses import dataclass
from typing import Any

import torch

import pytest_torchcheck

TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
PACKAGE_DIR = os.path.dirname(pytest_torchcheck.__file__) + os.sep
SKIP_DIRS = (TORCH_DIR, PACKAGE_DIR, os.path.dirname(contextlib.__file__) + os.sep + "contextlib.py")


@dataclass(frozen=True)
class Site:
    file: str
    line: int
    via: str = ""  # the torch function that made the call, when the user's line only led to it

    @property
    def source(self) -> str:  # read when a message is written, not on the measured path
        return linecache.getline(self.file, self.line).strip()

    def __str__(self) -> str:
        text = f"{short_path(self.file)}:{self.line}  {self.source}".rstrip()
        return f"{text} -> {self.via}" if self.via else text


def short_path(path: str) -> str:
    """``path`` relative to the current directory, as pytest shows files, unless that climbs two levels up."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith(".." + os.sep + "..") else rel


def user_frame(depth: int) -> Any:
    """The innermost frame outside torch and torchcheck, from ``depth`` frames above the caller up (or None)."""
    f = sys._getframe(depth + 1)
    while f is not None and f.f_code.co_filename.startswith(SKIP_DIRS):
        f = f.f_back
    return f


def call_site(depth: int = 2) -> Site:
    """The user's line that made the call."""
    f = user_frame(depth)
    if f is None:
        return Site("<unknown>", 0)
    return Site(f.f_code.co_filename, f.f_lineno)


def torch_function_name(frame: Any) -> str:
    """``torch.amp.grad_scaler.GradScaler._maybe_opt_step`` for a frame in torch's source."""
    code = frame.f_code
    qualname = getattr(code, "co_qualname", code.co_name).split(".<locals>")[0]
    return f"{frame.f_globals.get('__name__', '?')}.{qualname}"
