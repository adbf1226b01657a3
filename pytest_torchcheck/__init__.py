"""torchcheck's pytest plugin: runtime checks for PyTorch training code.

Importing this package must not import torch: a test suite that never touches
torch must not pay for it.
"""

from __future__ import annotations

__version__ = "0.1.0"
