"""In-place writes and attribute reads inside a block (analysis/mutations.py)."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.mutations import in_place_writes, reads_attribute, root_name

_HOOK = """
def hook(grad, grads):
    grad[grad.isnan()] = 0
    grads[0].data.clamp_(-1, 1)
    grad.requires_grad_(True)
    other = grad * 2
    other.mul_(3)
    grad *= 2
    def inner(grad):
        grad.add_(1)
    fix = lambda g: g.zero_()
    grad = grad.clone()
    grad.add_(1)
    return grad
"""


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node).strip()


def test_in_place_writes_follow_statement_order_until_the_name_is_rebound() -> None:
    fn = cst.parse_module(textwrap.dedent(_HOOK)).body[0]
    found = [_code(n) for n in in_place_writes(fn.body, {"grad", "grads"})]
    # not: requires_grad_ (a flag), other's write, the nested function's and lambda's own parameter,
    # nor the add_ after `grad = grad.clone()` (a new tensor)
    assert found == ["grad[grad.isnan()] = 0", "grads[0].data.clamp_(-1, 1)", "grad *= 2"]


def test_root_name_sees_through_subscripts_and_data() -> None:
    assert root_name(cst.parse_expression("g[0].data[1]")) == "g"
    assert root_name(cst.parse_expression("self.g")) is None


def test_reads_attribute() -> None:
    assert reads_attribute(cst.parse_statement("p.data -= lr * p.grad\n"), "grad")
    assert not reads_attribute(cst.parse_statement("p.data -= lr * p.grad_fn\n"), "grad")
    assert not reads_attribute(cst.parse_statement("grad = 1\n"), "grad")  # a name, not an attribute


def test_a_container_filled_in_a_loop_before_a_point_is_filled_there() -> None:
    from lint_rules.analysis.model import FileModel
    from lint_rules.analysis.mutations import filled_before

    model = FileModel(cst.parse_module(textwrap.dedent("""
        members, folds, table, kept = [], [], {}, []
        for k in range(5):
            members.append(Net(k))
            folds.insert(0, Net(k))
            table[k] = Net(k)
            use(members[-1], folds[0], table[k], kept[-1])
            kept.append(Net(k))
    """)))
    loop = next(iter(model.nodes(cst.For)))
    point = next(c for c in model.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "use")
    found = {name: filled_before(model, loop, name, point) for name in ("members", "folds", "table", "kept")}
    # `kept` is filled only after the point: its element there is one of an earlier iteration
    assert found == {"members": True, "folds": True, "table": True, "kept": False}
