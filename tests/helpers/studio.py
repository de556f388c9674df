"""The studio API as its handler sees it: API Gateway HTTP API (v2) events as the JWT authorizer
passes them, the real handler over the demo agent, and the writes consolidation makes that the
studio shows (a version linked to its quote, related claims kept beside an operator's body)."""

from __future__ import annotations

import copy
import json
import uuid

from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.paths import DEMO

from knowledge.format.concept import parse

T, A = "default", "store-support"
ANA = {"sub": "3f1c9a52-7d3e-4b8a-9f0e-6a2b1c4d5e6f", "cognito:groups": "[default]"}
BASE = f"/tenants/{T}/agents/{A}"


def request(method, path, *, body=None, headers=None, query=None, claims=ANA):
    event = copy.deepcopy(load_event("studio-list-conflicts.json"))
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    event["queryStringParameters"] = query
    event["rawQueryString"] = "&".join(f"{k}={v}" for k, v in (query or {}).items())
    event["headers"] = {k: v for k, v in event["headers"].items() if k != "authorization" or claims}
    event["headers"].update(headers or {})
    if claims is None:
        event["requestContext"].pop("authorizer", None)
    else:
        event["requestContext"]["authorizer"]["jwt"]["claims"] = claims
    if body is not None:
        event["body"] = json.dumps(body, ensure_ascii=False)
    return event


def demo_studio(monkeypatch, store, bucket, sessions_bucket, **env):
    """The real studio handler over the demo agent's concepts, as a caller answering
    (status, body, headers); `call.handler` is the handler itself."""
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    handler = load_handler("studio_api", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, STUDIO_ORIGIN="http://127.0.0.1:8080"),
        POWERTOOLS_SERVICE_NAME=f"studio-{uuid.uuid4().hex[:6]}", **env)

    def call(method, path, **kwargs):
        answer = handler.lambda_handler(request(method, path, **kwargs), LambdaContext())
        body = json.loads(answer["body"]) if answer.get("body") else None
        return answer["statusCode"], body, answer.get("headers", {}) | answer.get("multiValueHeaders", {})

    call.handler = handler
    return call


def seen_recently(store, days: int = 30, tenant: str = T, agent: str = A) -> None:
    """Date the agent's observed concepts `days` ago, whatever year the suite runs in: the demo's
    files say 2026, which a test with the 180-day stale rule would find stale from March 2027 on."""
    from datetime import datetime, timedelta, timezone

    seen = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=days)
    for entry in store.list(tenant, agent):
        current = store.get(tenant, agent, entry.name)
        if current.concept.provenance == "observed":
            concept = current.concept.replace(created_at=min(current.concept.created_at, seen), updated_at=seen)
            store.replace(tenant, agent, concept, if_match=current.etag, actor="engine", reason="confirmed")


# ------------------------------------------------------------------ what the studio shows of consolidation

def archive_demo_turn(s3, sessions_bucket):
    """The demo turn, archived as extraction archives it; returns it."""
    from knowledge.format.turn import parse_turn
    from knowledge.store.archive import TurnArchive

    turn = parse_turn(json.dumps(load_event("turn.json")))
    TurnArchive(s3, sessions_bucket).put(turn)
    return turn


def learned_from(store, turn, message, quote, name="cep-sudeste-cd-campinas", start=None):
    """A version written as consolidation writes one: merged by the engine, linked to where its claim was quoted."""
    from knowledge.format.evidence import EvidenceLink

    content = turn.messages[message].content
    start = content.index(quote) if start is None else start
    link = EvidenceLink(turn.session_id, turn.turn_id, turn.completed_at, message, start, start + len(quote))
    current = store.get(T, A, name)
    concept = current.concept.replace(occurrences=current.concept.occurrences + 1)
    return store.replace(T, A, concept, if_match=current.etag, actor="engine", reason="merged", evidence=link)


def keep_related_beside(store, name="troca-em-30-dias", sessions=("sess_41",)):
    """An operator's body, then consolidation keeping related claims beside it (claims.keep_beside)."""
    from datetime import datetime, timezone

    from helpers.concepts import make_concept

    from knowledge.learning.claims import keep_beside

    current = store.get(T, A, name)
    store.replace(T, A, current.concept, if_match=current.etag, actor="operator:ana", reason="edit")
    for session in sessions:
        current = store.get(T, A, name)
        new = make_concept(name, description="Trocas de produtos em promoção também valem por 30 dias.",
                           body="Produtos comprados em promoção podem ser trocados em até 30 dias.")
        kept = keep_beside(current.concept, new, session, datetime(2026, 11, 21, 10, tzinfo=timezone.utc))
        store.replace(T, A, kept, if_match=current.etag, actor="engine", reason="merged")
