"""``python -m lint_rules`` is ``torchcheck``."""

import sys

from lint_rules.cli import main

sys.exit(main())
