"""Rank guards: which processes of a distributed job reach a statement.

``RankGuards.guard_of(node)`` is ``GLOBAL`` when only global rank 0 runs it (``if
rank == 0:``, ``if dist.get_rank() != 0: return`` earlier in the block,
``@rank_zero_only``, a ``master_process`` flag, every caller guarded so), ``LOCAL``
when one process per node does (``if local_rank == 0:``, ``rank % ngpus_per_node ==
0``), and None when every rank may. Facts, not findings: TRN304 decides what a save needs.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.scopes import ASSIGN, dotted

if TYPE_CHECKING:
    from lint_rules.analysis.scopes import ScopeModel

GLOBAL = "global"  # only global rank 0 runs the block
LOCAL = "local"  # one process per node runs it
UNKNOWN = "unknown"  # a function only called from other files

# Flags and helpers that name the main process: master_process, is_main_process(),
# utils.is_primary(args), trainer.is_global_zero, @rank_zero_only.
_MAIN_NAME = re.compile(
    r"master|main_process|is_main|primary|rank_?0|rank_zero|global_zero|is_chief|is_root", re.I)
_LOCAL_NAME = re.compile(r"local", re.I)
# Things compared with 0 that hold a rank: rank, args.rank, self.global_rank, ddp_rank,
# dist.get_rank(), int(os.environ["RANK"]); gpu ids name a rank on single-node scripts.
_RANK_TEXT = re.compile(r"rank|gpu_?id|(^|\W)gpu($|\W)", re.I)
_LOCAL_RANK_TEXT = re.compile(r"local_?rank|LOCAL_RANK|local_process_index", re.I)
_EXITS = (cst.Return, cst.Continue, cst.Break, cst.Raise)


class RankGuards:
    """Rank guards of one file; get the shared one with ``model.fact(RankGuards)``."""

    def __init__(self, model: "ScopeModel") -> None:
        self.model = model
        self._calls_naming: dict[str, list[cst.Call]] | None = None

    def guard_of(self, node: cst.CSTNode, depth: int) -> str | None:
        """GLOBAL/LOCAL when only rank 0 (of the job / of each node) reaches ``node``, else None."""
        model = self.model
        found: str | None = None
        child = node
        for anc in model.ancestors(node):
            if isinstance(anc, cst.If):
                if child is anc.body:
                    found = _stronger(found, self.classify(anc.test, True, 0))
                elif child is anc.orelse:
                    found = _stronger(found, self.classify(anc.test, False, 0))
            elif isinstance(anc, cst.IndentedBlock) or isinstance(anc, cst.Module):
                found = _stronger(found, self._early_exit_guard(anc, child))
            elif isinstance(anc, cst.FunctionDef):
                for d in anc.decorators:
                    text = dotted(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator)
                    if text and _MAIN_NAME.search(text.rsplit(".", 1)[-1]):
                        found = _stronger(found, LOCAL if _LOCAL_NAME.search(text) else GLOBAL)
                if found == GLOBAL:
                    return GLOBAL
                callers = self._callers_guard(anc, depth)
                if callers == UNKNOWN:
                    # Called from elsewhere, under guards we cannot see: trust them,
                    # unless this function's own guard is a local-rank one.
                    return found or GLOBAL
                return _stronger(found, callers)
            elif isinstance(anc, (cst.Lambda, cst.ClassDef)):
                return found
            if found == GLOBAL:
                return GLOBAL
            child = anc
        return found

    def _early_exit_guard(self, block: cst.CSTNode, child: cst.CSTNode) -> str | None:
        """`if rank != 0: return` (or continue/raise) earlier in the same block."""
        found = None
        for stmt in block.body:
            if stmt is child:
                break
            if isinstance(stmt, cst.If) and stmt.orelse is None and _always_exits(stmt.body):
                found = _stronger(found, self.classify(stmt.test, False, 0))
        return found

    def _callers_guard(self, fn: cst.FunctionDef, depth: int) -> str | None:
        """The weakest guard over every use of ``fn`` in this file (None when one is unguarded).

        UNKNOWN for a function this file never calls, or one too many calls deep to follow.
        """
        if depth > 3:
            return UNKNOWN
        uses = self._uses_of(fn)
        if not uses:
            return UNKNOWN
        weakest = GLOBAL
        for use in uses:
            g = self.guard_of(use, depth + 1)
            if g is None:
                return None
            if g == LOCAL:
                weakest = LOCAL
        return weakest

    def _uses_of(self, fn: cst.FunctionDef) -> list[cst.CSTNode]:
        name = fn.name.value
        model = self.model
        out: list[cst.CSTNode] = []
        naming = self._calls_naming
        if naming is None:  # once per file: the calls that name each function, as callee or argument
            naming = self._calls_naming = {}
            for node in model.nodes(cst.Call):
                seen: set[str] = set()
                for expr in (node.func, *(a.value for a in node.args)):
                    if isinstance(expr, cst.Name):
                        seen.add(expr.value)
                    elif isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) \
                            and expr.value.value == "self":
                        seen.add(expr.attr.value)
                for text in seen:
                    naming.setdefault(text, []).append(node)
        for node in naming.get(name, ()):
            target = None
            for expr in (node.func, *(a.value for a in node.args)):
                if isinstance(expr, cst.Name) and expr.value == name:
                    target = expr
                elif isinstance(expr, cst.Attribute) and expr.attr.value == name \
                        and isinstance(expr.value, cst.Name) and expr.value.value == "self":
                    target = expr
                if target is not None:
                    break
            if target is None or model.is_inside(node, fn):
                continue
            if isinstance(target, cst.Name):
                bindings = model.bindings_of(target)
                if not bindings or not any(b.value is fn for b in bindings):
                    continue
            out.append(node)
        return out

    def classify(self, test: cst.BaseExpression, positive: bool, depth: int) -> str | None:
        """Which processes pass ``test`` (when ``positive``) or fail it (when not)."""
        if depth > 4:
            return None
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self.classify(test.expression, not positive, depth + 1)
        if isinstance(test, cst.BooleanOperation):
            left = self.classify(test.left, positive, depth + 1)
            right = self.classify(test.right, positive, depth + 1)
            return _stronger(left, right)
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            return self._classify_comparison(test, positive)
        if isinstance(test, (cst.Name, cst.Attribute, cst.Call)):
            if isinstance(test, cst.Name):
                value = self.single_value(test)
                if isinstance(value, (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation)):
                    return self.classify(value, positive, depth + 1)
            text = dotted(test.func if isinstance(test, cst.Call) else test)
            if text is None:
                return None
            leaf = text.rsplit(".", 1)[-1]
            if positive and _MAIN_NAME.search(leaf):
                return LOCAL if _LOCAL_NAME.search(leaf) else GLOBAL
            if not positive and _RANK_TEXT.search(leaf):
                # `if rank: return` exits on every rank but 0
                return self._rank_kind(test)
        return None

    def _classify_comparison(self, test: cst.Comparison, positive: bool) -> str | None:
        target = test.comparisons[0]
        op, left, right = target.operator, test.left, target.comparator
        if _is_zero(left):
            left, right = right, left
            op = {cst.LessThan: cst.GreaterThan(), cst.GreaterThan: cst.LessThan()}.get(type(op), op)
        if not _is_zero(right) and not isinstance(op, (cst.In, cst.NotIn)):
            return None
        if isinstance(op, (cst.In, cst.NotIn)):
            # `local_rank in [-1, 0]`: 0 among a literal's elements
            if not isinstance(right, (cst.List, cst.Tuple, cst.Set)) \
                    or not any(_is_zero(e.value) for e in right.elements):
                return None
            selects_zero = isinstance(op, cst.In)
        elif isinstance(op, (cst.Equal, cst.LessThanEqual, cst.Is)):
            selects_zero = True
        elif isinstance(op, (cst.NotEqual, cst.GreaterThan, cst.IsNot)):
            selects_zero = False
        else:
            return None
        if selects_zero != positive:
            return None
        if isinstance(left, cst.BinaryOperation) and isinstance(left.operator, cst.Modulo):
            # `rank % ngpus_per_node == 0`: the first process of every node
            return LOCAL if self._rank_kind(left.left) is not None else None
        return self._rank_kind(left)

    def _rank_kind(self, expr: cst.CSTNode) -> str | None:
        """GLOBAL/LOCAL for an expression that holds a rank, else None."""
        text = self.model.module.code_for_node(expr)
        if _LOCAL_RANK_TEXT.search(text):
            return LOCAL
        if not _RANK_TEXT.search(text):
            return None
        # `self.gpu_id = int(os.environ["LOCAL_RANK"])`: the assignment says local
        value = self.single_value(expr)
        if value is not None and _LOCAL_RANK_TEXT.search(self.model.module.code_for_node(value)):
            return LOCAL
        return GLOBAL

    def single_value(self, expr: cst.CSTNode) -> cst.CSTNode | None:
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return None
        bindings = self.model.bindings_of(expr)
        values = [b.value for b in bindings or () if b.kind == ASSIGN and b.value is not None]
        if len(values) == 1 and len(bindings) == 1:
            return values[0]
        return None


def _stronger(a: str | None, b: str | None) -> str | None:
    if GLOBAL in (a, b):
        return GLOBAL
    return a or b


def _is_zero(expr: cst.CSTNode) -> bool:
    return isinstance(expr, cst.Integer) and expr.value == "0"


def _always_exits(body: cst.BaseSuite) -> bool:
    stmts = body.body
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, _EXITS) for s in last.body)
    return False
