"""Every concept that enters is taught its customers' words by the model (docs/contract.md, "Words the
model proposes"), through the real studio, PolicyReviewFunction and WordsPendingFunction on moto, a real
local HTTP server answering as the model: on by default where a model is configured, ten concepts to a
call, and, when the tenant's daily model calls run out, waiting for the next day — never dropped."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import pytest
from helpers.aws import drain, new_queue, sqs_event
from helpers.handlers import LambdaContext, load_handler
from helpers.studio import BASE, demo_studio

from knowledge.store.keys import SHARED
from knowledge.store.pending_words import PendingWords

T, A = "default", "store-support"
NAME_LINE = re.compile(r"^name: (\S+)$", re.MULTILINE)
ROWS = 25  # an FAQ of 25 rows: three words jobs (10 + 10 + 5 concepts), three model calls
FAQ = "question,answer\n" + "".join(
    f"Pergunta {n} sobre o produto?,Resposta {n}: o produto tem garantia e troca.\n" for n in (
        "um dois tres quatro cinco seis sete oito nove dez onze doze treze quatorze quinze dezesseis dezessete "
        "dezoito dezenove vinte vinteum vintedois vintetres vintequatro vintecinco").split())


def answer_each(asked: list[dict], extra: dict | None = None):
    """The model answering a words prompt as docs/contract.md says: an array for one concept, else an object
    keyed by each `name:` line's concept (here `xodo` and `trequinho` for every concept)."""
    def respond(request):
        asked.append(request)
        names = NAME_LINE.findall(request["messages"][-1]["content"])
        if len(names) == 1:
            return json.dumps(["xodo", "trequinho"])
        return json.dumps({**{n: ["xodo", "trequinho"] for n in names}, **(extra or {})})
    return respond


@pytest.fixture
def world(monkeypatch, store, s3, bucket, sessions_bucket, sqs, bus, model):
    queue = new_queue(sqs)
    api = demo_studio(monkeypatch, store, bucket, sessions_bucket, POLICY_REVIEW_QUEUE_URL=queue)
    assert "learn_from" not in store.get_config(T, A).text  # the demo's knowledge.yaml leaves the default
    asked: list[dict] = []
    model.responder = answer_each(asked)
    env = dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus["name"],
               UTILITY_MODEL="openai:words", OPENAI_BASE_URL=model.base_url, POLICY_REVIEW_QUEUE_URL=queue)
    return {"api": api, "queue": queue, "env": env, "asked": asked, "pending": PendingWords(s3, bucket)}


def words_jobs(sqs, queue) -> list[str]:
    return [m["Body"] for m in drain(sqs, queue) if json.loads(m["Body"]).get("job") == "words"]


def imported(world) -> list[str]:
    status, body, _ = world["api"]("POST", f"{BASE}/import", body={"files": [{"name": "faq.csv", "text": FAQ}],
                                                                   "dry_run": False})
    assert status == 200 and body["created"] == ROWS, body
    return sorted(item["name"] for item in body["items"])


def model_words(store, name: str, agent: str = A) -> list[str]:
    return [e.word for e in store.get(T, agent, name).concept.learned_words if e.origin == "model"]


def sighting_record(name: str, session: str, **fields) -> dict:
    """A sighting of `name` from `session` as ConsolidateFunction receives it."""
    from helpers.concepts import make_concept

    from knowledge.format.sighting import Sighting

    moment = datetime(2026, 11, 20, 14, 5, 31, tzinfo=timezone.utc)
    s = Sighting.of(T, A, session, "t1", make_concept(name, sources=(session,), created_at=moment, updated_at=moment,
                                                      **fields))
    return {"messageId": session, "receiptHandle": session, "body": s.body(), "attributes": {
        "MessageGroupId": s.group_id(), "MessageDeduplicationId": s.dedup_id(), "ApproximateReceiveCount": "1",
        "SentTimestamp": "0", "SenderId": "x", "ApproximateFirstReceiveTimestamp": "0", "SequenceNumber": "1"},
        "messageAttributes": {}, "md5OfBody": "0", "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:candidates.fifo", "awsRegion": "us-east-1"}


def test_an_agent_that_leaves_learn_from_unwritten_is_taught_by_default_and_without_a_model_nothing_is_asked(
        monkeypatch, world, store, sqs, model):
    status, body, _ = world["api"]("POST", f"{BASE}/concepts", body={"markdown": (
        "---\nname: troca-de-tela\ndescription: Troca de tela de celular em até 2 horas.\ntype: procedure\n---\n\n"
        "Trocamos a tela quebrada em até 2 horas.\n")})
    assert status == 201, body
    jobs = words_jobs(sqs, world["queue"])
    without = load_handler("policy_review", monkeypatch, world["env"], UTILITY_MODEL="")
    assert without.lambda_handler(sqs_event(*jobs), LambdaContext()) == {"batchItemFailures": []}
    assert model.requests == [] and world["pending"].names(T, A) == []  # no model: nothing asked, nothing waits
    function = load_handler("policy_review", monkeypatch, world["env"])
    assert function.lambda_handler(sqs_event(*jobs), LambdaContext()) == {"batchItemFailures": []}
    assert model_words(store, "troca-de-tela") == ["xodo", "trequinho"]


def test_an_import_of_25_rows_is_taught_in_three_calls_and_an_answer_is_read_strictly(
        monkeypatch, world, store, sqs, model, capsys):
    names = imported(world)
    jobs = words_jobs(sqs, world["queue"])
    assert [len(json.loads(j).get("names", [1])) for j in jobs] == [10, 10, 5]
    function = load_handler("policy_review", monkeypatch, world["env"])
    # A batch answered with a name that was not asked: ignored and counted; the asked ones are taught.
    model.responder = answer_each(world["asked"], extra={"outro-conceito": ["xodo"]})
    assert function.lambda_handler(sqs_event(jobs[0]), LambdaContext()) == {"batchItemFailures": []}
    assert '"WordProposalUnknownNames":[1.0]' in capsys.readouterr().out.replace(" ", "")
    # A malformed answer (a value that is no array of strings) is no answer: the queue asks again.
    model.responder = lambda request: json.dumps({n: "xodo" for n in NAME_LINE.findall(
        request["messages"][-1]["content"])})
    assert function.lambda_handler(sqs_event(jobs[1]), LambdaContext()) == {"batchItemFailures": [
        {"itemIdentifier": "m0"}]}
    model.responder = answer_each(world["asked"])
    assert function.lambda_handler(sqs_event(jobs[1], jobs[2]), LambdaContext()) == {"batchItemFailures": []}
    assert len(world["asked"]) == 3  # the answered calls: ten, ten and five concepts
    prompt = world["asked"][0]["messages"]
    assert len(NAME_LINE.findall(prompt[-1]["content"])) == 10 and "JSON object" in prompt[0]["content"]
    assert all(model_words(store, name) == ["xodo", "trequinho"] for name in names)
    print(f"words of an import of {ROWS} rows: {len(jobs)} jobs, {len(world['asked'])} model calls "
          f"(500 rows: {-(-500 // 10)} calls)")


class Tomorrow(datetime):
    @classmethod
    def now(cls, tz=None):
        return datetime.now(tz) + timedelta(days=1)


class DayAfter(datetime):
    @classmethod
    def now(cls, tz=None):
        return datetime.now(tz) + timedelta(days=2)


def test_when_the_budget_runs_out_the_rest_waits_for_the_next_day_and_nothing_is_lost(
        monkeypatch, world, store, sqs):
    names = imported(world)
    jobs = words_jobs(sqs, world["queue"])
    function = load_handler("policy_review", monkeypatch, world["env"], KNOWLEDGE_TENANT_DAILY_MODEL_CALLS="1")
    assert function.lambda_handler(sqs_event(*jobs), LambdaContext()) == {"batchItemFailures": []}
    assert len(world["asked"]) == 1
    waiting = world["pending"].names(T, A)
    assert len(waiting) == ROWS - 10 and not any(model_words(store, n) for n in waiting)
    # The studio shows them as waiting for their words: on the list's rows and on the concept's page.
    status, listing, _ = world["api"]("GET", f"{BASE}/concepts")
    assert status == 200
    assert sorted(c["name"] for c in listing["concepts"] if c.get("words_pending")) == waiting
    status, page, _ = world["api"]("GET", f"{BASE}/concepts/{waiting[0]}")
    assert status == 200 and page["words_pending"] is True
    # The daily pass, the same day, queues them again; the budget is still spent: they keep waiting.
    daily = load_handler("words_pending", monkeypatch, world["env"])
    assert daily.lambda_handler({}, LambdaContext())["queued"] == ROWS - 10
    again = words_jobs(sqs, world["queue"])
    assert [json.loads(j)["mode"] for j in again] == ["pending", "pending"]
    assert function.lambda_handler(sqs_event(*again), LambdaContext()) == {"batchItemFailures": []}
    assert len(world["asked"]) == 1 and world["pending"].names(T, A) == waiting
    # The next day: one more call (the cap is 1) teaches ten, the last five wait one day more.
    import knowledge.learning.usage as usage

    monkeypatch.setattr(usage, "datetime", Tomorrow)
    assert daily.lambda_handler({"tenant": T}, LambdaContext())["queued"] == ROWS - 10
    function = load_handler("policy_review", monkeypatch, world["env"], KNOWLEDGE_TENANT_DAILY_MODEL_CALLS="1")
    assert function.lambda_handler(sqs_event(*words_jobs(sqs, world["queue"])), LambdaContext()) == {
        "batchItemFailures": []}
    assert len(world["asked"]) == 2 and len(world["pending"].names(T, A)) == 5
    monkeypatch.setattr(usage, "datetime", DayAfter)
    daily.lambda_handler({}, LambdaContext())
    function = load_handler("policy_review", monkeypatch, world["env"], KNOWLEDGE_TENANT_DAILY_MODEL_CALLS="1")
    function.lambda_handler(sqs_event(*words_jobs(sqs, world["queue"])), LambdaContext())
    assert len(world["asked"]) == 3 and world["pending"].names(T, A) == []
    assert all(model_words(store, name) == ["xodo", "trequinho"] for name in names)  # every one taught
    # A pass repeated once all are taught queues nothing.
    assert daily.lambda_handler({}, LambdaContext())["queued"] == 0


def test_a_shared_concept_is_taught_once_in_the_shared_scope(monkeypatch, world, store, sqs):
    status, body, _ = world["api"]("POST", f"/tenants/{T}/agents/{SHARED}/concepts", body={"markdown": (
        "---\nname: garantia-de-fabrica\ndescription: Garantia de fábrica de 12 meses.\ntype: policy\n---\n\n"
        "Todo produto tem garantia de fábrica de 12 meses.\n")})
    assert status == 201, body
    jobs = words_jobs(sqs, world["queue"])
    assert [json.loads(j)["agent"] for j in jobs] == [SHARED]
    function = load_handler("policy_review", monkeypatch, world["env"])
    assert function.lambda_handler(sqs_event(*jobs), LambdaContext()) == {"batchItemFailures": []}
    assert model_words(store, "garantia-de-fabrica", agent=SHARED) == ["xodo", "trequinho"]


def test_a_concept_extraction_creates_is_taught_and_its_later_confirmations_ask_nothing(
        monkeypatch, world, store, sqs):
    def sighting(session: str) -> dict:
        return sighting_record("frete-gratis-sudeste", session, description="Frete grátis acima de R$199 no Sudeste.",
                               body="Pedidos acima de R$199 têm frete grátis para o Sudeste.")

    drain(sqs, world["queue"])
    consolidate = load_handler("consolidate", monkeypatch, world["env"])
    assert consolidate.lambda_handler({"Records": [sighting("sess_1")]}, LambdaContext()) == {"batchItemFailures": []}
    assert consolidate.lambda_handler({"Records": [sighting("sess_2")]}, LambdaContext()) == {"batchItemFailures": []}
    jobs = words_jobs(sqs, world["queue"])
    assert [json.loads(j)["name"] for j in jobs] == ["frete-gratis-sudeste"]  # created: taught; confirmed: not
    function = load_handler("policy_review", monkeypatch, world["env"])
    assert function.lambda_handler(sqs_event(*jobs), LambdaContext()) == {"batchItemFailures": []}
    assert model_words(store, "frete-gratis-sudeste") == ["xodo", "trequinho"]


def test_a_backfill_says_what_it_would_ask_then_teaches_every_concept_without_model_words_never_a_removed_one(
        monkeypatch, world, store, sqs, capsys):
    from knowledge.format.learned_words import LearnedWord
    from knowledge_cli.main import main

    names = sorted(entry.name for entry in store.list(T, A))
    taught, removing = names[0], names[1]
    current = store.get(T, A, taught)
    store.replace(T, A, current.concept.replace(learned_words=(LearnedWord("frete", "model", 0, datetime(
        2026, 11, 2).date()),)), if_match=current.etag, actor="learning", reason="learned")
    current = store.get(T, A, removing)
    store.replace(T, A, current.concept.replace(removed_words=("xodo",)), if_match=current.etag, actor="operator:ana",
                  reason="edit")
    drain(sqs, world["queue"])
    for key, value in world["env"].items():
        monkeypatch.setenv(key, value)
    wanted = len(names) - 1
    calls = -(-wanted // 10)
    assert main(["words", "propose", "--agent", A, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"words propose: {wanted} concept(s) of {T}/{A} without model words, {calls} model call(s) " \
           "(1 taught already) (dry run: nothing queued)" in out
    assert sum(line.startswith("call ") for line in out.splitlines()) == calls and removing in out
    assert drain(sqs, world["queue"]) == []  # a dry run queues nothing
    # The studio's "Teach words" says the same, and queues the same.
    status, body, _ = world["api"]("POST", f"{BASE}/words/propose", body={"dry_run": True})
    assert status == 200 and body == {"concepts": wanted, "calls": calls, "taught_already": 1, "unreadable": 0,
                                      "queued": 0}
    assert main(["words", "propose", "--agent", A]) == 0
    jobs = words_jobs(sqs, world["queue"])
    assert len(jobs) == calls and {json.loads(j)["mode"] for j in jobs} == {"backfill"}
    function = load_handler("policy_review", monkeypatch, world["env"])
    assert function.lambda_handler(sqs_event(*jobs), LambdaContext()) == {"batchItemFailures": []}
    assert len(world["asked"]) == calls
    assert model_words(store, taught) == ["frete"]  # not asked again
    assert model_words(store, removing) == ["trequinho"]  # the removed word is never proposed again
    assert all(model_words(store, n) for n in names)
    status, body, _ = world["api"]("POST", f"{BASE}/words/propose", body={"dry_run": False})
    assert status == 200 and body["concepts"] == 0 and body["queued"] == 0 and words_jobs(sqs, world["queue"]) == []
    status, body, _ = world["api"]("POST", f"/tenants/{T}/agents/nao-existe/words/propose", body={"dry_run": True})
    assert status == 404 and body["error"]["code"] == "unknown_agent"


def test_the_daily_pass_refuses_a_tenant_that_is_no_slug(monkeypatch, world):
    daily = load_handler("words_pending", monkeypatch, world["env"])
    answer = daily.lambda_handler({"tenant": "../outra"}, LambdaContext())
    assert answer["ok"] is False and answer["error"]["code"] == "invalid_name"


@pytest.mark.slow  # 500 concepts written through moto (about a minute)
def test_an_faq_of_500_rows_queues_50_words_jobs_one_model_call_each(monkeypatch, world, sqs, tmp_path, capsys):
    from knowledge_cli.main import main

    faq = tmp_path / "faq-500.csv"
    faq.write_text("question,answer\n" + "".join(
        f"Qual o prazo do pedido numero {chr(97 + n // 26)}{chr(97 + n % 26)} da loja?,"
        f"O pedido {chr(97 + n // 26)}{chr(97 + n % 26)} chega em até 5 dias úteis.\n" for n in range(500)))
    for key, value in world["env"].items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("KNOWLEDGE_OPERATOR", "ana.souza")
    drain(sqs, world["queue"])
    main(["import", "--agent", A, "--dry-run", str(faq)])
    dry = capsys.readouterr().out
    main(["import", "--agent", A, str(faq)])
    assert "created 500" in capsys.readouterr().out
    jobs = [json.loads(j) for j in words_jobs(sqs, world["queue"])]
    # Each job is one model call (test_an_import_of_25_rows_is_taught_in_three_calls...: a job of ten, one call).
    with capsys.disabled():
        print(f"\nwords of an FAQ of 500 rows: {len(jobs)} words jobs of {sum(len(j['names']) for j in jobs)} "
              f"concepts, so {len(jobs)} model calls")
    assert len(jobs) == 50 and all(len(j["names"]) == 10 for j in jobs)
    assert "at most 4050 model call(s) would be queued" in dry  # 500 policies' reviews (8 calls each) + 50


def test_an_agent_with_no_model_queues_no_words_job_for_what_extraction_creates(monkeypatch, world, store, sqs):
    record = sighting_record("troca-expressa", "sess_9")
    drain(sqs, world["queue"])
    consolidate = load_handler("consolidate", monkeypatch, world["env"], UTILITY_MODEL="")
    assert consolidate.lambda_handler({"Records": [record]}, LambdaContext()) == {"batchItemFailures": []}
    assert store.find(T, A, "troca-expressa") is not None and words_jobs(sqs, world["queue"]) == []
