"""The studio API says when an agent's knowledge.yaml does not parse (`config_problem`, with its line), on
the list and the agents overview, whoever wrote the file, and stops saying so once it parses again; the
check is one conditional GET per agent every 10 s (knowledge.curation.config_check)."""

from __future__ import annotations

from helpers.paths import DEMO
from helpers.studio import BASE, A, T

from knowledge.curation.config_check import CHECK_SECONDS, ConfigCheck, line_of
from knowledge.store.keys import config_key


def copy_in(s3, bucket, text):
    s3.put_object(Bucket=bucket, Key=config_key(T, A), Body=text.encode())


def test_the_list_and_the_agents_overview_carry_the_problem_and_its_line(api, s3, bucket):
    copy_in(s3, bucket, "knowledge:\n  retrieve: maybe\n")
    status, listed, _ = api("GET", f"{BASE}/concepts")
    assert status == 200 and len(listed["concepts"]) == 7  # the list is shown all the same
    assert listed["config_problem"] == {"message": "knowledge.retrieve: Input should be a valid boolean", "line": 2}
    _, overview, _ = api("GET", f"/tenants/{T}/agents")
    [agent] = overview["agents"]
    assert agent["config_problem"]["line"] == 2


def test_a_valid_file_has_no_problem(api):
    _, listed, _ = api("GET", f"{BASE}/concepts")
    assert listed["config_problem"] is None


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def counting(s3):
    calls = []
    s3.meta.events.register("provide-client-params.s3.GetObject",
                            lambda params, **kw: calls.append(params.get("IfNoneMatch")))
    return calls


def test_a_fix_by_any_writer_is_seen_within_ten_seconds_by_one_conditional_get(store, s3, bucket):
    copy_in(s3, bucket, "knowledge:\n  retrieve: [\n")
    clock = Clock()
    check = ConfigCheck(store, clock=clock)
    calls = counting(s3)
    assert check.problem(T, A)["line"] == 3  # where the parser stopped
    assert check.problem(T, A)["line"] == 3 and len(calls) == 1  # within the 10 s: no request
    clock.now += CHECK_SECONDS
    assert check.problem(T, A) is not None and calls[-1] is not None  # unchanged: a 304
    copy_in(s3, bucket, (DEMO / "knowledge.yaml").read_text())
    assert check.problem(T, A) is not None  # not yet looked again
    clock.now += CHECK_SECONDS
    assert check.problem(T, A) is None
    s3.delete_object(Bucket=bucket, Key=config_key(T, A))
    clock.now += CHECK_SECONDS
    assert check.problem(T, A) is None  # no file: off as meant, no notice


def test_a_key_s_line_is_found_for_a_schema_problem():
    text = "# comment\nknowledge:\n  extract: true\n  retrieve: maybe\ndistill:\n  retrieve: x\n"
    assert line_of("knowledge.retrieve: Input should be a valid boolean", text) == 4
    assert line_of("distill.retrieve: unknown key", text) == 6
    assert line_of("knowledge.yaml line 7: invalid YAML", text) == 7
    assert line_of("knowledge.yaml must be a mapping", text) is None
