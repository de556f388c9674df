"""The studio API through its handler, with API Gateway HTTP API (v2) events as the JWT authorizer passes them."""

from __future__ import annotations

import json

import pytest
from helpers.handlers import LambdaContext, load_event
from helpers.paths import DEMO
from helpers.studio import A, ANA, BASE, T

from shared.errors import AccessDenied


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
        "em até 30 dias após a entrega.", "em até 30 dias após a entrega, na embalagem original.")
    status, saved, _ = api("PUT", f"{BASE}/concepts/troca-em-30-dias", body={"markdown": edited},
                           headers={"if-match": concept["etag"]})
    assert status == 200 and saved["etag"] != concept["etag"]
    latest = store.versions(T, A, "troca-em-30-dias")[0]
    assert (latest.actor, latest.reason) == (f"operator:{ANA['sub']}", "edit")
    assert "embalagem original" in store.get(T, A, "troca-em-30-dias").concept.description


def test_promoting_observed_to_policy_is_editing_that_line(api, store):
    _, concept, _ = api("GET", f"{BASE}/concepts/cep-sudeste-cd-campinas")
    promoted = concept["markdown"].replace("provenance: observed", "provenance: policy")
    status, _, _ = api("PUT", f"{BASE}/concepts/cep-sudeste-cd-campinas", body={"markdown": promoted},
                       headers={"if-match": concept["etag"]})
    assert status == 200 and store.get(T, A, "cep-sudeste-cd-campinas").concept.provenance == "policy"


def test_a_stale_save_is_412_with_the_newer_version(api):
    _, concept, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias")
    first = concept["markdown"].replace("embalagem original", "caixa original")
    api("PUT", f"{BASE}/concepts/troca-em-30-dias", body={"markdown": first}, headers={"if-match": concept["etag"]})
    second = concept["markdown"].replace("embalagem original", "qualquer embalagem")
    status, body, _ = api("PUT", f"{BASE}/concepts/troca-em-30-dias", body={"markdown": second},
                          headers={"if-match": concept["etag"]})
    assert status == 412 and "caixa original" in body["current"]["markdown"] and body["current"]["etag"]


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
        body={"markdown": concept["markdown"].replace("embalagem original", "qualquer caixa")},
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
    from helpers.paths import ROOT

    status, document, _ = api("GET", "/openapi.json")
    assert status == 200 and document["info"]["title"] == "Knowledge studio API"
    assert "/tenants/{tenant}/agents/{agent}/concepts/{name}" in document["paths"]
    kept = json.loads((ROOT / "studio_web" / "openapi.json").read_text())
    assert kept == document, "run ./run script gen.openapi"


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
    edited = concept["markdown"].replace("em até 30 dias", "em até 31 dias")
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
    from helpers.paths import ROOT

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


def test_a_stored_file_over_the_format_s_size_is_a_clear_422_never_a_body_over_lambda_s_limit(api, s3, bucket):
    from knowledge.store.concepts import concept_key

    big = b"---\nname: enorme\ndescription: x\ntype: fact\n---\n\n" + b"a" * (10 * 1024 * 1024) + b"\n"
    s3.put_object(Bucket=bucket, Key=concept_key(T, A, "enorme"), Body=big)
    status, body, _ = api("GET", f"{BASE}/concepts/enorme")
    assert status == 422 and body["error"]["code"] == "too_large"
    assert "restore an earlier version" in body["error"]["message"]
    assert len(json.dumps(body)) < 4096  # nothing near Lambda's 6 MB response limit
    _, listed, _ = api("GET", f"{BASE}/concepts")
    problem = next(c for c in listed["concepts"] if c["name"] == "enorme")["problem"]
    assert [e["field"] + ": " + e["message"] for e in body["errors"]] == [problem]
    version = s3.list_object_versions(Bucket=bucket, Prefix=concept_key(T, A, "enorme"))["Versions"][0]["VersionId"]
    status, body, _ = api("GET", f"{BASE}/concepts/enorme/versions/{version}")
    assert status == 422 and body["error"]["code"] == "too_large"
    status, _, _ = api("DELETE", f"{BASE}/concepts/enorme")
    assert status == 200
    status, body, _ = api("GET", f"{BASE}/deleted/enorme")
    assert status == 422 and body["error"]["code"] == "too_large"


def test_a_concept_overwritten_with_10_mb_is_never_sent_back_in_a_412_and_restoring_a_good_version_repairs_it(
        api, s3, bucket, store):
    from knowledge.store.concepts import concept_key

    _, good, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias")
    version = store.versions(T, A, "troca-em-30-dias")[0].version_id
    s3.put_object(Bucket=bucket, Key=concept_key(T, A, "troca-em-30-dias"), Body=b"x" * (10 * 1024 * 1024))
    for method, path, headers in (
            ("PUT", f"{BASE}/concepts/troca-em-30-dias", {"if-match": good["etag"]}),
            ("POST", f"{BASE}/concepts/troca-em-30-dias/versions/{version}/restore", {"if-match": good["etag"]})):
        status, body, _ = api(method, path, body={"markdown": good["markdown"]} if method == "PUT" else None,
                              headers=headers)
        assert status == 422 and body["error"]["code"] == "too_large", method  # before: 412 and a 10 MB `current`
        assert len(json.dumps(body)) < 4096
    status, _, _ = api("POST", f"{BASE}/concepts/troca-em-30-dias/versions/{version}/restore")
    assert status == 200
    status, body, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias")
    assert status == 200 and body["markdown"] == good["markdown"]


def test_an_error_the_api_maps_to_no_status_is_a_500_with_its_code_as_the_facts_api_answers_it(api, monkeypatch):
    def refused(*args, **kwargs):
        raise AccessDenied("S3 refused the function: s3:ListBucket on the knowledge bucket")

    monkeypatch.setattr(api.handler.reviews, "agents", refused)
    status, body, _ = api("GET", f"/tenants/{T}/agents")
    assert status == 500
    assert body == {"error": {"code": "access_denied",
                              "message": "S3 refused the function: s3:ListBucket on the knowledge bucket"}}
