"""Import from the studio page: the files an operator chose, sent as text in one request (at most
REQUEST_MAX_BYTES in FILES_MAX files), through the same ConceptImport the CLI and ImportFunction use,
the operator as the actor. A write imports one window (`start`, WINDOW_MAX concepts) so each request
ends well within the API's 29 s; names are checked across the whole request first. docs/studio.md, `POST /import`."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from knowledge.curation.documents import concept_by_hand
from knowledge.curation.imports import ConceptImport, Item, items_of
from knowledge.errors import InvalidImport
from knowledge.format.concept import utc_now
from shared.errors import InvalidConcept
from shared.httpapi import Operator

REQUEST_MAX_BYTES = 4 * 1024 * 1024  # file text in one request (UTF-8)
FILES_MAX = 1_000  # files in one request
WINDOW_MAX = 200  # concepts written by one request (two S3 writes each, eight in flight)
FILE_NAME = r"^[^/\\\x00-\x1f\x7f]{1,255}$"  # a label only: never an S3 key


class ImportFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=FILE_NAME, description="The file's name (its suffix says how it is read: .md one "
                                                     "concept, .csv/.yaml/.yml an FAQ, anything else ignored).")
    text: str = Field(max_length=REQUEST_MAX_BYTES, description="The file's text (UTF-8).")


class ImportBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    files: list[ImportFile] = Field(min_length=1, max_length=FILES_MAX,
                                    description=f"At most {FILES_MAX} files and {REQUEST_MAX_BYTES} bytes of text "
                                                "in all; larger imports go through `knowledge import` or "
                                                "ImportFunction.")
    dry_run: bool = Field(True, description="Report what would be created, changed or skipped; write nothing.")
    replace: bool = Field(False, description="An existing concept that says otherwise gets a new, restorable "
                                             "version (else it is skipped).")
    start: int = Field(0, ge=0, le=100_000, description="A write imports the concepts from this one on (in the "
                                                        "files' order, as the dry run lists them).")
    count: int = Field(WINDOW_MAX, ge=1, le=WINDOW_MAX, description="How many concepts a write imports from "
                                                                    "`start`; the dry run reports them all.")


class ImportItem(BaseModel):
    source: str = Field(description="The file's name.")
    line: Optional[int] = Field(description="The row's line (FAQ) or the problem's line (.md), when known.")
    name: Optional[str] = Field(description="The concept's name; null when none could be read.")
    outcome: str = Field(description="created, changed, unchanged, skipped or refused (a dry run says what "
                                     "would happen).")
    reason: Optional[str] = Field(description="Why it is skipped or refused.")


class ImportAnswer(BaseModel):
    dry_run: bool
    created: int
    changed: int
    unchanged: int
    skipped: int
    refused: int
    ignored: list[str] = Field(description="Files neither .md, .csv, .yaml nor .yml.")
    items: list[ImportItem] = Field(description="One per concept reported, in the files' order.")
    total: int = Field(description="Concepts in the files (valid or not).")
    start: int = Field(description="The first concept this answer reports.")
    next: Optional[int] = Field(description="A write: the `start` of the next window; null when done.")


def first_names(items: list[Item], now: datetime) -> list[Item]:
    """Each item whose concept's name an earlier item already has made a refused one (the first is imported)."""
    seen: dict[str, str] = {}
    out = []
    for item in items:
        if item.markdown is not None:
            try:
                name = concept_by_hand(item.markdown, now).name
            except InvalidConcept:
                name = None  # refused by the import itself, with its line
            if name is not None and name in seen:
                item = Item(item.source, item.line, problem=f"name: {name!r} is also {seen[name]}'s "
                                                            "(the first one is imported)", row=item.row)
            elif name is not None:
                seen[name] = item.where
        out.append(item)
    return out


class StudioImport:
    def __init__(self, concepts: ConceptImport):
        self._concepts = concepts

    def run(self, op: Operator, tenant: str, agent: str, body: ImportBody) -> dict[str, Any]:
        size = sum(len(f.text.encode("utf-8", "surrogatepass")) for f in body.files)
        if size > REQUEST_MAX_BYTES:
            raise InvalidImport(f"the files hold {size} bytes; one studio import takes at most {REQUEST_MAX_BYTES} "
                                "(import more with `knowledge import` or ImportFunction)")
        self._concepts.check_agent(op, tenant, agent)
        items, ignored = items_of([(f.name, f.text.encode("utf-8", "surrogatepass")) for f in body.files])
        if not items:
            raise InvalidImport("there is nothing to import in these files (.md, .csv, .yaml or .yml)")
        items = first_names(items, utc_now())
        start = 0 if body.dry_run else min(body.start, len(items))
        window = items if body.dry_run else items[start:start + body.count]
        report = self._concepts.run(op, tenant, agent, window, dry_run=body.dry_run, replace=body.replace,
                                    provenance="policy", ignored=ignored)
        end = start + len(window)
        return {**report.as_dict(), "total": len(items), "start": start,
                "next": end if not body.dry_run and end < len(items) else None}
