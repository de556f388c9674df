"""Hostile concept documents: parse refuses each with the typed error (and nothing else), the
studio answers 422 (never 500) to each, and every reader keeps serving the good concepts
beside them when they sit in S3."""

from __future__ import annotations

import base64
import json
import time
from datetime import datetime, timezone

import pytest
from conftest import DEMO, LambdaContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_studio_api import BASE, A, T, api, request  # noqa: F401 - the fixture is used by name

from knowledge.format.concept import DOCUMENT_MAX_BYTES, parse, render
from shared.errors import InvalidConcept

GOOD = """---
name: horario-atendimento
description: O atendimento funciona de segunda a sexta, das 8h às 20h.
type: fact
provenance: observed
confidence: 0.6
sources: ["sess_8f3c"]
occurrences: 1
created_at: 2026-08-24T18:02:11Z
updated_at: 2026-08-24T18:02:11Z
---

Chat e telefone atendem de segunda a sexta, das 8h às 20h (horário de Brasília).
"""
FIELD_LINES = {line.split(":")[0]: line for line in GOOD.splitlines()[1:10]}


def with_field(field: str, value: str) -> str:
    """GOOD with one field's line replaced by `field: value` (value as YAML text)."""
    return GOOD.replace(FIELD_LINES[field] + "\n", f"{field}: {value}\n", 1)


def with_lines(extra: str) -> str:
    """GOOD with `extra` YAML lines added at the end of the frontmatter."""
    return GOOD.replace("\n---\n\n", f"\n{extra}\n---\n\n", 1)


LAUGHS = ('a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
          + "".join(f"{n}: &{n} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
                    for p, n in zip("abcdefgh", "bcdefghi")))
DEEP = 10_000
HUGE_INT = "9" * 5000

# id -> the document (text, or bytes when the case is about encoding). Every one must be refused.
HOSTILE: dict[str, str | bytes] = {
    # what the issue found
    "sources-nested-list": with_field("sources", '[["sess_1"], "sess_2"]'),
    "sources-map": with_field("sources", "{sess_1: yes}"),
    "sources-list-of-maps": with_field("sources", "[{a: b}]"),
    "occurrences-5000-digits": with_field("occurrences", HUGE_INT),
    "confidence-4301-digits": with_field("confidence", "1" * 4301),
    "billion-laughs": GOOD.replace("---\n\n", LAUGHS + "---\n\n", 1),
    "billion-laughs-in-sources": with_field("sources", "*i").replace("---\nname", "---\n" + LAUGHS + "name", 1),
    "duplicate-key": with_lines("type: policy"),
    "merge-key": with_lines("<<: {provenance: policy}"),
    "merge-key-with-alias": with_lines("base: &b {provenance: policy}\n<<: *b"),
    "anchor-on-value": with_field("description", "&d O atendimento"),
    "deep-flow-list": with_field("description", "[" * DEEP + "]" * DEEP),
    "deep-flow-map": with_field("description", "{a: " * DEEP + "b" + "}" * DEEP),
    "deep-block-map": with_lines("".join(f"{'  ' * i}k{i}:\n" for i in range(300)) + "  " * 300 + "v: 1"),
    "non-utf8-frontmatter": GOOD.encode().replace(b"segunda", b"segunda \xff\xfe"),
    "non-utf8-body": GOOD.encode().replace("Brasília".encode(), b"Bras\xedlia"),
    # numbers
    "float-1e400": with_field("confidence", "1.0e+400"),
    "float-nan": with_field("confidence", ".nan"),
    "float-inf": with_field("confidence", ".inf"),
    "float-minus-inf": with_field("confidence", "-.inf"),
    "confidence-text": with_field("confidence", "alta"),
    "confidence-bool": with_field("confidence", "yes"),
    "occurrences-float": with_field("occurrences", "1.5"),
    "occurrences-negative": with_field("occurrences", "-1"),
    "occurrences-huge-hex": with_field("occurrences", "0x" + "f" * 40),
    "occurrences-sexagesimal-long": with_field("occurrences", ":".join(["59"] * 20)),
    "occurrences-beyond-max": with_field("occurrences", "10000000000000"),
    "occurrences-list": with_field("occurrences", "[1, 2]"),
    # tags
    "tag-python-apply": with_field("type", "!!python/object/apply:os.system ['true']"),
    "tag-python-name": with_field("type", "!!python/name:os.system"),
    "tag-binary": with_field("description", "!!binary T2zDoQ=="),
    "tag-set": with_field("sources", "!!set {sess_1, sess_2}"),
    "tag-timestamp": with_field("created_at", "!!timestamp 2026-08-24T18:02:11Z"),
    "tag-str-on-number": with_field("occurrences", "!!str 1"),
    "tag-verbatim": with_field("type", "!<tag:yaml.org,2002:str> fact"),
    "tag-non-specific": with_field("type", "! fact"),
    "tag-local": with_field("type", "!fact fact"),
    "anchor-on-key": GOOD.replace("name: horario", "&k name: horario", 1),
    # timestamps in odd formats
    "timestamp-space": with_field("created_at", "2026-08-24 18:02:11"),
    "timestamp-offset": with_field("created_at", "2026-08-24T18:02:11+03:00"),
    "timestamp-fraction": with_field("created_at", "2026-08-24T18:02:11.123456Z"),
    "timestamp-date-only": with_field("created_at", "2026-08-24"),
    "timestamp-zero": with_field("created_at", "0000-00-00T00:00:00Z"),
    "timestamp-leap-second": with_field("updated_at", "2026-12-31T23:59:60Z"),
    "timestamp-feb-30": with_field("created_at", "2026-02-30T00:00:00Z"),
    "timestamp-epoch-int": with_field("created_at", "1787594531"),
    "timestamp-before-1970": with_field("created_at", "1969-12-31T23:59:59Z"),
    # encodings and characters
    "utf16-with-bom": GOOD.encode("utf-16"),
    "bom-in-the-middle": GOOD.replace("type: fact", "type: \ufefffact"),
    "lone-surrogate-description": with_field("description", "O atendimento \ud800 funciona"),
    "lone-surrogate-body": GOOD.replace("Chat", "\udfffChat"),
    "escaped-surrogate": with_field("description", '"O atendimento \\ud800 funciona"'),
    "nul-in-frontmatter": with_field("description", "O atendimento\x00 funciona"),
    "nul-in-body": GOOD.replace("Chat", "Chat\x00"),
    "escaped-nul": with_field("description", '"O atendimento \\0 funciona"'),
    "escape-character": with_field("description", '"O atendimento \\e[31m funciona"'),
    "line-separator": with_field("description", "O atendimento\u2028funciona"),
    "lone-cr-frontmatter": GOOD.replace("\n", "\r", 3),
    "crlf-mixed-with-cr": GOOD.replace("\n", "\r\n", 4).replace("provenance: observed\n", "provenance: observed\r"),
    "huge-line-over-limit": GOOD.replace("Chat", "x" * (DOCUMENT_MAX_BYTES + 10)),
    "huge-body-line": GOOD.replace("Chat", "x" * 100_000),
    "huge-description": with_field("description", "a" * 200_000),
    "many-keys": with_lines("\n".join(f"extra{i}: {i}" for i in range(20_000))),
    "too-many-sources": with_field("sources", "[" + ", ".join(f'"s{i}"' for i in range(6000)) + "]"),
    # keys
    "key-is-a-list": with_lines("[a, b]: c"),
    "key-is-a-map": with_lines("{a: b}: c"),
    "complex-key-list": with_lines("? [a, b]\n: c"),
    "null-key": with_lines("~: c"),
    "empty-key": with_lines(": c"),
    "int-key": with_lines("1: c"),
    "bool-key": with_lines("yes: c"),
    "long-key": with_lines("k" * 20_000 + ": c"),
    "quoted-control-key": with_lines('"\\x07bell": c'),
    # field types
    "name-int": with_field("name", "123"),
    "name-list": with_field("name", "[a, b]"),
    "name-multiline": with_field("name", '"horario\\natendimento"'),
    "description-list": with_field("description", "[a, b]"),
    "description-null": with_field("description", "~"),
    "type-map": with_field("type", "{fact: 1}"),
    "sources-ints": with_field("sources", "[1, 2]"),
    "sources-null-item": with_field("sources", "[~]"),
    "sources-bool-item": with_field("sources", "[yes]"),
    "sources-text": with_field("sources", "sess_1"),
    "sources-huge-int-item": with_field("sources", f"[{HUGE_INT}]"),
    # the document's shape
    "empty": "",
    "only-dashes": "---\n---\n",
    "frontmatter-list": "---\n- a\n- b\n---\n\nbody\n",
    "frontmatter-scalar": "---\njust text\n---\n\nbody\n",
    "no-closing-dashes": GOOD.replace("\n---\n\n", "\n\n", 1),
    "no-frontmatter": "# Horário\n\nChat e telefone.\n",
    "two-documents": with_lines("...\n--- \nname: outro"),
    "yaml-directive": with_lines("%YAML 1.1"),
    "tab-indented": with_lines("extra:\n\t- a"),
    "body-only-whitespace": GOOD.split("---\n\n")[0] + "---\n\n   \n\t\n",
}


def doc_id(case):
    return case


# ------------------------------------------------------------------ parse


@pytest.mark.parametrize("case", sorted(HOSTILE), ids=doc_id)
def test_parse_refuses_each_hostile_document_with_the_typed_error_quickly(case):
    started = time.perf_counter()
    with pytest.raises(InvalidConcept) as caught:
        parse(HOSTILE[case])
    elapsed = time.perf_counter() - started
    assert caught.value.errors and all(e.field and e.message for e in caught.value.errors)
    # The reason is shown to operators and in export reports: bounded, whatever the input.
    assert len(str(caught.value)) < 4000
    assert elapsed < 0.5, f"{case} took {elapsed:.2f}s"


def test_the_corpus_is_large_and_the_good_document_parses():
    assert len(HOSTILE) >= 71 and parse(GOOD).name == "horario-atendimento"


def test_an_alias_bomb_is_refused_before_it_is_expanded():
    with pytest.raises(InvalidConcept) as caught:
        parse(HOSTILE["billion-laughs"])
    assert [(e.field, e.message) for e in caught.value.errors] == [("frontmatter", "YAML anchors (&name) are not allowed")]


@pytest.mark.parametrize("case, field, fragment", [
    ("sources-nested-list", "sources", "must not be nested"),
    ("sources-map", "sources", "must be a list of session ids"),
    ("occurrences-5000-digits", "occurrences", "at most 32 characters"),
    ("merge-key", "frontmatter", "merge key << is not allowed"),
    ("duplicate-key", "frontmatter", "duplicate key 'type'"),
    ("tag-binary", "description", "YAML tags (!!binary) are not allowed"),
    ("float-1e400", "confidence", "between 0 and 1"),
    ("occurrences-beyond-max", "occurrences", "at most 1000000000000"),
    ("lone-surrogate-description", "frontmatter", "a lone surrogate: U+D800"),
    ("crlf-mixed-with-cr", "frontmatter", "lines must end with \\n: U+000D"),
    ("non-utf8-frontmatter", "document", "is not UTF-8"),
    ("key-is-a-list", "frontmatter", "a key must be text"),
    ("int-key", "frontmatter", "a key must be text"),
    ("too-many-sources", "sources", "at most 5000 items"),
    ("escaped-surrogate", "frontmatter", "invalid Unicode character escape code"),
    ("escaped-nul", "description", "control character U+0000"),
])
def test_each_refusal_names_the_field_and_why(case, field, fragment):
    with pytest.raises(InvalidConcept) as caught:
        parse(HOSTILE[case])
    assert any(e.field == field and fragment in e.message for e in caught.value.errors), caught.value.errors


# Arbitrary input: nothing escapes but InvalidConcept, and what parses re-renders canonically.
_yamlish = st.sampled_from(["---\n", "\n", ": ", "- ", "[", "]", "{", "}", "&a ", "*a", "!!", "<<", "? ",
                            "'", '"', "\\", "#", "|", ">", "%", "@", "`", "\t", "\r\n", "\ufeff", "\x00",
                            "\ud800", "9" * 40, ".nan", "~", "name", "sources", "1.0e+400", "0x1f", "1:2"])


def _check(document):
    try:
        concept = parse(document)
    except InvalidConcept:
        return
    text = render(concept)
    assert parse(text) == concept and render(parse(text)) == text


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_raise_only_the_typed_error(document):
    _check(document)
    _check(b"---\n" + document)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(st.one_of(_yamlish, st.text(max_size=8)), max_size=40).map("".join))
def test_arbitrary_text_raises_only_the_typed_error(document):
    _check(document)
    _check("---\n" + document)


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.integers(0, len(GOOD)), st.integers(0, 12),
       st.lists(st.one_of(_yamlish, st.text(max_size=6)), max_size=6).map("".join))
def test_a_good_document_with_hostile_text_spliced_in_raises_only_the_typed_error(at, cut, insert):
    _check(GOOD[:at] + insert + GOOD[at + cut:])


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

READER_SECONDS = 2.0
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
        status, body, _ = timed(lambda: api("GET", f"{BASE}/concepts"))
        assert status == 200
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
