"""The studio's import route (POST .../import) through the studio API's handler on moto: the files an
operator chose, a dry run of all of them, then writes a window at a time, through the same import as
`knowledge import` (test_import.py)."""

from __future__ import annotations

from helpers.paths import ROOT
from helpers.studio import ANA, BASE, A, T

from knowledge.curation.studio_import import REQUEST_MAX_BYTES, WINDOW_MAX

IMPORTS = ROOT / "tests" / "data" / "imports"
FAQ_CSV = IMPORTS / "faq-loja.csv"
CSV_REFUSED = {35: "also faq-loja.csv:2's", 36: "answer: must not be empty", 37: "no letter or digit",
               40: "body: must be at most 16384 bytes"}
CSV_ROWS = 22


def faq() -> dict:
    return {"name": "faq-loja.csv", "text": FAQ_CSV.read_text()}


def test_a_dry_run_reports_every_row_and_each_invalid_one_with_its_line_and_writes_nothing(api, store):
    before = {entry.name for entry in store.list(T, A)}
    status, body, _ = api("POST", f"{BASE}/import", body={"files": [faq()]})
    assert status == 200, body
    assert body["dry_run"] is True and body["total"] == CSV_ROWS and body["next"] is None
    assert body["created"] == CSV_ROWS - len(CSV_REFUSED) and body["refused"] == len(CSV_REFUSED)
    refused = {item["line"]: item["reason"] for item in body["items"] if item["outcome"] == "refused"}
    assert set(refused) == set(CSV_REFUSED)
    for line, reason in CSV_REFUSED.items():
        assert reason in refused[line]
    assert {entry.name for entry in store.list(T, A)} == before


def test_writes_go_a_window_at_a_time_as_the_operator_and_a_repeated_name_is_refused_in_a_later_window(api, store):
    good = CSV_ROWS - len(CSV_REFUSED)
    done, start, windows = [], 0, 0
    while start is not None:
        status, body, _ = api("POST", f"{BASE}/import", body={"files": [faq()], "dry_run": False,
                                                               "start": start, "count": 5})
        assert status == 200, body
        done += body["items"]
        start, windows = body["next"], windows + 1
    assert windows == 5 and len(done) == CSV_ROWS
    assert sum(item["outcome"] == "created" for item in done) == good
    # Row 35 repeats row 2's name: in a later window than row 2, refused there as in a single run.
    [repeated] = [item for item in done if item["line"] == 35]
    assert repeated["outcome"] == "refused" and "also faq-loja.csv:2's" in repeated["reason"]
    stored = store.get(T, A, "qual-e-o-prazo-de-entrega-para-o-nordeste")
    assert (stored.actor, stored.reason, stored.concept.provenance) == (f"operator:{ANA['sub']}", "created", "policy")
    assert store.find(T, A, "qual-e-o-regulamento-da-promocao-de-aniversario") is None  # never half-written
    # The same import again writes nothing.
    _, again, _ = api("POST", f"{BASE}/import", body={"files": [faq()], "dry_run": False, "count": WINDOW_MAX})
    assert again["unchanged"] == good and again["created"] == again["changed"] == 0


def test_a_taken_name_is_skipped_unless_replace_is_chosen(api, store):
    concept = store.get(T, A, "troca-em-30-dias")
    changed = concept.text.replace("em até 30 dias após a entrega, na", "em até 45 dias após a entrega, na")
    files = [{"name": "troca-em-30-dias.md", "text": changed}, {"name": "notes.txt", "text": "ignored"}]
    _, dry, _ = api("POST", f"{BASE}/import", body={"files": files})
    assert dry["skipped"] == 1 and dry["ignored"] == ["notes.txt"] and "--replace" in dry["items"][0]["reason"]
    _, kept, _ = api("POST", f"{BASE}/import", body={"files": files, "dry_run": False})
    assert kept["skipped"] == 1 and store.get(T, A, "troca-em-30-dias").etag == concept.etag
    _, replaced, _ = api("POST", f"{BASE}/import", body={"files": files, "dry_run": False, "replace": True})
    assert replaced["changed"] == 1 and "45 dias" in store.get(T, A, "troca-em-30-dias").text
    assert store.versions(T, A, "troca-em-30-dias")[0].actor == f"operator:{ANA['sub']}"


def test_requests_beyond_the_bounds_are_refused_with_what_to_do(api):
    big = [{"name": f"big-{i}.md", "text": "x" * (REQUEST_MAX_BYTES // 2)} for i in range(3)]
    status, body, _ = api("POST", f"{BASE}/import", body={"files": big})
    assert status == 422 and body["error"]["code"] == "invalid_import"
    assert "knowledge import" in body["error"]["message"]
    status, body, _ = api("POST", f"{BASE}/import", body={"files": [faq()], "dry_run": False, "count": WINDOW_MAX + 1})
    assert status == 422
    status, body, _ = api("POST", f"{BASE}/import", body={"files": [{"name": "../x.md", "text": "x"}]})
    assert status == 422
    status, body, _ = api("POST", f"{BASE}/import", body={"files": [{"name": "a.txt", "text": "x"}]})
    assert status == 422 and "nothing to import" in body["error"]["message"]


def test_an_operator_of_another_tenant_or_an_unknown_agent_is_refused(api):
    status, _, _ = api("POST", f"/tenants/other/agents/{A}/import", body={"files": [faq()]})
    assert status == 403
    status, body, _ = api("POST", f"/tenants/{T}/agents/no-such-agent/import", body={"files": [faq()]})
    assert status == 404 and body["error"]["code"] == "unknown_agent"
