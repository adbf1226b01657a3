"""The runtime checks, one module each (``trnNNN_<name>.py``, one :class:`~pytest_torchcheck.watch.check.Check`
subclass per module, its code the linter's for the same pitfall); :mod:`pytest_torchcheck.watch.watcher`
finds them by their module names."""
