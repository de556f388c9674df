"""Deleting everything of a tenant in both buckets (LGPD), on shared.purge's sweeper, and knowledge's
share of forgetting one customer (CustomerShare: the customer's dead letters on both queues, the
concepts that still cite the customer's sessions, and the words they taught: knowledge.operation.unlearn).

The other bounded context (Facts) adds its share of a tenant through `TenantPart`, and calls
knowledge's share of a customer through the same kind of seam, so this module never imports it.
"""

from __future__ import annotations

from typing import Any, Callable, Literal, Mapping, Optional, Protocol, Sequence

from pydantic import BaseModel, ConfigDict, Field

from knowledge.errors import NotConfirmed
from knowledge.operation.redrive import forget_dead_letters
from knowledge.operation.unlearn import ForgetWords
from knowledge.store.concepts import ConceptStore
from knowledge.store.keys import SHARED, concept_key
from knowledge.store.learning_ledger import WordLedger, customer_teacher
from shared import pii
from shared.errors import Conflict, InvalidConcept, InvalidRequest, NotFound
from shared.names import Slug, check_slug
from shared.purge import Bucket, Classifier, PurgeReport, Sweeper, run
from shared.validation import validate_object


# ------------------------------------------------------------------ a tenant's data


class TenantPart(Protocol):
    """Another bounded context's share of a tenant (Facts: memory cells, session states, proposals)."""

    def prefixes(self, tenant: str) -> Sequence[tuple[Bucket, str]]:
        """Prefixes of its own, beyond knowledge's (each ends in '/')."""

    def kind(self, bucket: Bucket, key: str) -> Optional[str]:
        """The kind of one of its keys; None for a key it does not write."""


def knowledge_kind(bucket: Bucket, key: str) -> Optional[str]:
    """The kind of a key knowledge writes (docs/contract.md, "Storage layout")."""
    parts = key.split("/")
    if bucket == "knowledge":
        if parts[0] == "journal":
            return "journal_entries"
        # tenants/{tenant}/shared/…: the tenant's shared scope, laid out as an agent's is
        if parts[0] not in ("agents", "tenants") or len(parts) < 4 or (parts[0] == "tenants" and parts[2] != "shared"):
            return None
        rest = "/".join(parts[3:])
        for start, kind in (("concepts/", "concepts"), ("deletions/", "deletion_records"),
                            ("concepts-index/changes/", "journal_entries"), ("reviews/", "review_states"),
                            ("waiting/", "waiting_pairs"), ("learned-words/", "learned_word_teachers")):
            if rest.startswith(start):
                return kind
        return {"knowledge.yaml": "configs", "concepts-index/snapshot": "snapshots"}.get(rest)
    if len(parts) >= 3 and parts[1] == "_usage":
        return "usage_counters"
    if len(parts) >= 4:
        return {"turns": "archived_turns", "sightings": "sighting_markers", "extracted": "extracted_markers",
                "exports": "exports", "learning": "learning_ledger", "saves": "saved_insights"}.get(parts[2])
    return None


def tenant_prefixes(tenant: str) -> list[tuple[Bucket, str]]:
    """Knowledge's prefixes of one tenant: its agents (concepts, deletion records, knowledge.yaml,
    snapshot, per-operator review state), its shared scope (tenants/{tenant}/), its change journals
    (the shared one's included), and all it keeps in SESSIONS_BUCKET."""
    tenant = check_slug("tenant", tenant)
    return [("sessions", f"{tenant}/"), ("knowledge", f"agents/{tenant}/"), ("knowledge", f"tenants/{tenant}/"),
            ("knowledge", f"journal/{tenant}/")]


class TenantRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    action: Literal["delete_tenant_data"] = "delete_tenant_data"
    tenant: Slug
    confirm: str = Field(description="the tenant's name typed again")
    dry_run: bool = False


def parse_tenant_request(event: Any) -> TenantRequest:
    request = validate_object(TenantRequest, event, InvalidRequest, "the delete_tenant_data request")
    check_confirmed(request.tenant, request.confirm)
    return request


def check_confirmed(tenant: str, confirm: Optional[str]) -> None:
    if confirm != tenant:
        raise NotConfirmed("confirm: type the tenant's name again, exactly; nothing was deleted")


def delete_tenant_data(s3: Any, *, knowledge_bucket: str, sessions_bucket: str, tenant: str, confirm: str,
                       parts: Sequence[TenantPart] = (), dry_run: bool = False,
                       keep_going: Callable[[], bool] = lambda: True) -> PurgeReport:
    """Every version and delete marker of the tenant in both buckets (knowledge's prefixes and each
    part's); the archive first, so a purge that stops midway has removed the conversations."""
    tenant = check_slug("tenant", tenant)
    check_confirmed(tenant, confirm)
    buckets = {"knowledge": knowledge_bucket, "sessions": sessions_bucket}
    targets = tenant_prefixes(tenant) + [target for part in parts for target in part.prefixes(tenant)]

    def classifier(bucket: Bucket) -> Classifier:
        def kind(key: str) -> Optional[str]:
            return next((k for k in (part.kind(bucket, key) for part in parts) if k), None) or \
                knowledge_kind(bucket, key)
        return kind

    report = PurgeReport(dry_run=dry_run)
    sweeper = Sweeper(s3, report, keep_going)

    def work() -> None:
        for bucket, prefix in targets:
            sweeper.prefix(buckets[bucket], prefix, classifier(bucket))

    return run(report, work)


class TenantPurge:
    """PurgeFunction's delete_tenant_data: a request parsed, then everything of the tenant deleted,
    with the other bounded contexts' shares (`parts`)."""

    def __init__(self, s3: Any, *, knowledge_bucket: str, sessions_bucket: str, parts: Sequence[TenantPart] = ()):
        self._s3, self._parts = s3, tuple(parts)
        self._buckets = dict(knowledge_bucket=knowledge_bucket, sessions_bucket=sessions_bucket)

    def parse(self, event: Any) -> TenantRequest:
        return parse_tenant_request(event)

    def run(self, request: TenantRequest, keep_going: Callable[[], bool]) -> PurgeReport:
        return delete_tenant_data(self._s3, **self._buckets, tenant=request.tenant, confirm=request.confirm,
                                  parts=self._parts, dry_run=request.dry_run, keep_going=keep_going)


# ------------------------------------------------------------------ knowledge's share of one customer


class CustomerShare:
    """What knowledge holds of one customer beyond the archive: their dead-lettered turns (the turn
    names the customer) and the dead-lettered sightings of their sessions, deleted where they wait
    so that `knowledge redrive` can never send them back (a queue whose URL is not set is skipped);
    each concept that still cites one of the customer's sessions (`concepts`, None: not looked at);
    and the words they taught (`ledger`, None: not looked at), pending or learned."""

    def __init__(self, sqs: Any, *, turn_dlq_url: Optional[str], candidates_dlq_url: Optional[str],
                 concepts: Optional[ConceptStore] = None, ledger: Optional[WordLedger] = None):
        self._sqs, self._turns, self._sightings = sqs, turn_dlq_url, candidates_dlq_url
        self._concepts, self._ledger = concepts, ledger

    def forget(self, sweeper: Sweeper, tenant: str, customer_id: str, sessions: Mapping[str, Sequence[str]],
               names: Callable[[], Sequence[str]] = tuple) -> None:
        """`sessions`: the customer's session ids per agent (from Facts' customer index); `names`: the
        persons' names their turns give, asked for only when a concept cites one of their sessions."""
        self._dead_letters(sweeper, tenant, customer_id, sessions)
        if self._concepts is not None:
            for agent, ids in sessions.items():
                if ids:
                    self._citing(sweeper, tenant, agent, frozenset(ids), names)
                    self._waiting(sweeper, tenant, agent, frozenset(ids))
            # A shared concept copied from an agent's keeps the sessions it cited: scrubbed alike.
            every = frozenset(i for ids in sessions.values() for i in ids)
            if every:
                self._citing(sweeper, tenant, SHARED, every, names)
        if self._concepts is not None and self._ledger is not None:
            # Every agent with concepts, not only those the customer index still names: a learned
            # word's teachers outlive the turns that taught it.
            words = ForgetWords(self._concepts, self._ledger)
            for agent in sorted(set(sessions) | set(self._concepts.agents(tenant))):
                teachers = frozenset({customer_teacher(tenant, customer_id), *sessions.get(agent, ())})
                words.forget(sweeper, tenant, agent, teachers)

    def _citing(self, sweeper: Sweeper, tenant: str, agent: str, sessions: frozenset[str],
                names: Callable[[], Sequence[str]]) -> None:
        """Each concept whose current version cites one of `sessions` (in `sources`): its older versions
        that cite them are deleted, the current one is rewritten without them and with any person's name
        its text still holds redacted (reason `purged`), then the version it replaced is deleted. A rerun
        after a stop finds the concept again (it still cites, or its current version is `purged`)."""
        store, report = self._concepts, sweeper.report
        for stored in store.load_all(tenant, agent):
            sweeper.checkpoint()
            try:
                concept = stored.concept
            except InvalidConcept:
                continue  # unreadable: the studio lists it as a problem; nothing here can rewrite it
            cites = bool(sessions & set(concept.sources))
            # A concept this purge rewrote and then stopped before deleting the version it replaced.
            if not cites and stored.reason != "purged":
                continue
            key = concept_key(tenant, agent, concept.name)
            doomed = [v.version_id for v in store.versions(tenant, agent, concept.name)
                      if not v.latest and not v.deleted and _cites(store, tenant, agent, concept.name, v, sessions)]
            sweeper.versions(store.bucket, key, doomed, "concept_versions")
            if doomed:
                report.concepts[f"{agent}/{concept.name}"] += len(doomed)
            if not cites:
                continue
            report.removed["concepts_scrubbed"] += 1
            if report.dry_run:
                report.removed["concept_versions"] += 1  # the current one, once rewritten
                report.concepts[f"{agent}/{concept.name}"] += 1
                continue
            known = names()
            scrubbed = concept.replace(description=_names_out(concept.description, known),
                                       body=_names_out(concept.body, known),
                                       sources=tuple(s for s in concept.sources if s not in sessions))
            try:
                store.replace(tenant, agent, scrubbed, if_match=stored.etag, actor="engine", reason="purged",
                              sightings=stored.sightings)
            except (Conflict, NotFound):
                report.complete = False  # written meanwhile: the next run reads it again
                continue
            sweeper.versions(store.bucket, key, [stored.version_id], "concept_versions")
            report.concepts[f"{agent}/{concept.name}"] += 1

    def _waiting(self, sweeper: Sweeper, tenant: str, agent: str, sessions: frozenset[str]) -> None:
        """Each pair set aside for a judgment whose claim came from one of `sessions`, dismissed or not:
        every version deleted (its key carries its session's tag, so none is read)."""
        waiting = self._concepts.waiting()
        sweeper.checkpoint()
        doomed = waiting.keys_of_sessions(tenant, agent, sessions)
        if doomed:
            sweeper.keys(waiting.bucket, doomed, "waiting_pairs")

    def _dead_letters(self, sweeper: Sweeper, tenant: str, customer_id: str,
                      sessions: Mapping[str, Sequence[str]]) -> None:
        dry_run = sweeper.report.dry_run
        if self._turns:
            def turn_of(body: dict) -> bool:
                return body.get("tenant") == tenant and body.get("customer_id") == customer_id \
                    or body.get("tenant") == tenant and body.get("session_id") in sessions.get(body.get("agent"), ())
            sweeper.report.removed["dead_letter_turns"] += forget_dead_letters(
                self._sqs, self._turns, turn_of, dry_run=dry_run, checkpoint=sweeper.checkpoint)
        if self._sightings:
            def sighting_of(body: dict) -> bool:
                return body.get("tenant") == tenant and body.get("session_id") in sessions.get(body.get("agent"), ())
            sweeper.report.removed["dead_letter_sightings"] += forget_dead_letters(
                self._sqs, self._sightings, sighting_of, dry_run=dry_run, checkpoint=sweeper.checkpoint)
        for kind in ("dead_letter_turns", "dead_letter_sightings"):
            if not sweeper.report.removed[kind]:
                del sweeper.report.removed[kind]


def _cites(store: ConceptStore, tenant: str, agent: str, name: str, version: Any, sessions: frozenset[str]) -> bool:
    """Whether an older version cites one of `sessions`: its evidence link, or its `sources`."""
    if version.evidence is not None and version.evidence.session_id in sessions:
        return True
    try:
        return bool(sessions & set(store.read_version(tenant, agent, name, version.version_id).concept.sources))
    except (InvalidConcept, NotFound):
        return False


def _names_out(text: str, known: Sequence[str]) -> str:
    """`text` with every person's name the detectors find (and every word of a `known` one, in any case)
    replaced by [name]; nothing else touched."""
    out, last = [], 0
    for finding in pii.find(text, known=known):
        if finding.kind == "name":
            out += [text[last:finding.start], "[name]"]
            last = finding.end
    return "".join(out) + text[last:]
