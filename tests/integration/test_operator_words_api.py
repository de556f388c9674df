"""An operator's own learned word through the studio API's handler on moto: saved with the concept as the
editor's learned-words panel writes it (`origin: operator`, taken out of removed_words), listed on the
learned words page as the operator's and found by its origin filter, served as such by a cold container
from the words summary, and a document that breaks the rules refused in plain words."""

from __future__ import annotations

import json
import uuid
from datetime import date

from helpers.handlers import LambdaContext, load_handler
from helpers.studio import BASE, A, T, request

from knowledge.curation.words_held import CODE, decode
from knowledge.format.learned_words import LearnedWord

NAME = "troca-em-30-dias"
TODAY = date.today().isoformat()


def panel_adds(markdown: str, word: str) -> str:
    """What the panel writes (studio_web/src/learned.js): the word's line at the end of learned_words, and
    the word out of removed_words (the concept here removed only it, so the field goes)."""
    lines = [line for line in markdown.split("\n") if not line.startswith("removed_words:")]
    last = max(i for i, line in enumerate(lines) if line.startswith("  - {word:"))
    lines.insert(last + 1, f'  - {{word: "{word}", origin: operator, sessions: 0, at: {TODAY}}}')
    return "\n".join(lines)


def test_an_operators_word_saved_with_the_concept_is_listed_as_theirs_and_filtered_by_origin(api, store):
    current = store.get(T, A, NAME)
    store.replace(T, A, current.concept.replace(learned_words=(LearnedWord("destrocar", "loaded", 4,
                                                                           date(2026, 11, 20)),),
                                                removed_words=("trocar tamanho",)),
                  if_match=current.etag, actor="learning", reason="learned")
    status, concept, _ = api("GET", f"{BASE}/concepts/{NAME}")
    assert status == 200
    status, saved, _ = api("PUT", f"{BASE}/concepts/{NAME}", body={"markdown": panel_adds(concept["markdown"],
                                                                                          "trocar tamanho")},
                           headers={"if-match": concept["etag"]})
    assert status == 200, saved
    kept = store.get(T, A, NAME).concept
    assert [(e.word, e.origin, e.sessions, e.at.isoformat()) for e in kept.learned_words] == [
        ("destrocar", "loaded", 4, "2026-11-20"), ("trocar tamanho", "operator", 0, TODAY)]
    assert kept.removed_words == ()  # adding it took it out: never both

    status, page, _ = api("GET", f"{BASE}/words", query={"origin": "operator"})
    assert status == 200 and page["total"] == 1 and page["concepts"] == 1
    [row] = page["words"]
    assert (row["concept"], row["word"], row["origin"], row["source"], row["sessions"], row["at"]) == (
        NAME, "trocar tamanho", "operator", "operator", 0, TODAY)
    _, traffic, _ = api("GET", f"{BASE}/words", query={"origin": "traffic"})
    assert [r["word"] for r in traffic["words"]] == ["destrocar"]
    _, every, _ = api("GET", f"{BASE}/words")
    assert {(r["word"], r["source"]) for r in every["words"]} == {("destrocar", "traffic"),
                                                                  ("trocar tamanho", "operator")}


def test_a_cold_container_lists_an_operators_word_from_the_words_summary(monkeypatch, api, store, bucket,
                                                                         sessions_bucket):
    current = store.get(T, A, NAME)
    store.replace(T, A, current.concept.replace(learned_words=(LearnedWord("destrocar", "operator", 0,
                                                                           date(2026, 11, 20)),)),
                  if_match=current.etag, actor="operator:ana", reason="edit")
    assert api("GET", f"{BASE}/words")[1]["total"] == 1  # the summary written, with the operator's origin
    assert decode(store.get_words_summary(T, A).data, T, A).rows[NAME].origins == CODE["operator"]
    handler = load_handler("studio_api", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket,
                                                           STUDIO_ORIGIN="http://127.0.0.1:8080"),
                           POWERTOOLS_SERVICE_NAME=f"cold-{uuid.uuid4().hex[:6]}")
    answer = handler.lambda_handler(request("GET", f"{BASE}/words", query={"origin": "operator"}), LambdaContext())
    body = json.loads(answer["body"])
    assert answer["statusCode"] == 200 and [(r["word"], r["source"]) for r in body["words"]] == [
        ("destrocar", "operator")]


def test_a_word_in_both_lists_or_an_operators_word_with_sessions_is_refused_in_plain_words(api, store):
    status, concept, _ = api("GET", f"{BASE}/concepts/{NAME}")
    head, rest = concept["markdown"].split("\n---\n", 1)
    both = (f'{head}\nlearned_words:\n  - {{word: "destrocar", origin: operator, sessions: 0, at: {TODAY}}}\n'
            f'removed_words: ["destrocar"]\n---\n{rest}')
    status, body, _ = api("PUT", f"{BASE}/concepts/{NAME}", body={"markdown": both}, headers={"if-match": concept["etag"]})
    assert status == 422
    assert [e["message"] for e in body["errors"]] == [
        "0: 'destrocar' is also a learned word (remove it from one list)"]
    counted = both.replace("sessions: 0", "sessions: 2").replace('removed_words: ["destrocar"]\n', "")
    status, body, _ = api("PUT", f"{BASE}/concepts/{NAME}", body={"markdown": counted},
                          headers={"if-match": concept["etag"]})
    assert status == 422
    assert [e["message"] for e in body["errors"]] == [
        "0: sessions must be 0 for an operator's word (no session taught it)"]
