"""An FAQ's rows as concept documents: the contract's mapping (docs/contract.md, "Import"), row by row."""

from __future__ import annotations

import hashlib

import pytest

from knowledge.curation.faq import Row, RowProblem, first_sentence, one_line, read_faq, slug_of
from knowledge.errors import FaqUnreadable
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
    assert (first.name, first.description, first.type) == ("qual-e-o-prazo", "Cinco dias úteis.", "policy")
    assert first.body == "**Qual é o prazo?**\n\nCinco dias úteis.\nPix confirma na hora."
    assert (second.name, second.type, second.body) == ("o-frete-e-gratis", "fact",
                                                       "**O frete é grátis?**\n\nAcima de R$ 199,00.")


@pytest.mark.parametrize("answer, line", [
    ("O frete é grátis acima de R$ 199,00. Abaixo disso, depende do CEP.", "O frete é grátis acima de R$ 199,00."),
    # A bare yes or no says nothing without the question: the next sentence goes with it.
    ("Sim. Pelo direito de arrependimento (art. 49 do CDC), a devolução vale por 7 dias. O reembolso segue.",
     "Sim. Pelo direito de arrependimento (art. 49 do CDC), a devolução vale por 7 dias."),
    ("Não! Só entregamos no Brasil.", "Não! Só entregamos no Brasil."),
    ("Fale com o Sr. Almeida na loja da Av. Paulista. Ele atende até as 18h.",
     "Fale com o Sr. Almeida na loja da Av. Paulista."),
    ("Aceitamos:\n- Pix\n- cartão", "Aceitamos: - Pix - cartão"),
    ("Entregamos em 2 dias úteis", "Entregamos em 2 dias úteis"),
    ("Pedidos pagos no Pix saem “no mesmo dia.” Os demais, em 2 dias.", "Pedidos pagos no Pix saem “no mesmo dia.”"),
])
def test_an_answers_first_sentence_is_the_block_line(answer, line):
    assert first_sentence(answer) == line


def test_a_first_sentence_over_the_description_limit_is_cut_at_a_word_and_the_question_stays_in_the_body():
    answer = "Regulamento " + " ".join(["válido para compras no site e no aplicativo"] * 20) + ". Fim."
    [concept] = concepts(read_faq(f"question,answer\nQual é o regulamento?,{answer}\n".encode(), "csv"))
    assert len(concept.description) <= 300 and concept.description.endswith("…")
    assert answer.startswith(concept.description[:-1])
    assert concept.body.startswith("**Qual é o regulamento?**\n\nRegulamento válido")


def test_a_description_column_still_wins_and_each_row_carries_the_document_it_made_before():
    [row] = read_faq(b"question,answer,description\nTem troca?,Sim. Em 30 dias.,Trocas em 30 dias\n", "csv")
    [now] = concepts([row])
    [before] = concepts([Row(row.line, row.legacy)])
    assert (now.description, now.body) == ("Trocas em 30 dias", "**Tem troca?**\n\nSim. Em 30 dias.")
    assert (before.name, before.description, before.body) == (now.name, "Trocas em 30 dias", "Sim. Em 30 dias.")
    [row] = read_faq(b"question,answer\nTem troca?,Sim. Em 30 dias.\n", "csv")
    assert (concepts([Row(row.line, row.legacy)])[0].description, concepts([row])[0].description) == (
        "Tem troca?", "Sim. Em 30 dias.")


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


@pytest.mark.parametrize("data, kind, line, fragment", [
    (b"pergunta,resposta\nx,y\n", "csv", 1, "missing: question, answer; read with ',' as the separator"),
    (b"question|answer\nx|y\n", "csv", 1, "separated by ',', ';' or a tab"),
    (b"question,answer,price\nx,y,1\n", "csv", 1, "unknown column 'price'"),
    (b"question,answer,Answer \nx,y,z\n", "csv", 1, "the column 'answer' is named twice"),
    (b"", "csv", None, "is empty"),
    ("question,answer\nprazo é,cinco\n".encode("utf-16"), "csv", None, "UTF-16"),
    (b"question,answer\nx,y\nprazo,\x81\x00\n", "csv", 3, "neither UTF-8 nor Windows-1252"),
    ("question,answer\nQual é o prazo?,Cinco dias úteis.\n".encode() + b"x,\xe9\n", "csv", 3,
     "UTF-8 text with a byte that is not UTF-8"),  # never read as Windows-1252's "Ã©"
    ("question,answer\nx,y\nprazo \ufffd,cinco\n".encode(), "csv", 3, "likely Windows-1252; save it as CSV UTF-8"),
    (b"question: x\n", "yaml", None, "a list of rows"),
    (b"- &a {question: x, answer: y}\n- *a\n", "yaml", 1, "anchors"),
])
def test_a_file_that_is_not_an_faq_is_refused_whole_with_its_line(data, kind, line, fragment):
    with pytest.raises(FaqUnreadable) as refused:
        read_faq(data, kind)
    assert fragment in str(refused.value) and refused.value.line == line


@pytest.mark.parametrize("rows, line", [
    # The quote never closes: before, every row after it was read into this one answer.
    ('Qual o prazo?,"Cinco dias\nTem troca?,Sim\nTem loja?,Sim\n', 2),
    ('Qual o prazo?,Cinco dias\nTem troca?,"Sim, em 30 dias\nTem loja?,"Sim"\n', 3),
    ('Qual o prazo?,"Cinco" dias\n', 2),
])
def test_quotes_that_do_not_pair_refuse_the_file_at_the_row_they_open_in(rows, line):
    with pytest.raises(FaqUnreadable) as refused:
        read_faq(("question,answer\n" + rows).encode(), "csv")
    assert refused.value.line == line and 'a \" is missing' in str(refused.value)


def test_a_spreadsheets_csv_is_read_windows_1252_semicolons_tabs_and_its_sep_line():
    text = "question;answer\r\nQual é o prazo?;Cinco dias úteis, “sem custo”.\r\n"
    for data in (text.encode("cp1252"), ("sep=;\r\n" + text).encode("cp1252"),
                 text.replace(";", "\t").encode("utf-8"),
                 ("sep=,\n" + text.replace(";", ",", 1).replace(";Cinco", ',"Cinco').replace(".\r", '."\r')).encode()):
        [row] = read_faq(data, "csv")
        [concept] = concepts([row])
        assert (concept.name, concept.description) == ("qual-e-o-prazo", "Cinco dias úteis, “sem custo”."), data
    assert read_faq(("sep=;\r\n" + text).encode("cp1252"), "csv")[0].line == 3


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
