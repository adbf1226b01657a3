"""Conditions that let a block run only now and then inside a loop.

``if step % log_every == 0:``, ``if i == 0:``, ``if i < warmup:`` on a loop
counter, ``if step in eval_steps:``, or a flag whose name says so
(``if log_now:``, ``if args.verbose:``). Rules use this to stay quiet on work
done at a logging interval rather than every step.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

_RARE_NAME = re.compile(r"interval|every|freq|period|(^|_)log(_|$)|logging|verbose|debug|print", re.I)


def is_rare_condition(test: cst.CSTNode, counters: set[str] = frozenset()) -> bool:
    """`step % n == 0`, `i == 0`, `i < warmup`, `step in log_steps`, `if log_now:` and friends."""
    stack = [test]
    while stack:
        expr = stack.pop()
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo):
            return True
        if isinstance(expr, cst.Comparison):
            left = expr.left
            for target in expr.comparisons:
                if isinstance(target.operator, (cst.Equal, cst.In)):
                    return True
                # `i < n` on a loop counter holds for the first n iterations only
                if isinstance(target.operator, (cst.LessThan, cst.LessThanEqual)) \
                        and isinstance(left, cst.Name) and left.value in counters:
                    return True
                if isinstance(target.operator, (cst.GreaterThan, cst.GreaterThanEqual)) \
                        and isinstance(target.comparator, cst.Name) and target.comparator.value in counters:
                    return True
                left = target.comparator
            stack.append(expr.left)
            stack.extend(t.comparator for t in expr.comparisons)
        elif isinstance(expr, cst.BooleanOperation):
            stack.extend((expr.left, expr.right))
        elif isinstance(expr, cst.UnaryOperation):
            stack.append(expr.expression)
        elif isinstance(expr, (cst.Name, cst.Attribute)):
            text = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value
            if _RARE_NAME.search(text):
                return True
        elif isinstance(expr, cst.Call):
            stack.append(expr.func)
    return False


def loop_counters(model: "FileModel", node: cst.CSTNode) -> set[str]:
    """Names bound by the targets of the loops around ``node`` (``i``, ``step``)."""
    names: set[str] = set()
    for loop in model.enclosing_loops(node):
        if isinstance(loop, cst.For):
            stack = [loop.target]
            while stack:
                t = stack.pop()
                if isinstance(t, cst.Name):
                    names.add(t.value)
                elif isinstance(t, (cst.Tuple, cst.List)):
                    stack.extend(e.value for e in t.elements)
    return names
