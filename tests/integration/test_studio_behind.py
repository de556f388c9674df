"""Through the studio API's handler: an open list asks every few seconds how many concepts were written
behind it (GET .../changes?since=<its as_of>), answered from the change journal the list itself reads —
many open lists cost one journal listing per few seconds between them, and none reads a concept."""

from __future__ import annotations

import time
from contextlib import contextmanager

import pytest
from helpers.concepts import make_concept
from helpers.studio import BASE, T, A, demo_studio

from knowledge.curation.behind import JournalTail


@contextmanager
def requests_sent():
    """The S3 requests the handler sends meanwhile, as (method, url)."""
    from shared.aws import client

    sent = []

    def record(request, **kwargs):
        sent.append((request.method, request.url))

    s3 = client("s3")
    s3.meta.events.register("before-send.s3", record)
    try:
        yield sent
    finally:
        s3.meta.events.unregister("before-send.s3", record)


def journal_listings(sent):
    return [url for method, url in sent if method == "GET" and "prefix=journal" in url]


def behind(api, since, **query):
    return api("GET", f"{BASE}/changes", query={"since": since, **query})


@pytest.fixture
def api(monkeypatch, store, bucket, sessions_bucket):
    monkeypatch.setitem(JournalTail.__init__.__kwdefaults__, "fresh_seconds", 1.0)
    return demo_studio(monkeypatch, store, bucket, sessions_bucket)


def test_five_open_lists_learn_of_writes_behind_them_from_one_journal_listing_and_no_concept_read(api, store):
    api("GET", f"{BASE}/concepts", query={"limit": "50"})  # the container's first list: snapshot and listing
    with requests_sent() as refresh:
        _, shown, _ = api("GET", f"{BASE}/concepts", query={"limit": "50"})  # a warm list: it follows the journal
    assert len(journal_listings(refresh)) == 1
    with requests_sent() as sent:
        status, cue, _ = behind(api, shown["as_of"])
    assert status == 200 and cue == {"changes": 0, "more": False, "since": shown["as_of"]}
    assert sent == []  # the list's own look at the journal, just made, answers it

    store.create(T, A, make_concept("frete-norte", description="Frete para o Norte em 9 dias."), actor="engine")
    store.create(T, A, make_concept("frete-sul", description="Frete para o Sul em 4 dias."), actor="operator:bia")
    for _ in range(2):  # written twice: one concept changed
        current = store.get(T, A, "troca-em-30-dias")
        store.replace(T, A, current.concept.replace(occurrences=current.concept.occurrences + 1),
                      if_match=current.etag, actor="engine", reason="confirmed")
    time.sleep(1.1)  # the container's last read of the journal is older than a cue may be answered from
    with requests_sent() as sent:
        cues = [behind(api, shown["as_of"]) for _ in range(5)]  # five lists open on this container
    assert [(status, cue["changes"], cue["more"]) for status, cue, _ in cues] == [(200, 3, False)] * 5
    assert len(sent) == 1 and len(journal_listings(sent)) == 1  # one listing of the journal, nothing else

    with requests_sent() as after:
        _, again, _ = api("GET", f"{BASE}/concepts", query={"limit": "50"})  # "show": the list again
    assert len(journal_listings(after)) == len(journal_listings(refresh))  # the refresh reads what it read before
    assert {"frete-norte", "frete-sul"} <= {row["name"] for row in again["concepts"]}
    assert behind(api, again["as_of"])[1]["changes"] == 0


def test_a_list_opened_before_what_the_container_keeps_is_told_more_than(monkeypatch, store, bucket, sessions_bucket):
    monkeypatch.setitem(JournalTail.__init__.__kwdefaults__, "kept", 3)
    api = demo_studio(monkeypatch, store, bucket, sessions_bucket)
    _, shown, _ = api("GET", f"{BASE}/concepts")
    for i in range(5):
        store.create(T, A, make_concept(f"frete-regiao-{i}", description=f"Frete da região {i}."), actor="engine")
    _, cue, _ = behind(api, shown["as_of"])
    assert cue["more"] and cue["changes"] == 3


@pytest.mark.parametrize("since, code", [
    ("2026-02-30T10:00:00.000000Z", "invalid_since"),   # no such day
    ("1999-12-31T23:59:59.000000Z", "invalid_since"),
    ("2026-02-03T10:00:00Z", "invalid_request"),          # not a list's as_of
    ("yesterday", "invalid_request"),
])
def test_a_since_that_is_no_list_s_as_of_is_refused_clearly(api, since, code):
    status, body, _ = behind(api, since)
    assert status == 422 and body["error"]["code"] == code


def test_another_tenant_s_list_is_not_told_anything(api):
    status, body, _ = api("GET", f"/tenants/loja-b/agents/{A}/changes", query={"since": "2026-02-03T10:00:00.000000Z"})
    assert status == 403
