"""Hostile concept documents served: the studio answers 422 (never 500) to each, and every reader
(the studio's list and read, the export, retrieval) keeps serving the good concepts beside them when
they sit in S3. The corpus and the parse refusals: tests/unit/format/test_hostile_documents.py."""

from __future__ import annotations

import base64
import json
import time

import pytest
from helpers.handlers import LambdaContext
from helpers.hostile import HOSTILE, doc_id
from helpers.paths import DEMO
from helpers.studio import A, BASE, T, request


# ------------------------------------------------------------------ the studio's create and save


def studio_event(method, path, document, **kwargs):
    """The handler's event carrying `document`; bytes that are not UTF-8 travel base64-encoded."""
    if isinstance(document, str):
        return request(method, path, body={"markdown": document}, **kwargs)
    event = request(method, path, **kwargs)
    raw = json.dumps({"markdown": document.decode("utf-8", "surrogateescape")}, ensure_ascii=False)
    event["body"] = base64.b64encode(raw.encode("utf-8", "surrogateescape")).decode()
    event["isBase64Encoded"] = True
    return event


def answer(api, event):
    out = api.handler.lambda_handler(event, LambdaContext())
    return out["statusCode"], json.loads(out["body"])


# Hand-made concepts get both stamps from the studio, so only a bad stamp is no reason to refuse one.
CREATED_DESPITE_STAMPS = {case for case in HOSTILE if case.startswith("timestamp-")}


@pytest.mark.parametrize("case", sorted(HOSTILE), ids=doc_id)
def test_the_studio_answers_422_with_errors_to_each_hostile_document_never_500(api, case):
    _, current, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias")
    document = HOSTILE[case]
    if isinstance(document, str):
        document = document.replace("horario-atendimento", "troca-em-30-dias")
    else:
        document = document.replace(b"horario-atendimento", b"troca-em-30-dias")
    save = studio_event("PUT", f"{BASE}/concepts/troca-em-30-dias", document,
                        headers={"if-match": current["etag"]})
    for event, accepted in ((save, False), (studio_event("POST", f"{BASE}/concepts", HOSTILE[case]),
                                            case in CREATED_DESPITE_STAMPS)):
        status, body = answer(api, event)
        if accepted:
            assert status == 201 and body["name"] == "horario-atendimento"
            continue
        assert status == 422, (event["requestContext"]["http"]["method"], status, body)
        assert body["error"]["code"] in ("invalid_concept", "invalid_request")
        if body["error"]["code"] == "invalid_concept":
            assert body["errors"] and all({"field", "message", "line"} <= set(e) for e in body["errors"])


def test_create_refuses_duplicate_keys_and_the_merge_key_as_save_does(api):
    for case in ("duplicate-key", "merge-key", "billion-laughs"):
        status, body = answer(api, studio_event("POST", f"{BASE}/concepts", HOSTILE[case]))
        assert status == 422 and body["errors"][0]["field"] == "frontmatter"


def test_a_body_that_is_not_json_or_not_utf8_is_422_not_500(api):
    for raw in (b"{not json", b'{"markdown": "\xff\xfe"}', b"[" * 100_000, b'{"markdown": 1}'):
        event = request("POST", f"{BASE}/concepts")
        event["body"], event["isBase64Encoded"] = base64.b64encode(raw).decode(), True
        status, body = answer(api, event)
        assert status == 422 and body["error"]["code"] == "invalid_request", (raw[:20], status, body)


# ------------------------------------------------------------------ every reader, beside hostile files in S3

# A guard against pathological documents (a YAML alias bomb or a backtracking pattern takes minutes
# or never ends), not a speed target: those live in the benchmark scripts. Generous, so a loaded
# machine (these readers take 1-3 s on two busy cores) never fails it.
READER_SECONDS = 20.0


GOOD_NAMES = sorted(p.stem for p in DEMO.glob("*.md"))


class Published:
    def __init__(self):
        self.events = []

    def publish(self, detail_type, detail):
        self.events.append((detail_type, detail))


@pytest.fixture
def hostile_agent(api, s3, bucket):
    """The demo agent with every hostile document written straight to S3 beside its concepts."""
    from knowledge.store.concepts import concept_key

    names = {}
    for case, document in HOSTILE.items():
        name = f"h-{case}"[:64].rstrip("-")
        data = document if isinstance(document, bytes) else document.encode("utf-8", "surrogatepass")
        s3.put_object(Bucket=bucket, Key=concept_key(T, A, name), Body=data)
        names[name] = case
    return names


def timed(call):
    started = time.perf_counter()
    result = call()
    elapsed = time.perf_counter() - started
    assert elapsed < READER_SECONDS, f"took {elapsed:.2f}s"
    return result


def test_the_studio_lists_good_concepts_and_shows_each_unreadable_one_with_its_reason(api, hostile_agent):
    for _ in ("cold", "warm"):
        for _ in range(20):  # on a busy machine a first answer may not have read every concept: it says so
            status, body, _ = timed(lambda: api("GET", f"{BASE}/concepts"))
            assert status == 200
            if body["catching_up"] == 0:
                break
        listed = {c["name"]: c for c in body["concepts"]}
        assert set(listed) == set(GOOD_NAMES) | set(hostile_agent)
        assert all(listed[name]["problem"] is None and listed[name]["type"] for name in GOOD_NAMES)
        for name in hostile_agent:
            assert listed[name]["problem"] and listed[name]["type"] is None, name
    assert "anchors (&name) are not allowed" in listed["h-billion-laughs"]["problem"]


def test_the_studio_reads_a_good_concept_and_each_unreadable_one_for_repair(api, hostile_agent):
    status, body, _ = timed(lambda: api("GET", f"{BASE}/concepts/troca-em-30-dias"))
    assert status == 200 and body["markdown"] == (DEMO / "troca-em-30-dias.md").read_text()
    for name in hostile_agent:
        status, body, _ = api("GET", f"{BASE}/concepts/{name}")
        assert status == 200 and body["etag"], (name, status)


@pytest.mark.parametrize("fmt", ["md", "graphml"])
def test_the_export_skips_and_reports_each_unreadable_concept(store, hostile_agent, tmp_path, fmt):
    import networkx as nx

    from knowledge.curation.export import DirectorySink, export_agent

    result = timed(lambda: export_agent(store, T, A, DirectorySink(tmp_path), fmt=fmt))
    assert set(result.skipped) == set(hostile_agent) and result.concepts == len(GOOD_NAMES)
    assert all(result.skipped.values())
    if fmt == "md":
        assert sorted(p.name for p in tmp_path.iterdir()) == [f"{name}.md" for name in GOOD_NAMES]
    else:
        assert sorted(nx.read_graphml(tmp_path / "knowledge.graphml").nodes) == GOOD_NAMES


def test_retrieval_serves_good_concepts_cold_and_warm_and_counts_the_unreadable(store, hostile_agent):
    from knowledge.recall.retrieve import LoadRequest, Retriever, RetrieveRequest

    retriever = Retriever(store, Published(), refresh_seconds=0)
    ask = RetrieveRequest(agent=A, session_id="s1", message="Moro em Campinas, o frete é grátis?")
    load = LoadRequest(action="load_knowledge", agent=A, session_id="s1", name="troca-em-30-dias")
    for _ in ("cold", "warm"):
        block = timed(lambda: retriever.retrieve(ask))["block"]
        assert "cep-sudeste-cd-campinas" in block and "h-" not in block
        loaded = timed(lambda: retriever.load(load))
        assert loaded["markdown"] == (DEMO / "troca-em-30-dias.md").read_text()
    cold = Retriever(store, Published())
    assert timed(lambda: cold.load(load))["concept"]["name"] == "troca-em-30-dias"  # load first, cold
    assert cold.counters.get("ConceptUnreadable") == len(hostile_agent)
