"""Concepts polluted before "nothing without a judgment", repaired through RepairFunction and the CLI: the
engine's "not judged" policy entries (and a shared concept's unjudged claims) leave the concepts for their
waiting pairs, one version per concept, the operator's text and the judged entries untouched; the dry run
says what would move and writes nothing."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_event, load_handler

from knowledge.format.evidence import EvidenceLink
from knowledge.store.keys import SHARED

T, A = "default", "store-support"
OPERATOR_BODY = "Frete grátis acima de R$ 199 no Sul e no Sudeste. Veja [[cep-sudeste]]."
JUDGED = "Policy [[troca-30-dias]] (2026-11-30), judged contradicting: Trocas em até 30 dias."
KEPT = "Session sess_4 (2026-11-29): Cliente diz que o frete é caro.\n\n> Achou o frete caro."
POLLUTED = (OPERATOR_BODY + "\n\n## Related claims\n\n"
            "Policy [[rastreio-pedido]] (2026-12-01), not judged: Rastreio pelo link do e-mail.\n\n"
            + KEPT + "\n\n"
            "Policy [[pontos-fidelidade]] (2026-12-01), not judged: Pontos valem por 1 ano.\n\n" + JUDGED)


@pytest.fixture
def polluted(store):
    store.put_config(T, A, "knowledge:\n  shared: true\n", actor="operator:ana")
    created = store.create(T, A, make_concept("frete-gratis", body=OPERATOR_BODY), actor="operator:ana")
    store.replace(T, A, created.concept.replace(body=POLLUTED), if_match=created.etag, actor="engine",
                  reason="kept_beside")
    shared = store.create(T, SHARED, make_concept("politica-devolucao", type="policy", provenance="policy",
                                                  confidence=1.0, sources=(), description="Devolução em 30 dias.",
                                                  body="Devolução grátis em até 30 dias."), actor="operator:ana")
    moment = datetime(2026, 11, 20, 14, 5, 31, tzinfo=timezone.utc)
    beside = shared.concept.body + ("\n\n## Related claims\n\nSession sess_7 (2026-11-20): Cliente diz que leva 10 dias."
                                    "\n\n> A aprovação demora 10 dias.")
    store.replace(T, SHARED, shared.concept.replace(body=beside), if_match=shared.etag, actor="engine",
                  reason="kept_beside", evidence=EvidenceLink("sess_7", "t1", moment, 0, 0, 20, A))
    return store


@pytest.fixture
def repair(monkeypatch, bucket):
    return load_handler("repair", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket))


def versions(store, scope, name):
    return [v.reason for v in store.versions(T, scope, name)]


def test_the_dry_run_says_what_would_move_and_writes_nothing(repair, polluted):
    answer = repair.lambda_handler(load_event("repair-related.json"), LambdaContext())
    assert answer["ok"] and answer["dry_run"] and answer["moved"] == {"frete-gratis": 2}
    assert versions(polluted, A, "frete-gratis") == ["kept_beside", "created"]
    assert polluted.waiting().counts(T, A) == {}


def test_the_repair_moves_the_unjudged_entries_out_in_one_version_and_keeps_the_rest(repair, polluted):
    answer = repair.lambda_handler({"action": "repair_related", "tenant": T, "agent": A}, LambdaContext())
    assert answer["ok"] and (answer["concepts"], answer["entries"]) == (1, 2)
    stored = polluted.get(T, A, "frete-gratis")
    assert stored.reason == "repaired" and versions(polluted, A, "frete-gratis")[1:] == ["kept_beside", "created"]
    assert stored.concept.body == OPERATOR_BODY + "\n\n## Related claims\n\n" + KEPT + "\n\n" + JUDGED
    assert [(p.kind, p.policy, p.since) for p in polluted.waiting().of(T, A, "frete-gratis")] == [
        ("policy", "pontos-fidelidade", "2026-12-01"), ("policy", "rastreio-pedido", "2026-12-01")]
    # Run again: nothing left to move, nothing written.
    again = repair.lambda_handler({"action": "repair_related", "tenant": T, "agent": A}, LambdaContext())
    assert again["entries"] == 0 and len(versions(polluted, A, "frete-gratis")) == 3


def test_a_shared_concepts_unjudged_claim_goes_to_the_agent_it_came_from(repair, polluted):
    answer = repair.lambda_handler({"action": "repair_related", "tenant": T, "shared": True}, LambdaContext())
    assert answer["ok"] and answer["moved"] == {"politica-devolucao": 1} and answer["left"] == {}
    assert polluted.get(T, SHARED, "politica-devolucao").concept.body == "Devolução grátis em até 30 dias."
    [pair] = polluted.waiting().of(T, A, "politica-devolucao")
    assert (pair.kind, pair.shared, pair.session_id, pair.turn_id) == ("sighting", True, "sess_7", "t1")
    assert (pair.description, pair.body) == ("Cliente diz que leva 10 dias.", "A aprovação demora 10 dias.")


def test_a_bad_request_or_an_unknown_agent_is_refused_clearly(repair, polluted):
    for event, code in (({"action": "repair_related", "tenant": T}, "invalid_request"),
                        ({"action": "repair_related", "tenant": T, "agent": "nao-existe"}, "unknown_agent"),
                        ({"action": "repair_everything", "tenant": T, "agent": A}, "invalid_request")):
        answer = repair.lambda_handler(event, LambdaContext())
        assert answer["ok"] is False and answer["error"]["code"] == code, (event, answer)


def test_the_cli_dry_run_and_run(polluted, bucket, monkeypatch, capsys):
    from knowledge_cli.main import main

    monkeypatch.setenv("KNOWLEDGE_BUCKET", bucket)
    assert main(["repair-related", "--agent", A, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "frete-gratis" in out and "would move 2 unjudged entries" in out and "nothing written" in out
    assert versions(polluted, A, "frete-gratis") == ["kept_beside", "created"]
    assert main(["repair-related", "--agent", A]) == 0
    assert "moved" in capsys.readouterr().out and polluted.get(T, A, "frete-gratis").reason == "repaired"
