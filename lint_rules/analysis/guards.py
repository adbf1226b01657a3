"""Conditions that let a block run only now and then inside a loop.

``if step % log_every == 0:``, ``if i == 0:``, ``if i < warmup:`` on a loop
counter, ``if step in eval_steps:``, or a flag whose name says so
(``if log_now:``, ``if args.verbose:``). Rules use this to stay quiet on work
done at a logging interval rather than every step. Also: the ``if`` statements a node
sits under within a loop or function (:func:`guards_within`), and whether one is a
gradient-accumulation condition (:func:`is_accumulation_test`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.scopes import dotted, subtree

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


def guards_within(model: "FileModel", node: cst.CSTNode, region: cst.CSTNode) -> list[cst.If] | None:
    """The ``if`` statements, innermost first, whose branch ``node`` sits in, up to ``region``
    (a loop or a function); None when a loop or function between them repeats or defers it."""
    guards: list[cst.If] = []
    child = node
    for a in model.ancestors(node):
        if a is region:
            return guards
        if isinstance(a, (cst.For, cst.While, cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        if isinstance(a, cst.If) and child is not a.test:
            guards.append(a)
        child = a
    return guards if region is model.module else None


def is_accumulation_test(model: "FileModel", test: cst.BaseExpression) -> bool:
    """A gradient-accumulation condition: a ``%`` in it (``(i + 1) % accum == 0``), or a
    name or attribute that says so (``step >= self.accumulate_grad_batches``)."""
    pending: list[cst.CSTNode] = [test]
    while pending:
        node = pending.pop()
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.Modulo):
                return True
            pending += (node.left, node.right)
        elif isinstance(node, cst.Comparison):
            pending.append(node.left)
            pending += (c.comparator for c in node.comparisons)
        elif isinstance(node, cst.BooleanOperation):
            pending += (node.left, node.right)
        elif isinstance(node, cst.UnaryOperation):
            pending.append(node.expression)
        elif isinstance(node, (cst.Name, cst.Attribute)):
            text = dotted(node)
            if text is not None and "accum" in text.rsplit(".", 1)[-1].lower():
                return True
        elif isinstance(node, cst.Call):
            pending.append(node.func)
            pending += (a.value for a in node.args)
    return False


def from_an_iteration_on(model: "FileModel", node: cst.CSTNode, loop: cst.CSTNode) -> bool:
    """``node`` runs only from some iteration of ``loop`` on, by a test of its counter
    (``for epoch in ...: if epoch > decay_start: scheduler.step()``; ``if epoch >= k``, ``if k < epoch``):
    the iterations before it all run without it."""
    if not isinstance(loop, cst.For):
        return False
    counters = {n.value for n in subtree(loop.target) if isinstance(n, cst.Name)}
    for guard in guards_within(model, node, loop) or ():
        test = guard.test
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            op, right, left = test.comparisons[0].operator, test.comparisons[0].comparator, test.left
            if isinstance(op, (cst.GreaterThan, cst.GreaterThanEqual)) and _is_counter(left, counters) \
                    or isinstance(op, (cst.LessThan, cst.LessThanEqual)) and _is_counter(right, counters):
                return True
    return False


def _is_counter(expr: cst.CSTNode, counters: set[str]) -> bool:
    return isinstance(expr, cst.Name) and expr.value in counters
