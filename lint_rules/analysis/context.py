"""Where a node runs: in a test of the pitfall itself, or under a TorchScript/tracing check.

Facts, not findings: rules ask these to stay quiet where their pitfall cannot bite.
"""

from __future__ import annotations

import libcst as cst

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

_TEST_CASE_BASES = frozenset({"unittest.TestCase", "unittest.case.TestCase", "unittest.IsolatedAsyncioTestCase"})
_SCRIPTING_CHECKS = frozenset({"torch.jit.is_scripting", "torch.jit.is_tracing", "torch._jit_internal.is_scripting",
                               "torch.jit._script.is_scripting", "torch.compiler.is_compiling",
                               "torch._dynamo.is_compiling"})


def in_test(model: FileModel, node: cst.CSTNode) -> bool:
    """Inside a pytest-style test (``def test_*``, a method of a ``Test*`` class) or a
    ``unittest.TestCase`` method: code that exercises a pattern on purpose."""
    for anc in model.ancestors(node):
        if isinstance(anc, cst.FunctionDef) and anc.name.value.startswith("test"):
            return True
        if isinstance(anc, cst.ClassDef):
            if anc.name.value.startswith("Test"):
                return True
            for base in anc.bases:
                if model.qualified_name(base.value) in _TEST_CASE_BASES:
                    return True
    return False


def under_scripting_check(model: FileModel, node: cst.CSTNode) -> bool:
    """In either branch of ``if torch.jit.is_scripting():`` (or ``is_tracing()``, ``is_compiling()``):
    code written for TorchScript, which does not run hooks anyway."""
    child = node
    for anc in model.ancestors(node):
        if isinstance(anc, (cst.If, cst.IfExp)) and child is not anc.test and _checks_scripting(model, anc.test):
            return True
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
            return False
        child = anc
    return False


def _checks_scripting(model: FileModel, test: cst.CSTNode) -> bool:
    found = False

    class _Find(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> bool:
            nonlocal found
            found = found or model.qualified_name(call.func) in _SCRIPTING_CHECKS
            return not found

    test.visit(_Find())
    return found
