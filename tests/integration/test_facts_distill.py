"""Facts distillation through DistillFunction: moto's S3 and EventBridge, the scripted model server.

Turns are archived and recorded as the extraction path does (TurnArchive.put, then
facts.sessions.record_turn); everything after that goes through the real handler.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest
from helpers.aws import drain
from helpers.facts_page import archive, turn
from helpers.handlers import LambdaContext, load_event, load_handler

from facts import layout
from facts.cells import MemoryCells
from facts.errors import NotPending
from facts.keyed_hashes import FactKeys
from facts.proposals import ProposalStore, ref_of
from facts.review import Review
from shared.events import EventBridgeEvents

T, A = "default", "store-support"
KEY = "k" * 48
CUSTOMER = "cust-8842-ana"
CONFIG = "knowledge:\n  extract: false\ndistill:\n  idle_hours: 6\n  min_messages: 3\n  max_proposals: 5\n"
NOW = datetime.now(timezone.utc)

CONVERSATION = [
    [("user", "oi boa tarde, quero trocar o tenis do pedido 48213 ficou apertado, calço 42 normalmente"),
     ("assistant", "Oi! Sinto muito. Posso trocar pelo mesmo modelo no 43, tudo bem?")],
    [("user", "pode ser 43 sim. ah e prefiro pagar no pix sempre, cartao nao uso"),
     ("assistant", "Perfeito, troca registrada para o 43. Anotei que você prefere Pix.")],
]


def conversation(s3, sessions_bucket, session: str, hours_ago: float = 8, customer: str | None = CUSTOMER,
                 turns=CONVERSATION) -> None:
    start = NOW - timedelta(hours=hours_ago)
    archive(s3, sessions_bucket, *[turn(session, i, start + timedelta(minutes=2 * i), messages, customer)
                                   for i, messages in enumerate(turns)])


def answer(*items) -> str:
    return json.dumps(list(items), ensure_ascii=False)


SHOE = {"name": "tamanho_calcado", "value": "43", "confidence": 0.8, "evidence": [1, 2]}
PIX = {"name": "pagamento_preferido", "value": "Pix", "evidence": [2]}


@pytest.fixture
def distill(monkeypatch, facts_stack):
    return load_handler("distill", monkeypatch, facts_stack)


@pytest.fixture
def memory(monkeypatch, facts_stack):
    return load_handler("memory", monkeypatch, facts_stack)


@pytest.fixture
def proposals(s3, sessions_bucket):
    return ProposalStore(s3, sessions_bucket)


@pytest.fixture
def review(s3, bucket, sessions_bucket, bus):
    from shared.aws import client

    return Review(ProposalStore(s3, sessions_bucket), MemoryCells(s3, bucket), FactKeys(KEY),
                  EventBridgeEvents(lambda: client("events"), bus["name"]))


def run(handler, event=None) -> dict:
    return handler.lambda_handler(load_event("distill.json") if event is None else event, LambdaContext())


def published(sqs, bus) -> list[dict]:
    return [json.loads(m["Body"]) for m in drain(sqs, bus["queue"])]


def pending(proposals, customer=CUSTOMER) -> dict[str, str]:
    return {p.proposal.name: p.proposal.value for p in proposals.list(T, A, customer)
            if p.proposal.status == "pending"}


# ------------------------------------------------------------------ the gates and the landing cell


def test_a_hostile_answer_is_gated_and_proposals_land_on_the_sessions_customer(
        distill, s3, sessions_bucket, script, proposals, sqs, bus):
    conversation(s3, sessions_bucket, "sess_troca_01")
    script.replies = [answer(
        SHOE, PIX,
        {"name": "cep_entrega", "value": "13010-000", "evidence": [0], "customer": "cust-0001-outro"},
        {"name": "tamanho_calca", "value": "46", "evidence": [0], "scope": "outra-loja:cust-0001"},
        {"name": "cor_favorita", "value": "azul", "evidence": [1], "tenant": "outra-loja"},
        {"name": "marca", "value": "Nike", "evidence": [1], "origin": "operator"},
        {"name": "apelido", "value": "Ju", "evidence": [99]},
        {"name": "bairro", "value": "Cambuí", "evidence": [-1]},
        {"name": "obs", "value": "x" * 501, "evidence": [1]},
        {"name": "n" * 65, "value": "curto", "evidence": [1]},
        {"name": "humor", "value": "bom", "evidence": [1], "nota": "extra"},
        {"name": "vazio", "value": "sem prova", "evidence": []},
        "texto solto")]
    report = run(distill)
    assert report["ok"] and (report["scanned"], report["distilled"], report["proposed"]) == (1, 1, 2)
    assert report["rejected"] == {"forbidden_key": 4, "evidence_out_of_range": 2, "value_too_large": 1,
                                  "name_too_large": 1, "unknown_key": 1, "evidence_missing": 1, "not_object": 1}
    assert pending(proposals) == {"tamanho_calcado": "43", "pagamento_preferido": "Pix"}
    # Nothing was stored for the customer or tenant the model named.
    assert proposals.list(T, A, "cust-0001-outro") == []
    assert s3.list_objects_v2(Bucket=sessions_bucket, Prefix="outra-loja/").get("KeyCount") == 0
    [shoe] = [p.proposal for p in proposals.list(T, A, CUSTOMER) if p.proposal.name == "tamanho_calcado"]
    assert (shoe.tenant, shoe.customer_id, shoe.session_id, shoe.base_revision) == (T, CUSTOMER, "sess_troca_01", None)
    # Evidence indexes 1 and 2 of the transcript: turn 0's second message, turn 1's first.
    assert [(e.turn_id, e.message) for e in shoe.evidence] == [("turn_0000", 1), ("turn_0001", 0)]
    events = published(sqs, bus)
    assert sorted(e["detail"]["name"] for e in events) == ["pagamento_preferido", "tamanho_calcado"]
    assert {e["detail-type"] for e in events} == {"fact_proposed"}
    assert {e["detail"]["customer"] for e in events} == {FactKeys(KEY).pseudonym(T, CUSTOMER)}


@pytest.mark.parametrize("unusable", [
    '{"name": "tamanho_calcado", "value": "43", "evidence": [1]}',  # an object, not a list
    "Claro! A cliente calça 43 e prefere Pix.",  # prose
    "[" * 10 + '{"name": "tamanho_calcado"',  # not JSON
])
def test_an_answer_that_is_not_a_list_is_tried_again_on_the_next_pass_and_its_facts_are_proposed(
        distill, s3, sessions_bucket, script, proposals, model, unusable):
    conversation(s3, sessions_bucket, "sess_prosa")
    script.replies = [unusable, answer(SHOE)]
    first = run(distill)
    assert (first["distilled"], first["proposed"], first["skipped"]) == (0, 0, {"answer_unusable": 1})
    assert proposals.list(T, A) == []
    second = run(distill)  # the session is still due: asked again, and this answer is a list
    assert (second["scanned"], second["distilled"], second["proposed"]) == (1, 1, 1)
    assert pending(proposals) == {"tamanho_calcado": "43"} and len(model.requests) == 2
    assert run(distill)["scanned"] == 0


def test_an_answer_that_is_never_a_list_is_dropped_after_three_passes_counted_where_an_alarm_looks(
        distill, s3, sessions_bucket, script, proposals, model, capsys, monkeypatch):
    from helpers.operations import alarms_watching, emitted, the

    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    conversation(s3, sessions_bucket, "sess_prosa")
    script.default = '{"facts": []}'
    reports = [run(distill) for _ in range(4)]
    assert [r["scanned"] for r in reports] == [1, 1, 1, 0] and len(model.requests) == 3
    assert all(r["distilled"] == 0 and r["skipped"] == {"answer_unusable": 1} for r in reports[:3])
    assert proposals.list(T, A) == []
    output = capsys.readouterr().out
    unusable = [p for p in emitted(output) if p.metric == "DistillAnswerUnusable"]
    assert [p.dimensions for p in unusable] == [{"service": "facts-distill", "reason": "answer_not_array"}] * 3
    assert the("DistillAnswerDropped", output).dimensions == {"service": "facts-distill", "reason": "answer_not_array"}
    assert alarms_watching(the("SessionGivenUp", output)) == ["SessionGivenUpAlarm"]


def test_a_model_that_answers_prose_for_every_session_ends_the_pass_like_a_model_that_is_down(
        distill, s3, sessions_bucket, script, model):
    for n in range(5):
        conversation(s3, sessions_bucket, f"sess_prosa_{n}", hours_ago=9 - n / 10)
    script.default = "Desculpe, não entendi."
    report = run(distill)
    assert (report["scanned"], report["complete"], len(model.requests)) == (3, False, 3)


def test_more_than_max_proposals_are_cut_and_counted(distill, s3, sessions_bucket, script, proposals):
    conversation(s3, sessions_bucket, "sess_muitos")
    script.replies = [answer(*[{"name": f"fato_{i}", "value": f"valor {i}", "evidence": [0]} for i in range(8)])]
    report = run(distill)
    assert report["proposed"] == 5 and report["rejected"] == {"too_many": 3}
    assert len(pending(proposals)) == 5


def test_facts_are_asked_in_the_conversations_language_and_one_in_another_is_kept_and_counted(
        distill, s3, sessions_bucket, script, model, proposals, capsys):
    conversation(s3, sessions_bucket, "sess_idioma")
    english = {"name": "payment_preference", "evidence": [2],
               "value": "The customer always wants to pay with Pix and does not use a credit card at all."}
    script.replies = [answer(SHOE, english)]
    report = run(distill)
    system = model.requests[0]["messages"][0]["content"]
    assert "write every value in the language the conversation is written in" in system
    assert report["proposed"] == 2 and set(pending(proposals)) == {"tamanho_calcado", "payment_preference"}
    logs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [entry["ProposalOtherLanguage"] for entry in logs if "ProposalOtherLanguage" in entry] == [[1.0]]


# ------------------------------------------------------------------ which sessions are due


def test_an_untagged_session_is_never_distilled(distill, s3, sessions_bucket, script, model, proposals):
    conversation(s3, sessions_bucket, "sess_anonima", customer=None)
    script.default = answer(SHOE)
    report = run(distill)
    assert report["skipped"] == {"untagged": 1} and model.requests == [] and proposals.list(T, A) == []
    # Parked: the next pass does not even look at it.
    assert run(distill)["scanned"] == 0 and model.requests == []


def test_a_session_not_idle_long_enough_or_too_short_waits(distill, s3, sessions_bucket, script, model):
    conversation(s3, sessions_bucket, "sess_recente", hours_ago=2)
    conversation(s3, sessions_bucket, "sess_curta", turns=[[("user", "oi, tudo bem?")]])
    report = run(distill)
    assert report["skipped"] == {"too_short": 1} and report["scanned"] == 1 and model.requests == []
    # The short session gains turns later: due again once it has been idle long enough.
    start = NOW - timedelta(hours=7)
    archive(s3, sessions_bucket, turn("sess_curta", 5, start, CONVERSATION[1]))
    script.default = answer(PIX)
    assert run(distill)["distilled"] == 1 and len(model.requests) == 1


def test_the_local_stacks_idle_shortcut_makes_a_recent_session_due_and_the_deployed_pass_waits(
        distill, s3, sessions_bucket, script, model):
    conversation(s3, sessions_bucket, "sess_recente", hours_ago=2)
    script.default = answer(PIX)
    assert run(distill)["scanned"] == 0  # the agent's idle_hours (6) have not passed
    distill.service.get().idle_hours_at_most = 1.0  # knowledge_dev.handlers.distill_handler(idle_minutes=60)
    assert run(distill)["distilled"] == 1 and len(model.requests) == 1


def test_finding_due_sessions_never_lists_the_archive(distill, s3, sessions_bucket, script):
    for n in range(40):
        conversation(s3, sessions_bucket, f"sess_nova_{n:02d}", hours_ago=1)
    conversation(s3, sessions_bucket, "sess_devida_a", hours_ago=9)
    conversation(s3, sessions_bucket, "sess_devida_b", hours_ago=8)
    script.default = answer(PIX)
    from shared.aws import client

    calls: Counter = Counter()
    listed: list[str] = []

    def count(params, model, **_):
        # The agent's config is read again once its switch interval has passed (a switch pulled
        # mid-pass holds): on a loaded machine the pass may outlast it, so it is counted apart.
        if model.name == "GetObject" and params.get("url_path", "").endswith("/knowledge.yaml"):
            calls["config"] += 1
            return
        calls[model.name] += 1
        if model.name == "ListObjectsV2":
            listed.append(params.get("Prefix", ""))

    client("s3").meta.events.register("before-call.s3", count)
    try:
        report = run(distill)
    finally:
        client("s3").meta.events.unregister("before-call.s3", count)
    assert report["scanned"] == 2 and report["distilled"] == 2
    assert not any("/turns/" in prefix for prefix in listed)
    # Two listings find the agents, one the idle markers, one per session the customer's latches.
    assert calls["ListObjectsV2"] == 2 + 1 + 2
    # Per session: its state, its 2 turns, the cell; and the second session's Pix (same customer)
    # reads the proposal it collides with, to see it is not expired. The agent's config: once, unless
    # the pass outlasted the switch interval.
    assert calls["GetObject"] == 2 * (1 + 2 + 1) + 1
    assert 1 <= calls["config"] <= 2
    assert report["filtered"] == {"duplicate": 1}


# ------------------------------------------------------------------ the ledger and the latch


def test_a_dismissed_tuple_is_never_proposed_again_but_another_value_is(
        distill, s3, bucket, sessions_bucket, script, proposals, review, sqs, bus):
    conversation(s3, sessions_bucket, "sess_a")
    script.replies = [answer(SHOE, PIX)]
    run(distill)
    [shoe] = [p.proposal for p in proposals.list(T, A, CUSTOMER) if p.proposal.name == "tamanho_calcado"]
    dismissed = review.dismiss(ref_of(shoe), "op-maria@loja")
    assert (dismissed.status, dismissed.resolved_by) == ("dismissed", "op-maria@loja")
    # Retention removes the proposal record; the latch (a keyed hash, no value) outlives it.
    s3.delete_object(Bucket=sessions_bucket, Key=ref_of(shoe).key)
    latches = s3.list_objects_v2(Bucket=bucket, Prefix=layout.latch_prefix(T, CUSTOMER))["Contents"]
    assert [o["Key"].rsplit("/", 1)[1] for o in latches] == [shoe.id] and "43" not in latches[0]["Key"]
    conversation(s3, sessions_bucket, "sess_b")
    script.replies = [answer({**SHOE, "value": " 43 "}, {**SHOE, "name": "tamanho_calcado", "value": "44"})]
    report = run(distill)
    # The second item repeats the name: one name per answer, so "44" waits for its own session.
    assert report["filtered"] == {"latched": 1} and report["rejected"] == {"duplicate_name": 1}
    conversation(s3, sessions_bucket, "sess_c")
    script.replies = [answer({**SHOE, "value": "44"})]
    assert run(distill)["proposed"] == 1
    assert pending(proposals)["tamanho_calcado"] == "44"
    kinds = [e["detail-type"] for e in published(sqs, bus)]
    assert kinds.count("fact_dismissed") == 1


def test_a_rejected_tuple_keeps_its_reason_and_is_latched(distill, s3, sessions_bucket, script, proposals, review):
    conversation(s3, sessions_bucket, "sess_a")
    script.replies = [answer(PIX)]
    run(distill)
    [pix] = [p.proposal for p in proposals.list(T, A, CUSTOMER)]
    rejected = review.reject(ref_of(pix), "op-joao", "cliente disse que foi só dessa vez")
    assert (rejected.status, rejected.reason) == ("rejected", "cliente disse que foi só dessa vez")
    with pytest.raises(NotPending):
        review.approve(ref_of(pix), "op-joao")
    conversation(s3, sessions_bucket, "sess_b")
    script.replies = [answer({**PIX, "value": "pix"})]
    assert run(distill)["filtered"] == {"latched": 1}


def test_an_unanswered_proposal_is_never_piled_on_and_a_crash_is_recovered_by_a_rescan(
        distill, s3, sessions_bucket, script, proposals, monkeypatch):
    conversation(s3, sessions_bucket, "sess_a")
    script.default = answer(SHOE, PIX)
    distiller = distill.service.get()

    def crash(*_args, **_kwargs):
        raise SystemExit("killed after the proposals were written")

    monkeypatch.setattr(distiller.states, "swap", crash)  # the session is marked distilled last
    with pytest.raises(SystemExit):
        run(distill)
    monkeypatch.undo()
    report = run(distill)  # the session is still due: re-scanned, its proposals filtered
    assert (report["scanned"], report["proposed"], report["filtered"]) == (1, 0, {"duplicate": 2})
    conversation(s3, sessions_bucket, "sess_b")  # another session, same customer, same tuples
    assert run(distill)["filtered"] == {"duplicate": 2}
    assert len(proposals.list(T, A, CUSTOMER)) == 2


# ------------------------------------------------------------------ approval and the CAS guarantee


def test_an_approval_lands_in_the_cell_the_engine_reads_and_is_not_proposed_again(
        distill, memory, s3, sessions_bucket, script, proposals, review, sqs, bus):
    conversation(s3, sessions_bucket, "sess_a")
    script.replies = [answer(SHOE)]
    run(distill)
    assert memory.lambda_handler({"action": "read", "tenant": T, "customer_id": CUSTOMER}, LambdaContext())["facts"] == []
    [shoe] = [p.proposal for p in proposals.list(T, A, CUSTOMER)]
    assert review.approve(ref_of(shoe), "op-maria").status == "approved"
    assert review.approve(ref_of(shoe), "op-maria").status == "approved"  # a double click
    read = memory.lambda_handler({"action": "read", "tenant": T, "customer_id": CUSTOMER}, LambdaContext())
    assert [(f["name"], f["value"], f["origin"], f["revision"]) for f in read["facts"]] == [
        ("tamanho_calcado", "43", "distilled:sess_a", 1)]
    assert read["block"] == '<memory>\n  <fact name="tamanho_calcado">43</fact>\n</memory>'
    conversation(s3, sessions_bucket, "sess_b")
    script.replies = [answer(SHOE)]
    assert run(distill)["filtered"] == {"already_applied": 1}
    assert "fact_approved" in [e["detail-type"] for e in published(sqs, bus)]


def test_only_an_approval_writes_the_cell(distill, s3, bucket, sessions_bucket, script):
    conversation(s3, sessions_bucket, "sess_a")
    script.replies = [answer(SHOE, PIX)]
    assert run(distill)["proposed"] == 2
    assert s3.list_objects_v2(Bucket=bucket, Prefix="memory/").get("KeyCount") == 0


def test_an_operator_edit_after_distill_turns_the_approval_stale_and_keeps_both_values(
        distill, memory, s3, bucket, sessions_bucket, script, proposals, review, sqs, bus):
    ctx = LambdaContext()
    memory.lambda_handler({"action": "remember", "tenant": T, "customer_id": CUSTOMER,
                           "name": "tamanho_calcado", "value": "42"}, ctx)
    conversation(s3, sessions_bucket, "sess_a")
    script.replies = [answer(SHOE, PIX)]
    run(distill)
    by_name = {p.proposal.name: p.proposal for p in proposals.list(T, A, CUSTOMER)}
    assert by_name["tamanho_calcado"].base_revision == 1
    # An unrelated fact changes: not a reason to go stale.
    memory.lambda_handler({"action": "remember", "tenant": T, "customer_id": CUSTOMER,
                           "name": "cidade", "value": "Campinas"}, ctx)
    # The operator edits the target fact while the proposal waits.
    MemoryCells(s3, bucket).write_fact(T, CUSTOMER, "tamanho_calcado", "44", "operator", expect=1)
    stale = review.approve(ref_of(by_name["tamanho_calcado"]), "op-maria")
    assert stale.status == "stale" and stale.value == "43"
    assert (stale.current.value, stale.current.origin) == ("44", "operator")
    assert review.approve(ref_of(by_name["pagamento_preferido"]), "op-maria").status == "approved"
    facts = {f["name"]: f for f in memory.lambda_handler(
        {"action": "read", "tenant": T, "customer_id": CUSTOMER}, ctx)["facts"]}
    assert facts["tamanho_calcado"]["value"] == "44" and facts["tamanho_calcado"]["origin"] == "operator"
    assert facts["pagamento_preferido"]["origin"] == "distilled:sess_a"
    with pytest.raises(NotPending):
        review.approve(ref_of(stale), "op-maria")
    assert review.dismiss(ref_of(stale), "op-maria").status == "dismissed"
    kinds = [e["detail-type"] for e in published(sqs, bus)]
    assert kinds.count("fact_stale") == 1 and kinds.count("fact_approved") == 1


def test_concurrent_approvals_of_one_fact_write_it_once(distill, s3, bucket, sessions_bucket, script, proposals,
                                                       review):
    conversation(s3, sessions_bucket, "sess_a")
    script.replies = [answer(SHOE)]
    run(distill)
    [shoe] = [p.proposal for p in proposals.list(T, A, CUSTOMER)]
    outcomes = []

    def approve():
        try:
            outcomes.append(review.approve(ref_of(shoe), "op-maria").status)
        except Exception as exc:  # the loser is told, typed
            outcomes.append(getattr(exc, "code", type(exc).__name__))

    threads = [threading.Thread(target=approve) for _ in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert "approved" in outcomes and set(outcomes) <= {"approved", "conflict"}
    cell = MemoryCells(s3, bucket).read(T, CUSTOMER).cell
    assert cell.seq == 1 and cell.facts["tamanho_calcado"].revision == 1


# ------------------------------------------------------------------ personal data


def test_no_value_reaches_a_log_an_event_or_a_metric(distill, memory, s3, sessions_bucket, script, proposals, review,
                                                      sqs, bus, capsys, monkeypatch):
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    conversation(s3, sessions_bucket, "sess_a")
    secret_values = ["calça 46 slim", "Pix parcelado Itaú"]
    script.replies = [answer({"name": "tamanho_calca", "value": secret_values[0], "evidence": [0]},
                             {"name": "pagamento", "value": secret_values[1], "evidence": [2]},
                             {"name": "x", "value": "vazou", "evidence": [7]})]
    run(distill)
    for stored in proposals.list(T, A, CUSTOMER):
        review.approve(ref_of(stored.proposal), "op-maria")
    memory.lambda_handler({"action": "remember", "tenant": T, "customer_id": CUSTOMER, "name": "bairro",
                           "value": "Cambuí perto da padaria"}, LambdaContext())
    memory.lambda_handler({"action": "read", "tenant": T, "customer_id": CUSTOMER}, LambdaContext())
    distill.service.get().counters.flush(service="facts-distill")
    out = capsys.readouterr()
    events = json.dumps(published(sqs, bus), ensure_ascii=False)
    logged = out.out + out.err
    assert '"_aws"' in logged or "SessionScanned" in logged  # metrics were emitted to this output
    for text in (*secret_values, "Cambuí perto da padaria", "vazou", "calço 42"):
        assert text not in logged and text not in events
    assert CUSTOMER not in events and "fact_approved" in events


def test_a_cell_that_no_longer_parses_holds_its_session_without_a_model_call_or_blocking_others(
        distill, s3, bucket, sessions_bucket, script, model, proposals):
    s3.put_object(Bucket=bucket, Key=layout.cell_key(T, CUSTOMER), Body=b"not json")
    conversation(s3, sessions_bucket, "sess_a")
    conversation(s3, sessions_bucket, "sess_outra", customer="cust-0002-bia")
    script.default = answer(PIX)
    report = run(distill)
    assert report["skipped"] == {"cell_unreadable": 1} and report["distilled"] == 1 and len(model.requests) == 1
    assert [p.proposal.customer_id for p in proposals.list(T, A)] == ["cust-0002-bia"]
    assert run(distill)["skipped"] == {"cell_unreadable": 1}  # still due, waiting for the cell to be fixed
