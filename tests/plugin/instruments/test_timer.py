"""The ``timer`` instrument on its own: each repeated run that goes through it is timed."""

from __future__ import annotations

import time

from pytest_torchcheck.instruments.measurement import Measurement
from pytest_torchcheck.instruments.timer import TimerInstrument


def test_times_each_wrapped_run():
    calls = []
    m = Measurement()
    with TimerInstrument(frozenset({"timer"})) as inst:
        run = inst.wrap(lambda: (calls.append(1), time.sleep(0.02)))
        run()
        run()
    inst.fill(m)
    assert len(calls) == 2 and len(m.times) == 2
    assert all(0.02 <= t < 1.0 for t in m.times)
    assert m.time_method == "time.perf_counter"
