"""``torchcheck lint --show-settings``: the settings that apply to the first path (configuration file,
rules after per-file ignores, torch bound, fix safety, cache, baseline) and where each comes from.
"""

from __future__ import annotations

from pathlib import Path

from lint_rules import api
from lint_rules.commands.lint_run import EXIT_OK, prepare, print_notes

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def run(args: argparse.Namespace) -> int:
    from lint_rules.files import display

    lint = prepare(args)
    settings = lint.settings
    notes: list[str] = []
    api.files_of(lint.files, settings, notes=notes)  # a missing path is an error here too
    print_notes(notes)
    cfg, codes, unfixable = settings.config, settings.codes, settings.unfixable
    target = Path(next((p for p in lint.paths if p != "-"), "."))
    here = set(settings.codes_for(target))
    project = settings.project_for(target / "_" if target.is_dir() else target)
    bound = (f">= {project.torch_min_version[0]}.{project.torch_min_version[1]} (from {project.source})"
             if project.torch_min_version else "none stated (rules assume any torch version)")
    rows = [
        ("path", display(target)),
        ("configuration", f"{cfg.path} [tool.torchcheck]" if cfg.path else
         ("none (--isolated)" if args.isolated else "none found: the defaults")),
        ("rules", f"{len(here)}: {', '.join(sorted(here))}" if here else "none"),
        ("turned off here by per-file-ignores", ", ".join(sorted(codes - here)) or "none"),
        ("torch lower bound", bound),
        ("fail on", lint.fail_on),
        ("unsafe fixes", "on" if settings.unsafe_fixes else "off"),
        ("unfixable", ", ".join(unfixable) or "none"),
        ("exclude", ", ".join(cfg.exclude) or "none"),
        ("respect .gitignore", "yes" if settings.respect_gitignore else "no"),
        ("cache", settings.cache_dir or "off"),
        ("baseline", lint.baseline or "none"),
    ]
    width = max(len(k) for k, _ in rows) + 1
    for key, value in rows:
        print(f"{key + ':':<{width}}  {value}")
    return EXIT_OK
