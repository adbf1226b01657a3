"""analysis.parsing: LibCST's parse without per-node validation, and validation back afterwards."""

from __future__ import annotations

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
