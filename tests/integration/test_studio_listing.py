"""The studio API's lists through its handler: the tenant's agents, paging, search and write time,
who wrote each row and what is new since, paged history and who deleted what."""

from __future__ import annotations

import json
import uuid

import pytest
from helpers.handlers import LambdaContext, load_handler
from helpers.paths import DEMO
from helpers.studio import A, ANA, BASE, T, request
from helpers.studio import keep_related_beside

from knowledge.format.concept import parse


# ------------------------------------------------------------------ agents

def test_the_tenant_s_agents_are_listed_with_counts_of_concepts_conflicts_and_related_claims(api, store):
    from helpers.concepts import make_concept

    keep_related_beside(store)
    store.create(T, "loja-centro", make_concept("horario-loja", description="A loja abre às 9h."), actor="engine")
    store.put_config(T, "loja-nova", "knowledge:\n  top_k: 3\n", actor="operator:ana")  # configured, no concept yet
    store.create("loja-b", "outra", make_concept("segredo", description="De outro tenant."), actor="engine")
    status, body, _ = api("GET", f"/tenants/{T}/agents")
    assert status == 200
    assert body["agents"] == [
        {"name": "loja-centro", "concepts": 1, "conflicts": 0, "related": 0, "catching_up": 0, "new": 1,
         "config_problem": None},
        {"name": "loja-nova", "concepts": 0, "conflicts": 0, "related": 0, "catching_up": 0, "new": 0,
         "config_problem": None},
        {"name": A, "concepts": 7, "conflicts": 1, "related": 1, "catching_up": 0, "new": 7,
         "config_problem": None},
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
    assert first["description"] == "Trocas e devoluções são aceitas em até 30 dias após a entrega."


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
    ("embalagem original", {"troca-em-30-dias"}),          # words only in the body
    ("nada-parecido", set()),
    ("13083-970", {"cep-sudeste-cd-campinas"}),            # a CEP read whole, inside the range the concept states
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
    from collections import Counter

    import boto3

    from knowledge.store.concepts import ConceptStore

    many_versions(store, bucket, "prazo-reembolso-pix", 3000)
    counted = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    calls = Counter()
    counted.meta.events.register("before-send.s3", lambda **kwargs: calls.update(["s3"]))
    studio, ana = studio_on(ConceptStore(counted, bucket))
    monkeypatch.setenv("KNOWLEDGE_VERSIONS_KEPT", "10")
    first = studio.version_page(ana, T, A, "prazo-reembolso-pix")
    # One listing page and a head per row, whatever the history's length: the requests are the
    # proof, not the clock (moto lists 3,000 versions slowly, more so on a loaded machine).
    assert calls["s3"] == 1 + 50 and len(first["versions"]) == 50
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
    from shared.errors import UnknownAgent
    from shared.errors import InvalidCursor

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
    fresh = load_handler("studio_api", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket,
                                                         STUDIO_ORIGIN="http://127.0.0.1:8080"),
                         POWERTOOLS_SERVICE_NAME=f"studio-{uuid.uuid4().hex[:6]}")
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


# ------------------------------------------------------------------ search: relevance, snippet, count

SEARCHED = "busca"
SEARCH_CONCEPTS = {
    "despacho-no-mesmo-dia": ("Pedidos pagos até 12h saem no mesmo dia.", "O despacho acontece no mesmo dia útil."),
    "despacho-expresso": ("Despacho expresso no mesmo dia para capitais.", "Só capitais."),
    "cep-sudeste-cd-campinas": ("CEPs do Sudeste atendidos pelo centro de distribuição.", "Faixa 13000-13999."),
    "frete-interior-sp": ("Frete para Campinas e Sorocaba em 2 dias.", "Campinas, Sorocaba, Jundiaí."),
    "frete-gratis-acima-de-199": ("Frete grátis nas compras acima de R$199.", "Vale para todo o Brasil."),
    "frete-gratis-sul": ("Frete grátis para o Sul acima de R$299.", "Só Sul."),
    "cupom-frete": ("Cupom de frete com desconto.", "Um cupom por pedido."),
    "montagem-moveis": ("Montagem gratuita de móveis grandes.", "Agende pelo site. " * 30
                        + "O montador chega no mesmo dia da entrega quando o despacho é feito pela loja."),
}


@pytest.fixture
def searched(store):
    """An agent where many concepts share the query's words, the intended one written first (so the
    last-written order puts it last)."""
    import time
    from helpers.concepts import make_concept

    for name, (description, body) in SEARCH_CONCEPTS.items():
        store.create(T, SEARCHED, make_concept(name, description=description, body=body), actor="engine")
    time.sleep(1.1)  # S3 stamps a write to the second: the fillers are written after
    for i in range(12):
        store.create(T, SEARCHED, make_concept(
            f"pedido-comum-{i}", description="Um pedido comum, pago no cartão.",
            body="O despacho do pedido ocorre no mesmo dia em que o pagamento é aprovado; campinas tem CD."),
            actor="engine")
    return f"/tenants/{T}/agents/{SEARCHED}"


def names_of(body):
    return [c["name"] for c in body["concepts"]]


def test_with_a_query_the_exact_name_comes_first_then_the_names_it_starts_then_the_index_s_ranking(api, searched):
    status, body, _ = api("GET", f"{searched}/concepts", query={"q": "despacho-no-mesmo-dia"})
    assert status == 200
    found = names_of(body)
    assert found[0] == "despacho-no-mesmo-dia"
    # Every word must be held: the concepts without "despacho" anywhere are not answered.
    assert "cupom-frete" not in found and body["total"] == len(found)
    assert {"despacho-expresso", "pedido-comum-0", "montagem-moveis"} <= set(found)
    status, body, _ = api("GET", f"{searched}/concepts", query={"q": "despacho no mesmo dia"})  # spaces: the same name
    assert names_of(body)[0] == "despacho-no-mesmo-dia"


def test_a_word_of_a_name_puts_that_concept_before_those_that_only_mention_it(api, searched):
    _, body, _ = api("GET", f"{searched}/concepts", query={"q": "campinas"})
    found = names_of(body)
    assert found[0] == "cep-sudeste-cd-campinas"
    assert found.index("frete-interior-sp") < found.index("pedido-comum-0")  # description and body before body only
    _, body, _ = api("GET", f"{searched}/concepts", query={"q": "camp"})  # being typed: a name word it begins
    assert names_of(body)[0] == "cep-sudeste-cd-campinas"


def test_a_query_of_several_words_finds_the_concepts_holding_all_of_them(api, searched):
    _, body, _ = api("GET", f"{searched}/concepts", query={"q": "frete grátis 199"})
    assert names_of(body) == ["frete-gratis-acima-de-199"] and body["total"] == 1
    _, body, _ = api("GET", f"{searched}/concepts", query={"q": "frete gratis"})  # accents aside
    assert set(names_of(body)) == {"frete-gratis-acima-de-199", "frete-gratis-sul"}


def test_each_row_found_carries_a_short_snippet_with_the_matched_words_marked(api, searched):
    _, body, _ = api("GET", f"{searched}/concepts", query={"q": "frete grátis 199"})
    match = body["concepts"][0]["match"]
    assert match["source"] == "description"
    assert match["snippet"] == "Frete grátis nas compras acima de R$199."
    assert [match["snippet"][a:b] for a, b in match["marks"]] == ["Frete", "grátis", "199"]
    assert [("frete-gratis-acima-de-199")[a:b] for a, b in match["name_marks"]] == ["frete", "gratis", "199"]
    # Found in a long body only: the snippet is the body's, cut around the words, at most 160 characters.
    _, body, _ = api("GET", f"{searched}/concepts", query={"q": "montador"})
    match = body["concepts"][0]["match"]
    assert body["concepts"][0]["name"] == "montagem-moveis" and match["source"] == "body"
    assert len(match["snippet"]) <= 160 and match["snippet"].startswith("…")
    assert [match["snippet"][a:b] for a, b in match["marks"]] == ["montador"]
    _, body, _ = api("GET", f"{searched}/concepts")  # no query: no match field
    assert all(c.get("match") is None for c in body["concepts"])


def test_paging_a_search_with_the_cursor_keeps_the_relevance_order(api, searched):
    _, whole, _ = api("GET", f"{searched}/concepts", query={"q": "despacho mesmo dia"})
    names, cursor = [], None
    while True:
        status, page, _ = api("GET", f"{searched}/concepts",
                              query={"q": "despacho mesmo dia", "limit": "4"} | ({"cursor": cursor} if cursor else {}))
        assert status == 200 and page["total"] == whole["total"]
        names += names_of(page)
        cursor = page["next"]
        if cursor is None:
            break
    assert names == names_of(whole) and names[0] == "despacho-no-mesmo-dia" and len(names) > 4


def test_a_sort_the_operator_chose_orders_the_search_instead_of_relevance(api, searched):
    _, body, _ = api("GET", f"{searched}/concepts", query={"q": "despacho-no-mesmo-dia", "sort": "name", "order": "asc"})
    assert names_of(body) == sorted(names_of(body)) and names_of(body)[0] != "despacho-no-mesmo-dia"
    _, chosen, _ = api("GET", f"{searched}/concepts", query={"q": "despacho-no-mesmo-dia", "sort": "relevance"})
    assert names_of(chosen)[0] == "despacho-no-mesmo-dia"


def test_a_fresh_process_says_where_the_body_matched_reading_only_that_rows_document(api, searched, monkeypatch,
                                                                                       bucket, sessions_bucket):
    from shared.aws import client

    api("GET", f"{searched}/concepts")  # the snapshot is written: it holds no body text
    fresh = load_handler("studio_api", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket,
                                                         STUDIO_ORIGIN="http://127.0.0.1:8080"),
                         POWERTOOLS_SERVICE_NAME=f"studio-{uuid.uuid4().hex[:6]}")
    sent = []
    s3 = client("s3")

    def record(request, **kwargs):
        sent.append((request.method, request.url))

    s3.meta.events.register("before-send.s3", record)
    try:
        answer = fresh.lambda_handler(request("GET", f"{searched}/concepts", query={"q": "montador"}), LambdaContext())
    finally:
        s3.meta.events.unregister("before-send.s3", record)
    body = json.loads(answer["body"])
    row = body["concepts"][0]
    assert row["name"] == "montagem-moveis" and row["match"]["source"] == "body"
    assert [row["match"]["snippet"][a:b] for a, b in row["match"]["marks"]] == ["montador"]
    reads = [url for method, url in sent if method == "GET" and "/concepts/" in url]
    assert len(reads) == 1 and "montagem-moveis" in reads[0]  # the body-only row alone, not the agent


def test_a_search_says_which_words_it_read_and_which_word_matched_nothing(api, searched):
    _, body, _ = api("GET", f"{searched}/concepts", query={"q": "frete grátis acima de 199 reais sul campinas montador"})
    assert body["query"]["read"] == ["frete", "grátis", "acima", "de", "199", "reais", "sul", "campinas"]
    assert body["query"]["ignored"] == ["montador"]
    _, body, _ = api("GET", f"{searched}/concepts", query={"q": "frete grátis xilofone"})
    assert body["total"] == 0 and body["query"]["unmatched"] == ["xilofone"]
    _, without, _ = api("GET", f"{searched}/concepts", query={"q": "frete grátis"})
    assert without["total"] > 0 and without["query"]["unmatched"] == [] and without["query"]["ignored"] == []
    _, plain, _ = api("GET", f"{searched}/concepts")
    assert plain["query"] is None
