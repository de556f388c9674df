"""The studio API's list through its handler: related claims waiting beside an operator's body are
marked, counted and filtered."""

from __future__ import annotations

from helpers.studio import A, BASE, T, keep_related_beside


def test_the_list_marks_and_filters_concepts_with_related_claims_waiting(api, store):
    keep_related_beside(store, sessions=("sess_41", "sess_42"))
    status, body, _ = api("GET", f"{BASE}/concepts")
    related = {c["name"]: c["related"] for c in body["concepts"]}
    assert status == 200 and related["troca-em-30-dias"] == 1 and sum(related.values()) == 1
    status, body, _ = api("GET", f"{BASE}/concepts", query={"status": "related"})
    assert status == 200 and [c["name"] for c in body["concepts"]] == ["troca-em-30-dias"]
    assert body["concepts"][0]["conflict"] is False  # a related claim is no conflict


def test_two_different_related_claims_count_two(api, store):
    from datetime import datetime, timezone

    from helpers.concepts import make_concept

    from knowledge.learning.claims import keep_beside

    keep_related_beside(store)
    current = store.get(T, A, "troca-em-30-dias")
    other = make_concept("troca-em-30-dias", description="Troca de tamanho não tem custo de frete.",
                         body="A primeira troca por tamanho é gratuita.")
    store.replace(T, A, keep_beside(current.concept, other, "sess_43", datetime(2026, 11, 22, tzinfo=timezone.utc)),
                  if_match=current.etag, actor="engine", reason="merged")
    _, concept, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias")
    assert concept["related"] == 2 and "## Related claims" in concept["markdown"]
    folded = concept["markdown"][:concept["markdown"].index("\n## Related claims")] + "\n"
    status, saved, _ = api("PUT", f"{BASE}/concepts/troca-em-30-dias", body={"markdown": folded},
                           headers={"if-match": concept["etag"]})
    assert status == 200 and saved["related"] == 0  # folded in: nothing waits any more
    _, waiting, _ = api("GET", f"{BASE}/concepts", query={"status": "related"})
    assert waiting["concepts"] == []


def test_status_accepts_only_conflict_or_related(api):
    status, body, _ = api("GET", f"{BASE}/concepts", query={"status": "merged"})
    assert status == 422 and body["error"]["code"] == "invalid_request"


def test_a_concept_with_related_claims_and_a_contradiction_counts_only_the_related_ones(api, store):
    from datetime import datetime, timezone

    from helpers.concepts import make_concept

    from knowledge.learning.claims import contradict

    keep_related_beside(store)
    current = store.get(T, A, "troca-em-30-dias")
    against = make_concept("troca-em-30-dias", description="Trocas só em 7 dias.", body="Session sess_x (2026-11-22): x")
    store.replace(T, A, contradict(current.concept, against, "sess_44", datetime(2026, 11, 22, tzinfo=timezone.utc)),
                  if_match=current.etag, actor="engine", reason="contradiction")
    _, body, _ = api("GET", f"{BASE}/concepts", query={"status": "related"})
    [concept] = body["concepts"]
    assert (concept["name"], concept["related"], concept["conflict"]) == ("troca-em-30-dias", 1, True)


def test_policies_noted_beside_count_as_the_entries_they_are_in_the_list_and_the_editor(api, store):
    current = store.get(T, A, "troca-em-30-dias")
    body = current.concept.body + (
        "\n\n## Related claims\n\n"
        "Policy [[rastreio-pedido]] (2026-12-01), not judged: Rastreio pelo link do e-mail.\n\n"
        "Policy [[frete-gratis-acima-199]] (2026-12-01), not judged: Frete grátis acima de R$ 199.\n\n"
        "Policy [[prazo-reembolso-pix]] (2026-12-02), judged contradicting: Reembolso no Pix em 1 dia.")
    store.replace(T, A, current.concept.replace(body=body), if_match=current.etag, actor="engine",
                  reason="kept_beside")
    status, listed, _ = api("GET", f"{BASE}/concepts")
    assert status == 200 and {c["name"]: c["related"] for c in listed["concepts"]}["troca-em-30-dias"] == 3
    _, concept, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias")
    assert concept["related"] == 3
