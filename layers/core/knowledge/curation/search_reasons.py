"""Why each row of a search's page matched, in every container state: a container that restored its
index from the snapshot holds no body text, so the rows found through their body alone, on the page
shown, have their documents read for the snippet. And why a search found nothing, or less than was
typed: the words past MAX_WORDS, and each word no concept holds. docs/studio.md, `GET /concepts`."""

from __future__ import annotations

from typing import Any, Callable, Optional

from knowledge.curation import relevance
from knowledge.curation.relevance import MAX_WORDS, Query
from knowledge.curation.listing import HeldList


def explain(held: HeldList, q: str, rows: list[dict[str, Any]],
            read: Callable[[list[str]], list[Optional[Any]]]) -> None:
    """Set each row's `match`; `read(names)` reads stored documents (None for one gone meanwhile)."""
    unheld = [row["name"] for row in rows if relevance.body_unheld(held, row["name"], q)]
    documents = {stored.name: stored.data for stored in read(unheld) if stored is not None} if unheld else {}
    for row in rows:
        row["match"] = relevance.matched(held, row["name"], q, documents.get(row["name"]))


def notes(held: HeldList, q: str, names: list[str], total: int) -> dict[str, Any]:
    """`{read, ignored, unmatched}` of a search over `names` that found `total`."""
    typed = relevance.words_of(q)
    query = Query.of(q)
    unmatched = []
    if total == 0 and len(query.told) > 1:  # a lone word that matches nothing needs no naming
        unmatched = [typed[word] for word in query.told if not relevance.search(held, word, names)]
    return {"read": [typed[word] for word in query.words], "ignored": list(typed.values())[MAX_WORDS:],
            "unmatched": unmatched}
