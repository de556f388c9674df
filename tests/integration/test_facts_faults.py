"""Facts on a bad day of S3: DistillFunction and FactsApiFunction through the project's fault proxy.

The hard case is a conditional write S3 applied whose answer was lost (`reset_after`): the SDK's
retry gets 412 although nobody else wrote. A decision must still be finished (the latch, the event)
and answered 200, a proposal still counted and announced; and only another operator's decision is a
409. Setup and checks read moto directly; the handlers' clients go through the proxy.
"""

from __future__ import annotations

import copy
import json
import threading
import time
import uuid
from collections import Counter

import pytest
from helpers.aws import drain
from helpers.facts_page import CUSTOMER, KEY, PIX, SHOE, conversation
from helpers.handlers import LambdaContext, load_event, load_handler

from facts import layout
from facts.cells import MemoryCells
from facts.keyed_hashes import FactKeys
from facts.proposals import ProposalRef, ProposalStore
from facts.review import Review
from knowledge_dev.faults import CONDITIONAL, RESET_AFTER, RESET_BEFORE, FaultMix, FaultProxy, Rule

T, A = "default", "store-support"
ANA = {"sub": "3f1c9a52-7d3e-4b8a-9f0e-6a2b1c4d5e6f", "cognito:groups": "[default]"}
FACTS = f"/tenants/{T}/agents/{A}/facts"
# A proposal's write (create-only, or a decision's If-Match) whose answer is lost after S3 applied it.
LOST_PROPOSAL_WRITE = {"method": "PUT", "path": "/facts/proposals/", "header": CONDITIONAL}
# A bad day: throttling, 5xx, 409 on conditional writes, and connections dropped before and after S3 applied.
BAD_DAY = FaultMix(slowdown=0.10, internal=0.05, reset=0.20, conflict_on_conditional=0.05)


@pytest.fixture
def proxy(moto_endpoint, monkeypatch):
    """The handlers' AWS clients through the fault proxy (clients are cached per process: rebuilt here and after)."""
    from shared.aws import client

    with FaultProxy(moto_endpoint, seed=23) as running:
        monkeypatch.setenv("AWS_ENDPOINT_URL", running.url)
        client.cache_clear()
        try:
            yield running
        finally:
            monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
            client.cache_clear()


@pytest.fixture
def env(proxy, facts_stack):
    """The Facts demo agent's stand-ins, once the proxy is up: the handlers built after it reach S3 through it."""
    return facts_stack


def distill_all(monkeypatch, env) -> list[dict]:
    """DistillFunction's passes until no session is due (a pass a fault stopped is run again)."""
    distill = load_handler("distill", monkeypatch, env)
    reports = []
    for _ in range(10):
        report = distill.lambda_handler(load_event("distill.json"), LambdaContext())
        reports.append(report)
        if report.get("ok") and report["scanned"] == 0:
            return reports
    raise AssertionError(f"sessions still due after 10 passes: {reports}")


def request(method, path, body=None):
    event = copy.deepcopy(load_event("studio-list-conflicts.json"))
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    event["queryStringParameters"] = None
    event["rawQueryString"] = ""
    event["requestContext"]["authorizer"]["jwt"]["claims"] = ANA
    if body is not None:
        event["body"] = json.dumps(body)
    return event


@pytest.fixture
def api(monkeypatch, env):
    handler = load_handler("facts_api", monkeypatch, env, POWERTOOLS_SERVICE_NAME=f"facts-{uuid.uuid4().hex[:6]}")

    def call(method, path, body=None):
        answer = handler.lambda_handler(request(method, path, body), LambdaContext())
        return answer["statusCode"], json.loads(answer["body"]) if answer.get("body") else None

    return call


def stored_proposals(s3, sessions_bucket) -> list[dict]:
    listed = s3.list_objects_v2(Bucket=sessions_bucket, Prefix=layout.proposals_prefix(T, A)).get("Contents", [])
    return [json.loads(s3.get_object(Bucket=sessions_bucket, Key=o["Key"])["Body"].read()) for o in listed]


def latched(s3, bucket, proposal: dict) -> bool:
    tuple_id = FactKeys(KEY).tuple_id(T, proposal["customer_id"], proposal["name"], proposal["value"])
    found = s3.list_objects_v2(Bucket=bucket, Prefix=layout.latch_key(T, proposal["customer_id"], tuple_id))
    return found.get("KeyCount", 0) == 1


def events(sqs, bus) -> list[tuple[str, str]]:
    return [(e["detail-type"], e["detail"]["name"]) for e in (json.loads(m["Body"]) for m in drain(sqs, bus["queue"]))]


def act(api, proposal, action, body=None):
    return api("POST", f"{FACTS}/proposals/{proposal['customer_id']}/{proposal['id']}/{action}", body)


@pytest.fixture
def two_pending(monkeypatch, env, s3, sessions_bucket, script, sqs, bus, proxy):
    conversation(s3, sessions_bucket, "sess_troca_01")
    script.replies = [json.dumps([SHOE, PIX])]
    [report, _] = distill_all(monkeypatch, env)
    assert report["proposed"] == 2
    drain(sqs, bus["queue"])
    return {p["name"]: p for p in stored_proposals(s3, sessions_bucket)}


# ------------------------------------------------------------------ distillation


def test_a_proposal_whose_write_answer_is_lost_is_counted_and_announced_not_taken_for_a_duplicate(
        monkeypatch, env, proxy, s3, sessions_bucket, script, sqs, bus):
    conversation(s3, sessions_bucket, "sess_troca_01")
    script.replies = [json.dumps([SHOE, PIX])]
    proxy.add_rule(Rule(RESET_AFTER, **LOST_PROPOSAL_WRITE, nth=1))
    report = distill_all(monkeypatch, env)[0]
    assert proxy.counters.faults[RESET_AFTER] == 1
    assert (report["proposed"], report["filtered"]) == (2, {})
    assert sorted(events(sqs, bus)) == [("fact_proposed", "pagamento_preferido"), ("fact_proposed", "tamanho_calcado")]
    assert len(stored_proposals(s3, sessions_bucket)) == 2


def test_forty_proposals_on_a_bad_day_are_each_reported_and_announced_once(
        monkeypatch, env, proxy, s3, sessions_bucket, script, sqs, bus):
    for n in range(20):
        conversation(s3, sessions_bucket, f"sess_{n:02d}", customer=f"cust-{n:04d}", hours_ago=9 - n / 100)
    script.default = json.dumps([SHOE, PIX])
    proxy.mix = BAD_DAY
    reports = distill_all(monkeypatch, env)
    proxy.mix = None
    stored = stored_proposals(s3, sessions_bucket)
    announced = events(sqs, bus)
    reported = sum(r.get("proposed", 0) for r in reports)
    assert proxy.counters.faults[RESET_AFTER] > 0  # the day was bad
    print(f"proposals: {len(stored)} stored, {reported} reported, {len(announced)} announced")
    assert (len(stored), reported, len(announced)) == (40, 40, 40)
    assert Counter(announced) == {("fact_proposed", "tamanho_calcado"): 20, ("fact_proposed", "pagamento_preferido"): 20}


# ------------------------------------------------------------------ decisions


@pytest.mark.parametrize("action, status, event", [
    ("dismiss", "dismissed", "fact_dismissed"),
    ("reject", "rejected", "fact_rejected"),
])
def test_a_reject_or_dismiss_whose_answer_is_lost_is_finished_latched_and_answered_200(
        two_pending, api, proxy, s3, bucket, sqs, bus, action, status, event):
    pix = two_pending["pagamento_preferido"]
    proxy.add_rule(Rule(RESET_AFTER, **LOST_PROPOSAL_WRITE, nth=1))
    code, body = act(api, pix, action, {"reason": "cliente usa cartão"} if action == "reject" else None)
    assert proxy.counters.faults[RESET_AFTER] == 1
    assert (code, body["status"], body["resolved_by"]) == (200, status, ANA["sub"]), body
    assert latched(s3, bucket, pix)
    assert events(sqs, bus) == [(event, "pagamento_preferido")]


@pytest.mark.parametrize("lost", [1, 2], ids=["the-claim", "the-approval"])
def test_an_approval_whose_answer_is_lost_is_finished_and_answered_200(
        two_pending, api, proxy, s3, bucket, sqs, bus, lost):
    shoe = two_pending["tamanho_calcado"]
    proxy.add_rule(Rule(RESET_AFTER, **LOST_PROPOSAL_WRITE, nth=lost))
    code, body = act(api, shoe, "approve")
    assert proxy.counters.faults[RESET_AFTER] == 1
    assert (code, body["status"]) == (200, "approved"), body
    cell = json.loads(s3.get_object(Bucket=bucket, Key=layout.cell_key(T, CUSTOMER))["Body"].read())
    assert {name: fact["value"] for name, fact in cell["facts"].items()} == {"tamanho_calcado": "43"}
    assert events(sqs, bus) == [("fact_approved", "tamanho_calcado")]


def test_an_approval_that_goes_stale_with_its_answer_lost_says_fact_moved_once(
        two_pending, api, proxy, sqs, bus):
    shoe = two_pending["tamanho_calcado"]
    code, _ = api("PUT", f"{FACTS}/customers/{CUSTOMER}/memory/tamanho_calcado", {"value": "44", "revision": None})
    assert code == 200
    proxy.add_rule(Rule(RESET_AFTER, **LOST_PROPOSAL_WRITE, nth=2))  # the claim, then the stale record
    code, body = act(api, shoe, "approve")
    assert proxy.counters.faults[RESET_AFTER] == 1
    assert (code, body["error"]["code"], body["proposal"]["status"]) == (409, "fact_moved", "stale")
    assert events(sqs, bus) == [("fact_stale", "tamanho_calcado")]


def test_another_operators_decision_between_the_read_and_the_write_is_still_a_409(
        two_pending, api, proxy, s3, bucket, sessions_bucket, sqs, bus):
    pix = two_pending["pagamento_preferido"]
    # Ana's write hangs and is dropped before S3 sees it; meanwhile Bruno rejects; her retry gets 412.
    proxy.add_rule(Rule(RESET_BEFORE, **LOST_PROPOSAL_WRITE, nth=1, delay=1.0))
    bruno = Review(ProposalStore(s3, sessions_bucket), MemoryCells(s3, bucket), FactKeys(KEY), None)
    answers = []
    ana = threading.Thread(target=lambda: answers.append(act(api, pix, "dismiss")))
    ana.start()
    time.sleep(0.3)
    bruno.reject(ProposalRef(T, A, CUSTOMER, pix["id"]), "op-bruno")
    ana.join()
    [(code, body)] = answers
    assert (code, body["error"]["code"]) == (409, "conflict")
    [stored] = [p for p in stored_proposals(s3, sessions_bucket) if p["id"] == pix["id"]]
    assert (stored["status"], stored["resolved_by"]) == ("rejected", "op-bruno")
    assert events(sqs, bus) == []  # Ana's call announced nothing (Bruno's had no bus here)


def test_decisions_on_a_bad_day_are_all_latched_and_none_is_refused_without_another_operator(
        monkeypatch, env, proxy, s3, bucket, sessions_bucket, script, api):
    facts = [{"name": f"fato_{i}", "value": f"valor {i}", "evidence": [0]} for i in range(5)]
    for n in range(16):
        conversation(s3, sessions_bucket, f"sess_{n:02d}", customer=f"cust-{n:04d}", hours_ago=9 - n / 100)
    script.default = json.dumps(facts)
    distill_all(monkeypatch, env)
    proposals = sorted(stored_proposals(s3, sessions_bucket), key=lambda p: (p["customer_id"], p["name"]))
    assert len(proposals) == 80
    proxy.mix = BAD_DAY
    answered: Counter = Counter()
    first_try: Counter = Counter()
    for index, proposal in enumerate(proposals):
        action = ("approve", "reject", "dismiss")[index % 3]
        for attempt in range(5):  # the page's "Try again" on a 503 (the store was busy)
            code, _ = act(api, proposal, action)
            if attempt == 0:
                first_try[code] += 1
            if code != 503:
                break
        answered[code] += 1
    proxy.mix = None
    decided = [p for p in stored_proposals(s3, sessions_bucket) if p["status"] in ("rejected", "dismissed")]
    unlatched = [p["id"] for p in decided if not latched(s3, bucket, p)]
    assert proxy.counters.faults[RESET_AFTER] > 0  # the day was bad
    print(f"decisions: {len(proposals)}, answered {dict(answered)} (first try {dict(first_try)}); "
          f"rejections and dismissals {len(decided)}, never latched {len(unlatched)}")
    assert answered == {200: 80} and first_try[409] == 0
    assert len(decided) == 53 and unlatched == []
