"""Memory, time and sync budgets: ``@pytest.mark.budget`` and the ``budget`` fixture.

Each key is declared once, in :mod:`pytest_torchcheck.budgets.spec`.
"""
