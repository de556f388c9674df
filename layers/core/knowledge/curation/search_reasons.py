"""Why each row of a search's page matched, in every container state.

A warm container holds each concept's text beside the index; one that restored the index from the
agent's snapshot (a cold start, a restart) holds names and descriptions only, so a row found
through its body would come back with its description, unmarked — it would look like a false
positive. Those rows alone, on the page shown (at most its limit), have their documents read, in
parallel, for the snippet of the body's match.

And why a search found nothing, or less than was typed: the words past the MAX_WORDS read, and,
when nothing matched, each word no concept holds on its own (every word must match), as typed, so
the page can offer to search without it.
"""

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
