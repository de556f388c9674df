"""What an import writes is what the agent should be told, through the handlers: an FAQ answers in the block,
an earlier import is brought up to date once, an operator's removed words survive any import, and names and
files that would pollute the store are refused clearly (ImportFunction, the studio API, ExtractFunction,
save_knowledge), with `knowledge check-names` listing what is already stored under such a name."""

from __future__ import annotations

import json
import uuid
from datetime import date, datetime, timedelta, timezone

import pytest
from helpers.aws import drain
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.paths import DEMO, ROOT
from helpers.studio import BASE

from knowledge.curation.documents import concept_by_hand
from knowledge.curation.faq import Row, read_faq
from knowledge.format.concept import parse
from knowledge.format.learned_words import LearnedWord
from knowledge.format.sighting import parse_sighting
from knowledge.format.turn import Turn
from knowledge.store.archive import TurnArchive
from knowledge_cli.main import main

T, A = "default", "store-support"
FAQ_CSV = ROOT / "tests" / "data" / "imports" / "faq-loja.csv"
CPF_NAME = "cliente-529-982-247-25"  # 529.982.247-25: a CPF whose check digits hold


@pytest.fixture
def world(monkeypatch, store, bucket, sessions_bucket):
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    monkeypatch.setenv("KNOWLEDGE_BUCKET", bucket)
    monkeypatch.setenv("SESSIONS_BUCKET", sessions_bucket)
    return store


@pytest.fixture
def importer(monkeypatch, bucket, sessions_bucket):
    return load_handler("import", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket),
                        POWERTOOLS_SERVICE_NAME=f"knowledge-import-{uuid.uuid4().hex[:6]}")


def run_import(handler, s3, sessions_bucket: str, files: dict[str, bytes], **change) -> dict:
    """ImportFunction on `files` put under a folder of their own in the agent's imports."""
    event = {**load_event("import.json"), "prefix": f"{T}/{A}/imports/{uuid.uuid4().hex[:8]}/", **change}
    for name, data in files.items():
        s3.put_object(Bucket=sessions_bucket, Key=event["prefix"] + name, Body=data)
    return handler.lambda_handler(event, LambdaContext())


def versions(s3, bucket: str) -> int:
    return len(s3.list_object_versions(Bucket=bucket, Prefix=f"agents/{T}/{A}/concepts/").get("Versions", []))


# ------------------------------------------------------------------ an FAQ answers in the block

def test_an_imported_faq_answers_in_the_block_and_its_question_heads_the_body(
        importer, world, monkeypatch, s3, bucket, sessions_bucket, bus):
    answer = run_import(importer, s3, sessions_bucket, {"faq-loja.csv": FAQ_CSV.read_bytes()})
    assert answer["ok"] and answer["created"] == 18
    retrieve = load_handler("retrieve", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME=bus["name"]),
                            POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")
    ask = {**load_event("retrieve.json"), "message": "o frete é grátis? moro no interior de Minas"}
    block = retrieve.lambda_handler(ask, LambdaContext())["block"]
    # The model is told the store's answer, not the customer's question back.
    assert '<concept name="o-frete-e-gratis"' in block
    assert "O frete é grátis para compras acima de R$ 199,00 para todo o Brasil" in block
    assert "O frete é grátis?</concept>" not in block
    loaded = retrieve.lambda_handler({**load_event("load-knowledge.json"), "name": "o-frete-e-gratis"}, LambdaContext())
    assert loaded["markdown"].split("---\n\n", 1)[1].startswith("**O frete é grátis?**\n\nO frete é grátis para")


def test_reimporting_an_faq_imported_before_answers_led_the_block_updates_each_concept_once_then_writes_nothing(
        importer, world, s3, bucket, sessions_bucket):
    # The FAQ as the import wrote it before: the question as the description, the answer alone as the body.
    now = datetime.now(timezone.utc)
    rows = [row for row in read_faq(FAQ_CSV.read_bytes(), "csv") if isinstance(row, Row)]
    earlier = {}
    for row in rows:
        try:
            concept = concept_by_hand(row.legacy, now)
        except Exception:  # noqa: BLE001 - the rows the import refuses (a body too long) were never written
            continue
        if concept.name not in earlier:
            earlier[concept.name] = world.create(T, A, concept, actor="operator:ana.souza").concept
    assert earlier["o-frete-e-gratis"].description == "O frete é grátis?"
    before = versions(s3, bucket)

    answer = run_import(importer, s3, sessions_bucket, {"faq-loja.csv": FAQ_CSV.read_bytes()})  # no replace
    assert answer["ok"] and (answer["changed"], answer["skipped"], answer["created"]) == (len(earlier), 0, 0)
    assert versions(s3, bucket) == before + len(earlier)  # one version each
    freight = world.get(T, A, "o-frete-e-gratis")
    assert freight.concept.description.startswith("O frete é grátis para compras acima de R$ 199,00")
    assert freight.concept.body.startswith("**O frete é grátis?**\n\n")
    assert (freight.actor, freight.reason) == ("operator:ana.souza", "edit")
    assert freight.concept.created_at == earlier["o-frete-e-gratis"].created_at

    again = run_import(importer, s3, sessions_bucket, {"faq-loja.csv": FAQ_CSV.read_bytes()})
    assert again["unchanged"] == len(earlier) and again["changed"] == 0
    assert versions(s3, bucket) == before + len(earlier)


def test_an_earlier_import_an_operator_has_edited_since_is_left_alone_unless_replaced(
        importer, world, s3, sessions_bucket):
    row = next(row for row in read_faq(FAQ_CSV.read_bytes(), "csv") if isinstance(row, Row))
    mine = concept_by_hand(row.legacy, datetime.now(timezone.utc))
    mine = mine.replace(body=mine.body + "\nCapitais do Nordeste recebem em até 5 dias úteis.")
    stored = world.create(T, A, mine, actor="operator:ana.souza")
    answer = run_import(importer, s3, sessions_bucket, {"faq.csv": FAQ_CSV.read_bytes()})
    [item] = [item for item in answer["items"] if item["line"] == row.line]
    assert item["outcome"] == "skipped" and world.get(T, A, mine.name).etag == stored.etag


# ------------------------------------------------------------------ an operator's removals

def test_an_export_taken_before_an_operator_removed_a_learned_word_never_brings_it_back(
        importer, world, s3, bucket, sessions_bucket, tmp_path):
    concept = parse((DEMO / "frete-gratis-acima-199.md").read_text())
    taught = concept.replace(learned_words=(LearnedWord("fretinho", "loaded", 3, date(2026, 11, 2)),
                                            LearnedWord("entrega gratuita", "sighting", 2, date(2026, 11, 3))))
    world.create(T, A, taught, actor="engine")
    assert main(["export", "--agent", A, "--out", str(tmp_path / "before")]) == 0
    current = world.get(T, A, concept.name)  # the operator removes a word the traffic taught
    world.replace(T, A, current.concept.replace(learned_words=taught.learned_words[:1],
                                                removed_words=("entrega gratuita",)),
                  if_match=current.etag, actor="operator:ana.souza", reason="edit")
    removed = world.get(T, A, concept.name)
    exported = {path.name: path.read_bytes() for path in (tmp_path / "before").iterdir()}
    written = versions(s3, bucket)
    for replace in (False, True):
        answer = run_import(importer, s3, sessions_bucket, exported, provenance="file", replace=replace)
        assert answer["ok"] and answer["unchanged"] == 1, answer  # nothing to write: the removal holds
    assert versions(s3, bucket) == written and world.get(T, A, concept.name).etag == removed.etag
    kept = world.get(T, A, concept.name).concept
    assert [w.word for w in kept.learned_words] == ["fretinho"] and kept.removed_words == ("entrega gratuita",)


def test_an_imports_removed_words_join_the_stored_ones_and_leave_the_learned_words(
        importer, world, s3, sessions_bucket):
    concept = parse((DEMO / "frete-gratis-acima-199.md").read_text())
    world.create(T, A, concept.replace(learned_words=(LearnedWord("fretinho", "loaded", 3, date(2026, 11, 2)),),
                                       removed_words=("entrega gratuita",)), actor="engine")
    # Another agent's copy: it learned "entrega gratuita" and its operator removed "fretinho".
    theirs = concept.replace(body=concept.body + "\nVale também para o Centro-Oeste.",
                             learned_words=(LearnedWord("entrega gratuita", "loaded", 5, date(2026, 11, 9)),),
                             removed_words=("fretinho",))
    answer = run_import(importer, s3, sessions_bucket, {f"{concept.name}.md": theirs.render().encode()},
                        provenance="file", replace=True)
    assert answer["changed"] == 1, answer
    now = world.get(T, A, concept.name).concept
    assert now.body.endswith("Vale também para o Centro-Oeste.")
    assert now.learned_words == () and now.removed_words == ("entrega gratuita", "fretinho")


# ------------------------------------------------------------------ names refused

def test_a_name_whose_digits_spell_a_cpf_is_refused_by_the_import_and_the_studio(
        api, importer, store, s3, sessions_bucket):
    document = (f"---\nname: {CPF_NAME}\ndescription: Frete grátis para este cliente.\ntype: fact\n---\n\n"
                "Frete grátis.\n")
    faq = "question,answer,name\nTem frete grátis?,Sim.,cliente-11-98765-4321\nTem troca?,Sim.,troca-em-30-dias-b\n"
    answer = run_import(importer, s3, sessions_bucket, {f"{CPF_NAME}.md": document.encode(), "faq.csv": faq.encode()})
    refused = {item["source"]: item for item in answer["items"] if item["outcome"] == "refused"}
    assert answer["created"] == 1 and set(refused) == {f"{CPF_NAME}.md", "faq.csv"}
    assert refused[f"{CPF_NAME}.md"]["line"] == 2 and "holds a CPF" in refused[f"{CPF_NAME}.md"]["reason"]
    assert refused["faq.csv"]["line"] == 2 and "holds a phone number" in refused["faq.csv"]["reason"]
    assert store.find(T, A, CPF_NAME) is None and store.find(T, A, "cliente-11-98765-4321") is None

    status, body, _ = api("POST", f"{BASE}/concepts", body={"markdown": document})
    assert (status, body["error"]["code"]) == (422, "invalid_concept")
    assert body["errors"] == [{"field": "name", "line": 2, "message": "holds a CPF (its digits, read together): "
                                                                      "name the concept for what it says, not for "
                                                                      "a customer"}]
    _, dry, _ = api("POST", f"{BASE}/import", body={"files": [{"name": "c.md", "text": document}]})
    assert dry["refused"] == 1 and "holds a CPF" in dry["items"][0]["reason"]


def test_a_city_named_like_a_person_after_loja_de_names_an_imported_faq(importer, world, s3, sessions_bucket):
    faq = "question,answer\nQual o horário da loja de João Pessoa?,Das 9h às 18h.\n"
    answer = run_import(importer, s3, sessions_bucket, {"faq.csv": faq.encode()})
    assert answer["created"] == 1, answer
    assert world.find(T, A, "qual-o-horario-da-loja-de-joao-pessoa") is not None


def test_extraction_and_save_knowledge_refuse_a_name_whose_digits_spell_a_cpf(
        monkeypatch, store, s3, bucket, sessions_bucket, candidates_queue, model, sqs, bus):
    store.put_config(T, A, "knowledge:\n  extract: true\n", actor="operator:demo")
    said = "Para clientes VIP o frete é grátis em todo o Brasil."
    model.responder = lambda request: json.dumps([
        {"name": CPF_NAME, "type": "fact", "evidence": said, "description": "Frete grátis para clientes VIP.",
         "body": "Clientes VIP têm frete grátis."},
        {"name": "frete-vip-gratis", "type": "fact", "evidence": said, "description": "Frete grátis para VIP.",
         "body": "Clientes VIP têm frete grátis."}], ensure_ascii=False)
    record = load_event("turn-complete.json")["Records"][0]
    moment = (datetime.now(timezone.utc) - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    turn = {"tenant": T, "agent": A, "session_id": "sess_cpf_01", "turn_id": "turn_0001", "completed_at": moment,
            "messages": [{"role": "user", "content": "tenho frete grátis?"}, {"role": "assistant", "content": said}]}
    extract = load_handler("extract", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
        UTILITY_MODEL="openai:utility", OPENAI_BASE_URL=model.base_url))
    event = {"Records": [{**record, "messageId": "m-1", "body": json.dumps(turn, ensure_ascii=False)}]}
    assert extract.lambda_handler(event, LambdaContext()) == {"batchItemFailures": []}
    assert [parse_sighting(m["Body"]).name for m in drain(sqs, candidates_queue)] == ["frete-vip-gratis"]

    TurnArchive(s3, sessions_bucket).put(Turn.model_validate({**turn, "session_id": "sess_cpf_02"}))
    retrieve = load_handler("retrieve", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
        EVENT_BUS_NAME=bus["name"]), POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")
    save = {"action": "save_knowledge", "tenant": T, "agent": A, "session_id": "sess_cpf_02", "name": CPF_NAME,
            "description": "Frete grátis para VIP.", "type": "fact", "body": "Clientes VIP têm frete grátis.",
            "evidence": "o frete é grátis em todo o Brasil"}
    answer = retrieve.lambda_handler(save, LambdaContext())
    assert answer["error"]["code"] == "gated" and "the pii_in_name gate" in answer["error"]["message"]
    assert drain(sqs, candidates_queue) == []


def test_check_names_lists_the_concepts_stored_under_a_name_that_carries_personal_data(world, s3, bucket, capsys):
    for path in sorted(DEMO.glob("*.md")):
        world.create(T, A, parse(path.read_text()), actor="engine")
    troca = parse((DEMO / "troca-em-30-dias.md").read_text())
    for name in (CPF_NAME, "cliente-joana-prado-vip", "entrega-joao-pessoa"):  # stored before the gate
        world.create(T, A, troca.replace(name=name), actor="engine")
    before = versions(s3, bucket)
    assert main(["check-names", "--agent", A]) == 1
    out = capsys.readouterr()
    listed = [line.split() for line in out.out.splitlines()]
    assert [(words[0], " ".join(words[1:])) for words in listed] == [
        (CPF_NAME, "holds a CPF"), ("cliente-joana-prado-vip", "holds a person's name")]
    total = len(list(DEMO.glob("*.md"))) + 3
    assert f"2 of {total} concept names of {T}/{A} carry personal data" in out.err and "rename each" in out.err
    assert versions(s3, bucket) == before  # read-only
    world.delete(T, A, CPF_NAME, actor="operator:ana.souza")
    world.delete(T, A, "cliente-joana-prado-vip", actor="operator:ana.souza")
    assert main(["check-names", "--agent", A]) == 0
    assert f"none of the {total - 2} concept names" in capsys.readouterr().out
    assert main(["check-names", "--agent", "nobody"]) == 1 and "no agent 'nobody'" in capsys.readouterr().err


# ------------------------------------------------------------------ files refused clearly

def test_an_faq_whose_quote_never_closes_is_refused_whole_with_its_line_and_nothing_is_written(
        importer, world, s3, bucket, sessions_bucket):
    faq = ('question,answer\nQual o prazo?,Cinco dias úteis.\nTem troca?,"Sim, em 30 dias.\n'
           'Tem loja física?,Sim.\nAceitam Pix?,Sim.\n')
    answer = run_import(importer, s3, sessions_bucket, {"faq.csv": faq.encode(), "troca-em-30-dias.md":
                                                        (DEMO / "troca-em-30-dias.md").read_bytes()})
    [refused] = [item for item in answer["items"] if item["outcome"] == "refused"]
    assert (refused["source"], refused["line"]) == ("faq.csv", 3) and 'a " is missing' in refused["reason"]
    assert answer["created"] == 1 and world.find(T, A, "qual-o-prazo") is None  # the other file goes on
    twice = "question,answer,answer\nQual o prazo?,Cinco dias.,Sete dias.\n"
    answer = run_import(importer, s3, sessions_bucket, {"faq.csv": twice.encode()})
    [refused] = answer["items"]
    assert refused["line"] == 1 and "the column 'answer' is named twice" in refused["reason"]
    assert world.find(T, A, "qual-o-prazo") is None


def test_a_brazilian_spreadsheets_csv_is_imported_and_the_studio_names_the_encoding_it_cannot_read(
        api, importer, store, s3, sessions_bucket):
    text = "question;answer\r\nQual é o prazo para São Paulo?;Até 3 dias úteis, “sem custo”.\r\n"
    answer = run_import(importer, s3, sessions_bucket, {"faq.csv": text.encode("cp1252")})
    assert answer["created"] == 1, answer
    assert store.get(T, A, "qual-e-o-prazo-para-sao-paulo").concept.description == "Até 3 dias úteis, “sem custo”."
    # The studio's page reads a file as UTF-8: a Windows-1252 file reaches it with U+FFFD for each accent.
    as_read = text.encode("cp1252").decode("utf-8", errors="replace")
    _, dry, _ = api("POST", f"{BASE}/import", body={"files": [{"name": "faq.csv", "text": as_read}]})
    [refused] = dry["items"]
    assert refused["outcome"] == "refused" and refused["line"] == 2 and "Windows-1252" in refused["reason"]
