"""The studio API's evidence route through its handler: a version links to where its claim was
quoted, and the quote is read from the archived turn at request time, redacted, never logged."""

from __future__ import annotations

import json
import uuid

import pytest
from helpers.handlers import LambdaContext, load_handler
from helpers.paths import DEMO
from helpers.studio import A, BASE, T, archive_demo_turn, learned_from, request

from knowledge.format.concept import parse


def test_history_names_the_session_a_version_was_learned_from_never_the_quote(api, store, s3, sessions_bucket):
    turn = archive_demo_turn(s3, sessions_bucket)
    learned_from(store, turn, 1, "chegam em 1 a 2 dias úteis")
    status, history, _ = api("GET", f"{BASE}/concepts/cep-sudeste-cd-campinas/versions")
    assert status == 200
    merged, created = history["versions"]
    assert merged["evidence"] == {"session_id": "sess_demo_01", "turn_id": "turn_0004",
                                  "completed_at": "2026-11-20T14:05:31Z"}
    assert created["evidence"] is None
    assert "dias úteis" not in json.dumps(history, ensure_ascii=False)


def test_evidence_is_the_quote_read_from_the_archived_turn_now(api, store, s3, sessions_bucket):
    turn = archive_demo_turn(s3, sessions_bucket)
    version = learned_from(store, turn, 1, "chegam em 1 a 2 dias úteis")
    status, evidence, headers = api("GET", f"{BASE}/concepts/cep-sudeste-cd-campinas/versions/"
                                           f"{version.version_id}/evidence")
    assert status == 200
    assert evidence == {"session_id": "sess_demo_01", "turn_id": "turn_0004", "completed_at": "2026-11-20T14:05:31Z",
                        "status": "available", "excerpt": "chegam em 1 a 2 dias úteis"}
    assert headers.get("Cache-Control") in ("no-store", ["no-store"])  # customer words stay out of caches


def test_the_excerpt_is_redacted_as_shown_even_when_the_span_cuts_the_personal_data(api, store, s3, sessions_bucket):
    turn = archive_demo_turn(s3, sessions_bucket)
    content = turn.messages[0].content
    # The span ends inside the e-mail address: alone, "ana.souza@exa" is no address any detector knows.
    cut = content.index("ana.souza@example.com") + len("ana.souza@exa")
    version = learned_from(store, turn, 0, content[content.index("Moro"):cut], start=content.index("Moro"))
    _, evidence, _ = api("GET", f"{BASE}/concepts/cep-sudeste-cd-campinas/versions/{version.version_id}/evidence")
    assert evidence["status"] == "available"
    assert evidence["excerpt"].startswith("Moro em Campinas") and evidence["excerpt"].endswith("[email]")
    assert "ana.souza" not in evidence["excerpt"] and "@exa" not in evidence["excerpt"]


def test_evidence_is_expired_once_the_archived_turn_is_gone(api, store, s3, sessions_bucket):
    from knowledge.store.archive import TurnArchive

    turn = archive_demo_turn(s3, sessions_bucket)
    version = learned_from(store, turn, 1, "chegam em 1 a 2 dias úteis")
    s3.delete_object(Bucket=sessions_bucket, Key=TurnArchive(s3, sessions_bucket).key(turn))  # expired or purged
    status, evidence, _ = api("GET", f"{BASE}/concepts/cep-sudeste-cd-campinas/versions/"
                                     f"{version.version_id}/evidence")
    assert status == 200
    assert (evidence["status"], evidence["excerpt"], evidence["session_id"]) == ("expired", None, "sess_demo_01")


@pytest.mark.parametrize("message, start, end", [(9, 0, 5), (1, 100, 400), (3, 0, 500)])
def test_evidence_is_expired_when_the_link_no_longer_points_inside_the_turn(api, store, s3, sessions_bucket,
                                                                            message, start, end):
    from knowledge.format.evidence import EvidenceLink

    turn = archive_demo_turn(s3, sessions_bucket)
    current = store.get(T, A, "rastreio-pedido")
    version = store.replace(T, A, current.concept, if_match=current.etag, actor="engine", reason="confirmed",
                            evidence=EvidenceLink(turn.session_id, turn.turn_id, turn.completed_at, message, start, end))
    _, evidence, _ = api("GET", f"{BASE}/concepts/rastreio-pedido/versions/{version.version_id}/evidence")
    assert (evidence["status"], evidence["excerpt"]) == ("expired", None)


def test_a_version_not_learned_from_a_sighting_has_no_evidence(api, store):
    created = store.versions(T, A, "troca-em-30-dias")[0]
    status, body, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias/versions/{created.version_id}/evidence")
    assert status == 404 and body["error"]["code"] == "no_evidence"
    status, body, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias/versions/nao-existe/evidence")
    assert status == 404 and body["error"]["code"] == "not_found"


def test_evidence_of_another_tenant_is_403_before_anything_is_read(api, store, s3, sessions_bucket):
    turn = archive_demo_turn(s3, sessions_bucket)
    version = learned_from(store, turn, 1, "chegam em 1 a 2 dias úteis")
    other = {"sub": "b0b", "cognito:groups": ["loja-b"]}
    status, body, _ = api("GET", f"{BASE}/concepts/cep-sudeste-cd-campinas/versions/{version.version_id}/evidence",
                          claims=other)
    assert status == 403 and "excerpt" not in body


def test_the_quote_never_reaches_the_log(api, store, s3, sessions_bucket, capfd):
    turn = archive_demo_turn(s3, sessions_bucket)
    version = learned_from(store, turn, 0, "Moro em Campinas")
    capfd.readouterr()
    _, evidence, _ = api("GET", f"{BASE}/concepts/cep-sudeste-cd-campinas/versions/{version.version_id}/evidence")
    assert evidence["excerpt"] == "Moro em Campinas"
    logged = capfd.readouterr()
    assert "Campinas" not in logged.out + logged.err


def test_without_a_session_archive_the_evidence_route_says_so(monkeypatch, store, bucket, s3, sessions_bucket):
    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    turn = archive_demo_turn(s3, sessions_bucket)
    version = learned_from(store, turn, 1, "chegam em 1 a 2 dias úteis")
    monkeypatch.delenv("SESSIONS_BUCKET", raising=False)
    handler = load_handler("studio_api", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket),
                           POWERTOOLS_SERVICE_NAME=f"studio-{uuid.uuid4().hex[:6]}")
    path = f"{BASE}/concepts/cep-sudeste-cd-campinas/versions/{version.version_id}/evidence"
    answer = handler.lambda_handler(request("GET", path), LambdaContext())
    assert answer["statusCode"] == 503 and json.loads(answer["body"])["error"]["code"] == "archive_not_configured"


@pytest.mark.parametrize("code, status, expected", [("AccessDenied", 403, "expired"), ("NoSuchKey", 404, "expired"),
                                                    ("SlowDown", 503, "store_unavailable")])
def test_a_turn_s3_refuses_without_list_permission_reads_as_expired_but_an_outage_does_not(
        store, s3, sessions_bucket, code, status, expected):
    """On AWS the studio may only GET archived turns: S3 answers a purged one 403, not 404."""
    from botocore.exceptions import ClientError

    from knowledge.curation.studio import Operator, Studio
    from shared import awscall
    from shared.errors import StoreUnavailable

    class RefusingArchive:
        def get(self, key):
            raise awscall.translate(ClientError({"Error": {"Code": code},
                                                 "ResponseMetadata": {"HTTPStatusCode": status}}, "GetObject"))

    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    turn = archive_demo_turn(s3, sessions_bucket)
    version = learned_from(store, turn, 1, "chegam em 1 a 2 dias úteis")
    studio = Studio(store, RefusingArchive())
    ana = Operator("ana", frozenset({T}))
    if expected == "expired":
        assert studio.evidence(ana, T, A, "cep-sudeste-cd-campinas", version.version_id)["status"] == "expired"
    else:
        with pytest.raises(StoreUnavailable):
            studio.evidence(ana, T, A, "cep-sudeste-cd-campinas", version.version_id)
