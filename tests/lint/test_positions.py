"""Our position tracking gives exactly LibCST PositionProvider's ranges."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from lint_rules.positions import positions

REPO = Path(__file__).resolve().parents[2]
SAMPLES = [p for p in sorted((REPO / "fixtures").rglob("*.py"))[:12] + sorted((REPO / "lint_rules").rglob("*.py"))
           if p.stat().st_size > 3000][:20]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_positions_match_position_provider(path):
    module = cst.parse_module(path.read_text(encoding="utf-8"))
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    got = positions(module)
    assert len(expected) > 100
    for node, r in expected.items():
        assert got[id(node)] == (r.start.line, r.start.column, r.end.line, r.end.column), type(node).__name__


def test_crlf_and_multiline_strings():
    src = 'import torch\r\nx = """a\r\nb"""\r\ny = torch.zeros(1)\r\n'
    module = cst.parse_module(src)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    got = positions(module)
    assert all(got[id(n)] == (r.start.line, r.start.column, r.end.line, r.end.column) for n, r in expected.items())
