"""scripts/bench/studio_history.py at a tiny size: what it times answered (each history its versions, each
diff its two texts), and the requests it reports are the history's budget, one listing and a HEAD per
version, and the diff's two GETs."""

from __future__ import annotations


def test_the_history_bench_times_answers_with_their_versions_and_reports_their_requests(capsys):
    from scripts.bench import studio_history as bench_studio_history

    result = bench_studio_history.bench(size=60, runs=1, opens=2, versions=3)
    rows = {row["call"]: row for row in bench_studio_history.summary(result)}
    assert [s.get("shown") for s in result["cold"] + result["warm"]] == [3, 3]
    assert rows["history, fresh process"]["requests"] == {"ListObjectVersions": 1, "HeadObject": 3}
    assert rows["changes (one request)"]["requests"] == {"GetObject": 2}
    assert rows["moto's listing alone"]["n"] == 2 and rows["moto's listing alone"]["p50_ms"] > 0
    bench_studio_history.print_rows(result, list(rows.values()))
    said = capsys.readouterr().out
    assert "2 of 2 histories answered, each with 3 versions" in said and "history first open p50" in said
