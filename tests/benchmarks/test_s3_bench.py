"""The S3 benchmark measures what it says on a small table (no timing assertions)."""

from __future__ import annotations

from benchmarks.s3_bench import measure
from tests.support.s3server import S3Server


def test_measure_reports_commits_planning_and_bytes(s3_server: S3Server) -> None:
    commits, plan, scan = measure(s3_server, fragments=20, commits=2)
    assert commits["commits"] == 2
    assert commits["local_commits_per_s"] > 0 and commits["s3_commits_per_s"] > 0
    assert plan["fragments_kept"] == 1
    assert plan["local_median_ms"] > 0 and plan["s3_median_ms"] > 0
    # planning lists _versions/ and reads one manifest: a few requests, no data file
    assert 2 <= plan["s3_requests_per_plan"] < 20
    assert scan["rows_returned"] == 20
    # a selective scan reads one fragment's file (and the manifest), not the table
    assert 0 < scan["bytes_read"] < scan["table_bytes"] / 5
    assert 1 <= scan["get_requests"] <= scan["all_requests"]
