"""pytest_torchcheck/watch/ranks.py: which process is a rank of a torchrun launch, and one report for all
ranks. The launch itself is tested as a subprocess in tests/lint/test_cli_run.py."""

from __future__ import annotations

from lint_rules.diagnostics import Finding
from pytest_torchcheck.watch import ranks

TORCHRUN = {"TORCHELASTIC_RUN_ID": "abc", "RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1",
            "LOCAL_WORLD_SIZE": "2", "TORCHELASTIC_ERROR_FILE": "/tmp/te/abc_x/attempt_0/1/error.json"}


def finding(line: int, code: str = "TRN201", message: str = "m") -> Finding:
    return Finding("train.py", line, 1, line, 2, code, "name", message, "warning")


def test_a_torchrun_rank_knows_its_place_and_shares_its_nodes_folder() -> None:
    one = ranks.launch(TORCHRUN)
    other = ranks.launch({**TORCHRUN, "RANK": "0", "LOCAL_RANK": "0",
                          "TORCHELASTIC_ERROR_FILE": "/tmp/te/abc_x/attempt_0/0/error.json"})
    assert one is not None and other is not None
    assert (one.rank, one.world_size, one.local_rank, one.local_world_size, one.reports) == (1, 4, 1, 2, False)
    assert other.reports and other.folder == one.folder
    # another attempt of the launch (a restart) is another folder: its files are not this one's
    again = ranks.launch({**TORCHRUN, "TORCHELASTIC_ERROR_FILE": "/tmp/te/abc_x/attempt_1/1/error.json"})
    assert again is not None and again.folder != one.folder


def test_one_rank_or_no_torchrun_is_a_plain_run() -> None:
    assert ranks.launch({**TORCHRUN, "WORLD_SIZE": "1"}) is None
    assert ranks.launch({"RANK": "1", "WORLD_SIZE": "2"}) is None  # no torchrun: a program's own ranks
    assert ranks.launch({**TORCHRUN, "RANK": "x"}) is None


def test_findings_of_several_ranks_merge_per_site_and_name_their_ranks() -> None:
    merged = ranks.merge({1: [finding(3, message="on 1"), finding(9)], 0: [finding(3, message="on 0")]})
    assert [(f.line, f.message) for f in merged] == [(3, "on 0 (ranks 0, 1)"), (9, "m (rank 1)")]
    spawned = ranks.merge({0: [finding(3, "TRN302")]}, "spawned rank", "spawned ranks")
    assert [f.message for f in spawned] == ["m (spawned rank 0)"]


def test_the_reporting_rank_reads_the_others_reports_and_skips_stale_ones(tmp_path) -> None:
    import os

    where = ranks.Launch(1, 3, 1, 3, str(tmp_path / "run"))
    ranks.write(where, [finding(4)], ["TRN201: boom"], 7)
    old = ranks.Launch(2, 3, 2, 3, where.folder)
    ranks.write(old, [finding(5)], [], 1)
    stale = os.path.join(where.folder, "rank-2.json")
    os.utime(stale, (1, 1))  # left by an earlier launch
    leader = ranks.Launch(0, 3, 0, 3, where.folder)
    found, missing = ranks.collect(leader, since=ranks.now(), wait_s=0.3)
    assert sorted(found) == [1] and missing == 1
    assert found[1]["steps"] == 7 and found[1]["errors"] == ["TRN201: boom"]
    assert [Finding.from_dict(f) for f in found[1]["findings"]] == [finding(4)]


def test_a_quiet_rank_ends_once_the_reporting_rank_read_its_report(tmp_path) -> None:
    import threading
    import time

    where = ranks.Launch(1, 2, 1, 2, str(tmp_path / "run"))
    ranks.write(where, [finding(4)], [], 3)
    leader = ranks.Launch(0, 2, 0, 2, where.folder)
    since = ranks.now() - 5
    reader = threading.Timer(0.3, ranks.collect, (leader, since, 1.0))
    started = time.monotonic()
    reader.start()
    assert ranks.handed_over(where, wait_s=20) is True
    waited = time.monotonic() - started
    reader.join()
    assert 0.25 <= waited < 10  # until the report was read, not the whole wait
    assert not (tmp_path / "run").exists()


def test_a_quiet_rank_stops_waiting_for_a_reporting_rank_that_never_reads(tmp_path) -> None:
    where = ranks.Launch(1, 2, 1, 2, str(tmp_path / "run"))
    ranks.write(where, [], [], 0)
    assert ranks.handed_over(where, wait_s=0.2) is False
    assert (tmp_path / "run" / "rank-1.json").exists()  # left for a reporting rank that comes late
