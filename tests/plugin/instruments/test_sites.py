"""Call sites: the user's frame, skipping torch's and torchcheck's own, and paths shown as pytest shows them."""

from __future__ import annotations

import os
import sys

from pytest_torchcheck.instruments.sites import Site, call_site, short_path


def test_call_site_is_the_callers_line_with_its_source():
    def helper():
        return call_site()  # the line that called helper

    site = helper()
    line = sys._getframe().f_lineno - 1
    assert site == Site(__file__, line)
    assert site.source == "site = helper()"
    assert str(site) == f"{short_path(__file__)}:{line}  site = helper()"
    assert str(Site(__file__, line, "torch.optim.sgd.SGD.step")).endswith(" -> torch.optim.sgd.SGD.step")


def test_short_path_is_relative_unless_it_climbs_two_levels(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    assert short_path(str(tmp_path / "a" / "f.py")) == os.path.join("a", "f.py")
    assert short_path(str(tmp_path.parent / "f.py")) == os.path.join("..", "f.py")
    far = os.path.join(os.sep, "x", "y", "z.py")
    assert short_path(far) == far
