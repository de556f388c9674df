"""The S3 store against moto's server: versions, history, conditional writes, hostile names."""

from __future__ import annotations

import pytest
from helpers.concepts import make_concept

from knowledge.store.concepts import ConceptStore
from knowledge.store.keys import concept_key
from shared.errors import Conflict, InvalidName, NotFound

T, A = "default", "store-support"


def test_create_then_get_returns_the_canonical_bytes_and_version(store, s3, bucket):
    concept = make_concept()
    written = store.create(T, A, concept, actor="engine")
    got = store.get(T, A, concept.name)
    assert got.data == concept.render().encode() and got.concept == concept
    assert got.etag == written.etag and got.version_id == written.version_id
    head = s3.head_object(Bucket=bucket, Key="agents/default/store-support/concepts/frete-gratis.md")
    assert head["Metadata"]["actor"] == "engine" and head["Metadata"]["reason"] == "created"
    assert head["ContentType"].startswith("text/markdown")


def test_create_only_refuses_an_existing_name_and_says_what_is_there(store):
    first = store.create(T, A, make_concept(), actor="engine")
    with pytest.raises(Conflict) as caught:
        store.create(T, A, make_concept(description="Another claim."), actor="engine")
    assert caught.value.current.etag == first.etag
    assert store.get(T, A, "frete-gratis").concept.description == "Free shipping above R$199."


def test_compare_and_swap_writes_only_over_the_etag_that_was_read(store):
    first = store.create(T, A, make_concept(), actor="engine")
    second = store.replace(T, A, make_concept(occurrences=2), if_match=first.etag, actor="engine",
                           reason="confirmed")
    with pytest.raises(Conflict) as caught:  # a writer still holding the first ETag
        store.replace(T, A, make_concept(description="Stale write."), if_match=first.etag,
                      actor="operator:ana", reason="edit")
    assert caught.value.current.etag == second.etag
    assert caught.value.current.concept.occurrences == 2
    assert store.get(T, A, "frete-gratis").concept.occurrences == 2


def test_replace_over_a_deleted_concept_is_a_conflict_with_nothing_current(store):
    first = store.create(T, A, make_concept(), actor="engine")
    store.delete(T, A, "frete-gratis", actor="operator:ana")
    with pytest.raises(Conflict) as caught:
        store.replace(T, A, make_concept(occurrences=2), if_match=first.etag, actor="engine", reason="confirmed")
    assert caught.value.current is None


def test_list_and_load_all_return_current_concepts_only(store):
    for name in ("a-one", "b-two", "c-three"):
        store.create(T, A, make_concept(name), actor="engine")
    store.create(T, "other-agent", make_concept("d-four"), actor="engine")
    store.delete(T, A, "b-two", actor="operator:ana")
    assert sorted(item.name for item in store.list(T, A)) == ["a-one", "c-three"]
    assert sorted(item.concept.name for item in store.load_all(T, A)) == ["a-one", "c-three"]


def test_objects_that_are_not_concepts_are_ignored_by_the_listing(store, s3, bucket):
    store.create(T, A, make_concept(), actor="engine")
    s3.put_object(Bucket=bucket, Key="agents/default/store-support/concepts/README.txt", Body=b"x")
    s3.put_object(Bucket=bucket, Key="agents/default/store-support/concepts/Bad Name.md", Body=b"x")
    assert [item.name for item in store.list(T, A)] == ["frete-gratis"]


def test_delete_is_a_restorable_marker_with_who_did_it(store):
    store.create(T, A, make_concept(), actor="engine")
    store.delete(T, A, "frete-gratis", actor="operator:ana@example.com")
    with pytest.raises(NotFound):
        store.get(T, A, "frete-gratis")
    assert [d.name for d in store.list_deleted(T, A)] == ["frete-gratis"]
    history = store.versions(T, A, "frete-gratis")
    assert history[0].deleted and history[0].latest
    assert (history[0].actor, history[0].reason) == ("operator:ana@example.com", "delete")

    back = store.undelete(T, A, "frete-gratis", actor="operator:ana@example.com")
    assert back.concept == make_concept()
    assert store.list_deleted(T, A) == []
    assert [(v.reason, v.deleted) for v in store.versions(T, A, "frete-gratis")] == [
        ("restore", False), ("delete", True), ("created", False)]


def test_deleting_or_undeleting_what_is_not_there_is_not_found(store):
    with pytest.raises(NotFound):
        store.delete(T, A, "never-was", actor="operator:ana")
    store.create(T, A, make_concept(), actor="engine")
    with pytest.raises(NotFound):
        store.undelete(T, A, "frete-gratis", actor="operator:ana")


def test_history_lists_every_version_newest_first_with_actor_and_reason(store):
    first = store.create(T, A, make_concept(), actor="engine")
    second = store.replace(T, A, make_concept(occurrences=2, sources=("sess_1", "sess_2"), confidence=0.7),
                           if_match=first.etag, actor="engine", reason="confirmed")
    store.replace(T, A, make_concept(occurrences=2, sources=("sess_1", "sess_2"), provenance="policy"),
                  if_match=second.etag, actor="operator:ana", reason="edit")
    history = store.versions(T, A, "frete-gratis")
    assert [(v.actor, v.reason) for v in history] == [
        ("operator:ana", "edit"), ("engine", "confirmed"), ("engine", "created")]
    assert history[0].latest and not any(v.latest for v in history[1:])
    assert all(v.size > 0 for v in history)
    assert store.read_version(T, A, "frete-gratis", history[2].version_id).concept == make_concept()


def test_restore_writes_an_old_version_back_as_a_new_one(store):
    first = store.create(T, A, make_concept(), actor="engine")
    store.replace(T, A, make_concept(description="Edited."), if_match=first.etag, actor="operator:ana",
                  reason="edit")
    restored = store.restore(T, A, "frete-gratis", first.version_id, actor="operator:ana")
    assert restored.version_id != first.version_id
    assert store.get(T, A, "frete-gratis").data == first.data
    assert [v.reason for v in store.versions(T, A, "frete-gratis")] == ["restore", "edit", "created"]


def test_restore_with_a_stale_etag_is_refused(store):
    first = store.create(T, A, make_concept(), actor="engine")
    store.replace(T, A, make_concept(description="Newer."), if_match=first.etag, actor="engine", reason="merged")
    with pytest.raises(Conflict) as caught:
        store.restore(T, A, "frete-gratis", first.version_id, actor="operator:ana", if_match=first.etag)
    assert caught.value.current.concept.description == "Newer."


def test_unknown_version_is_not_found(store):
    store.create(T, A, make_concept(), actor="engine")
    for version in ("no-such-version", "../../x"):
        with pytest.raises(NotFound):
            store.read_version(T, A, "frete-gratis", version)


def test_config_round_trip_and_absent_means_off(store):
    assert store.get_config(T, A) is None
    written = store.put_config(T, A, "knowledge:\n  top_k: 3\n", actor="operator:ana")
    assert written.config.top_k == 3
    with pytest.raises(Conflict):
        store.put_config(T, A, "knowledge:\n  top_k: 4\n", actor="operator:ana")  # create-only
    store.put_config(T, A, "knowledge:\n  top_k: 4\n", actor="operator:ana", if_match=written.etag)
    assert store.get_config(T, A).config.top_k == 4


class _NoRequests:
    """A stand-in S3 client that fails the test if anything reaches it."""

    def __getattr__(self, name):
        raise AssertionError(f"a request ({name}) was about to be sent")


@pytest.mark.parametrize("tenant, agent, name", [
    ("../default", A, "ok"), (T, "store/support", "ok"), (T, A, "../../etc/passwd"),
    (T, A, ""), ("", A, "ok"), (T, "Store-Support", "ok"), (T, A, "UPPER"), (T, A, "a/b"),
    (T, A, "x" * 65), (T, A, "nome-com-acentuação"), (T, A, None),
])
def test_hostile_names_are_rejected_before_any_request(tenant, agent, name):
    store = ConceptStore(_NoRequests(), "bucket")
    calls = [
        lambda: store.get(tenant, agent, name),
        lambda: store.delete(tenant, agent, name, actor="engine"),
        lambda: store.versions(tenant, agent, name),
        lambda: store.restore(tenant, agent, name, "v1", actor="engine"),
        lambda: concept_key(tenant, agent, name),
    ]
    for call in calls:
        with pytest.raises(InvalidName):
            call()


def test_a_concept_with_a_hostile_name_cannot_even_be_built():
    from shared.errors import InvalidConcept

    with pytest.raises(InvalidConcept):
        make_concept("../../escape")


@pytest.mark.parametrize("actor", ["", "root", "operator:", "operator:ana smith", "operator:ação"])
def test_actors_are_validated(store, actor):
    with pytest.raises(InvalidName):
        store.create(T, A, make_concept(), actor=actor)


def test_summaries_show_the_listing_fields_newest_first_and_flag_conflicts(store, s3, bucket):
    from datetime import datetime, timezone

    later = datetime(2026, 9, 1, tzinfo=timezone.utc)
    store.create(T, A, make_concept("old-one"), actor="engine")
    store.create(T, A, make_concept("in-conflict", updated_at=later, confidence=0.4,
                                    body="A.\n\n## Contradiction\n\nB."), actor="engine")
    s3.put_object(Bucket=bucket, Key="agents/default/store-support/concepts/broken.md", Body=b"not a concept")
    summaries = store.summaries(T, A)
    assert [s.name for s in summaries] == ["in-conflict", "old-one", "broken"]
    top = summaries[0]
    assert (top.type, top.provenance, top.confidence, top.occurrences, top.updated_at, top.conflict) == (
        "fact", "observed", 0.4, 1, later, True)
    assert not summaries[1].conflict
    assert summaries[2].problem and "frontmatter" in summaries[2].problem


def test_summaries_with_a_memory_read_only_what_changed(moto_endpoint, bucket):
    from collections import Counter

    import boto3

    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    calls = Counter()
    s3.meta.events.register("before-send.s3", lambda **kwargs: calls.update(["s3"]))
    store = ConceptStore(s3, bucket)
    for name in ("a-one", "b-two", "c-three"):
        store.create(T, A, make_concept(name), actor="engine")
    known = {}
    calls.clear()
    assert len(store.summaries(T, A, known)) == 3 and calls["s3"] == 1 + 3
    calls.clear()
    store.summaries(T, A, known)
    assert calls["s3"] == 1  # the listing only
    current = store.get(T, A, "b-two")
    store.replace(T, A, make_concept("b-two", occurrences=5), if_match=current.etag, actor="engine", reason="confirmed")
    store.delete(T, A, "c-three", actor="operator:ana")
    calls.clear()
    summaries = {s.name: s for s in store.summaries(T, A, known)}
    assert calls["s3"] == 1 + 1 and set(summaries) == {"a-one", "b-two"} and summaries["b-two"].occurrences == 5


# ------------------------------------------------------------------ the journal, agents, paged history, deletions

def test_the_change_journal_has_its_own_top_level_prefix_that_a_lifecycle_rule_can_expire(store, s3, bucket):
    from knowledge.store.keys import journal_prefix

    written = store.create(T, A, make_concept("frete-gratis"), actor="engine")
    store.delete(T, A, "frete-gratis", actor="operator:ana")
    store.put_config(T, A, "knowledge:\n  top_k: 3\n", actor="operator:ana")
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket=bucket, Prefix="journal/")["Contents"]]
    assert journal_prefix(T, A) == "journal/default/store-support/"
    assert [key.split("_", 1)[1] for key in keys] == [f"{written.etag.strip(chr(34))}_frete-gratis",
                                                      "deleted_frete-gratis", keys[2].split("_", 1)[1]]
    assert keys[2].endswith("_knowledge.yaml") and all(key.startswith(journal_prefix(T, A)) for key in keys)
    under_agent = [item["Key"] for item in s3.list_objects_v2(Bucket=bucket, Prefix="agents/")["Contents"]]
    assert not any("changes" in key for key in under_agent)
    assert [(c.name, c.etag) for c in store.changes_since(T, A, 0.0)] == [
        ("frete-gratis", written.etag.strip('"')), ("frete-gratis", None), ("knowledge.yaml", keys[2].split("_")[1])]


def test_agents_are_the_tenants_agent_prefixes_by_name(store):
    store.create(T, "loja-centro", make_concept("horario"), actor="engine")
    store.put_config(T, "loja-nova", "knowledge:\n  top_k: 3\n", actor="operator:ana")
    store.create("outro", "loja-x", make_concept("segredo"), actor="engine")
    store.create(T, A, make_concept("frete-gratis"), actor="engine")
    assert store.agents(T) == ["loja-centro", "loja-nova", A]
    assert store.agents("vazio") == []
    with pytest.raises(InvalidName):
        store.agents("../x")


def counting(moto_endpoint, bucket):
    from collections import Counter

    import boto3

    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    calls = Counter()
    s3.meta.events.register("before-send.s3", lambda **kwargs: calls.update(["s3"]))
    return ConceptStore(s3, bucket), calls


def test_history_pages_are_one_listing_and_one_request_per_row_and_add_up_to_the_whole(moto_endpoint, bucket):
    store, calls = counting(moto_endpoint, bucket)
    current = store.create(T, A, make_concept("frete-gratis"), actor="engine")
    for n in range(2, 8):
        current = store.replace(T, A, make_concept("frete-gratis", occurrences=n), if_match=current.etag,
                                actor="engine", reason="confirmed")
    store.delete(T, A, "frete-gratis", actor="operator:ana")
    whole = store.versions(T, A, "frete-gratis")
    pages, marker = [], None
    while True:
        calls.clear()
        page, marker = store.version_page(T, A, "frete-gratis", limit=3, marker=marker)
        pages.append(page)
        if marker is None:
            break
        # One listing and one request per row: a HEAD per version, the delete marker's record read by
        # its key (no listing of the concept's deletion records).
        assert calls["s3"] == 1 + 3
    assert [len(p) for p in pages] == [3, 3, 2]
    assert [v.version_id for p in pages for v in p] == [v.version_id for v in whole]
    assert pages[0][0].deleted and pages[0][0].actor == "operator:ana" and pages[0][0].latest
    assert [v.reason for v in pages[2]] == ["confirmed", "created"]


@pytest.mark.parametrize("marker", ["", "not a cursor", "%2F", "Li4vLi4v", "a" * 2000, "YWJj=="])
def test_a_history_cursor_that_was_not_handed_out_is_refused_with_a_typed_error(store, marker):
    from shared.errors import InvalidCursor

    store.create(T, A, make_concept("frete-gratis"), actor="engine")
    with pytest.raises(InvalidCursor) as refused:
        store.version_page(T, A, "frete-gratis", limit=5, marker=marker)
    assert refused.value.code == "invalid_cursor"


@pytest.mark.parametrize("limit", [0, -1, 1001, True, 2.5])
def test_a_history_page_size_out_of_range_is_refused(store, limit):
    from knowledge.errors import InvalidLimit

    store.create(T, A, make_concept("frete-gratis"), actor="engine")
    with pytest.raises(InvalidLimit):
        store.version_page(T, A, "frete-gratis", limit=limit, marker=None)


def test_the_deleted_list_says_who_deleted_each_concept_and_when_to_the_microsecond(store, s3, bucket):
    store.create(T, A, make_concept("frete-gratis"), actor="engine")
    store.create(T, A, make_concept("troca-30-dias"), actor="engine")
    store.delete(T, A, "frete-gratis", actor="operator:ana")
    marker = store.delete(T, A, "troca-30-dias", actor="operator:bruno")
    s3.delete_object(Bucket=bucket, Key=f"agents/{T}/{A}/deletions/troca-30-dias/{marker}")  # the record lost
    plain = store.list_deleted(T, A)
    recorded = {d.name: d for d in store.list_deleted(T, A, recorded=True)}
    assert all(d.deleted_by is None for d in plain)
    assert recorded["frete-gratis"].deleted_by == "operator:ana" and recorded["frete-gratis"].deleted_at.microsecond
    assert recorded["troca-30-dias"].deleted_by is None  # said as unknown, never guessed
    assert recorded["troca-30-dias"].deleted_at == next(d for d in plain if d.name == "troca-30-dias").deleted_at


def test_the_journals_lifecycle_rule_is_one_s3_accepts_beside_the_buckets_own(s3, bucket):
    from knowledge.recall.warm import JOURNAL_TRUSTED_SECONDS
    from knowledge.store.journal import JOURNAL_RETENTION_DAYS
    from knowledge_dev.local_aws import apply_journal_lifecycle

    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": [
        {"ID": "expire-old-concept-versions", "Status": "Enabled", "Filter": {"Prefix": "agents/"},
         "NoncurrentVersionExpiration": {"NoncurrentDays": 30, "NewerNoncurrentVersions": 20}}]})
    apply_journal_lifecycle(s3, bucket)
    apply_journal_lifecycle(s3, bucket)  # again: still one journal rule
    rules = {rule["ID"]: rule for rule in s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]}
    assert set(rules) == {"expire-old-concept-versions", "expire-change-journal"}
    journal = rules["expire-change-journal"]
    assert journal["Filter"]["Prefix"] == "journal/" and journal["Expiration"]["Days"] == JOURNAL_RETENTION_DAYS
    # A reader never trusts the journal further back than the rule keeps it, less a day.
    assert JOURNAL_TRUSTED_SECONDS <= (JOURNAL_RETENTION_DAYS - 1) * 86400
