"""Value kinds of parameters whose type the author declared: an annotation or a docstring that says a
parameter holds plain data stops the last-resort guess from its name."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from lint_rules.analysis.kinds import MODULE, OPTIMIZER, documented_type
from lint_rules.analysis.model import FileModel


def _param_kinds(src: str) -> dict[str, str | None]:
    """Kind of each function's first parameter, at a bare use of it in the body."""
    model = FileModel(cst.parse_module(textwrap.dedent(src)))
    out = {}
    for fn in model.nodes(cst.FunctionDef):
        for stmt in fn.body.body:
            if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Expr) \
                    and isinstance(stmt.body[0].value, cst.Name):
                out[fn.name.value] = model.kind_of(stmt.body[0].value)
    return out


def _fn(src: str) -> cst.FunctionDef:
    (fn,) = [s for s in cst.parse_module(textwrap.dedent(src)).body if isinstance(s, cst.FunctionDef)]
    return fn


@pytest.mark.parametrize(("doc", "expected"), [
    ("Args:\n    net (dict): the package.\n    token (str): a token.", "dict"),
    ("Args:\n    token (str): a token.\n    net (Dict[str, Any], optional): the package.", "Dict[str, Any], optional"),
    ("Parameters\n----------\nnet : OrderedDict\n    The weights.", "OrderedDict"),
    (":param net: the package\n:type net: dict", "dict"),
    (":param dict net: the package", "dict"),
    ("Args:\n    network (dict): another parameter.", None),  # a longer name is another parameter
    ("Saves the network.", None),
])
def test_documented_type_reads_the_common_docstring_styles(doc: str, expected: str | None) -> None:
    body = textwrap.indent(f'"""{doc}\n"""', "    ")
    fn = _fn(f"def save(net, token=None):\n{body}\n    pass\n")
    assert documented_type(fn, "net") == expected


def test_a_parameter_declared_as_plain_data_is_not_guessed_from_its_name() -> None:
    assert _param_kinds('''
        import typing
        from collections import OrderedDict
        def documented(model, path):
            """Args:
                model (dict): the published package.
            """
            model
        def numpy_style(net, path):
            """
            Parameters
            ----------
            net : Dict[str, Any]
                The package.
            """
            net
        def annotated(model: dict, path):
            model
        def typed(network: typing.Mapping[str, int]):
            network
        def ordered(model: OrderedDict):
            model
        def either(optimizer, path):
            """Args:
                optimizer (str or Path, optional): a file holding the state.
            """
            optimizer
        ''') == {"documented": None, "numpy_style": None, "annotated": None, "typed": None,
                 "ordered": None, "either": None}


def test_a_module_or_unknown_declaration_keeps_the_name_guess() -> None:
    assert _param_kinds('''
        def undocumented(model, path):
            model
        def module_doc(model, path):
            """Args:
                model (nn.Module): the network.
            """
            model
        def some_of_each(net, path):
            """Args:
                net (dict or nn.Module): either.
            """
            net
        def custom_class(model: "Backbone"):
            model
        def other_param_documented(optimizer, config):
            """Args:
                config (dict): settings.
            """
            optimizer
        ''') == {"undocumented": MODULE, "module_doc": MODULE, "some_of_each": MODULE,
                 "custom_class": MODULE, "other_param_documented": OPTIMIZER}
