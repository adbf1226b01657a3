"""``python -m lint_rules`` is ``torchcheck``."""

from lint_rules.cli import run

run()
