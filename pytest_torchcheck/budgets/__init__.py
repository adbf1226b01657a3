"""Memory, time and sync budgets: ``@pytest.mark.budget`` and the ``budget`` fixture."""
