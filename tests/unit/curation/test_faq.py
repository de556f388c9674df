"""An FAQ's rows as concept documents: the contract's mapping (docs/contract.md, "Import"), row by row."""

from __future__ import annotations

import hashlib

import pytest

from knowledge.curation.faq import FaqUnreadable, Row, RowProblem, one_line, read_faq, slug_of
from knowledge.format.concept import parse


def concepts(rows):
    return [parse(row.markdown, defaults={"provenance": "policy", "confidence": 0.95, "sources": [],
                                          "occurrences": 1, "created_at": "2026-12-01T00:00:00Z",
                                          "updated_at": "2026-12-01T00:00:00Z"}) for row in rows]


@pytest.mark.parametrize("question, name", [
    ("Qual é o prazo de entrega?", "qual-e-o-prazo-de-entrega"),
    ("Vocês emitem NOTA FISCAL (NF-e)?", "voces-emitem-nota-fiscal-nf-e"),
    ("  Troca — em até 30 dias?!  ", "troca-em-ate-30-dias"),
    ("Ação, coração e pão", "acao-coracao-e-pao"),
    ("???", ""),
    ("— … —", ""),
])
def test_a_question_slugs_predictably(question, name):
    assert slug_of(question) == name


def test_a_long_question_is_cut_at_a_hyphen_told_apart_by_a_digest_and_its_description_cut_at_a_word():
    question = "Como funciona " + " ".join(["a entrega expressa agendada"] * 20) + "?"
    name = slug_of(question)
    whole = question.lower().rstrip("?").replace(" ", "-")
    assert len(name) <= 64 and name == whole[:name.rfind("-")] + "-" + hashlib.sha256(whole.encode()).hexdigest()[:6]
    assert slug_of(question.replace("agendada?", "no sábado?")) != name  # same start, a name of its own
    description = one_line(question)
    assert len(description) <= 300 and description.endswith("…") and question.startswith(description[:-1])


def test_csv_rows_map_to_concepts_with_the_line_each_row_starts_on():
    text = ('question;answer;type\n'
            'Qual é o prazo?;"Cinco dias úteis.\r\nPix confirma na hora.";policy\n'
            '\n'
            'O frete é grátis?;Acima de R$ 199,00.;\n')
    rows = read_faq(text.encode(), "csv")
    assert [row.line for row in rows] == [2, 5]
    first, second = concepts(rows)
    assert (first.name, first.description, first.type) == ("qual-e-o-prazo", "Qual é o prazo?", "policy")
    assert first.body == "Cinco dias úteis.\nPix confirma na hora."
    assert (second.name, second.type, second.body) == ("o-frete-e-gratis", "fact", "Acima de R$ 199,00.")


def test_a_row_longer_than_the_csv_modules_field_limit_is_read_and_the_rows_after_it_too():
    text = "question,answer\nRegulamento?," + "x" * 200_000 + "\nTem loja física?,Sim.\n"
    rows = read_faq(text.encode(), "csv")
    assert [type(row) for row in rows] == [Row, Row] and rows[1].line == 3


@pytest.mark.parametrize("row, reason", [
    ("Qual o prazo?,", "answer: must not be empty"),
    (",Cinco dias.", "question: must not be empty"),
    ("!!!,Cinco dias.", "no letter or digit"),
    ("a,b,c", "3 cells for 2 columns"),
])
def test_a_bad_row_is_a_problem_at_its_line(row, reason):
    [problem] = read_faq(f"question,answer\n{row}\n".encode(), "csv")
    assert isinstance(problem, RowProblem) and problem.line == 2 and reason in problem.reason


@pytest.mark.parametrize("data, kind, fragment", [
    (b"pergunta,resposta\nx,y\n", "csv", "missing: question, answer"),
    (b"question,answer,price\nx,y,1\n", "csv", "unknown column 'price'"),
    (b"", "csv", "is empty"),
    ("question,answer\nprazo é,cinco\n".encode("latin-1"), "csv", "not UTF-8"),
    (b"question: x\n", "yaml", "a list of rows"),
    (b"- &a {question: x, answer: y}\n- *a\n", "yaml", "anchors"),
])
def test_a_file_that_is_not_an_faq_is_refused_whole(data, kind, fragment):
    with pytest.raises(FaqUnreadable) as refused:
        read_faq(data, kind)
    assert fragment in str(refused.value)


def test_yaml_rows_carry_their_lines_and_optional_columns():
    text = ("faq:\n"
            "  - question: Qual o prazo?\n"
            "    answer: Cinco dias.\n"
            "    name: prazo\n"
            "  - just text\n"
            "  - question: Tem troca?\n"
            "    answer: 30\n"
            "  - question: Tem cupom?\n"
            "    answer: Sim.\n"
            "    price: 3\n")
    rows = read_faq(text.encode(), "yaml")
    assert [row.line for row in rows] == [2, 5, 6, 8]
    assert isinstance(rows[0], Row) and concepts(rows[:1])[0].name == "prazo"
    assert "must be a mapping" in rows[1].reason
    assert "answer: must be text" in rows[2].reason
    assert "'price' is not a column" in rows[3].reason
