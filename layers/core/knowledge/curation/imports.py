"""Import: concept files and FAQs (knowledge.curation.faq) into an agent, each concept through the studio's
own create and save, the importing operator as the actor; each comes out created, changed, unchanged,
skipped or refused (with its file, line and why), one refused never stopping the rest, and an operator's
removed words are never undone. docs/contract.md, "Import"."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator

from knowledge.curation.documents import concept_by_hand
from knowledge.curation.faq import RowProblem, read_faq
from knowledge.curation.scoped import ScopedRequest
from knowledge.curation.studio import Studio
from knowledge.errors import FaqUnreadable, InvalidImport, NameTaken, OutsideImportPrefix
from knowledge.format.concept import PROVENANCES, TYPES, Concept, utc_now
from knowledge.format.learned_words import REMOVED_MAX, fold_word
from knowledge.learning.policy_review import POLICIES_REVIEWED, REVIEWED_MAX
from knowledge.learning.word_prompt import BATCH_MAX
from knowledge.store.concepts import ConceptStore, StoredConcept
from shared import awscall
from shared.errors import Conflict, InvalidConcept, KnowledgeError, UnknownAgent
from shared.httpapi import OPERATOR_ID, Operator
from shared.validation import validate_object

CREATED, CHANGED, UNCHANGED, SKIPPED, REFUSED = "created", "changed", "unchanged", "skipped", "refused"
OUTCOMES = (CREATED, CHANGED, UNCHANGED, SKIPPED, REFUSED)
CONCEPT_SUFFIXES, FAQ_SUFFIXES = (".md",), {".csv": "csv", ".yaml": "yaml", ".yml": "yaml"}
FILE_MAX_BYTES = 32 * 1024 * 1024  # an FAQ of 10,000 long answers fits
CONCEPTS_MAX = 10_000  # concepts one import may hold
KEEP = "file"  # provenance as each .md says (FAQ rows: policy)
WORKERS = 8  # writes in flight (each is a conditional PUT and its journal entry)
Progress = Callable[[int, int], None]
# A file as read: its bytes, or its size when that is over FILE_MAX_BYTES (never read).
File = tuple[str, "bytes | int"]


@dataclass(frozen=True)
class Item:
    """One concept to import: its document, or why none could be read; `source` is its file's name and
    `line` where its row starts (FAQ) or where its problem is (.md)."""

    source: str
    line: int | None = None
    markdown: str | None = None
    problem: str | None = None
    row: bool = False  # an FAQ row: a problem is reported at the row's line, not the document's
    legacy: str | None = None  # an FAQ row: the document it made before answers led the block

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}" if self.line else self.source


@dataclass(frozen=True)
class Outcome:
    source: str
    line: int | None
    name: str | None
    outcome: str
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "line": self.line, "name": self.name, "outcome": self.outcome,
                "reason": self.reason}


@dataclass
class ImportReport:
    dry_run: bool
    outcomes: list[Outcome] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # files neither .md nor an FAQ
    model_calls: int = 0  # at most, off the request path: what the concepts written queue (model_calls_at_most)

    def count(self, outcome: str) -> int:
        return sum(1 for item in self.outcomes if item.outcome == outcome)

    @property
    def refused(self) -> int:
        return self.count(REFUSED)

    def summary(self) -> str:
        verbs = ({CREATED: "would create", CHANGED: "would change", UNCHANGED: "unchanged",
                  SKIPPED: "would skip", REFUSED: "refused"} if self.dry_run else
                 {CREATED: "created", CHANGED: "changed", UNCHANGED: "unchanged", SKIPPED: "skipped",
                  REFUSED: "refused"})
        parts = [f"{verbs[outcome]} {self.count(outcome)}" for outcome in OUTCOMES]
        ignored = f"; ignored {len(self.ignored)} file(s) neither .md, .csv, .yaml nor .yml" if self.ignored else ""
        calls = (f"; at most {self.model_calls} model call(s) {'would be' if self.dry_run else 'were'} queued "
                 "(policy reviews, word proposals)") if self.model_calls else ""
        return ("dry run: " if self.dry_run else "import: ") + ", ".join(parts) + ignored + calls

    def as_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, **{outcome: self.count(outcome) for outcome in OUTCOMES},
                "ignored": self.ignored, "model_calls": self.model_calls,
                "items": [item.as_dict() for item in self.outcomes]}


def model_calls_at_most(concepts: list[Concept], agent: str, *, queued: bool) -> int:
    """What writing `concepts` costs in model calls, at most, off the request path: a policy's review judges
    up to REVIEWED_MAX observed concepts and POLICIES_REVIEWED other policies (per agent that recalls a
    shared one: counted once here), and the concepts' words are asked BATCH_MAX concepts to a call (where the
    agent's learn_from lets it; the shared scope's by the deployment's utility model). Nothing is queued
    without a review queue."""
    if not queued:
        return 0
    reviews = sum(REVIEWED_MAX + POLICIES_REVIEWED for c in concepts if c.provenance == "policy")
    return reviews + -(-len(concepts) // BATCH_MAX)


# ------------------------------------------------------------ reading files

def items_of(files: list[File], *, default_type: str = "fact") -> tuple[list[Item], list[str]]:
    """The concepts in (file name, bytes) pairs, in order, and the names of the files ignored."""
    items: list[Item] = []
    ignored: list[str] = []
    for label, data in files:
        suffix = os.path.splitext(label)[1].lower()
        if os.path.basename(label) == "vocabulary.yaml":  # an export's vocabulary (`knowledge import` saves it)
            ignored.append(label)
        elif isinstance(data, int):
            items.append(Item(label, problem=f"is {data} bytes; a file may hold at most {FILE_MAX_BYTES}"))
        elif suffix in CONCEPT_SUFFIXES:
            try:
                items.append(Item(label, markdown=data.decode("utf-8")))
            except UnicodeDecodeError as exc:
                items.append(Item(label, problem=f"document: is not UTF-8 text (byte {exc.start})"))
        elif suffix in FAQ_SUFFIXES:
            try:
                rows = read_faq(data, FAQ_SUFFIXES[suffix], default_type)
            except FaqUnreadable as exc:
                items.append(Item(label, exc.line, problem=exc.reason))
                continue
            for row in rows:
                if isinstance(row, RowProblem):
                    items.append(Item(label, row.line, problem=row.reason, row=True))
                else:
                    items.append(Item(label, row.line, markdown=row.markdown, row=True, legacy=row.legacy))
        else:
            ignored.append(label)
    if len(items) > CONCEPTS_MAX:
        raise InvalidImport(f"the import holds {len(items)} concepts; one import takes at most {CONCEPTS_MAX}")
    return items, ignored


def local_files(path: str | os.PathLike[str]) -> list[File]:
    """A file, or the files directly in a folder (by name; hidden ones left out), as (name, bytes)."""
    root = Path(path)
    try:
        if root.is_dir():
            paths = sorted(p for p in root.iterdir() if p.is_file() and not p.name.startswith("."))
        elif root.is_file():
            paths = [root]
        else:
            raise InvalidImport(f"{root} is neither a file nor a folder")
        out = []
        for item in paths:
            size = item.stat().st_size
            out.append((item.name, size if size > FILE_MAX_BYTES else item.read_bytes()))
        return out
    except OSError as exc:
        raise InvalidImport(f"cannot read {root}: {exc.strerror or exc}") from None


# ------------------------------------------------------------ importing

@dataclass
class _Planned:
    item: Item
    concept: Concept | None = None
    current: StoredConcept | None = None
    outcome: Outcome | None = None
    legacy: Concept | None = None  # an FAQ row as an import before answers led the block wrote it


def _problem(item: Item, exc: InvalidConcept) -> tuple[int | None, str]:
    """Where an invalid document is wrong: a row's own line (its document is ours), a file's first error's."""
    if item.row:
        return item.line, "; ".join(f"{e.field}: {e.message}" for e in exc.errors)
    return next((e.line for e in exc.errors if e.line), None), str(exc)


def _with_provenance(concept: Concept, provenance: str) -> Concept:
    if provenance == KEEP:
        return concept
    # A concept retired where it was exported is recalled again as the human's choice here.
    return concept.replace(provenance=provenance, retired_by=concept.retired_by if provenance == "observed" else None)


def _legacy(item: Item, now: datetime, provenance: str) -> Concept | None:
    """An FAQ row's concept as an import before answers led the block wrote it (None: not a row, or that
    document would not be valid now)."""
    if item.legacy is None:
        return None
    try:
        return _with_provenance(concept_by_hand(item.legacy, now), provenance)
    except InvalidConcept:
        return None


def _learning_kept(stored: Concept, concept: Concept) -> Concept:
    """The imported concept with the stored one's learning kept: its removed words are both's (an export
    taken before an operator removed a word never brings the word back), and none of them is learned; an
    imported document that says nothing of learned words (an FAQ row, an export from before them) keeps
    the stored concept's learned words. Importing is no operator's removal, nor an undoing of one."""
    # The stored removals first, in their order, then the import's others (newest last, as an edit adds them).
    union: dict[str, str] = {}
    for word in (*stored.removed_words, *concept.removed_words):
        union.setdefault(fold_word(word), word)
    removed = tuple(union.values())
    learned = concept.learned_words if concept.learned_words or concept.removed_words else stored.learned_words
    return concept.replace(learned_words=tuple(e for e in learned if fold_word(e.word) not in union),
                           removed_words=removed[-REMOVED_MAX:])


def _same(current: StoredConcept, concept: Concept) -> bool:
    """What is stored says what the import says (when it was written aside)."""
    try:
        stored = current.concept
    except InvalidConcept:
        return False
    imported = _learning_kept(stored, concept)
    return stored.replace(created_at=concept.created_at, updated_at=concept.updated_at) == imported


class ConceptImport:
    """Imports items into one agent through the studio's create and save.

    `reviews` (learning's PolicyReviewQueue, or None: no review) queues each policy concept written
    for its policy review, as a studio save of a policy queues it; a review that could not be queued
    is counted on its counters (PolicyReviewNotQueued) and the import goes on."""

    def __init__(self, studio: Studio, store: ConceptStore, *, workers: int = WORKERS, reviews: Any = None):
        self._studio, self._store, self._workers = studio, store, max(1, workers)
        self.reviews = reviews

    def run(self, op: Operator, tenant: str, agent: str, items: list[Item], *, dry_run: bool = False,
            replace: bool = False, provenance: str = "policy", progress: Progress | None = None,
            ignored: list[str] | None = None) -> ImportReport:
        if provenance not in (*PROVENANCES, KEEP):
            raise InvalidImport(f"provenance must be one of {', '.join((*PROVENANCES, KEEP))}")
        self.check_agent(op, tenant, agent)
        planned = self._prepare(items, provenance)
        self._compare(tenant, agent, planned, replace)
        total, done = len(planned), sum(1 for p in planned if p.outcome is not None)
        if progress:
            progress(done, total)
        pending = [p for p in planned if p.outcome is None]
        calls = model_calls_at_most([p.concept for p in pending if p.concept is not None], agent,
                                    queued=self.reviews is not None)
        if dry_run:
            for p in pending:
                p.outcome = self._outcome(p, CREATED if p.current is None else CHANGED)
        else:
            written: list[str] = []
            with ThreadPoolExecutor(max_workers=self._workers) as pool:
                outcomes = pool.map(lambda p: self._write(op, tenant, agent, p, written), pending)
                for p, outcome in zip(pending, outcomes):
                    p.outcome = outcome
                    done += 1
                    if progress:
                        progress(done, total)
            self._queue_reviews(tenant, agent, written)
        return ImportReport(dry_run, [p.outcome for p in planned if p.outcome is not None], list(ignored or []),
                            model_calls=calls)

    def check_agent(self, op: Operator, tenant: str, agent: str) -> None:
        """Forbidden for a tenant the operator is not in; UnknownAgent for an agent with neither a
        knowledge.yaml nor any concept (as the studio's create refuses it)."""
        op.check(tenant)
        if not self._store.agent_exists(tenant, agent):
            raise UnknownAgent(f"there is no agent {agent!r} in tenant {tenant!r}: it has neither a knowledge.yaml "
                               "nor any concept (save its knowledge.yaml first)")

    def _prepare(self, items: list[Item], provenance: str) -> list[_Planned]:
        now, seen = utc_now(), {}
        planned = []
        for item in items:
            p = _Planned(item)
            planned.append(p)
            if item.markdown is None:
                p.outcome = Outcome(item.source, item.line, None, REFUSED, item.problem)
                continue
            try:
                concept = concept_by_hand(item.markdown, now)
            except InvalidConcept as exc:
                line, reason = _problem(item, exc)
                p.outcome = Outcome(item.source, line, None, REFUSED, reason)
                continue
            concept = _with_provenance(concept, provenance)
            p.legacy = _legacy(item, now, provenance)
            if concept.name in seen:
                p.outcome = Outcome(item.source, item.line, concept.name, REFUSED,
                                    f"name: {concept.name!r} is also {seen[concept.name]}'s (the first one is imported)")
                continue
            seen[concept.name] = item.where
            p.concept = concept
        return planned

    def _compare(self, tenant: str, agent: str, planned: list[_Planned], replace: bool) -> None:
        """Read what is stored under the names already taken (one listing, then those only)."""
        taken = {entry.name for entry in self._store.list(tenant, agent)}
        ready = [p for p in planned if p.outcome is None and p.concept is not None and p.concept.name in taken]
        for p, current in zip(ready, self._store.fetch_many(tenant, agent, [p.concept.name for p in ready])):
            p.current = current
            if current is None:
                continue  # deleted since the listing: created
            if _same(current, p.concept):
                p.outcome = self._outcome(p, UNCHANGED)
            elif p.legacy is not None and _same(current, p.legacy):
                continue  # this row as an earlier import wrote it: brought up to date (changed), replace or not
            elif not replace:
                p.outcome = self._outcome(p, SKIPPED, "a concept of this name exists and says otherwise "
                                                      "(--replace writes a new, restorable version)")

    def _review(self, written: list[str], saved: dict[str, Any]) -> None:
        """What was just written, kept for its policy review and words job, queued in batches once the
        import has written all (list.append is atomic: the writers run in threads)."""
        written.append(saved["markdown"])

    def _queue_reviews(self, tenant: str, agent: str, written: list[str]) -> None:
        """The reviews and words jobs of what the import wrote, ten to a SendMessageBatch; one the queue
        refused is counted (PolicyReviewNotQueued) and its concept stands."""
        if self.reviews is None or not written:
            return
        try:
            self.reviews.saved_many(tenant, agent, written)
        except Exception:  # noqa: BLE001 - the concepts are written; only their reviews are lost, and counted
            self.reviews.counters.count("PolicyReviewNotQueued", len(written))

    @staticmethod
    def _outcome(p: _Planned, outcome: str, reason: str | None = None) -> Outcome:
        return Outcome(p.item.source, p.item.line, p.concept.name if p.concept else None, outcome, reason)

    def _write(self, op: Operator, tenant: str, agent: str, p: _Planned, written: list[str]) -> Outcome:
        concept = p.concept
        assert concept is not None
        try:
            if p.current is None:
                self._review(written, self._studio.create(op, tenant, agent, concept.render()))
                return self._outcome(p, CREATED)
            try:
                stored = p.current.concept
                concept, created = _learning_kept(stored, concept), stored.created_at
            except InvalidConcept:
                created = concept.created_at
            edit = concept.replace(created_at=min(created, concept.created_at))
            self._review(written, self._studio.save(op, tenant, agent, concept.name, edit.render(),
                                                    p.current.etag))
            return self._outcome(p, CHANGED)
        except NameTaken:
            return self._outcome(p, SKIPPED, "another writer created this name while the import ran")
        except Conflict:
            return self._outcome(p, REFUSED, "the concept changed while the import ran: import again")
        except InvalidConcept as exc:
            return self._outcome(p, REFUSED, _problem(p.item, exc)[1])
        except KnowledgeError as exc:  # the store failed this one write: the rest goes on
            return self._outcome(p, REFUSED, f"{exc.code}: {exc}")


# ------------------------------------------------------------ the Lambda request

IMPORTS = "imports"  # the folder under {tenant}/{agent}/ of SESSIONS_BUCKET an import reads from
_FOLDER = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")


class ImportRequest(ScopedRequest):
    """The ImportFunction event: the agent (or `"shared": true`, the tenant's shared concepts), the
    operator importing, and the files under one prefix of SESSIONS_BUCKET that lies within
    {tenant}/{agent}/imports/ ({tenant}/_shared/imports/ for the shared concepts)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    operator: str = Field(description="the importing operator's id: the versions' actor is operator:<id>")
    prefix: str = Field(description="{tenant}/{agent}/imports/{label}/: the files to import (not below)")
    bucket: str | None = Field(default=None, description="SESSIONS_BUCKET, the only bucket an import reads")
    dry_run: bool = False
    replace: bool = False
    provenance: Literal["policy", "observed", "file"] = "policy"
    type: Literal[TYPES] = "fact"  # type: ignore[valid-type]

    @field_validator("operator")
    @classmethod
    def _operator(cls, value: str) -> str:
        if not OPERATOR_ID.fullmatch(value):
            raise ValueError("must be an operator id (ASCII letters, digits, ._@+:-; at most 128)")
        return value

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        folders = value.rstrip("/").split("/")
        if len(value) > 512 or not all(_FOLDER.fullmatch(part) for part in folders) or ".." in folders:
            raise ValueError("must be folder names of letters, digits, '.', '_', '-' joined by '/' (no '..')")
        return "/".join(folders) + "/"

    def check_within(self, bucket: str) -> None:
        """OutsideImportPrefix unless the prefix is this agent's imports folder (or one below it) of `bucket`."""
        if self.bucket is not None and self.bucket != bucket:
            raise OutsideImportPrefix(f"an import reads only the sessions bucket ({bucket}), not {self.bucket!r}")
        allowed = f"{self.tenant}/{self.folder}/{IMPORTS}/"
        if not self.prefix.startswith(allowed) or self.prefix == allowed:
            raise OutsideImportPrefix(f"the prefix must be a folder under {allowed} (e.g. {allowed}faq/)")


def parse_import_request(event: Any) -> ImportRequest:
    return validate_object(ImportRequest, event, InvalidImport, "the import event")


class S3Files:
    """The files directly under a prefix of a bucket, as (name, bytes), by key."""

    def __init__(self, s3: Any, bucket: str):
        self._s3, self.bucket = s3, bucket

    def read(self, prefix: str) -> list[File]:
        listed = []
        for page in awscall.pages(self._s3, "list_objects_v2", Bucket=self.bucket, Prefix=prefix, Delimiter="/"):
            listed.extend(page.get("Contents", []))
        out = []
        for item in sorted(listed, key=lambda entry: entry["Key"]):
            name = item["Key"][len(prefix):]
            if not name or name.startswith("."):
                continue
            if item["Size"] > FILE_MAX_BYTES:
                out.append((name, int(item["Size"])))
                continue
            out.append((name, awscall.call(self._s3, "get_object", Bucket=self.bucket, Key=item["Key"],
                                           read_body=True)["Body"]))
        return out


class Importer:
    """ImportFunction's service: one request, its files read from SESSIONS_BUCKET, imported into its agent."""

    def __init__(self, concepts: ConceptImport, files: S3Files):
        self._concepts, self._files = concepts, files
        self.reviews = concepts.reviews  # its counters are the handler's to flush

    def run(self, event: Any, progress: Progress | None = None) -> tuple[ImportRequest, ImportReport]:
        request = parse_import_request(event)
        request.check_within(self._files.bucket)
        op = Operator(request.operator, frozenset({request.tenant}))
        self._concepts.check_agent(op, request.tenant, request.scope)
        items, ignored = items_of(self._files.read(request.prefix), default_type=request.type)
        if not items:
            raise InvalidImport(f"there is nothing to import under {request.prefix} (.md, .csv, .yaml or .yml files)")
        report = self._concepts.run(op, request.tenant, request.scope, items, dry_run=request.dry_run,
                                    replace=request.replace, provenance=request.provenance, progress=progress,
                                    ignored=ignored)
        return request, report

