"""No text an operator saves or a customer writes raises out of the analyzer or the index: prices,
ranges, hyphens, list items, CEPs, decimal commas and points, markdown, in any order (issue 41)."""

from __future__ import annotations

import pytest
from helpers.concepts import make_concept
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from knowledge.errors import Unindexable
from knowledge.recall.analysis import analyze
from knowledge.recall.index import Index
from shared.errors import InvalidConcept

_NUMBER = st.from_regex(r"\d{1,6}([.,]\d{1,3}){0,2}", fullmatch=True)
_FRAGMENT = st.one_of(
    _NUMBER,
    st.sampled_from(["R$", "R$ ", "US$", "-", " - ", "–", "/", "%", "#", "x", "xx", "xxx", "**", "- **", ":",
                     "\n- ", "\n", "a", "ao", "até", "de", "e", "entre", "acima de", "a partir de", "mais de",
                     "cep", "CEP", "pedido", "nº", "dias", "dias úteis", "meses", "anos", "h", "vezes", "x sem juros",
                     "anual", "mensal", "ano", "mês", "semana", "reais", "Anual", "**Anual**:", "hj", "vc"]),
    st.from_regex(r"\d{5}-?\d{3}", fullmatch=True),  # a CEP
    st.from_regex(r"\d{2,3}x{2,3}", fullmatch=True),  # 13xxx
    st.from_regex(r"[a-záéíóúãõç]{1,9}", fullmatch=True),
)
_TEXT = st.lists(_FRAGMENT, max_size=14).map(" ".join) | st.lists(_FRAGMENT, max_size=14).map("".join) | st.text(
    alphabet="0123456789.,-–/ xR$%#*:\nabcdeá", max_size=40)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TEXT)
def test_no_text_raises_out_of_the_analyzer(text):
    for open_ranges in (True, False):
        for shorthand in (False, True):
            analysis = analyze(text, open_ranges=open_ranges, shorthand=shorthand)
            assert all(interval.low <= interval.high for interval in analysis.intervals), text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_TEXT, description=_TEXT, question=_TEXT)
def test_no_text_raises_out_of_the_index_nor_out_of_a_question(body, description, question):
    try:  # a text the concept format itself refuses never reaches the index
        concept = make_concept("planos", description=" ".join(f"Planos {description}".split())[:150],
                               body=f"Planos da academia. {body}".strip())
    except InvalidConcept:
        reject()
    index = Index()
    index.upsert("planos", "e1", concept, b"")
    index.upsert("horarios", "e2", make_concept("horarios", description="Horários de funcionamento.",
                                                body="Abrimos das 6h às 23h."), b"")
    index.settle()
    index.relevant(question or "planos", top_k=5, min_score=1.0)
    index.relevant(f"qto custa o plano {question}", top_k=5, min_score=1.0)


@pytest.mark.parametrize("text", ["R$ 59,90 - anual", "- **Mensal**: R$ 89,90\n- **Anual**: R$ 59,90 - anual",
                                  "12,34-56,78", "cep 59,90", "59,90 a 12345", "12345 a 1,234"])
def test_a_price_before_a_hyphen_is_a_price_not_a_cep_range(text):
    assert all(interval.unit != "cep" for interval in analyze(text).intervals)


def test_a_cep_range_is_still_read_whole():
    assert [(i.unit, i.low, i.high) for i in analyze("CEPs 13083-970 a 13099-999").intervals] == [
        ("cep", 13083.0, 13099.0)]
    assert [(i.unit, i.low, i.high) for i in analyze("13000-13999").intervals] == [("cep", 13000.0, 13999.0)]


def test_a_concept_the_analyzer_cannot_read_is_refused_by_type_and_the_index_keeps_the_others(monkeypatch):
    import knowledge.recall.postings as postings

    index = Index()
    index.upsert("horarios", "e1", make_concept("horarios", description="Horários de funcionamento.",
                                                body="Abrimos das 6h às 23h."), b"")
    real = postings.analyze

    def broken(text, *args, **kwargs):  # a fault the next analyzer bug would be
        if "quebrado" in text:
            raise ValueError("could not convert string to float")
        return real(text, *args, **kwargs)

    monkeypatch.setattr(postings, "analyze", broken)
    with pytest.raises(Unindexable):
        index.upsert("planos", "e2", make_concept("planos", description="Planos.", body="texto quebrado"), b"")
    index.settle()
    assert "planos" not in index.docs
    assert [hit.name for hit in index.relevant("que horas abre a academia? horário de funcionamento", 5)] == ["horarios"]
