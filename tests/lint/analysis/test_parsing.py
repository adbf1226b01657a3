"""analysis.parsing: LibCST's parse without per-node validation, and validation back afterwards."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import libcst as cst
import pytest

from lint_rules.analysis import parsing

REPO = Path(__file__).resolve().parents[3]
SOURCES = [p.read_text(encoding="utf-8") for p in sorted((REPO / "fixtures").rglob("*.py"))]


def _validating() -> bool:
    try:
        cst.Name("")
    except cst.CSTValidationError:
        return True
    return False


def test_the_tree_is_the_one_libcst_builds():
    assert len(SOURCES) > 20
    for source in SOURCES:
        ours = parsing.parse_module(source)
        assert ours.code == source
        assert ours.deep_equals(cst.parse_module(source))


def test_nodes_are_not_validated_during_the_parse_and_are_after():
    assert parsing._Node is not None, "this LibCST has the hook the module relies on"
    seen: list[bool] = []
    real = cst.parse_module

    def spy(source: str) -> cst.Module:
        seen.append(_validating())
        return real(source)

    parsing.cst.parse_module, saved = spy, parsing.cst.parse_module
    try:
        parsing.parse_module("x = 1\n")
    finally:
        parsing.cst.parse_module = saved
    assert seen == [False]
    assert _validating()


def test_validation_comes_back_after_a_syntax_error():
    with pytest.raises(cst.ParserSyntaxError):
        parsing.parse_module("def (:\n")
    assert _validating()


def test_concurrent_parses_leave_validation_on():
    errors: list[BaseException] = []
    big = "\n".join(SOURCES[:8])

    def work() -> None:
        try:
            for _ in range(3):
                parsing.parse_module(big)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert parsing._active == 0
    assert _validating()


# ------------------------------------------------------- the direct __init__s
def _swapped() -> list[tuple[type, object, object]]:
    parsing.parse_module("x = 1\n")  # built on the first parse
    assert parsing._swaps is not None
    return parsing._swaps


def test_every_node_class_the_parser_builds_gets_a_direct_init():
    swapped = {cls for cls, _, _ in _swapped()}
    seen: set[type] = set()
    for source in SOURCES:
        stack = [parsing.parse_module(source)]
        while stack:
            node = stack.pop()
            seen.add(type(node))
            stack.extend(node.children)
    assert len(seen) > 60
    assert seen <= swapped, sorted(c.__name__ for c in seen - swapped)


def test_a_direct_init_takes_what_the_dataclass_init_takes():
    import inspect

    for cls, own, direct in _swapped():
        theirs = inspect.signature(own).parameters
        ours = inspect.signature(direct).parameters
        assert list(ours) == list(theirs), cls
        for name, p in theirs.items():
            q = ours[name]
            assert q.kind is p.kind, (cls, name)
            if p.default is inspect.Parameter.empty:
                assert q.default is inspect.Parameter.empty, (cls, name)
            elif q.default is not parsing._MISSING:  # a default factory: checked below
                assert q.default is p.default, (cls, name)


def test_a_direct_init_stores_what_the_dataclass_init_stores_and_calls_factories_afresh():
    direct = {cls: d for cls, _, d in _swapped()}

    def build(cls, init, **kwargs):
        node = object.__new__(cls)
        init(node, **kwargs)
        return node

    # defaults and default factories
    for cls, kwargs in [(cst.TrailingWhitespace, {}), (cst.EmptyLine, {}), (cst.Name, {"value": "x"}),
                        (cst.Call, {"func": cst.Name("f")}), (cst.Module, {"body": []})]:
        a, b = build(cls, direct[cls], **kwargs), cls(**kwargs)
        assert a.deep_equals(b), cls
    one, two = build(cst.EmptyLine, direct[cst.EmptyLine]), build(cst.EmptyLine, direct[cst.EmptyLine])
    assert one.newline is not two.newline  # a factory's value is made for each node
    # positional arguments, as the dataclass takes them
    node = object.__new__(cst.Name)
    direct[cst.Name](node, "y")
    assert node.value == "y" and node.lpar == () and node.rpar == ()
    with pytest.raises(TypeError):
        direct[cst.Name](object.__new__(cst.Name))  # `value` is required


def test_every_class_has_its_own_init_back_after_a_parse_and_after_a_syntax_error():
    swapped = _swapped()
    with pytest.raises(cst.ParserSyntaxError):
        parsing.parse_module("def (:\n")
    for cls, own, direct in swapped:
        assert cls.__dict__["__init__"] is own, cls
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")  # LibCST's own __init__, with its check


def test_a_class_whose_post_init_does_more_than_check_keeps_its_own_init():
    from libcst._add_slots import add_slots

    @add_slots
    @dataclasses.dataclass(frozen=True)
    class Extra(cst.Name):
        def __post_init__(self) -> None:  # pragma: no cover - never called here
            super().__post_init__()

    @add_slots
    @dataclasses.dataclass(frozen=True)
    class Plain(cst.Name):
        pass

    assert parsing._direct_init(Extra) is None
    assert parsing._direct_init(Plain) is not None


def test_a_class_whose_init_takes_other_parameters_than_its_fields_keeps_its_own_init():
    from libcst._add_slots import add_slots

    @add_slots
    @dataclasses.dataclass(frozen=True)
    class WithInitVar(cst.Name):
        scale: dataclasses.InitVar[int] = 1  # an __init__ parameter that is not a field

    @add_slots
    @dataclasses.dataclass(frozen=True)
    class WithKeywordOnly(cst.Name):
        extra: int = dataclasses.field(default=0, kw_only=True)

    @add_slots
    @dataclasses.dataclass(frozen=True)
    class WithoutInit(cst.Name):
        hidden: int = dataclasses.field(default=0, init=False)

    for cls in (WithInitVar, WithKeywordOnly, WithoutInit):
        assert parsing._direct_init(cls) is None, cls
