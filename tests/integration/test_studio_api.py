"""The studio API through its handler, with API Gateway HTTP API (v2) events as the JWT authorizer passes them."""

from __future__ import annotations

import copy
import json
import uuid

import pytest
from conftest import DEMO, LambdaContext, load_event, load_handler

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
    handler = load_handler("studio_api", monkeypatch, KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket,
                           STUDIO_ORIGIN="http://127.0.0.1:8080",
                           POWERTOOLS_SERVICE_NAME=f"studio-{uuid.uuid4().hex[:6]}", **env)

    def call(method, path, **kwargs):
        answer = handler.lambda_handler(request(method, path, **kwargs), LambdaContext())
        body = json.loads(answer["body"]) if answer.get("body") else None
        return answer["statusCode"], body, answer.get("headers", {}) | answer.get("multiValueHeaders", {})

    call.handler = handler
    return call


@pytest.fixture
def api(monkeypatch, store, bucket, sessions_bucket):
    return demo_studio(monkeypatch, store, bucket, sessions_bucket)


def test_the_list_event_filters_conflicts(api):
    handler = api.handler
    answer = handler.lambda_handler(load_event("studio-list-conflicts.json"), LambdaContext())
    assert answer["statusCode"] == 200
    concepts = json.loads(answer["body"])["concepts"]
    assert [c["name"] for c in concepts] == ["prazo-reembolso-pix"] and concepts[0]["conflict"] is True


def test_list_has_the_columns_and_filters_and_sorts_by_what_it_says(api):
    status, body, _ = api("GET", f"{BASE}/concepts")
    assert status == 200 and len(body["concepts"]) == 7
    first = body["concepts"][0]
    assert set(first) >= {"name", "type", "provenance", "confidence", "occurrences", "updated_at", "conflict"}
    _, by_time, _ = api("GET", f"{BASE}/concepts", query={"sort": "updated_at"})
    stamps = [c["updated_at"] for c in by_time["concepts"]]
    assert stamps == sorted(stamps, reverse=True)
    _, policies, _ = api("GET", f"{BASE}/concepts", query={"type": "policy"})
    assert {c["name"] for c in policies["concepts"]} == {"frete-gratis-acima-199", "troca-em-30-dias"}
    _, found, _ = api("GET", f"{BASE}/concepts", query={"q": "frete"})
    assert {c["name"] for c in found["concepts"]} == {"frete-gratis-acima-199", "objecao-frete-caro",
                                                     "cep-sudeste-cd-campinas"}  # its body speaks of frete


def test_get_then_save_with_if_match_records_the_operator(api, store):
    status, concept, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias")
    assert status == 200 and concept["markdown"] == (DEMO / "troca-em-30-dias.md").read_text()
    edited = concept["markdown"].replace("provenance: policy", "provenance: policy").replace(
        "within 30 days of delivery.", "within 30 days of delivery, in the original packaging.")
    status, saved, _ = api("PUT", f"{BASE}/concepts/troca-em-30-dias", body={"markdown": edited},
                           headers={"if-match": concept["etag"]})
    assert status == 200 and saved["etag"] != concept["etag"]
    latest = store.versions(T, A, "troca-em-30-dias")[0]
    assert (latest.actor, latest.reason) == (f"operator:{ANA['sub']}", "edit")
    assert "original packaging" in store.get(T, A, "troca-em-30-dias").concept.description


def test_promoting_observed_to_policy_is_editing_that_line(api, store):
    _, concept, _ = api("GET", f"{BASE}/concepts/cep-sudeste-cd-campinas")
    promoted = concept["markdown"].replace("provenance: observed", "provenance: policy")
    status, _, _ = api("PUT", f"{BASE}/concepts/cep-sudeste-cd-campinas", body={"markdown": promoted},
                       headers={"if-match": concept["etag"]})
    assert status == 200 and store.get(T, A, "cep-sudeste-cd-campinas").concept.provenance == "policy"


def test_a_stale_save_is_412_with_the_newer_version(api):
    _, concept, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias")
    first = concept["markdown"].replace("original packaging", "original box")
    api("PUT", f"{BASE}/concepts/troca-em-30-dias", body={"markdown": first}, headers={"if-match": concept["etag"]})
    second = concept["markdown"].replace("original packaging", "any packaging")
    status, body, _ = api("PUT", f"{BASE}/concepts/troca-em-30-dias", body={"markdown": second},
                          headers={"if-match": concept["etag"]})
    assert status == 412 and "original box" in body["current"]["markdown"] and body["current"]["etag"]


def test_saving_without_if_match_is_428(api):
    _, concept, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias")
    status, body, _ = api("PUT", f"{BASE}/concepts/troca-em-30-dias", body={"markdown": concept["markdown"]})
    assert status == 428 and body["error"]["code"] == "precondition_required"


@pytest.mark.parametrize("change, field, line", [
    (("type: policy", "type: rumour"), "type", 4),
    (("confidence: 0.95", "confidence: 2"), "confidence", 6),
    (("name: troca-em-30-dias", "name: outro-nome"), "name", 2),
    (("occurrences: 1", "occurrences: [1"), "frontmatter", None),
])
def test_invalid_markdown_is_422_with_the_field_and_line(api, change, field, line):
    _, concept, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias")
    status, body, _ = api("PUT", f"{BASE}/concepts/troca-em-30-dias",
                          body={"markdown": concept["markdown"].replace(*change)}, headers={"if-match": concept["etag"]})
    assert status == 422
    assert body["errors"][0]["field"] == field
    if line:
        assert body["errors"][0]["line"] == line


def test_create_by_hand_defaults_to_policy(api, store):
    text = "---\nname: horario-atendimento\ndescription: Support answers 8am-8pm on weekdays.\ntype: fact\n---\n\nChat and phone.\n"
    status, created, _ = api("POST", f"{BASE}/concepts", body={"markdown": text})
    assert status == 201 and created["name"] == "horario-atendimento", created
    concept = store.get(T, A, "horario-atendimento").concept
    assert (concept.provenance, concept.sources, concept.occurrences) == ("policy", (), 1)
    status, body, _ = api("POST", f"{BASE}/concepts", body={"markdown": text})
    assert status == 409 and body["error"]["code"] == "name_taken" and body["name"] == "horario-atendimento"
    assert "already exists" in body["error"]["message"]


def test_delete_list_deleted_and_undelete(api, store):
    status, _, _ = api("DELETE", f"{BASE}/concepts/objecao-frete-caro")
    assert status == 200 and store.find(T, A, "objecao-frete-caro") is None
    _, deleted, _ = api("GET", f"{BASE}/deleted")
    assert [d["name"] for d in deleted["deleted"]] == ["objecao-frete-caro"]
    status, back, _ = api("POST", f"{BASE}/deleted/objecao-frete-caro/restore")
    assert status == 200 and back["markdown"] == (DEMO / "objecao-frete-caro.md").read_text()


def test_history_read_and_restore(api, store):
    _, concept, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias")
    api("PUT", f"{BASE}/concepts/troca-em-30-dias",
        body={"markdown": concept["markdown"].replace("original packaging", "any box")},
        headers={"if-match": concept["etag"]})
    status, history, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias/versions")
    assert status == 200 and [v["reason"] for v in history["versions"]] == ["edit", "created"]
    old = history["versions"][1]
    _, first, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias/versions/{old['version_id']}")
    assert first["markdown"] == (DEMO / "troca-em-30-dias.md").read_text()
    status, _, _ = api("POST", f"{BASE}/concepts/troca-em-30-dias/versions/{old['version_id']}/restore")
    assert status == 200
    assert store.get(T, A, "troca-em-30-dias").text == (DEMO / "troca-em-30-dias.md").read_text()
    assert store.versions(T, A, "troca-em-30-dias")[0].reason == "restore"


def test_config_read_and_validated_save(api):
    status, config, _ = api("GET", f"{BASE}/config")
    assert status == 200 and config["config"]["top_k"] == 5
    status, body, _ = api("PUT", f"{BASE}/config", body={"yaml": "knowledge:\n  topk: 3\n"},
                          headers={"if-match": config["etag"]})
    assert status == 422 and "knowledge.topk: unknown key" in body["error"]["message"]
    status, saved, _ = api("PUT", f"{BASE}/config", body={"yaml": "knowledge:\n  top_k: 3\n"},
                           headers={"if-match": config["etag"]})
    assert status == 200 and saved["config"]["top_k"] == 3


def test_no_token_is_401_and_another_tenant_is_403(api):
    status, body, _ = api("GET", f"{BASE}/concepts", claims=None)
    assert status == 401 and body["error"]["code"] == "unauthorized"
    status, _, _ = api("GET", "/tenants/loja-b/agents/store-support/concepts")
    assert status == 403
    other = {"sub": "b0b", "cognito:groups": ["loja-b", "Admins"]}
    status, _, _ = api("GET", f"{BASE}/concepts", claims=other)
    assert status == 403


@pytest.mark.parametrize("path", [f"{BASE}/concepts/UPPER", f"/tenants/{T}/agents/Bad/concepts",
                                  f"{BASE}/concepts/a--b/versions"])
def test_hostile_names_are_400(api, path):
    status, body, _ = api("GET", path)
    assert status == 400 and body["error"]["code"] == "invalid_name"


def test_unknown_concept_is_404(api):
    status, _, _ = api("GET", f"{BASE}/concepts/nao-existe")
    assert status == 404


def test_cors_allows_only_the_studio_origin(api):
    _, _, headers = api("GET", f"{BASE}/concepts", headers={"origin": "http://127.0.0.1:8080"})
    assert headers.get("Access-Control-Allow-Origin") in ("http://127.0.0.1:8080", ["http://127.0.0.1:8080"])
    _, _, headers = api("GET", f"{BASE}/concepts", headers={"origin": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in headers


def test_the_openapi_document_is_served_and_kept_in_the_repo(api):
    from conftest import ROOT

    status, document, _ = api("GET", "/openapi.json")
    assert status == 200 and document["info"]["title"] == "Knowledge studio API"
    assert "/tenants/{tenant}/agents/{agent}/concepts/{name}" in document["paths"]
    kept = json.loads((ROOT / "studio_web" / "openapi.json").read_text())
    assert kept == document, "run scripts/write_openapi.py"


@pytest.mark.parametrize("groups, reaches", [
    ("[default]", True),                      # as API Gateway's JWT authorizer renders an array claim
    ("[support default]", True),
    (["support", "default"], True),           # a JSON array
    ("[support,default]", False),             # one group named "support,default"
    ("[[x]default]", False),                  # one group named "[x]default"
    (["support,default"], False),
    (["[x]default"], False),
    (["Default"], False),
    ([" default"], False),
    ("default", False),                       # not how an array claim arrives
    ("support,default", False),
    ('["default"]', False),                   # a JSON text is not a list: one group named '"default"'
    ("[default", False),
    ({"default": True}, False),
    (None, False),
])
def test_a_group_grants_a_tenant_only_when_its_name_equals_the_tenant(api, groups, reaches):
    claims = {"sub": "b0b"} | ({} if groups is None else {"cognito:groups": groups})
    status, body, _ = api("GET", f"{BASE}/concepts", claims=claims)
    assert status == (200 if reaches else 403), body


@pytest.mark.parametrize("path", [f"{BASE}/concepts/troca-em-30-dias\n", f"{BASE}/concepts/troca-em-30-dias%0A",
                                  f"{BASE}/concepts/troca-em-30-dias%0a", f"{BASE}/concepts/troca-em-30-dias\r",
                                  f"{BASE}/concepts\n", f"/tenants/{T}\x00/agents/{A}/concepts",
                                  f"{BASE}/concepts/troca-em-30-dias\t/versions", f"{BASE}/concepts/troca%1B[0m",
                                  f"{BASE}/concepts/troca-em-30-dias%C2%85"])
def test_a_path_with_control_characters_is_400_and_never_routed(api, store, path):
    before = store.versions(T, A, "troca-em-30-dias")
    for method in ("GET", "DELETE"):
        status, body, _ = api(method, path)
        assert status == 400 and body["error"]["code"] == "invalid_name", (method, path, status, body)
    assert store.versions(T, A, "troca-em-30-dias") == before


def test_an_unknown_route_is_404_in_the_error_shape(api):
    status, body, _ = api("GET", f"{BASE}/nothing-here")
    assert status == 404 and body["error"]["code"] == "not_found"


def test_get_of_a_stored_file_that_is_not_utf8_shows_it_for_repair(api, s3, bucket):
    from knowledge.store.concepts import concept_key

    s3.put_object(Bucket=bucket, Key=concept_key(T, A, "quebrado"), Body=b"---\nname: quebrado\xff\n---\n\nx\n")
    status, body, _ = api("GET", f"{BASE}/concepts/quebrado")
    assert status == 200 and body["markdown"] == "---\nname: quebrado\ufffd\n---\n\nx\n"
    _, listed, _ = api("GET", f"{BASE}/concepts")
    assert "not UTF-8" in next(c for c in listed["concepts"] if c["name"] == "quebrado")["problem"]


# ------------------------------------------------------------------ evidence: a link, read at request time

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
    handler = load_handler("studio_api", monkeypatch, KNOWLEDGE_BUCKET=bucket,
                           POWERTOOLS_SERVICE_NAME=f"studio-{uuid.uuid4().hex[:6]}")
    path = f"{BASE}/concepts/cep-sudeste-cd-campinas/versions/{version.version_id}/evidence"
    answer = handler.lambda_handler(request("GET", path), LambdaContext())
    assert answer["statusCode"] == 503 and json.loads(answer["body"])["error"]["code"] == "archive_not_configured"


# ------------------------------------------------------------------ related claims beside an operator's body

def keep_related_beside(store, name="troca-em-30-dias", sessions=("sess_41",)):
    """An operator's body, then consolidation keeping related claims beside it (claims.keep_beside)."""
    from datetime import datetime, timezone

    from conftest import make_concept

    from knowledge.learning.claims import keep_beside

    current = store.get(T, A, name)
    store.replace(T, A, current.concept, if_match=current.etag, actor="operator:ana", reason="edit")
    for session in sessions:
        current = store.get(T, A, name)
        new = make_concept(name, description="Trocas de produtos em promoção também valem por 30 dias.",
                           body="Produtos comprados em promoção podem ser trocados em até 30 dias.")
        kept = keep_beside(current.concept, new, session, datetime(2026, 11, 21, 10, tzinfo=timezone.utc))
        store.replace(T, A, kept, if_match=current.etag, actor="engine", reason="merged")


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

    from conftest import make_concept

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


def test_a_concept_with_related_claims_and_a_contradiction_counts_only_the_related_ones(api, store):
    from datetime import datetime, timezone

    from conftest import make_concept

    from knowledge.learning.claims import contradict

    keep_related_beside(store)
    current = store.get(T, A, "troca-em-30-dias")
    against = make_concept("troca-em-30-dias", description="Trocas só em 7 dias.", body="Session sess_x (2026-11-22): x")
    store.replace(T, A, contradict(current.concept, against, "sess_44", datetime(2026, 11, 22, tzinfo=timezone.utc)),
                  if_match=current.etag, actor="engine", reason="contradiction")
    _, body, _ = api("GET", f"{BASE}/concepts", query={"status": "related"})
    [concept] = body["concepts"]
    assert (concept["name"], concept["related"], concept["conflict"]) == ("troca-em-30-dias", 1, True)


# ------------------------------------------------------------------ lines, no-op saves, unknown agents, deletions

NEW = "---\nname: horario-atendimento\ndescription: Atendimento de seg a sex, 8h-20h.\ntype: fact\n---\n\n{body}\n"


@pytest.mark.parametrize("text, field, line", [
    (NEW.format(body="Chat e telefone.").replace("type: fact", "type: rumour"), "type", 4),
    (NEW.format(body="Chat e telefone.\n\nSábado\x07 só por chat."), "body", 9),
    (NEW.format(body="Chat e telefone.\u2028Sábado não."), "body", 7),
    (NEW.format(body="Chat e telefone.").replace("type: fact\n", ""), "type", 4),
])
def test_a_new_concept_s_errors_name_the_line_where_they_are(api, text, field, line):
    status, body, _ = api("POST", f"{BASE}/concepts", body={"markdown": text})
    assert status == 422
    assert [(e["field"], e["line"]) for e in body["errors"]] == [(field, line)], body


def test_an_edit_s_body_error_is_marked_at_its_own_line(api):
    _, concept, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias")
    text = concept["markdown"].rstrip("\n") + "\n\nCaixa\x0boriginal.\n"
    status, body, _ = api("PUT", f"{BASE}/concepts/troca-em-30-dias", body={"markdown": text},
                          headers={"if-match": concept["etag"]})
    assert status == 422 and body["errors"][0]["line"] == text.count("\n")  # the last line


def test_saving_what_is_stored_writes_no_version(api, store):
    _, concept, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias")
    before = store.versions(T, A, "troca-em-30-dias")
    status, saved, _ = api("PUT", f"{BASE}/concepts/troca-em-30-dias", body={"markdown": concept["markdown"]},
                           headers={"if-match": concept["etag"]})
    assert status == 200 and saved["etag"] == concept["etag"]
    assert store.versions(T, A, "troca-em-30-dias") == before
    edited = concept["markdown"].replace("within 30 days", "within 31 days")
    status, saved, _ = api("PUT", f"{BASE}/concepts/troca-em-30-dias", body={"markdown": edited},
                           headers={"if-match": concept["etag"]})
    assert status == 200 and saved["etag"] != concept["etag"] and len(store.versions(T, A, "troca-em-30-dias")) == 2


@pytest.mark.parametrize("method, path", [
    ("GET", "/concepts"), ("GET", "/concepts/troca-em-30-dias"), ("GET", "/concepts/troca-em-30-dias/versions"),
    ("GET", "/deleted"), ("GET", "/config"), ("POST", "/concepts"),
])
def test_an_agent_that_does_not_exist_is_404_with_a_clear_message(api, store, method, path):
    body = {"markdown": NEW.format(body="Chat.")} if method == "POST" else None
    status, answer, _ = api(method, f"/tenants/{T}/agents/store-suport{path}", body=body)  # a typo
    assert status == 404 and answer["error"]["code"] == "unknown_agent", answer
    assert "no agent 'store-suport'" in answer["error"]["message"]
    assert store.list(T, "store-suport") == []


def test_an_agent_s_first_knowledge_yaml_makes_it_and_then_concepts_may_be_created(api, store):
    new = f"/tenants/{T}/agents/loja-nova"
    status, saved, _ = api("PUT", f"{new}/config", body={"yaml": "knowledge:\n  top_k: 3\n"})
    assert status == 200 and saved["config"]["top_k"] == 3
    status, listed, _ = api("GET", f"{new}/concepts")
    assert status == 200 and listed["concepts"] == []
    status, created, _ = api("POST", f"{new}/concepts", body={"markdown": NEW.format(body="Chat.")})
    assert status == 201 and store.get(T, "loja-nova", "horario-atendimento").concept.body == "Chat."


def test_a_known_concept_missing_from_a_real_agent_is_a_plain_404(api):
    status, body, _ = api("GET", f"{BASE}/concepts/nao-existe")
    assert status == 404 and body["error"]["code"] == "not_found"


def test_a_deleted_concept_shows_its_content_who_deleted_it_and_when(api, store):
    api("DELETE", f"{BASE}/concepts/objecao-frete-caro")
    status, deleted, _ = api("GET", f"{BASE}/deleted/objecao-frete-caro")
    assert status == 200 and deleted["markdown"] == (DEMO / "objecao-frete-caro.md").read_text()
    assert deleted["deleted_by"] == f"operator:{ANA['sub']}" and deleted["deleted_at"].endswith("Z")
    _, listed, _ = api("GET", f"{BASE}/deleted")
    assert listed["deleted"][0]["deleted_at"][:19] == deleted["deleted_at"][:19]
    status, body, _ = api("GET", f"{BASE}/deleted/troca-em-30-dias")
    assert status == 404 and body["error"]["code"] == "not_deleted"


def test_a_version_id_sent_percent_encoded_reads_that_version(api, store):
    version = store.versions(T, A, "troca-em-30-dias")[0].version_id
    encoded = "".join(f"%{ord(c):02X}" for c in version)  # as a client encodes + and = in S3's version ids
    status, body, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias/versions/{encoded}")
    assert status == 200 and body["version_id"] == version


def test_every_route_documents_every_status_it_answers_with_a_typed_body():
    from conftest import ROOT

    document = json.loads((ROOT / "studio_web" / "openapi.json").read_text())
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            answers = operation["responses"]
            assert {"400", "401", "403", "404", "422", "503"} <= set(answers), (method, path)
            for status, answer in answers.items():
                schema = answer["content"]["application/json"]["schema"]
                assert "$ref" in schema or "anyOf" in schema, (method, path, status)
    create = document["paths"]["/tenants/{tenant}/agents/{agent}/concepts"]["post"]["responses"]
    assert set(create) >= {"201", "409", "412"} and "200" not in create
    assert create["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/Invalid")
    assert "HTTPValidationError" not in document["components"]["schemas"]


# ------------------------------------------------------------------ agents

def test_the_tenant_s_agents_are_listed_with_counts_of_concepts_conflicts_and_related_claims(api, store):
    from conftest import make_concept

    keep_related_beside(store)
    store.create(T, "loja-centro", make_concept("horario-loja", description="A loja abre às 9h."), actor="engine")
    store.put_config(T, "loja-nova", "knowledge:\n  top_k: 3\n", actor="operator:ana")  # configured, no concept yet
    store.create("loja-b", "outra", make_concept("segredo", description="De outro tenant."), actor="engine")
    status, body, _ = api("GET", f"/tenants/{T}/agents")
    assert status == 200
    assert body["agents"] == [
        {"name": "loja-centro", "concepts": 1, "conflicts": 0, "related": 0},
        {"name": "loja-nova", "concepts": 0, "conflicts": 0, "related": 0},
        {"name": A, "concepts": 7, "conflicts": 1, "related": 1},
    ]
    status, _, _ = api("GET", "/tenants/loja-b/agents")
    assert status == 403
    status, body, _ = api("GET", "/tenants/Loja/agents")
    assert status == 400 and body["error"]["code"] == "invalid_name"



# ------------------------------------------------------------------ paging, search, write time

def test_the_list_is_last_written_first_whatever_time_the_concept_states(api, store):
    import time

    time.sleep(1.1)  # S3 stamps a write to the second
    old = store.get(T, A, "troca-em-30-dias")  # says 2026-08-01: the oldest updated_at of all
    store.replace(T, A, old.concept.replace(occurrences=2), if_match=old.etag, actor="engine", reason="confirmed")
    _, body, _ = api("GET", f"{BASE}/concepts")
    first = body["concepts"][0]
    assert first["name"] == "troca-em-30-dias" and first["written_at"] > body["concepts"][1]["written_at"]
    assert first["description"] == "Exchanges and returns are accepted within 30 days of delivery."


def test_the_list_pages_on_the_server_and_the_pages_add_up(api):
    _, whole, _ = api("GET", f"{BASE}/concepts", query={"sort": "name", "order": "asc"})
    names, cursor = [], None
    while True:
        query = {"sort": "name", "order": "asc", "limit": "3"} | ({"cursor": cursor} if cursor else {})
        status, page, _ = api("GET", f"{BASE}/concepts", query=query)
        assert status == 200 and page["total"] == 7 and len(page["concepts"]) <= 3
        names += [c["name"] for c in page["concepts"]]
        cursor = page["next"]
        if cursor is None:
            break
    assert names == [c["name"] for c in whole["concepts"]] == sorted(names)
    status, body, _ = api("GET", f"{BASE}/concepts", query={"cursor": "-1"})
    assert status == 422 and body["error"]["code"] == "invalid_request"


@pytest.mark.parametrize("q, expected", [
    ("reembolso pix", {"prazo-reembolso-pix"}),            # words in name and body, through retrieval's index
    ("reemb", {"prazo-reembolso-pix"}),                    # a prefix: the substring fallback
    ("REEMBOLSO", {"prazo-reembolso-pix"}),
    ("original packaging", {"troca-em-30-dias"}),          # words only in the body
    ("nada-parecido", set()),
])
def test_search_covers_name_description_and_body(api, q, expected):
    status, body, _ = api("GET", f"{BASE}/concepts", query={"q": q})
    assert status == 200 and {c["name"] for c in body["concepts"]} >= expected
    if not expected:
        assert body["concepts"] == [] and body["total"] == 0


# ------------------------------------------------------------------ written_by, new since, paged history, deleted by

def studio_on(store):
    from knowledge.curation.studio import Operator, Studio

    return Studio(store), Operator(ANA["sub"], frozenset({T}))


def test_each_row_says_who_wrote_its_current_version_and_since_marks_what_the_engine_wrote_after_it(api, store):
    from datetime import datetime, timezone

    studio, ana = studio_on(store)
    since = datetime.now(timezone.utc)
    current = store.get(T, A, "troca-em-30-dias")
    store.replace(T, A, current.concept.replace(occurrences=2), if_match=current.etag, actor="engine",
                  reason="confirmed")
    current = store.get(T, A, "frete-gratis-acima-199")
    store.replace(T, A, current.concept.replace(occurrences=4), if_match=current.etag, actor="operator:bruno",
                  reason="edit")
    store.create(T, A, parse((DEMO / "troca-em-30-dias.md").read_text()).replace(
        name="troca-sem-nota", description="Troca sem nota fiscal só com o pedido."), actor="engine")
    page = studio.list(ana, T, A, since=since)
    by_name = {row["name"]: row for row in page["concepts"]}
    assert page["new"] == 2 and {n for n, row in by_name.items() if row["new"]} == {"troca-em-30-dias",
                                                                                  "troca-sem-nota"}
    assert by_name["frete-gratis-acima-199"]["written_by"] == "operator:bruno"  # an operator's edit is not new
    assert not by_name["frete-gratis-acima-199"]["new"] and by_name["cep-sudeste-cd-campinas"]["written_by"] == "engine"
    assert [row["name"] for row in page["concepts"][:3]] == ["troca-sem-nota", "frete-gratis-acima-199",
                                                             "troca-em-30-dias"]  # last written first
    only_new = studio.list(ana, T, A, since=since, status="new", limit=1)
    assert [row["name"] for row in only_new["concepts"]] == ["troca-sem-nota"] and only_new["total"] == 2
    assert only_new["new"] == 2  # the agent's count, whatever the filters and the page
    filtered = studio.list(ana, T, A, since=since, type="objection")
    assert filtered["new"] == 2 and all(not row["new"] for row in filtered["concepts"])
    assert "new" not in studio.list(ana, T, A) and "new" not in studio.list(ana, T, A)["concepts"][0]


def many_versions(store, bucket, name, count):
    """`count` more versions of one concept, as `count` confirmations by consolidation leave them.
    The first is written through S3's API; moto stores each further version of one key in time
    that grows with the versions already there (3,000 PUTs take minutes), so the others are put
    straight into the moto server this test session runs in, as copies of it with their own
    stamps. Everything the test then asks goes through S3's API."""
    import uuid as uuid_

    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import FakeKey, s3_backends

    current = store.get(T, A, name)
    store.replace(T, A, current.concept.replace(occurrences=2), if_match=current.etag, actor="engine",
                  reason="confirmed")
    key = f"agents/{T}/{A}/concepts/{name}.md"
    fake_bucket = s3_backends[DEFAULT_ACCOUNT_ID]["aws"].get_bucket(bucket)
    written = fake_bucket.keys.getlist(key)[-1]
    copies = []
    for n in range(count - 1):
        copy_ = FakeKey(name=key, bucket_name=bucket, value=written.value, account_id=DEFAULT_ACCOUNT_ID,
                        region_name="us-east-1", is_versioned=True, version_id=str(uuid_.uuid4()))
        copy_.set_metadata({**written.metadata,
                            "x-amz-meta-written-at": f"2026-11-29T22:{n // 60 % 60:02d}:{n % 60:02d}.{n:06d}Z"})
        copies.append(copy_)
    fake_bucket.keys.setlist(key, fake_bucket.keys.getlist(key) + copies)


def test_a_concept_with_3000_versions_opens_its_history_page_by_page_in_a_listing_and_a_head_per_row(
        api, store, s3, bucket, moto_endpoint, monkeypatch):
    import time
    from collections import Counter

    import boto3

    from knowledge.store.concepts import ConceptStore

    many_versions(store, bucket, "prazo-reembolso-pix", 3000)
    counted = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    calls = Counter()
    counted.meta.events.register("before-send.s3", lambda **kwargs: calls.update(["s3"]))
    studio, ana = studio_on(ConceptStore(counted, bucket))
    monkeypatch.setenv("KNOWLEDGE_VERSIONS_KEPT", "10")
    started = time.monotonic()
    first = studio.version_page(ana, T, A, "prazo-reembolso-pix")
    took = time.monotonic() - started
    assert calls["s3"] == 1 + 50 and len(first["versions"]) == 50 and took < 5
    assert first["versions"][0]["latest"] and first["next"] and first["kept"] == {"newest": 10, "days": 30}
    assert set(first["versions"][0]) == set(studio.versions(ana, T, A, "troca-em-30-dias")[0])
    calls.clear()
    second = studio.version_page(ana, T, A, "prazo-reembolso-pix", limit=20, cursor=first["next"])
    assert calls["s3"] == 1 + 20 and len(second["versions"]) == 20
    seen = [v["version_id"] for v in first["versions"] + second["versions"]]
    assert len(set(seen)) == 70 and not any(v["latest"] for v in second["versions"])
    listed = s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=f"agents/{T}/{A}/concepts/prazo")
    assert sum(len(page.get("Versions", [])) for page in listed) == 3001  # the history the pages are cut from


def test_a_history_cursor_from_elsewhere_is_a_typed_refusal_and_an_unknown_agent_is_said(api, store):
    from knowledge.curation.studio import UnknownAgent
    from knowledge.store.concepts import InvalidCursor

    studio, ana = studio_on(store)
    with pytest.raises(InvalidCursor):
        studio.version_page(ana, T, A, "troca-em-30-dias", cursor="../../etc")
    with pytest.raises(UnknownAgent):
        studio.version_page(ana, T, "store-suport", "troca-em-30-dias")
    last = studio.version_page(ana, T, A, "troca-em-30-dias")
    assert last["next"] is None and [v["reason"] for v in last["versions"]] == ["created"]


def test_the_deleted_list_says_who_deleted_each_concept_and_when(api, store):
    studio, ana = studio_on(store)
    api("DELETE", f"{BASE}/concepts/objecao-frete-caro")
    store.delete(T, A, "rastreio-pedido", actor="engine")
    deleted = {row["name"]: row for row in studio.deleted(ana, T, A)}
    assert deleted["objecao-frete-caro"]["deleted_by"] == f"operator:{ANA['sub']}"
    assert deleted["rastreio-pedido"]["deleted_by"] == "engine"
    preview = studio.deleted_one(ana, T, A, "objecao-frete-caro")
    assert deleted["objecao-frete-caro"]["deleted_at"] == preview["deleted_at"]  # both to the microsecond


def test_a_fresh_api_process_lists_from_the_snapshot_without_reading_a_concept(api, store, monkeypatch, bucket,
                                                                              sessions_bucket):
    from shared.aws import client

    _, first, _ = api("GET", f"{BASE}/concepts")  # no snapshot yet: it reads every concept and writes one
    assert store.get_snapshot(T, A) is not None
    fresh = load_handler("studio_api", monkeypatch, KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket,
                         STUDIO_ORIGIN="http://127.0.0.1:8080", POWERTOOLS_SERVICE_NAME=f"studio-{uuid.uuid4().hex[:6]}")
    sent = []

    def record(request, **kwargs):
        sent.append((request.method, request.url))

    s3 = client("s3")
    s3.meta.events.register("before-send.s3", record)
    try:
        answer = fresh.lambda_handler(request("GET", f"{BASE}/concepts"), LambdaContext())
    finally:
        s3.meta.events.unregister("before-send.s3", record)
    assert answer["statusCode"] == 200
    assert [c["name"] for c in json.loads(answer["body"])["concepts"]] == [c["name"] for c in first["concepts"]]
    reads = [url for method, url in sent if method == "GET" and "/concepts/" in url]
    assert reads == [] and sum("snapshot" in url for _, url in sent) == 1
