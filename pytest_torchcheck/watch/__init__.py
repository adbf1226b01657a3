"""Runtime checks: watch a PyTorch program run and report the silent training bugs it was seen to make.

:class:`~pytest_torchcheck.watch.watcher.Watcher` installs the checks of :mod:`.checks` (one module
each, codes shared with the linter) on torch's entry points (:mod:`.events`) for the length of a
``with`` block, and collects their findings at the user's own lines (:mod:`.sites`);
:mod:`.program` runs a script or module as ``python`` would, for ``torchcheck run``. Importing this
package does not import torch; installing a watch does.
"""
