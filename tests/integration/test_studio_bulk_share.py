"""The list's bulk "Move to shared" through the studio handler on moto: a dry run says each row's outcome
and the model calls the move will queue, writing and queueing nothing; the move then moves each row as
the editor's Move does, with its own outcome (moved, name taken or deleted in shared, changed meanwhile,
gone, not done when the storage failed it), and queues exactly those calls, which PolicyReviewFunction then makes of the model; no model or
no queue is 0 calls; more than 500 rows, or a move from the shared scope, is refused whole."""

from __future__ import annotations

import json

import pytest
from helpers.aws import drain, new_queue, sqs_event
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_handler
from helpers.studio import BASE, A, T, demo_studio

from knowledge.learning.model_words import PROMPT_CHARS_MAX
from knowledge.store.keys import SHARED

BULK = f"{BASE}/concepts/bulk"
BIG = ("Texto longo sobre a politica da loja. " * 400).strip()  # ~15,000 characters: two fill one prompt
SMALL = [f"pergunta-frequente-{n:02d}" for n in range(12)]


def moved_rows(body) -> list[tuple[str, str]]:
    return [(row["name"], row["outcome"]) for row in body["rows"]]


@pytest.fixture
def world(monkeypatch, store, bucket, sessions_bucket, sqs, bus, model):
    queue = new_queue(sqs)
    studio = dict(UTILITY_MODEL="openai:words", POLICY_REVIEW_QUEUE_URL=queue)  # named, never called there
    env = dict(studio, OPENAI_BASE_URL=model.base_url)  # PolicyReviewFunction's: it calls the model
    api = demo_studio(monkeypatch, store, bucket, sessions_bucket, **studio)
    for name in SMALL:
        store.create(T, A, make_concept(name, description=f"Resposta da {name}."), actor="engine")
    drain(sqs, queue)
    model.responder = lambda request: json.dumps({name: ["xodo"] for name in names_asked(request)})
    return {"api": api, "queue": queue, "env": dict(env, KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket,
                                                    EVENT_BUS_NAME=bus["name"])}


def names_asked(request) -> list[str]:
    return [line[6:] for line in request["messages"][-1]["content"].splitlines() if line.startswith("name: ")]


def test_a_dry_run_says_each_outcome_and_the_calls_then_the_move_queues_exactly_those(world, store, sqs, model,
                                                                                    monkeypatch):
    api = world["api"]
    store.create(T, SHARED, make_concept("rastreio-pedido", description="Outro rastreio."), actor="operator:x")
    store.create(T, SHARED, make_concept("cep-sudeste-cd-campinas"), actor="operator:x")
    store.delete(T, SHARED, "cep-sudeste-cd-campinas", actor="operator:x")
    names = [*SMALL, "troca-em-30-dias", "rastreio-pedido", "cep-sudeste-cd-campinas", "nao-existe"]
    rows = [{"name": n} for n in names]

    status, plan, _ = api("POST", BULK, body={"action": "share", "rows": rows, "dry_run": True})
    assert status == 200 and plan["dry_run"] is True and not plan["complete"]
    refused = [("rastreio-pedido", "name_taken"), ("cep-sudeste-cd-campinas", "name_deleted"), ("nao-existe", "gone")]
    assert moved_rows(plan) == [(n, "ready") for n in [*SMALL, "troca-em-30-dias"]] + refused
    assert plan["model_calls"] == 2 and plan["policies"] == 1  # 13 concepts enter: ten to a call
    assert plan["counts"] == {"ready": 13, "name_taken": 1, "name_deleted": 1, "gone": 1}
    assert drain(sqs, world["queue"]) == [] and store.find(T, SHARED, SMALL[0]) is None  # nothing written
    assert store.find(T, A, SMALL[0]) is not None

    status, done, _ = api("POST", BULK, body={"action": "share", "rows": rows})
    assert status == 200 and done["dry_run"] is False and not done["complete"]
    assert moved_rows(done) == [(n, "moved") for n in [*SMALL, "troca-em-30-dias"]] + refused
    assert (done["model_calls"], done["policies"], done["words_not_queued"]) == (2, 1, 0)
    for name in [*SMALL, "troca-em-30-dias"]:  # each as the editor's move leaves it
        assert store.find(T, A, name) is None and store.get(T, SHARED, name).concept.name == name
    assert store.get(T, SHARED, "rastreio-pedido").concept.description == "Outro rastreio."
    assert store.find(T, A, "rastreio-pedido") is not None

    jobs = [m["Body"] for m in drain(sqs, world["queue"])]
    words = [json.loads(j) for j in jobs if json.loads(j).get("job") == "words"]
    assert [(j["agent"], len(j.get("names", [1]))) for j in words] == [(SHARED, 10), (SHARED, 3)]
    reviews = [json.loads(j) for j in jobs if "job" not in json.loads(j)]
    assert [(r["agent"], r["name"]) for r in reviews] == [(SHARED, "troca-em-30-dias")]
    function = load_handler("policy_review", monkeypatch, world["env"])
    assert function.lambda_handler(sqs_event(*(j for j in jobs if '"words"' in j)), LambdaContext()) == {
        "batchItemFailures": []}
    assert len(model.requests) == done["model_calls"]  # what the page said is what the model is asked
    assert [e.word for e in store.get(T, SHARED, SMALL[0]).concept.learned_words] == ["xodo"]


def test_the_calls_follow_the_prompt_size_not_only_the_count(world, store, sqs, model, monkeypatch):
    big = [f"politica-extensa-{n}" for n in range(3)]
    for name in big:
        store.create(T, A, make_concept(name, body=BIG), actor="engine")
    assert 2 * len(BIG) < PROMPT_CHARS_MAX < 3 * len(BIG)
    rows = [{"name": n} for n in [*big, *SMALL[:7]]]  # ten concepts, yet three big ones fill more than a prompt
    _, plan, _ = world["api"]("POST", BULK, body={"action": "share", "rows": rows, "dry_run": True})
    assert plan["model_calls"] == 2
    _, done, _ = world["api"]("POST", BULK, body={"action": "share", "rows": rows})
    assert done["complete"] and done["model_calls"] == 2
    function = load_handler("policy_review", monkeypatch, world["env"])
    jobs = [m["Body"] for m in drain(sqs, world["queue"])]
    assert function.lambda_handler(sqs_event(*jobs), LambdaContext()) == {"batchItemFailures": []}
    assert len(model.requests) == 2


def test_a_concept_written_while_it_moved_is_copied_and_kept_and_says_changed_meanwhile(world, store, monkeypatch):
    from knowledge.store.concepts import ConceptStore

    copy = ConceptStore.create

    def create_then_another_writer(self, tenant, agent, concept, **kwargs):
        made = copy(self, tenant, agent, concept, **kwargs)
        if agent == SHARED and concept.name == SMALL[1]:  # between the copy and the delete
            current = store.get(T, A, SMALL[1])
            store.replace(T, A, current.concept.replace(description="Escrita agora."), if_match=current.etag,
                          actor="engine", reason="merged")
        return made

    monkeypatch.setattr(ConceptStore, "create", create_then_another_writer)
    _, done, _ = world["api"]("POST", BULK, body={"action": "share", "rows": [{"name": n} for n in SMALL[:3]]})
    assert moved_rows(done) == [(SMALL[0], "moved"), (SMALL[1], "changed_meanwhile"), (SMALL[2], "moved")]
    assert not done["complete"] and done["model_calls"] == 1  # the copy entered shared all the same
    assert store.get(T, A, SMALL[1]).concept.description == "Escrita agora."
    assert store.get(T, SHARED, SMALL[1]).concept.description == f"Resposta da {SMALL[1]}."


def test_a_row_the_storage_failed_mid_move_is_not_done_the_others_are_moved_and_asking_again_finishes_it(
        world, store, monkeypatch):
    from knowledge.store.concepts import ConceptStore
    from shared.errors import StoreUnavailable

    deleting = ConceptStore.delete

    def busy_for_one(self, tenant, agent, name, **kwargs):  # S3 busy after that row's copy, before its delete
        if name == SMALL[1]:
            raise StoreUnavailable("storage is busy; try again")
        return deleting(self, tenant, agent, name, **kwargs)

    monkeypatch.setattr(ConceptStore, "delete", busy_for_one)
    rows = [{"name": n} for n in SMALL[:3]]
    status, done, _ = world["api"]("POST", BULK, body={"action": "share", "rows": rows})
    assert status == 200 and not done["complete"]  # the rows done are said, not lost to a 503
    assert moved_rows(done) == [(SMALL[0], "moved"), (SMALL[1], "not_done"), (SMALL[2], "moved")]
    assert done["model_calls"] == 1 and store.find(T, A, SMALL[1]) is not None
    monkeypatch.setattr(ConceptStore, "delete", deleting)  # the storage answers again
    _, again, _ = world["api"]("POST", BULK, body={"action": "share", "rows": rows[1:2]})
    assert moved_rows(again) == [(SMALL[1], "moved")] and store.find(T, A, SMALL[1]) is None


@pytest.mark.parametrize("env", [{"POLICY_REVIEW_QUEUE_URL": "queue"}, {"UTILITY_MODEL": "openai:words"}])
def test_without_a_model_or_without_a_queue_the_move_costs_no_call(monkeypatch, store, bucket, sessions_bucket, sqs,
                                                                    env):
    if env.get("POLICY_REVIEW_QUEUE_URL"):
        env = {"POLICY_REVIEW_QUEUE_URL": new_queue(sqs)}
        monkeypatch.delenv("UTILITY_MODEL", raising=False)
    else:
        monkeypatch.delenv("POLICY_REVIEW_QUEUE_URL", raising=False)
    api = demo_studio(monkeypatch, store, bucket, sessions_bucket, **env)
    _, plan, _ = api("POST", BULK, body={"action": "share", "rows": [{"name": "rastreio-pedido"}], "dry_run": True})
    assert moved_rows(plan) == [("rastreio-pedido", "ready")] and plan["model_calls"] == 0
    _, done, _ = api("POST", BULK, body={"action": "share", "rows": [{"name": "rastreio-pedido"}]})
    assert done["complete"] and done["model_calls"] == 0 and store.find(T, SHARED, "rastreio-pedido") is not None


@pytest.mark.parametrize(("path", "body", "code", "says"), [
    (BULK, {"action": "share", "rows": [{"name": f"c-{i}"} for i in range(501)], "dry_run": True},
     "too_many_rows", "at most 500 rows per action (got 501)"),
    (f"/tenants/{T}/agents/{SHARED}/concepts/bulk", {"action": "share", "rows": [{"name": "rastreio-pedido"}]},
     "invalid_bulk", "these concepts are shared already"),
    (BULK, {"action": "delete", "rows": [{"name": "rastreio-pedido"}], "dry_run": True},
     "invalid_bulk", "dry_run is only for the action share"),
])
def test_a_move_the_page_would_not_send_is_refused_whole_and_clearly(world, store, path, body, code, says):
    status, answer, _ = world["api"]("POST", path, body=body)
    assert status == 422 and answer["error"]["code"] == code and says in answer["error"]["message"]
    assert store.find(T, A, "rastreio-pedido") is not None and store.find(T, SHARED, "rastreio-pedido") is None
