"""The LGPD purges (PurgeFunction and `knowledge forget-customer` / `delete-tenant-data`) and proposals
ageing out with the archive, on data written through the real paths: ExtractFunction archives
customer-tagged turns, DistillFunction proposes (scripted model server), an operator decides through
facts.review, MemoryFunction remembers. Afterwards every object version and delete marker is listed.
Over 500 lines on purpose: every purge is checked against the one world written above its tests (the
scripted model's facts, the conversations, `world`), so an assertion's count is read beside what made it.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta, timezone

import pytest
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_event, load_handler

from facts.cells import MemoryCells
from facts.distill import Distiller
from facts.errors import NotPending
from facts.keyed_hashes import FactKeys
from facts.proposals import ProposalStore, ref_of
from facts.review import Review
from knowledge.store.concepts import ConceptStore
from knowledge_cli import main as cli
from shared.model import ModelCache

T, OTHER_TENANT = "default", "default-2"  # a tenant whose name the other's prefix would match
CUSTOMER, OTHER_CUSTOMER = "cus_20931", "cus_77104"
AGENTS = ("store-support", "vendas")
KEY = "k" * 48
NOW = datetime.now(timezone.utc)
LEARNS_AND_DISTILS = "knowledge:\n  extract: true\ndistill:\n  idle_hours: 6\n  min_messages: 3\n"
DISTILS = "knowledge:\n  extract: false\ndistill:\n  idle_hours: 6\n  min_messages: 3\n"

TROCA = [("oi boa tarde, quero trocar o tenis do pedido 48213, ficou apertado. calço 42 normalmente",
          "Oi! Sinto muito. Posso trocar pelo mesmo modelo no 43, tudo bem?"),
         ("pode ser 43 sim. ah e prefiro pagar no pix sempre, cartao nao uso",
          "Perfeito, troca registrada para o 43. Anotei que você prefere Pix.")]
ENTREGA = [("Hi, my order 50931 hasn't arrived yet, CEP 13083-970", "Hi! It left the Campinas DC today."),
           ("ok, can you deliver after 18h? I work all day", "Sure, I noted: deliveries after 6 pm.")]
PRESENTE = [("vcs embrulham pra presente? é aniversario da minha mae", "Embrulhamos sim, sem custo."),
            ("otimo, manda pro endereço de sempre", "Combinado! Vai embrulhado.")]


def distilled_facts(request: dict) -> str:
    """The scripted model: [] to extraction; to distillation, the facts the conversation holds."""
    prompt = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
    if "You distill durable facts" not in prompt:
        return "[]"
    facts = []
    if "pix" in prompt.lower():
        facts.append({"name": "pagamento_preferido", "value": "Pix", "evidence": [2]})
    if "calço 42" in prompt:
        facts.append({"name": "tamanho_calcado", "value": "43", "confidence": 0.8, "evidence": [1, 2]})
    if "after 18h" in prompt:
        facts.append({"name": "janela_entrega", "value": "depois das 18h", "evidence": [2]})
    if "presente" in prompt:
        facts.append({"name": "embrulho", "value": "para presente", "evidence": [0]})
    return json.dumps(facts, ensure_ascii=False)


def turns_event(tenant: str, agent: str, session: str, customer: str, conversation, hours_ago: float,
                first: int = 0) -> dict:
    """The TurnCompleteQueue's Lambda event for a conversation, one record per turn."""
    record = load_event("turn-complete.json")["Records"][0]
    start = NOW - timedelta(hours=hours_ago)
    records = []
    for index, (user, assistant) in enumerate(conversation, start=first):
        body = {"tenant": tenant, "agent": agent, "session_id": session, "turn_id": f"turn_{index:04d}",
                "completed_at": (start + timedelta(minutes=3 * index)).isoformat(), "customer_id": customer,
                "messages": [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]}
        records.append({**copy.deepcopy(record), "messageId": f"{session}-{index}", "body": json.dumps(body)})
    return {"Records": records}


@pytest.fixture
def stack(bucket, sessions_bucket, candidates_queue, bus, model):
    model.responder = distilled_facts
    return dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
                EVENT_BUS_NAME=bus["name"], UTILITY_MODEL="openai:utility", OPENAI_BASE_URL=model.base_url,
                FACTS_KEY=KEY)


@pytest.fixture
def handlers(monkeypatch, stack):
    return {name: load_handler(name, monkeypatch, stack) for name in ("extract", "distill", "memory", "purge")}


def review(s3, bucket, sessions_bucket) -> Review:
    return Review(ProposalStore(s3, sessions_bucket), MemoryCells(s3, bucket), FactKeys(KEY), None)


def proposal_of(s3, sessions_bucket, tenant, agent, customer, name):
    [stored] = [p for p in ProposalStore(s3, sessions_bucket).list(tenant, agent, customer) if p.proposal.name == name]
    return stored.proposal


@pytest.fixture
def world(handlers, s3, bucket, sessions_bucket):
    """Two tenants, two agents each, the customer in several sessions of both agents (one not idle
    yet), another customer beside them, and the same customer id in the other tenant."""
    for tenant in (T, OTHER_TENANT):
        store = ConceptStore(s3, bucket)
        store.put_config(tenant, AGENTS[0], LEARNS_AND_DISTILS, actor="operator:demo")
        store.put_config(tenant, AGENTS[1], DISTILS, actor="operator:demo")
        store.create(tenant, AGENTS[0], make_concept("frete-gratis"), actor="engine")
        store.delete(tenant, AGENTS[0], "frete-gratis", actor="operator:demo")
        store.create(tenant, AGENTS[0], make_concept("troca-30-dias", description="Trocas em até 30 dias."),
                     actor="engine")
        try:
            from knowledge.curation.reviews import ReviewStore
        except ImportError:  # the studio's review state is not in this tree yet
            pass
        else:
            ReviewStore(s3, bucket).mark_seen(tenant, AGENTS[0], "ana.operadora@loja.com.br", NOW)

    extract = handlers["extract"].lambda_handler
    sessions = [(T, AGENTS[0], "sess_troca_01", CUSTOMER, TROCA, 9),
                (T, AGENTS[1], "sess_entrega_02", CUSTOMER, ENTREGA, 8),
                (T, AGENTS[1], "sess_presente_03", CUSTOMER, PRESENTE, 1),  # not idle yet: its marker waits
                (T, AGENTS[0], "sess_outro_01", OTHER_CUSTOMER, TROCA, 9),
                (OTHER_TENANT, AGENTS[0], "sess_troca_01", CUSTOMER, TROCA, 9)]
    for tenant, agent, session, customer, conversation, hours_ago in sessions:
        answer = extract(turns_event(tenant, agent, session, customer, conversation, hours_ago), LambdaContext())
        assert answer == {"batchItemFailures": []}
    report = handlers["distill"].lambda_handler(load_event("distill.json"), LambdaContext())
    assert report["ok"] and report["distilled"] == 4 and report["proposed"] == 7

    decide = review(s3, bucket, sessions_bucket)
    shoe = proposal_of(s3, sessions_bucket, T, AGENTS[0], CUSTOMER, "tamanho_calcado")
    decide.approve(ref_of(shoe), "ana.operadora@loja.com.br")
    pix = proposal_of(s3, sessions_bucket, T, AGENTS[0], CUSTOMER, "pagamento_preferido")
    decide.dismiss(ref_of(pix), "ana.operadora@loja.com.br")
    window = proposal_of(s3, sessions_bucket, T, AGENTS[1], CUSTOMER, "janela_entrega")
    decide.reject(ref_of(window), "ana.operadora@loja.com.br", "cliente mudou de emprego")
    other = proposal_of(s3, sessions_bucket, T, AGENTS[0], OTHER_CUSTOMER, "pagamento_preferido")
    decide.approve(ref_of(other), "ana.operadora@loja.com.br")

    memory = handlers["memory"].lambda_handler
    for tenant, customer in ((T, CUSTOMER), (T, CUSTOMER), (T, OTHER_CUSTOMER), (OTHER_TENANT, CUSTOMER)):
        answer = memory({"action": "remember", "tenant": tenant, "customer_id": customer,
                         "name": "apelido", "value": "Ana" if customer == CUSTOMER else "Beto"}, LambdaContext())
        assert "error" not in answer
    return handlers


# ------------------------------------------------------------------ listing what is left


def versions(s3, bucket: str, prefix: str = "") -> set[tuple[str, str]]:
    """Every object version and delete marker under `prefix`, as (key, version id)."""
    out = set()
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
        out |= {(v["Key"], v["VersionId"]) for v in page.get("Versions", []) + page.get("DeleteMarkers", [])}
    return out


def everything(s3, bucket, sessions_bucket) -> dict[str, set]:
    return {"knowledge": versions(s3, bucket), "sessions": versions(s3, sessions_bucket)}


def of_customer(found: dict[str, set], tenant: str, customer: str, sessions: tuple[str, ...]) -> set:
    """Keys in the tenant's part of either bucket that name the customer or one of their sessions."""
    names = {customer, *sessions, *(f"{s}.json" for s in sessions)}
    return {key for items in found.values() for key, _ in items
            if key.startswith((f"{tenant}/", f"memory/{tenant}/")) and names & set(key.split("/"))}


CUSTOMER_SESSIONS = ("sess_troca_01", "sess_entrega_02", "sess_presente_03")


def bodies_naming(s3, sessions_bucket, tenant: str, text: str) -> list[str]:
    """Keys of current objects in the tenant's part of SESSIONS_BUCKET whose body contains `text`."""
    found = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=sessions_bucket, Prefix=f"{tenant}/"):
        for item in page.get("Contents", []):
            if text.encode() in s3.get_object(Bucket=sessions_bucket, Key=item["Key"])["Body"].read():
                found.append(item["Key"])
    return found


def forget(handlers, context=None, **overrides) -> dict:
    return handlers["purge"].lambda_handler({**load_event("forget-customer.json"), **overrides},
                                            context or LambdaContext())


class RunningOut(LambdaContext):
    """A context whose remaining time falls below the purge's stopping point after `calls` asks."""

    def __init__(self, calls: int):
        super().__init__()
        self.calls = calls

    def get_remaining_time_in_millis(self) -> int:
        self.calls -= 1
        return 900_000 if self.calls >= 0 else 5_000


# ------------------------------------------------------------------ forget_customer


EXPECTED_FORGET = {
    "archived_turns": 6,  # three sessions of two turns, in two agents
    "extracted_markers": 2,  # the learning agent read the first session's two turns
    "idle_markers": 1,  # the session not idle yet
    "session_states": 3,
    "customer_index": 3,
    "proposals": 3,  # approved, dismissed and rejected (the session not idle yet has none)
    "memory_cells": 3,  # approval, then two remembers
    "latches": 2,  # the dismissed and the rejected tuple
}


def test_forget_customer_leaves_no_version_or_delete_marker_of_the_customer_and_nothing_else_is_touched(
        world, s3, bucket, sessions_bucket):
    # A cell deleted by hand once (a delete marker) and written again: both must go.
    s3.delete_object(Bucket=bucket, Key=f"memory/{T}/{CUSTOMER}/cell.json")
    world["memory"].lambda_handler({"action": "remember", "tenant": T, "customer_id": CUSTOMER,
                                    "name": "apelido", "value": "Aninha"}, LambdaContext())
    before = everything(s3, bucket, sessions_bucket)
    assert of_customer(before, T, CUSTOMER, CUSTOMER_SESSIONS)
    assert bodies_naming(s3, sessions_bucket, T, CUSTOMER)

    answer = forget(world)

    expected = {**EXPECTED_FORGET, "memory_cells": EXPECTED_FORGET["memory_cells"] + 2}
    assert answer == {"action": "forget_customer", "tenant": T, "complete": True, "dry_run": False,
                      "removed": expected, "total": sum(expected.values())}
    after = everything(s3, bucket, sessions_bucket)
    assert of_customer(after, T, CUSTOMER, CUSTOMER_SESSIONS) == set()
    assert versions(s3, bucket, f"memory/{T}/{CUSTOMER}/") == set()
    # No object left in the tenant's archive, states or proposals mentions the customer at all.
    assert bodies_naming(s3, sessions_bucket, T, CUSTOMER) == []
    # Exactly what was removed is gone: the other customer, the other tenant (same customer id),
    # the agents' concepts, configs and journal are all still there, every version.
    assert before["knowledge"] - after["knowledge"] == versions_removed(before["knowledge"], T, CUSTOMER)
    assert len(before["sessions"] - after["sessions"]) == sum(
        n for kind, n in expected.items() if kind not in ("memory_cells", "latches"))
    assert after["sessions"] <= before["sessions"] and after["knowledge"] <= before["knowledge"]
    assert versions(s3, bucket, f"memory/{OTHER_TENANT}/{CUSTOMER}/") == {
        v for v in before["knowledge"] if v[0].startswith(f"memory/{OTHER_TENANT}/{CUSTOMER}/")}
    assert versions(s3, bucket, f"memory/{T}/{OTHER_CUSTOMER}/")
    assert sorted((p.proposal.name, p.proposal.status)
                  for p in ProposalStore(s3, sessions_bucket).list(T, AGENTS[0], OTHER_CUSTOMER)) == [
        ("pagamento_preferido", "approved"), ("tamanho_calcado", "pending")]
    assert bodies_naming(s3, sessions_bucket, OTHER_TENANT, CUSTOMER)
    read = world["memory"].lambda_handler({"action": "read", "tenant": T, "customer_id": CUSTOMER}, LambdaContext())
    assert read["facts"] == [] and read["block"] == ""


def versions_removed(knowledge_versions: set, tenant: str, customer: str) -> set:
    return {v for v in knowledge_versions if v[0].startswith(f"memory/{tenant}/{customer}/")}


def test_a_second_forget_removes_nothing_and_says_so(world, capsys, monkeypatch, bucket, sessions_bucket):
    assert forget(world)["total"] == sum(EXPECTED_FORGET.values())
    again = forget(world)
    assert (again["complete"], again["removed"], again["total"]) == (True, {}, 0)
    monkeypatch.setenv("KNOWLEDGE_BUCKET", bucket)
    monkeypatch.setenv("SESSIONS_BUCKET", sessions_bucket)
    capsys.readouterr()  # the function's metrics
    assert cli.main(["forget-customer", "--tenant", T, "--customer", CUSTOMER]) == 0
    assert capsys.readouterr().out == "forget-customer (tenant default): nothing found, nothing removed\n"


def test_a_forget_stopped_by_the_deadline_answers_incomplete_and_a_rerun_finishes_it(
        world, s3, bucket, sessions_bucket):
    before = everything(s3, bucket, sessions_bucket)
    first = forget(world, RunningOut(calls=16))
    assert first["complete"] is False and 0 < first["total"] < sum(EXPECTED_FORGET.values())
    # What stopped it was the time left: nothing failed, and what it left is still findable.
    assert of_customer(everything(s3, bucket, sessions_bucket), T, CUSTOMER, CUSTOMER_SESSIONS)
    second = forget(world)
    assert second["complete"] is True
    merged = {kind: first["removed"].get(kind, 0) + second["removed"].get(kind, 0) for kind in EXPECTED_FORGET}
    assert merged == EXPECTED_FORGET
    after = everything(s3, bucket, sessions_bucket)
    assert of_customer(after, T, CUSTOMER, CUSTOMER_SESSIONS) == set()
    assert len(before["sessions"]) - len(after["sessions"]) == sum(
        n for kind, n in EXPECTED_FORGET.items() if kind not in ("memory_cells", "latches"))


def test_a_forget_interrupted_at_every_possible_point_always_finishes_on_the_rerun(world, s3, bucket,
                                                                                    sessions_bucket):
    stops = 0
    for calls in range(1, 60, 3):
        answer = forget(world, RunningOut(calls=calls))
        stops += not answer["complete"]
        if answer["complete"]:
            break
    assert stops >= 5  # it really was cut short, over and over
    assert forget(world)["total"] == 0
    assert of_customer(everything(s3, bucket, sessions_bucket), T, CUSTOMER, CUSTOMER_SESSIONS) == set()


def test_a_dry_run_counts_what_would_go_and_removes_nothing(world, s3, bucket, sessions_bucket):
    before = everything(s3, bucket, sessions_bucket)
    answer = forget(world, dry_run=True)
    assert answer["dry_run"] is True and answer["removed"] == EXPECTED_FORGET
    assert everything(s3, bucket, sessions_bucket) == before


def test_a_session_whose_state_is_gone_is_still_found_through_the_index(world, s3, bucket, sessions_bucket):
    # The state expired or was lost, the turns and the index entry remain: one listing of the
    # archive's keys finds them (no turn is read).
    s3.delete_object(Bucket=sessions_bucket, Key=f"{T}/{AGENTS[1]}/facts/sessions/sess_entrega_02.json")
    answer = forget(world)
    assert answer["removed"]["archived_turns"] == 6 and answer["removed"]["session_states"] == 2
    assert of_customer(everything(s3, bucket, sessions_bucket), T, CUSTOMER, CUSTOMER_SESSIONS) == set()


def test_forget_customer_refuses_a_bad_request_before_touching_anything(world, s3, bucket, sessions_bucket):
    before = everything(s3, bucket, sessions_bucket)
    cases = [({"action": "forget_customer", "tenant": T}, "invalid_request"),
             ({"action": "forget_customer", "tenant": T, "customer_id": "../cus_20931"}, "invalid_request"),
             ({"action": "forget_customer", "tenant": "Default", "customer_id": CUSTOMER}, "invalid_request"),
             ({"action": "forget_customer", "tenant": T, "customer_id": CUSTOMER, "agent": "x"}, "invalid_request"),
             ({"action": "forget", "tenant": T, "customer_id": CUSTOMER}, "invalid_request"),
             ({"action": ["forget_customer"], "tenant": T, "customer_id": CUSTOMER}, "invalid_request"),
             ({"action": "forget_customer", "tenant": T, "customer_id": CUSTOMER, "dry_run": "sim"},
              "invalid_request"),
             (["forget_customer"], "invalid_request")]
    for event, code in cases:
        answer = world["purge"].lambda_handler(event, LambdaContext())
        assert answer["error"]["code"] == code, event
        assert CUSTOMER not in answer["error"]["message"]
    assert everything(s3, bucket, sessions_bucket) == before


def test_a_turn_tagged_with_a_customer_who_is_not_the_sessions_stamp_is_forgotten_with_its_session(
        handlers, s3, bucket, sessions_bucket):
    ConceptStore(s3, bucket).put_config(T, AGENTS[1], DISTILS, actor="operator:demo")
    first = turns_event(T, AGENTS[1], "sess_familia", OTHER_CUSTOMER, ENTREGA, 9)
    later = turns_event(T, AGENTS[1], "sess_familia", CUSTOMER, PRESENTE, 8, first=2)
    for event in (first, later):
        handlers["extract"].lambda_handler(event, LambdaContext())
    answer = forget(handlers)
    assert answer["removed"]["archived_turns"] == 4
    assert versions(s3, sessions_bucket, f"{T}/{AGENTS[1]}/turns/") == set()
    # The other customer's index names no session that is gone: both entries went with it.
    assert answer["removed"]["customer_index"] == 2
    assert versions(s3, sessions_bucket, f"{T}/{AGENTS[1]}/facts/customers/") == set()


def test_forgetting_one_customer_of_a_shared_session_leaves_the_other_customers_index_pointing_at_sessions_that_exist(
        handlers, s3, bucket, sessions_bucket):
    ConceptStore(s3, bucket).put_config(T, AGENTS[1], DISTILS, actor="operator:demo")
    extract = handlers["extract"].lambda_handler
    extract(turns_event(T, AGENTS[1], "sess_familia", CUSTOMER, ENTREGA, 9), LambdaContext())
    extract(turns_event(T, AGENTS[1], "sess_familia", OTHER_CUSTOMER, PRESENTE, 8, first=2), LambdaContext())
    extract(turns_event(T, AGENTS[1], "sess_so_dele", OTHER_CUSTOMER, TROCA, 7), LambdaContext())
    forget(handlers)
    index = f"{T}/{AGENTS[1]}/facts/customers/{OTHER_CUSTOMER}/"
    entries = {key[len(index):] for key, _ in versions(s3, sessions_bucket, index)}
    assert entries == {"sess_so_dele"}
    for session in entries:  # every entry left names a session whose state and turns are there
        assert s3.list_objects_v2(Bucket=sessions_bucket, Prefix=f"{T}/{AGENTS[1]}/facts/sessions/{session}.json")[
            "KeyCount"] == 1
    # Forgetting the other customer then finds exactly their own session, nothing dangling.
    answer = forget(handlers, customer_id=OTHER_CUSTOMER)
    assert (answer["removed"]["customer_index"], answer["removed"]["archived_turns"]) == (1, 2)
    assert versions(s3, sessions_bucket, f"{T}/{AGENTS[1]}/") == set()


# ------------------------------------------------------------------ delete_tenant_data


def tenant_versions(found: dict[str, set], tenant: str) -> set:
    return {(bucket, key, version) for bucket, items in found.items() for key, version in items
            if (bucket == "sessions" and key.startswith(f"{tenant}/")) or (bucket == "knowledge" and any(
                key.startswith(f"{top}/{tenant}/") for top in ("agents", "journal", "memory")))}


def test_delete_tenant_data_leaves_nothing_of_the_tenant_and_everything_of_the_other(
        world, s3, bucket, sessions_bucket):
    before = everything(s3, bucket, sessions_bucket)
    mine, theirs = tenant_versions(before, T), tenant_versions(before, OTHER_TENANT)
    assert mine and theirs
    event = {**load_event("delete-tenant-data.json"), "dry_run": False}
    answer = world["purge"].lambda_handler(event, LambdaContext())
    assert answer["complete"] is True and answer["total"] == len(mine)
    assert answer["removed"]["archived_turns"] == 8 and answer["removed"]["concepts"] == 3
    assert {"configs", "journal_entries", "deletion_records", "memory_cells", "latches", "proposals",
            "session_states", "customer_index", "idle_markers", "extracted_markers"} <= set(answer["removed"])
    assert "other" not in answer["removed"]
    after = everything(s3, bucket, sessions_bucket)
    assert tenant_versions(after, T) == set()
    assert tenant_versions(after, OTHER_TENANT) == theirs
    assert {(b, k, v) for b, items in after.items() for k, v in items} == theirs
    again = world["purge"].lambda_handler(event, LambdaContext())
    assert (again["complete"], again["total"]) == (True, 0)


def test_delete_tenant_data_without_the_tenant_typed_again_deletes_nothing(world, s3, bucket, sessions_bucket,
                                                                          capsys, monkeypatch):
    before = everything(s3, bucket, sessions_bucket)
    answer = world["purge"].lambda_handler({"action": "delete_tenant_data", "tenant": T, "confirm": OTHER_TENANT},
                                           LambdaContext())
    assert answer["error"]["code"] == "not_confirmed"
    answer = world["purge"].lambda_handler({"action": "delete_tenant_data", "tenant": T}, LambdaContext())
    assert answer["error"]["code"] == "invalid_request"
    monkeypatch.setenv("KNOWLEDGE_BUCKET", bucket)
    monkeypatch.setenv("SESSIONS_BUCKET", sessions_bucket)
    assert cli.main(["delete-tenant-data", "--tenant", T, "--confirm", "defualt"]) == 1
    assert "type the tenant's name again" in capsys.readouterr().err
    assert everything(s3, bucket, sessions_bucket) == before


def test_delete_tenant_data_from_the_command_line_dry_run_then_stopped_then_finished(
        world, s3, bucket, sessions_bucket, capsys, monkeypatch):
    before = everything(s3, bucket, sessions_bucket)
    mine = tenant_versions(before, T)
    monkeypatch.setenv("KNOWLEDGE_BUCKET", bucket)
    monkeypatch.setenv("SESSIONS_BUCKET", sessions_bucket)
    assert cli.main(["delete-tenant-data", "--tenant", T, "--confirm", T, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"delete-tenant-data (tenant default): would remove {len(mine)} object version(s)")
    assert "  archived_turns: 8\n" in out and CUSTOMER not in out
    assert everything(s3, bucket, sessions_bucket) == before

    stopped = world["purge"].lambda_handler({"action": "delete_tenant_data", "tenant": T, "confirm": T},
                                            RunningOut(calls=3))
    assert stopped["complete"] is False and 0 < stopped["total"] < len(mine)
    capsys.readouterr()  # the function's metrics
    assert cli.main(["delete-tenant-data", "--tenant", T, "--confirm", T]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"delete-tenant-data (tenant default): removed {len(mine) - stopped['total']} ")
    after = everything(s3, bucket, sessions_bucket)
    assert tenant_versions(after, T) == set() and tenant_versions(after, OTHER_TENANT) == tenant_versions(
        before, OTHER_TENANT)


# ------------------------------------------------------------------ proposals age out with the archive


def test_an_unanswered_proposal_older_than_the_archive_expires_and_its_fact_may_be_proposed_again(
        handlers, s3, bucket, sessions_bucket, model):
    s3.put_bucket_lifecycle_configuration(Bucket=sessions_bucket, LifecycleConfiguration={"Rules": [
        {"ID": "expire-after-retention", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 30}}]})
    ConceptStore(s3, bucket).put_config(T, AGENTS[1], DISTILS, actor="operator:demo")
    # Thirty-one days ago: a session was distilled and nobody answered its proposals.
    handlers["extract"].lambda_handler(turns_event(T, AGENTS[1], "sess_antiga", CUSTOMER, TROCA, 31 * 24 + 9),
                                       LambdaContext())
    then = Distiller(s3, knowledge_bucket=bucket, sessions_bucket=sessions_bucket,
                     models=ModelCache({"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": ""}),
                     utility_model="openai:utility", keys=FactKeys(KEY), events=None,
                     clock=lambda: NOW - timedelta(days=31))
    assert then.run().proposed == 2
    old = {p.proposal.name: p.proposal for p in ProposalStore(s3, sessions_bucket).list(T, AGENTS[1], CUSTOMER)}
    assert {name: p.status for name, p in old.items()} == {"pagamento_preferido": "expired",
                                                          "tamanho_calcado": "expired"}
    with pytest.raises(NotPending):
        review(s3, bucket, sessions_bucket).approve(ref_of(old["tamanho_calcado"]), "ana.operadora@loja.com.br")

    # Today the customer talks again (twice) about paying by Pix: the fact is proposed afresh from
    # the new session, once; the second session's duplicate is filtered by the ledger.
    handlers["extract"].lambda_handler(turns_event(T, AGENTS[1], "sess_nova", CUSTOMER, TROCA[1:] + PRESENTE[:1], 9),
                                       LambdaContext())
    handlers["extract"].lambda_handler(turns_event(T, AGENTS[1], "sess_nova_2", CUSTOMER, TROCA[1:] + PRESENTE[:1],
                                                   8), LambdaContext())
    report = handlers["distill"].lambda_handler(load_event("distill.json"), LambdaContext())
    assert report["proposed"] == 2 and report["filtered"] == {"duplicate": 2}
    now = {p.proposal.name: p.proposal for p in ProposalStore(s3, sessions_bucket).list(T, AGENTS[1], CUSTOMER)}
    assert (now["pagamento_preferido"].status, now["pagamento_preferido"].session_id) == ("pending", "sess_nova")
    assert now["tamanho_calcado"].status == "expired"  # not spoken of again: stays expired
    approved = review(s3, bucket, sessions_bucket).approve(ref_of(now["pagamento_preferido"]),
                                                           "ana.operadora@loja.com.br")
    assert approved.status == "approved"


def test_without_a_retention_rule_a_proposal_never_expires(handlers, s3, bucket, sessions_bucket, model):
    ConceptStore(s3, bucket).put_config(T, AGENTS[1], DISTILS, actor="operator:demo")
    handlers["extract"].lambda_handler(turns_event(T, AGENTS[1], "sess_antiga", CUSTOMER, TROCA, 400 * 24),
                                       LambdaContext())
    then = Distiller(s3, knowledge_bucket=bucket, sessions_bucket=sessions_bucket,
                     models=ModelCache({"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": ""}),
                     utility_model="openai:utility", keys=FactKeys(KEY), events=None,
                     clock=lambda: NOW - timedelta(days=365))
    assert then.run().proposed == 2
    assert {p.proposal.status for p in ProposalStore(s3, sessions_bucket).list(T, AGENTS[1], CUSTOMER)} == {"pending"}


def test_forget_customer_removes_the_words_their_sessions_taught_and_keeps_the_other_customers(
        world, s3, sessions_bucket):
    # The learning ledger (knowledge.store.learning_ledger): a word pending for a concept, one entry per
    # session that taught it, and the marker of the turn a session first loaded a concept in.
    ledger = f"{T}/{AGENTS[0]}/learning"
    theirs = [f"{ledger}/words/troca-em-30-dias/0123456789abcdef/{CUSTOMER_SESSIONS[0]}",
              f"{ledger}/loaded/{CUSTOMER_SESSIONS[0]}/troca-em-30-dias"]
    others = [f"{ledger}/words/troca-em-30-dias/0123456789abcdef/sess_outra_pessoa",
              f"{ledger}/loaded/sess_outra_pessoa/troca-em-30-dias"]
    for key in theirs + others:
        s3.put_object(Bucket=sessions_bucket, Key=key, Body=b'{"word": "joaozinho", "signal": "loaded"}')
    answer = forget(world)
    assert answer["complete"] and answer["removed"]["learning_ledger"] == 2
    left = {item["Key"] for item in s3.list_objects_v2(Bucket=sessions_bucket, Prefix=f"{ledger}/").get("Contents", [])}
    assert left == set(others)


def test_delete_tenant_data_removes_the_tenants_shared_concepts_and_journal_and_not_the_others(
        world, s3, bucket, sessions_bucket):
    from knowledge.store.keys import SHARED

    store = ConceptStore(s3, bucket)
    for tenant in (T, OTHER_TENANT):
        first = store.create(tenant, SHARED, make_concept("politica-de-troca"), actor="operator:demo")
        store.replace(tenant, SHARED, make_concept("politica-de-troca", description="Trocas em 45 dias."),
                      if_match=first.etag, actor="operator:demo", reason="edit")
    tops = (f"tenants/{T}/", f"journal/{T}/_shared/", f"tenants/{OTHER_TENANT}/", f"journal/{OTHER_TENANT}/_shared/")
    shared = {top: [k for k, _ in versions(s3, bucket) if k.startswith(top)] for top in tops}
    assert all(shared.values())
    answer = world["purge"].lambda_handler({**load_event("delete-tenant-data.json"), "dry_run": False},
                                           LambdaContext())
    assert answer["complete"] is True
    left = [k for k, _ in versions(s3, bucket)]
    assert not [k for k in left if k.startswith((f"tenants/{T}/", f"journal/{T}/"))]
    assert sorted(k for k in left if k.startswith(f"tenants/{OTHER_TENANT}/")) == sorted(
        shared[f"tenants/{OTHER_TENANT}/"])


def test_forget_customer_removes_what_became_of_their_sessions_saves_and_keeps_the_others(world, s3,
                                                                                         sessions_bucket):
    from knowledge.store.saves import QUEUED, SaveRecord, SaveRecords, new_save_id
    from shared.errors import NotFound

    saves = SaveRecords(s3, sessions_bucket)
    ids = {}
    for session in ("sess_troca_01", "sess_outro_01"):
        ids[session] = new_save_id(session, "troca-30-dias", "turn_1")
        saves.put(T, AGENTS[0], SaveRecord(ids[session], "troca-30-dias", "fact", session, "turn_1", QUEUED,
                                           "2026-12-01T10:00:00Z"))
    answer = forget(world)
    assert answer["removed"]["saved_insights"] == 1
    with pytest.raises(NotFound):
        saves.get(T, AGENTS[0], ids["sess_troca_01"])
    assert saves.get(T, AGENTS[0], ids["sess_outro_01"]).session_id == "sess_outro_01"
