"""``torchcheck explain CODE``: a rule's documentation (by code or name), as its docs page says it."""

from __future__ import annotations

from lint_rules import registry
from lint_rules.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def run(args: argparse.Namespace) -> int:
    wanted = args.code.strip()
    rule = registry.lookup(wanted.upper())
    if rule is None:
        for r in [*registry.BUILTINS.values(), *registry.all_rules().values(),
                  *(registry.runtime_check(c) for c in registry.runtime_only_codes())]:
            if r.NAME == wanted:
                rule = r
    if rule is None:
        raise UsageError(f"unknown rule {wanted!r}; run `torchcheck rules` to list them "
                         f"({', '.join(registry.known_codes())})")
    print(f"# {rule.CODE} {rule.NAME}\n")
    print(f"{rule.summary()}\n")
    print(rule.documentation())
    fix = getattr(rule, "FIX_TITLE", None)
    if fix:
        print(f"\n## Fix\n{fix}")
    check = registry.runtime_check(rule.CODE)
    if check is not None:  # what `torchcheck run` watches for the same pitfall
        print(f"\n## At run time\n{check.observed()}")
    return 0
