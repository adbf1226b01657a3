"""Each rule's VALID and INVALID examples, one module per rule (``trn101.py`` for TRN101).

The rule class takes them (``VALID = examples.VALID``); they become test cases
(tests/lint/test_rule_examples.py) and the examples of its documentation page.
"""
