"""What retrieval leaves out of recall takes no place in it: the next concepts fill top_k, and a
link to a lapsed concept is not followed."""

from __future__ import annotations

from helpers.concepts import make_concept

from knowledge.format.config import KnowledgeConfig
from knowledge.recall.index import Index
from knowledge.recall.retrieve import select

CONCEPTS = [
    ("frete-gratis-campinas", "Frete grátis para Campinas até domingo.", "Frete grátis para Campinas. [[troca-30-dias]]"),
    ("frete-campinas-199", "Frete para Campinas grátis acima de R$ 199.", "Frete grátis para Campinas acima de R$ 199."),
    ("troca-30-dias", "Trocas em até 30 dias.", "A troca pode ser feita em até 30 dias do recebimento."),
    ("pix-desconto", "Pix tem 5% de desconto.", "Pagamentos por Pix têm 5% de desconto."),
    ("boleto-prazo", "Boleto compensa em 3 dias úteis.", "O boleto leva até 3 dias úteis para compensar."),
    ("cartao-12x", "Parcelamos em 12x no cartão.", "Compras no cartão em até 12x sem juros."),
]


def index() -> Index:
    built = Index()
    for name, description, body in CONCEPTS:
        concept = make_concept(name, description=description, body=body)
        built.upsert(name, "e", concept, concept.render().encode())
    built.settle()
    return built


def test_a_lapsed_concept_takes_no_place_in_top_k_and_its_links_are_not_followed():
    config = KnowledgeConfig(top_k=1)
    message = "Tem frete grátis para Campinas?"
    assert [(i.hit.name, i.linked) for i in select(index(), message, config)] == [
        ("frete-gratis-campinas", False), ("troca-30-dias", True)]
    lapsed = {"frete-gratis-campinas": "expired", "troca-30-dias": "stale"}
    assert [i.hit.name for i in select(index(), message, config, lapsed)] == ["frete-campinas-199"]


def test_the_set_of_lapsed_concepts_agrees_with_the_rule_concept_by_concept():
    import random
    from datetime import datetime, timedelta, timezone

    from knowledge.format.concept import out_of_recall
    from knowledge.recall.retrieve import lapsed_now
    from knowledge.recall.snapshot import Summary
    from knowledge.recall.warm import AgentKnowledge

    rng = random.Random(2)
    knowledge, now = AgentKnowledge(config=KnowledgeConfig()), datetime.now(timezone.utc)
    for i in range(300):
        updated = (now - timedelta(seconds=rng.randint(0, 400 * 86400))).replace(microsecond=0)
        until = now.date() + timedelta(days=rng.randint(-5, 5)) if i % 3 == 0 else None
        concept = make_concept(f"c-{i}", created_at=updated, updated_at=updated, valid_until=until,
                               provenance=rng.choice(["observed", "policy"]))
        knowledge.index.upsert(concept.name, "e", concept, concept.render().encode())
        knowledge.summaries[concept.name] = Summary("e", 1, updated.strftime("%Y-%m-%dT%H:%M:%SZ"), False, 0, None,
                                                    "engine", None, None, until.isoformat() if until else None)
    lapsed = lapsed_now(knowledge, KnowledgeConfig(), now)
    for name, doc in knowledge.index.docs.items():
        c = doc.concept
        assert lapsed.names.get(name) == out_of_recall(
            valid_from=None, valid_until=c.valid_until, provenance=c.provenance, updated_at=c.updated_at,
            now=now.replace(microsecond=0), stale_after_days=180)
    assert {"expired", "stale"} <= set(lapsed.names.values())
    assert lapsed.until is not None and lapsed.until > now


def test_lapsed_concepts_masked_in_the_search_answer_as_asking_for_more_and_dropping_them_did():
    """The search leaves the lapsed out itself (no Hit built for them): the same answer as asking
    for top_k plus every lapsed concept and dropping them, whenever that answer fills top_k."""
    import random

    words = "frete prazo entrega troca pix boleto cartão juros campinas recife garantia sofá mesa".split()
    rng = random.Random(5)
    built = Index()
    for i in range(300):
        concept = make_concept(f"c-{i}", description=" ".join(rng.sample(words, 3)),
                               body=" ".join(rng.choice(words) for _ in range(rng.randint(3, 30))))
        built.upsert(concept.name, "e", concept, b"")
    built.settle()
    for trial in range(60):
        lapsed = {f"c-{i}": "stale" for i in rng.sample(range(300), rng.choice([0, 5, 50, 250]))}
        message = " ".join(rng.sample(words, rng.randint(1, 4))) + "?"
        top_k = rng.choice([1, 5])
        before = [h.name for h in built.relevant(message, top_k + len(lapsed), 1.0) if h.name not in lapsed][:top_k]
        now = [h.name for h in built.relevant(message, top_k, 1.0, excluded=built.slots_of(lapsed))]
        if len(before) == top_k:
            assert now == before, (trial, message)
        else:
            assert now[:len(before)] == before
