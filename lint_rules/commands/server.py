"""``torchcheck server``: the language server (:mod:`lint_rules.server`) over standard input and output.
pygls is imported here only, so the base install never needs it."""

from __future__ import annotations

from lint_rules import install
from lint_rules.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def run(args: argparse.Namespace) -> int:
    try:
        from lint_rules.server import main as serve
    except ImportError as e:
        if (e.name or "").split(".")[0] not in ("pygls", "lsprotocol", "cattrs"):
            raise
        raise UsageError(f"torchcheck server needs pygls ({e}); install it with: {install.server_hint()}") from None
    return serve()
