"""A concept's history through the studio API's handler, counted in S3 requests (the clock is the bench's:
scripts/bench/studio_history.py): the first page in one listing and one request per row shown, whatever
the concept's deletions, and a diff's two versions in one request."""

from __future__ import annotations

import json
from collections import Counter
from contextlib import contextmanager

import pytest
from helpers.paths import DEMO
from helpers.studio import A, BASE, T

NAME = "troca-em-30-dias"


@contextmanager
def counted():
    """The S3 requests the handler sends meanwhile, by operation."""
    from shared.aws import client

    calls = Counter()

    def count(model, **kwargs):
        calls[model.name] += 1

    client("s3").meta.events.register("before-call.s3", count)
    try:
        yield calls
    finally:
        client("s3").meta.events.unregister("before-call.s3", count)


def confirmed(store, times, name=NAME):
    for _ in range(times):
        current = store.get(T, A, name)
        store.replace(T, A, current.concept.replace(occurrences=current.concept.occurrences + 1),
                      if_match=current.etag, actor="engine", reason="confirmed")


def test_a_history_of_four_versions_opens_in_one_listing_and_a_head_per_version(api, store):
    confirmed(store, 3)
    with counted() as calls:
        status, page, _ = api("GET", f"{BASE}/concepts/{NAME}/versions")
    assert status == 200
    assert [v["reason"] for v in page["versions"]] == ["confirmed", "confirmed", "confirmed", "created"]
    assert page["versions"][0]["latest"] and page["next"] is None
    assert calls == {"ListObjectVersions": 1, "HeadObject": 4}


def test_a_concept_deleted_and_restored_again_and_again_reads_only_the_deletion_records_it_shows(api, store):
    for _ in range(3):
        store.delete(T, A, NAME, actor="operator:ana")
        store.undelete(T, A, NAME, actor="operator:bia")
    with counted() as calls:
        status, first, _ = api("GET", f"{BASE}/concepts/{NAME}/versions", query={"limit": "3"})
    assert status == 200
    assert [(v["reason"], v["actor"]) for v in first["versions"]] == [
        ("restore", "operator:bia"), ("delete", "operator:ana"), ("restore", "operator:bia")]
    # The row of the delete says who deleted it from its own record: one GET, no listing of the
    # concept's deletion records (three of them), none read for the rows of the next pages.
    assert calls == {"ListObjectVersions": 1, "HeadObject": 2, "GetObject": 1}
    with counted() as calls:
        _, rest, _ = api("GET", f"{BASE}/concepts/{NAME}/versions", query={"limit": "50", "cursor": first["next"]})
    assert [v["reason"] for v in rest["versions"]] == ["delete", "restore", "delete", "created"]
    assert all(v["actor"] == "operator:ana" for v in rest["versions"] if v["deleted"])
    assert calls == {"ListObjectVersions": 1, "HeadObject": 2, "GetObject": 2}


def test_changes_reads_a_version_and_the_one_before_it_in_one_request(api, store):
    _, concept, _ = api("GET", f"{BASE}/concepts/{NAME}")
    edited = concept["markdown"].replace("embalagem original", "qualquer caixa")
    assert edited != concept["markdown"]
    api("PUT", f"{BASE}/concepts/{NAME}", body={"markdown": edited}, headers={"if-match": concept["etag"]})
    _, page, _ = api("GET", f"{BASE}/concepts/{NAME}/versions")
    newer, older = (v["version_id"] for v in page["versions"])
    with counted() as calls:
        status, pair, _ = api("GET", f"{BASE}/concepts/{NAME}/versions/{newer}/against/{older}")
    assert status == 200 and calls == {"GetObject": 2}
    assert "qualquer caixa" in pair["version"]["markdown"] and pair["version"]["markdown"] == store.get(T, A, NAME).text
    assert pair["version"]["version_id"] == newer
    assert pair["against"]["markdown"] == (DEMO / f"{NAME}.md").read_text()
    assert pair["against"]["version_id"] == older


@pytest.mark.parametrize("against, status, code", [
    ("no-such-version", 404, "not_found"), ("not%20an%20id", 400, "invalid_name")])
def test_a_diff_against_a_version_that_is_not_there_is_refused_plainly(api, store, against, status, code):
    _, page, _ = api("GET", f"{BASE}/concepts/{NAME}/versions")
    newer = page["versions"][0]["version_id"]
    answered, body, _ = api("GET", f"{BASE}/concepts/{NAME}/versions/{newer}/against/{against}")
    assert (answered, body["error"]["code"]) == (status, code)


def test_another_tenant_s_operator_cannot_read_a_diff(api, store):
    _, page, _ = api("GET", f"{BASE}/concepts/{NAME}/versions")
    version = page["versions"][0]["version_id"]
    status, body, _ = api("GET", f"{BASE}/concepts/{NAME}/versions/{version}/against/{version}",
                          claims={"sub": "intruso", "cognito:groups": "[outro]"})
    assert status == 403 and "markdown" not in json.dumps(body)


def test_two_versions_too_large_to_send_together_are_a_clear_422_never_a_body_over_lambda_s_limit(api, s3, bucket):
    from knowledge.store.concepts import concept_key

    # Each fits in an answer alone (under 4 MB JSON-encoded), the two together do not.
    head = b"---\nname: enorme\ndescription: x\ntype: fact\n---\n\n"
    ids = [s3.put_object(Bucket=bucket, Key=concept_key(T, A, "enorme"), Body=head + fill * (3 * 1024 * 1024))
           ["VersionId"] for fill in (b"a", b"b")]
    assert all(api("GET", f"{BASE}/concepts/enorme/versions/{vid}")[0] == 200 for vid in ids)
    status, body, _ = api("GET", f"{BASE}/concepts/enorme/versions/{ids[1]}/against/{ids[0]}")
    assert status == 422 and body["error"]["code"] == "too_large"
    assert len(json.dumps(body)) < 4096
