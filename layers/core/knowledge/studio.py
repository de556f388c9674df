"""The studio's operations: what an operator may see and do with an agent's concepts.

Every call names the operator (from the verified token) and is checked against the tenants
the operator belongs to before the store is touched. Saves are compare-and-swap on the
ETag the page read; a stale save is a Conflict carrying the newer version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Optional, Protocol

from . import pii
from .adapters import TurnArchive
from .claims import related_waiting
from .concept import Concept, format_timestamp, parse, utc_now
from .errors import AccessDenied, Conflict, FieldError, InvalidConcept, InvalidName, KnowledgeError, NotFound
from .evidence import EvidenceLink
from .names import check_slug, is_slug
from .store import ConceptStore, ConceptSummary, StoredConcept
from .turn import InvalidTurn

if TYPE_CHECKING:  # pragma: no cover
    from .turn import Turn

MARKDOWN_MAX_BYTES = 128 * 1024
# The claim that lists an operator's tenants (Cognito groups). A group whose name equals a
# tenant slug exactly grants that tenant; other groups are ignored.
TENANTS_CLAIM = "cognito:groups"
_CONTROL_IN_PATH = re.compile(r"[\x00-\x1f\x7f-\x9f]|%(?:[01][0-9a-fA-F]|7[fF]|[cC]2%[89][0-9a-fA-F])")
_OPERATOR_ID = re.compile(r"[A-Za-z0-9._@+:-]{1,128}")
HAND_DEFAULTS = {"provenance": "policy", "confidence": 0.95, "sources": [], "occurrences": 1}


class Unauthorized(KnowledgeError):
    code = "unauthorized"


class Forbidden(KnowledgeError):
    code = "forbidden"


class PreconditionRequired(KnowledgeError):
    code = "precondition_required"


class NoEvidence(NotFound):
    code = "no_evidence"


class ArchiveNotConfigured(KnowledgeError):
    code = "archive_not_configured"


class Archive(Protocol):
    """Where archived turns are read (adapters.TurnArchive)."""

    def get(self, key: str) -> "Turn": ...


@dataclass(frozen=True)
class Operator:
    id: str
    tenants: frozenset[str]

    @property
    def actor(self) -> str:
        return f"operator:{self.id}"

    def check(self, tenant: str) -> None:
        check_slug("tenant", tenant)
        if tenant not in self.tenants:
            raise Forbidden(f"operator is not a member of tenant {tenant!r}")


def _claim_list(value: Any) -> list[str]:
    """Cognito groups as a JSON array, or as API Gateway's JWT authorizer renders an array
    claim in an HTTP API event: "[a b c]". Anything else grants nothing: a group name is
    never split further, so `support,tenant-b` or `[x]tenant-b` cannot reach tenant-b."""
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    if isinstance(value, str) and len(value) >= 2 and value[0] == "[" and value[-1] == "]":
        return [part for part in value[1:-1].split(" ") if part]
    return []


def check_path(path: Any) -> None:
    """Refuse a request path holding a control character, decoded or percent-encoded: such a
    path is never routed (a router's `$` would match before a trailing newline)."""
    if not isinstance(path, str) or _CONTROL_IN_PATH.search(path):
        raise InvalidName("path", "must not contain control characters")


def operator_from_claims(claims: Optional[dict[str, Any]]) -> Operator:
    """The operator a verified JWT describes; Unauthorized when there is none."""
    if not claims or not isinstance(claims.get("sub"), str) or not _OPERATOR_ID.fullmatch(claims["sub"]):
        raise Unauthorized("sign in: the request carries no valid token")
    tenants = frozenset(group for group in _claim_list(claims.get(TENANTS_CLAIM)) if is_slug(group))
    return Operator(claims["sub"], tenants)


def _related_in(data: bytes) -> int:
    try:
        return related_waiting(parse(data).body)
    except InvalidConcept:
        return 0


def _stored(item: StoredConcept) -> dict[str, Any]:
    # A stored file that is not UTF-8 is still shown (its bad bytes as U+FFFD) so an operator can fix it.
    return {"name": item.name, "markdown": item.data.decode("utf-8", "replace"), "etag": item.etag,
            "version_id": item.version_id, "related": _related_in(item.data)}


def summary_dict(summary: Any) -> dict[str, Any]:
    return {"name": summary.name, "type": summary.type, "provenance": summary.provenance,
            "confidence": summary.confidence, "occurrences": summary.occurrences,
            "updated_at": format_timestamp(summary.updated_at) if summary.updated_at else None,
            "conflict": summary.conflict, "related": summary.related, "etag": summary.etag,
            "problem": summary.problem}


def _stamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def excerpt(content: str, start: int, end: int) -> str:
    """content[start:end] as an operator may see it: personal data found in the whole message
    (whose context a span alone can lack) is replaced where it overlaps, then the span again."""
    out, at = [], start
    for finding in pii.find(content):
        if finding.end <= at or finding.start >= end:
            continue
        out.append(content[at:max(finding.start, at)])
        out.append(f"[{finding.kind}]")
        at = min(finding.end, end)
    out.append(content[at:end])
    return pii.redact("".join(out)).text


def _text(markdown: str) -> str:
    if len(markdown) > MARKDOWN_MAX_BYTES or len(markdown.encode("utf-8", "surrogatepass")) > MARKDOWN_MAX_BYTES:
        raise InvalidConcept([FieldError("document", f"must be at most {MARKDOWN_MAX_BYTES} bytes")])
    return markdown


def concept_by_hand(markdown: str, now: datetime) -> Concept:
    """A concept an operator writes from scratch: name, description, type and body are theirs;
    missing engine fields default to a curated concept (provenance policy); both stamps are now."""
    stamp = format_timestamp(now)
    return parse(_text(markdown), defaults=HAND_DEFAULTS, overrides={"created_at": stamp, "updated_at": stamp})


class Studio:
    def __init__(self, store: ConceptStore, archive: Optional[Archive] = None):
        self._store = store
        self._archive = archive
        # Per agent, the rows this container has read: a list re-reads only what changed.
        self._known: dict[tuple[str, str], dict[str, ConceptSummary]] = {}  # per agent, kept per container

    # ------------------------------------------------------------ reading
    def list(self, op: Operator, tenant: str, agent: str, *, status: Optional[str] = None,
             type: Optional[str] = None, q: Optional[str] = None) -> list[dict[str, Any]]:
        op.check(tenant)
        rows = self._store.summaries(tenant, agent, self._known.setdefault((tenant, agent), {}))
        if status == "conflict":
            rows = [r for r in rows if r.conflict]
        elif status == "related":
            rows = [r for r in rows if r.related]
        if type:
            rows = [r for r in rows if r.type == type]
        if q:
            needle = q.casefold()
            rows = [r for r in rows if needle in r.name.casefold()]
        return [summary_dict(r) for r in rows]

    def get(self, op: Operator, tenant: str, agent: str, name: str) -> dict[str, Any]:
        op.check(tenant)
        return _stored(self._store.get(tenant, agent, name))

    def versions(self, op: Operator, tenant: str, agent: str, name: str) -> list[dict[str, Any]]:
        """The history; a version written from a sighting names where it was learned (session
        and turn, never the quote)."""
        op.check(tenant)
        return [{"version_id": v.version_id, "time": _stamp(v.time), "actor": v.actor,
                 "reason": v.reason, "size": v.size, "deleted": v.deleted, "latest": v.latest,
                 "evidence": None if v.evidence is None else {
                     "session_id": v.evidence.session_id, "turn_id": v.evidence.turn_id,
                     "completed_at": _stamp(v.evidence.completed_at)}}
                for v in self._store.versions(tenant, agent, name)]

    def evidence(self, op: Operator, tenant: str, agent: str, name: str, version_id: str) -> dict[str, Any]:
        """The quote a version was learned from, read from the archived turn now and redacted;
        "expired" once the turn is gone (retention, purge) or the link no longer fits it."""
        op.check(tenant)
        link = self._store.version_info(tenant, agent, name, version_id).evidence
        if link is None:
            raise NoEvidence(f"version {version_id!r} of concept {name!r} was not learned from a sighting")
        if self._archive is None:
            raise ArchiveNotConfigured("the studio has no session archive to read evidence from (SESSIONS_BUCKET)")
        quote = self._quote(tenant, agent, link)
        return {"session_id": link.session_id, "turn_id": link.turn_id, "completed_at": _stamp(link.completed_at),
                "status": "expired" if quote is None else "available", "excerpt": quote}

    def _quote(self, tenant: str, agent: str, link: EvidenceLink) -> Optional[str]:
        key = TurnArchive.key_for(tenant, agent, link.completed_at, link.session_id, link.turn_id)
        try:
            turn = self._archive.get(key)  # type: ignore[union-attr]  # checked by the caller
        except (NotFound, InvalidTurn, AccessDenied):
            # Without s3:ListBucket (least privilege) S3 answers a missing key 403: gone all the same.
            return None
        if not (0 <= link.message < len(turn.messages)) or link.end > len(turn.messages[link.message].content):
            return None
        return excerpt(turn.messages[link.message].content, link.start, link.end)

    def version(self, op: Operator, tenant: str, agent: str, name: str, version_id: str) -> dict[str, Any]:
        op.check(tenant)
        return _stored(self._store.read_version(tenant, agent, name, version_id))

    def deleted(self, op: Operator, tenant: str, agent: str) -> list[dict[str, Any]]:
        op.check(tenant)
        return [{"name": d.name, "deleted_at": d.deleted_at.isoformat().replace("+00:00", "Z"),
                 "version_id": d.marker_version_id} for d in self._store.list_deleted(tenant, agent)]

    # ------------------------------------------------------------ writing
    def save(self, op: Operator, tenant: str, agent: str, name: str, markdown: str,
             if_match: Optional[str]) -> dict[str, Any]:
        """An operator's edit of the whole document; `updated_at` is stamped now."""
        op.check(tenant)
        check_slug("name", name)
        if not if_match:
            raise PreconditionRequired("saving needs If-Match: the ETag of the version being edited")
        concept = parse(_text(markdown))
        if concept.name != name:
            raise InvalidConcept([FieldError("name", f"must stay {name!r} (rename = create a new concept, "
                                                     "then delete this one)", 2)])
        concept = concept.replace(updated_at=max(utc_now(), concept.created_at))
        # Carry the engine's record of applied sightings forward, so that a sighting whose
        # queue message comes back after this edit is still recognised (and counted once).
        current = self._store.find(tenant, agent, name)
        if current is not None and current.etag != if_match:
            raise Conflict(f"concept {name!r} changed since it was read", current)
        return _stored(self._store.replace(tenant, agent, concept, if_match=if_match, actor=op.actor,
                                           reason="edit", sightings=current.sightings if current else ()))

    def create(self, op: Operator, tenant: str, agent: str, markdown: str) -> dict[str, Any]:
        op.check(tenant)
        check_slug("agent", agent)
        concept = concept_by_hand(markdown, utc_now())
        return _stored(self._store.create(tenant, agent, concept, actor=op.actor, reason="created"))

    def delete(self, op: Operator, tenant: str, agent: str, name: str) -> dict[str, Any]:
        op.check(tenant)
        return {"name": name, "version_id": self._store.delete(tenant, agent, name, actor=op.actor)}

    def undelete(self, op: Operator, tenant: str, agent: str, name: str) -> dict[str, Any]:
        op.check(tenant)
        return _stored(self._store.undelete(tenant, agent, name, actor=op.actor))

    def restore(self, op: Operator, tenant: str, agent: str, name: str, version_id: str,
                if_match: Optional[str]) -> dict[str, Any]:
        op.check(tenant)
        return _stored(self._store.restore(tenant, agent, name, version_id, actor=op.actor, if_match=if_match))

    # ------------------------------------------------------------ the knowledge: block
    def config(self, op: Operator, tenant: str, agent: str) -> dict[str, Any]:
        op.check(tenant)
        stored = self._store.get_config(tenant, agent)
        if stored is None:
            return {"yaml": None, "etag": None, "config": None}
        return {"yaml": stored.text, "etag": stored.etag,
                "config": stored.config.model_dump(mode="json") if stored.config else None}

    def save_config(self, op: Operator, tenant: str, agent: str, text: str,
                    if_match: Optional[str]) -> dict[str, Any]:
        op.check(tenant)
        stored = self._store.put_config(tenant, agent, text, actor=op.actor, if_match=if_match)
        return {"yaml": stored.text, "etag": stored.etag,
                "config": stored.config.model_dump(mode="json") if stored.config else None}


def field_errors(exc: InvalidConcept) -> list[dict[str, Any]]:
    return [{"field": e.field, "message": e.message, "line": e.line} for e in exc.errors]

