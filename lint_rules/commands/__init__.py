"""The commands of ``torchcheck``, one module each, as Ruff's ``crates/ruff/src/commands/``.

:mod:`lint_rules.cli` parses the arguments and calls one of them: ``check`` (``torchcheck lint``),
``fix`` (``--fix``, ``--fix-only``), ``diff``, ``add_noqa``, ``show_files``, ``show_settings``,
``rules``, ``explain``, ``server`` and ``run`` (a training program under the runtime checks of
:mod:`pytest_torchcheck.watch`); what the ``lint`` modes share (resolving the options,
linting the paths and standard input, printing notes) is :mod:`.lint_run`, and ``baseline`` hides
or records accepted findings for ``check`` and ``fix``. A command lints through the public
:mod:`lint_rules.api` only, and leaves the formats to :mod:`lint_rules.output`.
"""
