"""Why each row of a search's page matched, in every container state.

A warm container holds each concept's text beside the index; one that restored the index from the
agent's snapshot (a cold start, a restart) holds names and descriptions only, so a row found
through its body would come back with its description, unmarked — it would look like a false
positive. Those rows alone, on the page shown (at most its limit), have their documents read, in
parallel, for the snippet of the body's match.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from knowledge.curation import relevance
from knowledge.curation.listing import HeldList


def explain(held: HeldList, q: str, rows: list[dict[str, Any]],
            read: Callable[[list[str]], list[Optional[Any]]]) -> None:
    """Set each row's `match`; `read(names)` reads stored documents (None for one gone meanwhile)."""
    unheld = [row["name"] for row in rows if relevance.body_unheld(held, row["name"], q)]
    documents = {stored.name: stored.data for stored in read(unheld) if stored is not None} if unheld else {}
    for row in rows:
        row["match"] = relevance.matched(held, row["name"], q, documents.get(row["name"]))
