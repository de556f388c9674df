"""`knowledge import` and ImportFunction: concept files and FAQs into an agent through the studio's
create and save (validation, compare-and-swap, the journal, the history), against moto's server."""

from __future__ import annotations

import io
import shutil
import uuid

import pytest
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.paths import DEMO, ROOT

from knowledge.format.concept import parse
from knowledge.store.keys import concept_key, journal_prefix
from knowledge_cli.main import ProgressBar, main

T, A = "default", "store-support"
IMPORTS = ROOT / "tests" / "data" / "imports"
FAQ_CSV, FAQ_YAML = IMPORTS / "faq-loja.csv", IMPORTS / "faq-politicas.yaml"
# What faq-loja.csv holds that cannot be imported: its line, and what the reason says.
CSV_REFUSED = {35: "also faq-loja.csv:2's", 36: "answer: must not be empty", 37: "no letter or digit",
               40: "body: must be at most 16384 bytes"}
CSV_GOOD = 22 - len(CSV_REFUSED)


@pytest.fixture
def world(monkeypatch, store, bucket, sessions_bucket):
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    monkeypatch.setenv("KNOWLEDGE_BUCKET", bucket)
    monkeypatch.setenv("SESSIONS_BUCKET", sessions_bucket)
    monkeypatch.setenv("KNOWLEDGE_OPERATOR", "ana.souza")
    return store


def versions(s3, bucket: str, agent: str = A) -> int:
    answer = s3.list_object_versions(Bucket=bucket, Prefix=f"agents/{T}/{agent}/concepts/")
    return len(answer.get("Versions", []))


def journal(s3, bucket: str, agent: str = A) -> list[str]:
    answer = s3.list_objects_v2(Bucket=bucket, Prefix=journal_prefix(T, agent))
    return [item["Key"] for item in answer.get("Contents", [])]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["import", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_an_faq_becomes_policy_concepts_by_the_operator_and_each_bad_row_is_refused_with_its_line(
        world, s3, bucket, capsys):
    code, out, err = run(capsys, "--agent", A, str(FAQ_CSV))
    assert code == 1  # rows were refused
    assert sum(row.startswith("created ") for row in out.splitlines()) == CSV_GOOD and f"created {CSV_GOOD}" in out and f"refused {len(CSV_REFUSED)}" in out
    for line, reason in CSV_REFUSED.items():
        [row] = [row for row in err.splitlines() if f"faq-loja.csv:{line} " in row + " "]
        assert row.startswith("refused") and reason in row
    stored = world.get(T, A, "qual-e-o-prazo-de-entrega-para-o-nordeste")
    concept = stored.concept
    # The block's line is the store's answer; the customer's question heads the body.
    assert concept.description == ("O prazo de entrega para os estados do Nordeste é de 5 a 9 dias úteis após a "
                                   "confirmação do pagamento.")
    assert concept.body.startswith("**Qual é o prazo de entrega para o Nordeste?**\n\nO prazo de entrega para os "
                                   "estados do Nordeste é de 5 a 9 dias úteis")
    assert (concept.provenance, concept.type, concept.confidence, concept.sources) == ("policy", "fact", 0.95, ())
    assert (stored.actor, stored.reason) == ("operator:ana.souza", "created")
    assert world.find(T, A, "qual-e-o-regulamento-da-promocao-de-aniversario") is None  # never half-written
    assert versions(s3, bucket) == CSV_GOOD
    assert len(journal(s3, bucket)) == 1 + CSV_GOOD  # the knowledge.yaml, then one entry per concept


def test_running_the_same_import_again_writes_nothing(world, s3, bucket, capsys):
    run(capsys, "--agent", A, str(FAQ_CSV))
    before = (versions(s3, bucket), journal(s3, bucket))
    code, out, _ = run(capsys, "--agent", A, str(FAQ_CSV))
    assert code == 1 and f"unchanged {CSV_GOOD}" in out and "created 0" in out
    assert (versions(s3, bucket), journal(s3, bucket)) == before
    code, out, _ = run(capsys, "--agent", A, "--replace", str(FAQ_CSV))
    assert f"unchanged {CSV_GOOD}" in out and "changed 0" in out
    assert (versions(s3, bucket), journal(s3, bucket)) == before


def test_a_taken_name_is_skipped_unless_replace_writes_a_new_version_that_can_be_restored(world, s3, bucket, capsys):
    mine = parse((DEMO / "frete-gratis-acima-199.md").read_text()).replace(name="o-frete-e-gratis")
    first = world.create(T, A, mine, actor="engine")
    code, out, _ = run(capsys, "--agent", A, str(FAQ_CSV))
    [row] = [row for row in out.splitlines() if "o-frete-e-gratis" in row]
    assert row.startswith("skipped") and "--replace" in row and "skipped 1" in out
    assert world.get(T, A, "o-frete-e-gratis").etag == first.etag
    code, out, _ = run(capsys, "--agent", A, "--replace", str(FAQ_CSV))
    [row] = [row for row in out.splitlines() if "o-frete-e-gratis" in row]
    assert code == 1 and row.startswith("changed") and "changed 1" in out and f"unchanged {CSV_GOOD - 1}" in out
    now = world.get(T, A, "o-frete-e-gratis")
    assert now.concept.description.startswith("O frete é grátis para compras acima de R$ 199,00")
    assert (now.actor, now.reason) == ("operator:ana.souza", "edit")
    assert now.concept.created_at == mine.created_at  # the concept's own history goes on
    history = world.versions(T, A, "o-frete-e-gratis")
    assert [v.reason for v in history] == ["edit", "created"]
    world.restore(T, A, "o-frete-e-gratis", history[1].version_id, actor="operator:ana.souza")
    assert world.get(T, A, "o-frete-e-gratis").data == first.data


def test_a_dry_run_prints_what_would_happen_and_writes_nothing(world, s3, bucket, capsys):
    world.create(T, A, parse((DEMO / "frete-gratis-acima-199.md").read_text()).replace(name="o-frete-e-gratis"),
                 actor="engine")
    before = (versions(s3, bucket), journal(s3, bucket))
    code, out, err = run(capsys, "--agent", A, "--dry-run", str(FAQ_CSV))
    assert code == 1 and out.startswith("would create") and "would skip" in out
    assert f"dry run: would create {CSV_GOOD - 1}" in out and "would skip 1" in out
    assert "faq-loja.csv:36" in err
    assert (versions(s3, bucket), journal(s3, bucket)) == before
    code, out, _ = run(capsys, "--agent", A, "--dry-run", "--replace", str(FAQ_CSV))
    assert "would change 1" in out
    assert (versions(s3, bucket), journal(s3, bucket)) == before


def test_an_export_of_another_agent_imports_as_policy_and_reimports_as_unchanged(world, s3, bucket, tmp_path, capsys):
    for path in sorted(DEMO.glob("*.md")):
        world.create(T, "site-chat", parse(path.read_text()), actor="engine")
    assert main(["export", "--agent", "site-chat", "--out", str(tmp_path / "export")]) == 0
    (tmp_path / "export" / "notes.txt").write_text("not a concept")
    code, out, _ = run(capsys, "--agent", A, str(tmp_path / "export"))
    names = sorted(path.stem for path in DEMO.glob("*.md"))
    assert code == 0 and f"created {len(names)}" in out and "ignored 1 file" in out
    for name in names:
        theirs, ours = world.get(T, "site-chat", name).concept, world.get(T, A, name).concept
        assert ours.provenance == "policy" and (ours.body, ours.description, ours.type, ours.sources) == (
            theirs.body, theirs.description, theirs.type, theirs.sources)
    code, out, _ = run(capsys, "--agent", A, str(tmp_path / "export"))
    assert code == 0 and f"unchanged {len(names)}" in out
    code, out, err = run(capsys, "--agent", "third", "--provenance", "file", str(tmp_path / "export"))
    assert code == 1 and "there is no agent 'third'" in err


def test_provenance_file_keeps_what_a_single_file_says(world, capsys):
    code, out, _ = run(capsys, "--agent", A, "--provenance", "file", str(DEMO / "objecao-frete-caro.md"))
    assert code == 0 and "created 1" in out
    assert world.get(T, A, "objecao-frete-caro").concept.provenance == parse(
        (DEMO / "objecao-frete-caro.md").read_text()).provenance == "observed"


def test_a_broken_concept_file_is_refused_with_its_line_and_the_rest_imported(world, tmp_path, capsys):
    folder = tmp_path / "concepts"
    folder.mkdir()
    shutil.copy(DEMO / "troca-em-30-dias.md", folder)
    text = (DEMO / "rastreio-pedido.md").read_text().replace("type: procedure", "type: receita")
    (folder / "rastreio-pedido.md").write_text(text)
    code, out, err = run(capsys, "--agent", A, str(folder))
    line = text.split("\n").index("type: receita") + 1
    assert code == 1 and "created 1" in out and "refused 1" in out
    assert f"rastreio-pedido.md:{line}" in err and "type" in err and "must be one of" in err
    assert world.find(T, A, "rastreio-pedido") is None and world.find(T, A, "troca-em-30-dias") is not None


def test_a_yaml_faq_takes_name_type_and_description_columns(world, capsys):
    code, out, err = run(capsys, "--agent", A, str(FAQ_YAML))
    assert code == 1 and "created 3" in out and "refused 2" in out
    assert "faq-politicas.yaml:15" in err and "answer: must not be empty" in err
    assert "faq-politicas.yaml:17" in err and "type: must be one of" in err
    shoes = world.get(T, A, "troca-calcados").concept
    assert shoes.type == "policy" and shoes.description.startswith("Calçados podem ser trocados em até 30 dias")
    assert world.get(T, A, "como-funciona-o-reembolso-no-pix").concept.type == "procedure"
    cards = world.get(T, A, "posso-pagar-com-dois-cartoes").concept
    assert cards.description == "Pagamento com dois cartões de crédito no mesmo pedido"


def test_a_spreadsheets_faq_in_windows_1252_is_read_and_one_in_utf16_is_refused_whole_as_other_files_go_on(
        world, tmp_path, capsys):
    folder = tmp_path / "mixed"
    folder.mkdir()
    text = "question;answer\r\nQual é o prazo?;Cinco dias úteis.\r\n"
    (folder / "excel.csv").write_bytes(text.encode("cp1252"))
    (folder / "unicode.csv").write_bytes(text.encode("utf-16"))
    shutil.copy(DEMO / "troca-em-30-dias.md", folder)
    code, out, err = run(capsys, "--agent", A, str(folder))
    assert code == 1 and "created 2" in out and "unicode.csv" in err and "UTF-16" in err
    assert world.get(T, A, "qual-e-o-prazo").concept.description == "Cinco dias úteis."


def test_progress_off_a_terminal_is_counts_only():
    stream = io.StringIO()
    bar = ProgressBar("importing", stream=stream, every=2)
    for done in range(6):
        bar(done, 5)
    assert stream.getvalue() == "importing 2/5\nimporting 4/5\nimporting 5/5\n"


def test_a_warm_retrieval_finds_imported_concepts_at_once_through_the_journal(world, monkeypatch, bucket, bus, s3,
                                                                              capsys):
    retrieve = load_handler("retrieve", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME=bus["name"]),
                            KNOWLEDGE_REFRESH_SECONDS="0",
                            POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")
    world.create(T, A, parse((DEMO / "troca-em-30-dias.md").read_text()), actor="engine")
    ask = {**load_event("retrieve.json"), "message": "vocês emitem nota fiscal para CNPJ?"}
    assert "voces-emitem-nota-fiscal" not in [c["name"] for c in retrieve.lambda_handler(ask, LambdaContext())["concepts"]]
    # The control: a file copied straight into the bucket (no journal entry) waits for the sweep.
    copied = (DEMO / "rastreio-pedido.md").read_text()
    s3.put_object(Bucket=bucket, Key=concept_key(T, A, "rastreio-pedido"), Body=copied.encode())
    run(capsys, "--agent", A, str(FAQ_CSV))
    names = [c["name"] for c in retrieve.lambda_handler(ask, LambdaContext())["concepts"]]
    assert names[0] == "voces-emitem-nota-fiscal"
    tracking = {**ask, "message": "onde está meu pedido? quero o código de rastreio da transportadora"}
    assert "rastreio-pedido" not in [c["name"] for c in retrieve.lambda_handler(tracking, LambdaContext())["concepts"]]


# ------------------------------------------------------------------ ImportFunction

@pytest.fixture
def handler(world, monkeypatch, bucket, sessions_bucket):
    return load_handler("import", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket),
                        POWERTOOLS_SERVICE_NAME=f"knowledge-import-{uuid.uuid4().hex[:6]}")


def upload(s3, sessions_bucket: str, prefix: str, *paths) -> None:
    for path in paths:
        s3.put_object(Bucket=sessions_bucket, Key=prefix + path.name, Body=path.read_bytes())


def test_the_import_event_imports_the_files_under_its_prefix(caplog, handler, world, s3, sessions_bucket):
    event = load_event("import.json")
    upload(s3, sessions_bucket, event["prefix"], FAQ_CSV, DEMO / "troca-em-30-dias.md")
    s3.put_object(Bucket=sessions_bucket, Key=event["prefix"] + "below/x.md", Body=b"not read")
    answer = handler.lambda_handler(event, LambdaContext())
    assert answer["ok"] and answer["created"] == CSV_GOOD + 1 and answer["refused"] == len(CSV_REFUSED)
    refused = {item["line"]: item["reason"] for item in answer["items"] if item["outcome"] == "refused"}
    assert all(reason in refused[line] for line, reason in CSV_REFUSED.items())
    assert world.get(T, A, "troca-em-30-dias").actor == f"operator:{event['operator']}"
    again = handler.lambda_handler(event, LambdaContext())
    assert again["created"] == 0 and again["unchanged"] == CSV_GOOD + 1
    assert [r.getMessage() for r in caplog.records].count("import done") == 2
    logged = " ".join(str(vars(record)) for record in caplog.records)
    assert "concepts_created" in logged
    for text in ("Nordeste", "prazo", "Pix", "Regulamento", "dias úteis", "voces-emitem"):
        assert text not in logged  # counts and identifiers only, never what a concept says


def test_a_dry_run_event_answers_what_would_happen_and_writes_nothing(handler, world, s3, bucket, sessions_bucket):
    event = {**load_event("import.json"), "dry_run": True}
    upload(s3, sessions_bucket, event["prefix"], FAQ_YAML)
    answer = handler.lambda_handler(event, LambdaContext())
    assert answer["ok"] and answer["dry_run"] and answer["created"] == 3 and answer["refused"] == 2
    assert versions(s3, bucket) == 0


def test_a_shared_import_event_writes_the_tenants_shared_concepts_that_its_agents_recall(
        handler, world, s3, bucket, sessions_bucket):
    from knowledge.store.keys import SHARED

    event = {**load_event("import.json"), "prefix": "default/_shared/imports/faq/", "shared": True}
    del event["agent"]
    upload(s3, sessions_bucket, event["prefix"], FAQ_YAML)
    answer = handler.lambda_handler(event, LambdaContext())
    assert answer["ok"] and answer["created"] == 3 and answer["refused"] == 2
    shared = world.list(T, SHARED)
    assert len(shared) == 3 and world.get(T, SHARED, shared[0].name).actor == f"operator:{event['operator']}"
    assert not any(entry.name in {s.name for s in shared} for entry in world.list(T, A))  # no agent's concept
    assert s3.list_objects_v2(Bucket=bucket, Prefix=f"journal/{T}/{SHARED}/")["KeyCount"] == 3


@pytest.mark.parametrize("change, code, fragment", [
    ({"prefix": "default/store-support/imports/../../other/"}, "invalid_import", "no '..'"),
    ({"prefix": "default/other-agent/imports/faq/"}, "outside_import_prefix", "default/store-support/imports/"),
    ({"prefix": "default/store-support/exports/demo/"}, "outside_import_prefix", "a folder under"),
    ({"prefix": "default/store-support/imports/"}, "outside_import_prefix", "a folder under"),
    ({"bucket": "someone-elses-bucket"}, "outside_import_prefix", "only the sessions bucket"),
    ({"operator": "ana souza"}, "invalid_import", "operator"),
    ({"operator": None}, "invalid_import", "operator"),
    ({"agent": "../x"}, "invalid_import", "agent"),
    ({"provenance": "guessed"}, "invalid_import", "provenance"),
    ({"surprise": 1}, "invalid_import", "surprise"),
    ({"agent": "nobody", "prefix": "default/nobody/imports/faq/"}, "unknown_agent", "save its knowledge.yaml"),
    ({"prefix": "default/store-support/imports/empty/"}, "invalid_import", "nothing to import"),
    ({"shared": True}, "invalid_import", "not both"),
    ({"agent": None, "shared": True}, "outside_import_prefix", "default/_shared/imports/"),
    ({"agent": None}, "invalid_import", "shared concepts"),
])
def test_bad_import_events_get_a_clear_error_and_read_nothing(handler, s3, sessions_bucket, change, code, fragment):
    event = load_event("import.json")
    upload(s3, sessions_bucket, event["prefix"], FAQ_YAML)
    event = {k: v for k, v in {**event, **change}.items() if v is not None}
    answer = handler.lambda_handler(event, LambdaContext())
    assert answer["ok"] is False and answer["error"]["code"] == code, answer
    assert fragment in answer["error"]["message"]



def test_imported_policies_are_queued_for_their_policy_review_as_a_studio_save_queues_them(
        world, monkeypatch, s3, sqs, bus, bucket, sessions_bucket, capsys):
    import json

    from helpers.aws import drain, new_queue

    queue = new_queue(sqs)
    handler = load_handler("import", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, POLICY_REVIEW_QUEUE_URL=queue),
        POWERTOOLS_SERVICE_NAME=f"knowledge-import-{uuid.uuid4().hex[:6]}")
    world.create(T, A, parse((DEMO / "parcelamento-sem-juros-10x.md").read_text()), actor="engine")  # observed
    event = load_event("import.json")
    observed = {**event, "prefix": "default/store-support/imports/observadas/", "provenance": "observed"}
    upload(s3, sessions_bucket, observed["prefix"], FAQ_YAML)
    assert handler.lambda_handler(observed, LambdaContext())["created"] == 3
    upload(s3, sessions_bucket, event["prefix"], FAQ_CSV)
    dry = handler.lambda_handler({**event, "dry_run": True}, LambdaContext())
    # What the import would cost in model calls, at most: each policy's review (5 observed concepts and 3
    # other policies judged) and the concepts' words, ten concepts to a call.
    assert dry["created"] == CSV_GOOD and dry["model_calls"] == CSV_GOOD * (5 + 3) + -(-CSV_GOOD // 10)
    jobs = [json.loads(m["Body"]) for m in drain(sqs, queue)]
    # Observed concepts (their words only, the three in one message), and a dry run that writes nothing: no review.
    assert [(m["job"], len(m["names"])) for m in jobs] == [("words", 3)]

    from collections import Counter

    from shared.aws import client

    sent: Counter = Counter()

    def count(model, **_):
        sent[model.name] += 1

    client("sqs").meta.events.register("before-call.sqs", count)
    try:
        answer = handler.lambda_handler(event, LambdaContext())
    finally:
        client("sqs").meta.events.unregister("before-call.sqs", count)
    created = sorted(item["name"] for item in answer["items"] if item["outcome"] == "created")
    # Its reviews and words jobs are batched: ten messages to a request, none sent alone; the words of ten
    # concepts to a message.
    words_messages = -(-len(created) // 10)
    assert sent == Counter({"SendMessageBatch": -(-(len(created) + words_messages) // 10)})
    queued = [json.loads(m["Body"]) for m in drain(sqs, queue)]
    messages = [m for m in queued if m.get("job") != "words"]  # each save also asks for the model's words
    words = [m for m in queued if m.get("job") == "words"]
    assert len(words) == words_messages and sorted(n for m in words for n in m.get("names", [m["name"]])) == created
    assert len(created) == CSV_GOOD and sorted(m["name"] for m in messages) == created
    assert all(m == {"v": 1, "tenant": T, "agent": A, "name": m["name"]} for m in messages)  # names only
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"PolicyReviewQueued"' in line]
    assert [entry["PolicyReviewQueued"] for entry in emitted] == [[float(CSV_GOOD)]]
    assert handler.lambda_handler(event, LambdaContext())["unchanged"] == CSV_GOOD
    assert drain(sqs, queue) == []  # nothing written again, nothing reviewed again

    # The queued review runs as for a studio save: with no model, nothing is written into the observed
    # concept the payments answer speaks of; the pair waits beside it for a human (nothing is retired unjudged).
    [payments] = [m for m in messages if "pagamento" in m["name"]]
    review = load_handler("policy_review", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus["name"]))
    record = {"messageId": "m0", "receiptHandle": "r0", "body": json.dumps(payments), "md5OfBody": "0",
              "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "0", "SenderId": "x",
                             "ApproximateFirstReceiveTimestamp": "0"}, "messageAttributes": {},
              "eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:policy-review",
              "awsRegion": "us-east-1"}
    assert review.lambda_handler({"Records": [record]}, LambdaContext()) == {"batchItemFailures": []}
    observed = world.get(T, A, "parcelamento-sem-juros-10x")
    assert observed.reason == "created" and observed.concept.retired_by is None and "Policy [[" not in \
        observed.concept.body
    assert [p.policy for p in world.waiting().of(T, A, "parcelamento-sem-juros-10x")] == [payments["name"]]


def test_only_the_import_the_studio_and_the_review_itself_may_queue_a_policy_review_and_only_on_its_queue():
    from helpers.operations import RESOURCES

    senders = {}
    for logical_id, resource in RESOURCES.items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        for policy in resource["Properties"].get("Policies", []):
            for st in policy.get("Statement", []) if isinstance(policy, dict) else []:
                actions = st.get("Action", [])
                if "sqs:SendMessage" in (actions if isinstance(actions, list) else [actions]) \
                        and st["Resource"] == {"Fn::GetAtt": ["PolicyReviewQueue", "Arn"]}:
                    senders[logical_id] = st["Action"]
    # PolicyReviewFunction fans a shared policy's review out, one message per agent that recalls it;
    # ConsolidateFunction queues the words of a concept extraction created, and WordsPendingFunction the
    # words that waited for the tenant's budget (both words jobs only: docs/contract.md, learned words).
    assert senders == {"StudioApiFunction": ["sqs:SendMessage"], "ImportFunction": ["sqs:SendMessage"],
                       "PolicyReviewFunction": ["sqs:SendMessage"], "ConsolidateFunction": ["sqs:SendMessage"],
                       "WordsPendingFunction": ["sqs:SendMessage"]}
    for function in ("ImportFunction", "PolicyReviewFunction"):
        variables = RESOURCES[function]["Properties"]["Environment"]["Variables"]
        assert variables["POLICY_REVIEW_QUEUE_URL"] == {"Ref": "PolicyReviewQueue"}


def test_importing_again_after_words_were_learned_keeps_them_and_their_removals(world, s3, bucket, capsys):
    from datetime import date

    from knowledge.format.learned_words import LearnedWord

    run(capsys, "--agent", A, str(FAQ_CSV))
    name = world.list(T, A)[0].name
    current = world.get(T, A, name)
    learned = current.concept.replace(learned_words=(LearnedWord("fretinho", "loaded", 3, date(2026, 11, 2)),),
                                      removed_words=("entrega gratuita",))
    world.replace(T, A, learned, if_match=current.etag, actor="learning", reason="learned")
    before = (versions(s3, bucket), journal(s3, bucket))
    for flags in ((), ("--replace",)):  # the FAQ row says nothing of learned words: nothing to write
        code, out, _ = run(capsys, "--agent", A, *flags, str(FAQ_CSV))
        assert f"unchanged {CSV_GOOD}" in out and "changed 0" in out
    assert (versions(s3, bucket), journal(s3, bucket)) == before
    kept = world.get(T, A, name).concept
    assert [w.word for w in kept.learned_words] == ["fretinho"] and kept.removed_words == ("entrega gratuita",)


def test_the_tenants_shared_concepts_are_imported_exported_and_listed_like_an_agents(world, tmp_path, capsys):
    from knowledge.store.keys import SHARED

    code, out, _ = run(capsys, "--shared", str(DEMO / "troca-em-30-dias.md"))
    assert code == 0 and "created 1" in out and f"({T}/shared)" in out, (out, _)
    stored = world.get(T, SHARED, "troca-em-30-dias")
    assert stored.concept.provenance == "policy" and stored.actor == "operator:ana.souza"
    assert world.find(T, A, "troca-em-30-dias") is None  # no agent got it
    assert main(["export", "--shared", "--out", str(tmp_path / "shared")]) == 0
    assert sorted(p.name for p in (tmp_path / "shared").iterdir()) == ["troca-em-30-dias.md"]
    assert main(["history", "--shared", "troca-em-30-dias"]) == 0
    assert "operator:ana.souza" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["export", "--shared", "--agent", A, "--out", str(tmp_path / "both")])
    # Another tenant, with no agent: no shared scope to import into.
    code, _, err = run(capsys, "--shared", "--tenant", "nobody", str(DEMO / "troca-em-30-dias.md"))
    assert code == 1 and "nobody" in err
