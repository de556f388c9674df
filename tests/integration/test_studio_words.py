"""The studio's words page through its handler on moto: every word recall learned across the agent's
concepts, newest first, where it came from, filtered and paged; removal from many concepts at once
(one version per concept, each word kept in removed_words, a concept written meanwhile reported and
left alone); a cold container answering from the words summary; and a removed word the traffic
never teaches again."""

from __future__ import annotations

import uuid
from datetime import date

import pytest
from helpers.handlers import LambdaContext, load_handler
from helpers.studio import A, ANA, BASE, T, demo_studio, request

from knowledge.format.learned_words import LearnedWord

REEMBOLSO, TROCA, FRETE = "prazo-reembolso-pix", "troca-em-30-dias", "frete-gratis-acima-199"


def teach(store, name, *entries, agent=A):
    """Learned words written as the engine writes them: (word, origin, sessions, day)."""
    current = store.get(T, agent, name)
    words = tuple(LearnedWord(w, o, s, date.fromisoformat(d)) for w, o, s, d in entries)
    return store.replace(T, agent, current.concept.replace(learned_words=words), if_match=current.etag,
                         actor="learning", reason="learned")


@pytest.fixture
def taught(api, store):
    teach(store, REEMBOLSO, ("devolucao grana", "loaded", 3, "2026-11-20"), ("estorno", "model", 0, "2026-11-22"),
          ("pix de volta", "sighting", 4, "2026-11-20"))
    teach(store, TROCA, ("destroca", "loaded", 5, "2026-11-21"), ("trocar tamanho", "model", 0, "2026-11-22"))
    teach(store, FRETE, ("frete free", "model", 0, "2026-11-19"))
    return api


def words_of(body):
    return [(row["concept"], row["word"]) for row in body["words"]]


def test_the_words_of_every_concept_are_listed_newest_first_with_where_each_came_from(taught):
    status, body, _ = taught("GET", f"{BASE}/words")
    assert status == 200 and body["total"] == 6 and body["concepts"] == 3 and body["catching_up"] == 0
    assert words_of(body) == [(REEMBOLSO, "estorno"), (TROCA, "trocar tamanho"), (TROCA, "destroca"),
                              (REEMBOLSO, "devolucao grana"), (REEMBOLSO, "pix de volta"), (FRETE, "frete free")]
    first = body["words"][0]
    assert (first["origin"], first["source"], first["sessions"], first["at"]) == ("model", "model", 0, "2026-11-22")
    sighted = next(r for r in body["words"] if r["word"] == "pix de volta")
    assert (sighted["origin"], sighted["source"], sighted["sessions"]) == ("sighting", "traffic", 4)
    assert first["description"] and first["etag"]


def test_filters_by_origin_and_concept_and_pages_that_add_up(taught):
    _, body, _ = taught("GET", f"{BASE}/words", query={"origin": "traffic"})
    assert {r["word"] for r in body["words"]} == {"devolucao grana", "pix de volta", "destroca"}
    _, body, _ = taught("GET", f"{BASE}/words", query={"origin": "model", "concept": TROCA})
    assert words_of(body) == [(TROCA, "trocar tamanho")] and body["total"] == 1
    _, whole, _ = taught("GET", f"{BASE}/words")
    seen, cursor = [], None
    while True:
        status, page, _ = taught("GET", f"{BASE}/words", query={"limit": "4"} | ({"cursor": cursor} if cursor else {}))
        assert status == 200 and len(page["words"]) <= 4
        seen += words_of(page)
        cursor = page["next"]
        if cursor is None:
            break
    assert seen == words_of(whole)


@pytest.mark.parametrize("query, status, code", [
    ({"origin": "operator-typed"}, 422, "unknown_origin"),
    ({"cursor": "bm90LWEtY3Vyc29y"}, 422, "invalid_cursor"),
    ({"cursor": "%%%"}, 422, "invalid_cursor"),
    ({"concept": "Not_A_Slug"}, 422, "invalid_request"),
    ({"limit": "501"}, 422, "invalid_request"),
])
def test_bad_input_is_a_clear_error(taught, query, status, code):
    answer, body, _ = taught("GET", f"{BASE}/words", query=query)
    assert (answer, body["error"]["code"]) == (status, code)


def test_tenancy_is_the_lists(taught, store):
    assert taught("GET", f"/tenants/loja-b/agents/{A}/words")[0] == 403
    assert taught("GET", f"{BASE}/words", claims=None)[0] == 401
    status, body, _ = taught("GET", f"/tenants/{T}/agents/no-such-agent/words")
    assert status == 404 and body["error"]["code"] == "unknown_agent"
    status, body, _ = taught("POST", f"/tenants/{T}/agents/no-such-agent/words/remove",
                             body={"words": [{"concept": TROCA, "word": "destroca", "etag": "x"}]})
    assert status == 404 and body["error"]["code"] == "unknown_agent"
    assert taught("POST", f"/tenants/loja-b/agents/{A}/words/remove",
                  body={"words": [{"concept": TROCA, "word": "destroca", "etag": "x"}]})[0] == 403
    assert "destroca" in [e.word for e in store.get(T, A, TROCA).concept.learned_words]


def test_removing_words_across_two_concepts_writes_one_version_each_and_keeps_them_removed(taught, store):
    _, body, _ = taught("GET", f"{BASE}/words")
    chosen = [r for r in body["words"] if r["word"] in ("estorno", "pix de volta", "destroca")]
    status, done, _ = taught("POST", f"{BASE}/words/remove", body={"words": [
        {"concept": r["concept"], "word": r["word"], "etag": r["etag"]} for r in chosen]})
    assert status == 200 and done["complete"] and done["removed"] == 3
    assert [(c["concept"], c["status"], sorted(c["removed"])) for c in done["concepts"]] == [
        (REEMBOLSO, "removed", ["estorno", "pix de volta"]), (TROCA, "removed", ["destroca"])]
    for name, left, gone in ((REEMBOLSO, ["devolucao grana"], ("estorno", "pix de volta")),
                             (TROCA, ["trocar tamanho"], ("destroca",))):
        concept = store.get(T, A, name).concept
        assert [e.word for e in concept.learned_words] == left and set(concept.removed_words) == set(gone)
        versions = store.versions(T, A, name)
        assert (versions[0].actor, versions[0].reason) == (f"operator:{ANA['sub']}", "words_removed")
        assert versions[1].reason == "learned"  # one version per concept
    _, after, _ = taught("GET", f"{BASE}/words")
    assert words_of(after) == [(TROCA, "trocar tamanho"), (REEMBOLSO, "devolucao grana"), (FRETE, "frete free")]


def test_a_concept_written_meanwhile_is_reported_and_left_alone_while_the_others_go_ahead(taught, store):
    _, body, _ = taught("GET", f"{BASE}/words")
    rows = {r["word"]: r for r in body["words"]}
    teach(store, TROCA, ("destroca", "loaded", 6, "2026-11-21"), ("trocar tamanho", "model", 0, "2026-11-22"))
    status, done, _ = taught("POST", f"{BASE}/words/remove", body={"words": [
        {"concept": rows[w]["concept"], "word": w, "etag": rows[w]["etag"]} for w in ("destroca", "frete free")]})
    assert status == 200 and not done["complete"] and done["removed"] == 1
    outcome = {c["concept"]: c for c in done["concepts"]}
    assert outcome[TROCA]["status"] == "changed" and outcome[TROCA]["etag"] == store.get(T, A, TROCA).etag
    assert outcome[TROCA]["removed"] == [] and outcome[FRETE]["status"] == "removed"
    assert "destroca" in [e.word for e in store.get(T, A, TROCA).concept.learned_words]
    assert store.get(T, A, FRETE).concept.removed_words == ("frete free",)


@pytest.mark.parametrize("words, code", [
    ([{"concept": TROCA, "word": "destroca", "etag": "e"}] * 501, "too_many_words"),
    ([], "invalid_removal"),
    ([{"concept": TROCA, "word": "Destroca 42", "etag": "e"}], "invalid_removal"),
    ([{"concept": TROCA, "word": "destroca", "etag": "a"}, {"concept": TROCA, "word": "x", "etag": "b"}],
     "invalid_removal"),
    ([{"concept": "../other-agent", "word": "destroca", "etag": "e"}], "invalid_request"),
])
def test_a_removal_that_breaks_the_rules_writes_nothing_and_says_why(taught, store, words, code):
    before = store.get(T, A, TROCA).etag
    status, body, _ = taught("POST", f"{BASE}/words/remove", body={"words": words})
    assert body["error"]["code"] == code and status in (400, 422)
    assert store.get(T, A, TROCA).etag == before


def test_a_cold_container_answers_from_the_words_summary_without_reading_every_concept(
        taught, store, monkeypatch, bucket, sessions_bucket):
    taught("GET", f"{BASE}/words")  # writes the summary (none yet)
    assert store.get_words_summary(T, A) is not None
    fresh = load_handler("studio_api", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket),
                         POWERTOOLS_SERVICE_NAME=f"studio-{uuid.uuid4().hex[:6]}")
    read = []
    original = type(store).fetch_many

    def counted(self, tenant, agent, names):
        read.extend(names)
        return original(self, tenant, agent, names)

    monkeypatch.setattr(type(store), "fetch_many", counted)
    answer = fresh.lambda_handler(request("GET", f"{BASE}/words"), LambdaContext())
    import json
    body = json.loads(answer["body"])
    assert answer["statusCode"] == 200 and body["total"] == 6 and body["catching_up"] == 0
    assert read == []  # the snapshot and the summary: no concept read
    teach(store, FRETE, ("frete zero", "model", 0, "2026-11-23"))
    body = json.loads(fresh.lambda_handler(request("GET", f"{BASE}/words"), LambdaContext())["body"])
    assert read == [FRETE] and words_of(body)[0] == (FRETE, "frete zero")  # only what changed is read


def test_the_shared_scope_has_its_words_page_too(api, store):
    from helpers.concepts import make_concept

    store.create(T, "_shared", make_concept("horario-loja", description="A loja abre às 9h."), actor="operator:ana")
    teach(store, "horario-loja", ("que horas abre", "loaded", 3, "2026-11-20"), agent="_shared")
    status, body, _ = api("GET", f"/tenants/{T}/agents/_shared/words")
    assert status == 200 and words_of(body) == [("horario-loja", "que horas abre")]


# ------------------------------------------------------------------ never learned again
TELA = "troca-de-tela"
SAYS = "a telinha do meu smart rachou toda"


def turn(session: str, day: int) -> dict:
    import json

    from helpers.handlers import load_event

    event = load_event("turn-complete.json")
    event["Records"][0]["body"] = json.dumps({
        "tenant": T, "agent": A, "session_id": session, "turn_id": "t1", "completed_at": f"2026-11-{day:02d}T14:05:31Z",
        "messages": [{"role": "user", "content": SAYS},
                     {"role": "assistant", "content": "Trocamos a tela em até 2 horas, com garantia."}],
        "shown": {"retrieved": [], "loaded": [TELA]}}, ensure_ascii=False)
    return event


def test_a_word_removed_on_the_page_is_never_taught_again_by_the_traffic(
        api, store, monkeypatch, bucket, sessions_bucket, candidates_queue, sqs, bus, model):
    from helpers.aws import drain
    from helpers.concepts import make_concept
    from helpers.turns import candidates_event

    store.create(T, A, make_concept(TELA, type="procedure", description="Troca de tela de celular em até 2 horas.",
                                    body="Trocamos a tela quebrada do seu celular em até 2 horas."), actor="engine")
    teach(store, TELA, ("telinha", "loaded", 3, "2026-11-05"))
    _, body, _ = api("GET", f"{BASE}/words", query={"concept": TELA})
    row = body["words"][0]
    assert api("POST", f"{BASE}/words/remove", body={"words": [
        {"concept": TELA, "word": "telinha", "etag": row["etag"]}]})[1]["complete"]
    stack = dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, UTILITY_MODEL="openai:test-model",
                 OPENAI_BASE_URL=model.base_url, EVENT_BUS_NAME=bus["name"], CANDIDATES_QUEUE_URL=candidates_queue)
    extract = load_handler("extract", monkeypatch, stack,
                           POWERTOOLS_SERVICE_NAME=f"knowledge-learn-{uuid.uuid4().hex[:6]}")
    consolidate = load_handler("consolidate", monkeypatch, stack)
    model.responder = lambda request: "[]"
    for i in range(4):  # four sessions on four days: enough to teach any word
        assert extract.lambda_handler(turn(f"sess_{i}", 10 + i), LambdaContext()) == {"batchItemFailures": []}
        bodies = [m["Body"] for m in drain(sqs, candidates_queue)]
        if bodies:
            consolidate.lambda_handler(candidates_event(bodies), LambdaContext())
    concept = store.get(T, A, TELA).concept
    learned = [e.word for e in concept.learned_words]
    assert "rachou" in learned and "telinha" not in learned  # the traffic taught, but not the removed word
    assert concept.removed_words == ("telinha",)
    _, body, _ = api("GET", f"{BASE}/words", query={"concept": TELA})
    assert sorted(r["word"] for r in body["words"]) == sorted(learned)  # the page shows what was learned since
