"""Memory, time and sync budgets: ``@pytest.mark.budget`` and the ``budget`` fixture."""

# Here, not in spec.py: the plugin needs it for ``pytest --markers`` without loading the spec machinery.
SIGNATURE = ("budget(*, cpu_memory=, cuda_memory=, cuda_reserved=, memory_growth=, syncs=, flops=, ops=, "
             "graph_breaks=, recompiles=, time=, warmup=0, repeats=5, tolerance=, name=)")
