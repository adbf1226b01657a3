"""The multi-process DDP test harness: ``@pytest.mark.distributed`` runs a test in every rank of a real process group."""
