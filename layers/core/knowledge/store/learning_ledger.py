"""The learning ledger: who taught which word for which concept (knowledge.learning.traffic_words) —
the pending words' teachers in SESSIONS_BUCKET (expiring with the turns) and a learned word's
teachers beside its concept in KNOWLEDGE_BUCKET (for forget_customer). A teacher is the customer,
hashed, else the session; every entry create-only; the word is never in a key, a customer id never
stored. docs/contract.md, "Storage layout" and "Learned words" ("Who teaches")."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterable, Optional

from shared import awscall
from shared.errors import Conflict, NotFound
from shared.names import check_slug, is_session_id

from .keys import agent_prefix

SIGNALS = ("loaded", "sighting")
CUSTOMER_MARK = "c~"  # '~' is in no session id, so a customer's teacher id is never a session's
# Teachers listed per word: far more than any threshold needs.
LIST_MAX = 1000
# Entries whose `at` is read for one word, at most; the others are dated by their LastModified.
READ_MAX = 64
# Teachers kept per learned word, at most: enough that forgetting a few customers leaves a word many taught.
KEEP_MAX = 20


def _session(session_id: str) -> str:
    if not is_session_id(session_id):
        raise ValueError("session_id: letters, digits, '.', '_', ':', '-'; at most 128")
    return session_id


def customer_teacher(tenant: str, customer_id: str) -> str:
    """A customer's teacher id: a hash of the tenant and the engine's id (never the id itself)."""
    digest = hashlib.sha256(f"knowledge/learned-words/v1\x1f{tenant}\x1f{customer_id}".encode("utf-8")).hexdigest()
    return CUSTOMER_MARK + digest[:24]


def teacher_id(tenant: str, customer_id: Optional[str], session_id: str) -> str:
    """Who a turn teaches as: its customer when it names one, else its session."""
    return customer_teacher(tenant, customer_id) if customer_id else _session(session_id)


def _is_teacher(name: str) -> bool:
    if name.startswith(CUSTOMER_MARK):
        rest = name[len(CUSTOMER_MARK):]
        return len(rest) == 24 and all(c in "0123456789abcdef" for c in rest)
    return is_session_id(name)


def term_hash(term: str) -> str:
    return hashlib.sha256(term.encode("utf-8")).hexdigest()[:16]


def _moment(text: Any) -> Optional[datetime]:
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _stamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Teaching:
    """One teacher of a word, and when it taught it (None: not known)."""

    teacher: str
    at: Optional[datetime]

    @property
    def customer(self) -> bool:
        return self.teacher.startswith(CUSTOMER_MARK)


@dataclass(frozen=True)
class KeptWord:
    """A learned word's teachers, as kept beside its concept: the prefix of its objects, one per teacher."""

    prefix: str
    concept: str
    teachers: tuple[str, ...]

    @property
    def digest(self) -> str:
        """The hash of the word's index term (`term_hash`) its objects are kept under."""
        return self.prefix.rstrip("/").rsplit("/", 1)[-1]


class WordLedger:
    def __init__(self, s3: Any, bucket: str, knowledge_bucket: Optional[str] = None):
        """`bucket`: SESSIONS_BUCKET (the pending words); `knowledge_bucket` (None: not kept) where a
        learned word's teachers are kept."""
        self._s3, self.bucket, self.knowledge_bucket = s3, bucket, knowledge_bucket

    @staticmethod
    def _agent(tenant: str, agent: str) -> str:
        return f"{check_slug('tenant', tenant)}/{check_slug('agent', agent)}/learning/"

    def _word_prefix(self, tenant: str, agent: str, concept: str, term: str) -> str:
        return f"{self._agent(tenant, agent)}words/{check_slug('concept', concept)}/{term_hash(term)}/"

    def words_prefix(self, tenant: str, agent: str) -> str:
        """Where the agent's pending words are (forget_customer lists it)."""
        return f"{self._agent(tenant, agent)}words/"

    @staticmethod
    def kept_prefix(tenant: str, agent: str) -> str:
        return f"{agent_prefix(tenant, agent)}learned-words/"

    # ------------------------------------------------------------ pending words
    def first_loaded_in(self, tenant: str, agent: str, session_id: str, concept: str, turn_id: str) -> bool:
        """Whether `turn_id` is the turn in which the session first loaded `concept` (the first turn to
        ask says so; that same turn asking again, a redelivery, is told so again)."""
        key = f"{self._agent(tenant, agent)}loaded/{_session(session_id)}/{check_slug('concept', concept)}"
        body = json.dumps({"turn_id": _session(turn_id)}).encode()
        if awscall.succeeds(Conflict, self._s3, "put_object", Bucket=self.bucket, Key=key, Body=body,
                            ContentType="application/json", IfNoneMatch="*"):
            return True
        try:
            held = awscall.call(self._s3, "get_object", Bucket=self.bucket, Key=key, read_body=True)["Body"]
            return json.loads(held).get("turn_id") == turn_id
        except (NotFound, ValueError, AttributeError):
            return False

    def add(self, tenant: str, agent: str, concept: str, term: str, word: str, teacher: str, signal: str,
            at: datetime) -> Optional[int]:
        """Record that `teacher` (`teacher_id`) taught `word` (index term `term`) for `concept` at `at`:
        the number of distinct teachers it has when this one is new, None when it was counted already
        (a redelivery, a replay, another turn of the session or another session of the customer)."""
        if signal not in SIGNALS:
            raise ValueError(f"signal must be one of {', '.join(SIGNALS)}")
        if not _is_teacher(teacher):
            raise ValueError("teacher: a session id, or a customer's teacher id")
        prefix = self._word_prefix(tenant, agent, concept, term)
        body = json.dumps({"word": word, "signal": signal, "at": _stamp(at)}, ensure_ascii=False).encode()
        if not awscall.succeeds(Conflict, self._s3, "put_object", Bucket=self.bucket, Key=prefix + teacher,
                                Body=body, ContentType="application/json", IfNoneMatch="*"):
            return None
        return len(self._listed(prefix))

    def teachings(self, tenant: str, agent: str, concept: str, term: str) -> list[Teaching]:
        """A pending word's teachers, each with when it taught (read from at most READ_MAX entries)."""
        out = []
        for n, item in enumerate(self._listed(self._word_prefix(tenant, agent, concept, term))):
            teacher = item["Key"].rsplit("/", 1)[-1]
            if not _is_teacher(teacher):
                continue  # an object someone put there by hand: it teaches nothing
            written = item.get("LastModified")
            at = self._at(item["Key"]) if n < READ_MAX else None
            out.append(Teaching(teacher, at or (written if isinstance(written, datetime) else None)))
        return out

    def _at(self, key: str) -> Optional[datetime]:
        try:
            body = awscall.call(self._s3, "get_object", Bucket=self.bucket, Key=key, read_body=True)["Body"]
            return _moment(json.loads(body).get("at"))
        except (NotFound, ValueError, AttributeError):
            return None

    def _listed(self, prefix: str) -> list[dict]:
        answer = awscall.call(self._s3, "list_objects_v2", Bucket=self.bucket, Prefix=prefix, MaxKeys=LIST_MAX)
        return answer.get("Contents", [])

    # ------------------------------------------------------------ learned words' teachers
    def keep(self, tenant: str, agent: str, concept: str, term: str, word: str,
             teachings: Iterable[Teaching]) -> None:
        """Keep a word's teachers beside its concept as it is learned (one object per teacher, so that
        taking one out is one delete, and a rerun finds nothing left to do): at most KEEP_MAX, the
        customers first, then the earliest and the latest session (what made it enough)."""
        if self.knowledge_bucket is None:
            return
        teachings = list(teachings)
        dated = sorted((t for t in teachings if not t.customer), key=lambda t: (t.at is None, t.at))
        ordered = [t for t in teachings if t.customer] + dated[:1] + dated[-1:] + dated[1:-1]
        chosen = list(dict.fromkeys(ordered))[:KEEP_MAX]
        prefix = self.kept_prefix_of(tenant, agent, concept, term)
        for teaching in chosen:
            self._put_kept(prefix, word, teaching)

    def keep_one(self, tenant: str, agent: str, concept: str, term: str, word: str, teaching: Teaching) -> bool:
        """One more teacher of a word already learned, kept while fewer than KEEP_MAX are (so that
        forgetting one customer does not take out a word many taught); never starts a record (a word
        learned before teachers were kept has none: `knowledge words audit` reads its pending entries)."""
        if self.knowledge_bucket is None:
            return False
        prefix = self.kept_prefix_of(tenant, agent, concept, term)
        answer = awscall.call(self._s3, "list_objects_v2", Bucket=self.knowledge_bucket, Prefix=prefix,
                              MaxKeys=KEEP_MAX)
        held = {item["Key"][len(prefix):] for item in answer.get("Contents", [])}
        if not held or len(held) >= KEEP_MAX or teaching.teacher in held:
            return False
        self._put_kept(prefix, word, teaching)
        return True

    def _put_kept(self, prefix: str, word: str, teaching: Teaching) -> None:
        body = {"word": word, "at": _stamp(teaching.at) if teaching.at else None}
        awscall.call(self._s3, "put_object", Bucket=self.knowledge_bucket, Key=prefix + teaching.teacher,
                     Body=json.dumps(body, ensure_ascii=False).encode(), ContentType="application/json")

    def kept_prefix_of(self, tenant: str, agent: str, concept: str, term: str) -> str:
        return f"{self.kept_prefix(tenant, agent)}{check_slug('concept', concept)}/{term_hash(term)}/"

    def kept_teachings(self, tenant: str, agent: str, concept: str, term: str) -> list[Teaching]:
        """The teachers kept for one learned word ([] when none are: a word learned before they were)."""
        if self.knowledge_bucket is None:
            return []
        prefix = self.kept_prefix_of(tenant, agent, concept, term)
        answer = awscall.call(self._s3, "list_objects_v2", Bucket=self.knowledge_bucket, Prefix=prefix,
                              MaxKeys=LIST_MAX)
        teachers = tuple(t for t in (item["Key"][len(prefix):] for item in answer.get("Contents", []))
                         if _is_teacher(t))
        return self.read(KeptWord(prefix, concept, teachers))[1] if teachers else []

    def forget_kept(self, prefix: str) -> None:
        """Stop keeping a word's teachers (a `KeptWord.prefix`), every version: the ledger keeps them only
        while the word is on the concept (`knowledge words audit` takes a word out, or finds it gone)."""
        if self.knowledge_bucket is None or not prefix.startswith("agents/") or not prefix.endswith("/"):
            return
        for page in awscall.pages(self._s3, "list_object_versions", Bucket=self.knowledge_bucket, Prefix=prefix):
            for item in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]:
                awscall.call(self._s3, "delete_object", Bucket=self.knowledge_bucket, Key=item["Key"],
                             VersionId=item["VersionId"])
    def kept(self, tenant: str, agent: str) -> list[KeptWord]:
        """The teachers kept for each of the agent's learned words, as keys (no object read)."""
        if self.knowledge_bucket is None:
            return []
        prefix = self.kept_prefix(tenant, agent)
        found: dict[tuple[str, str], list[str]] = {}
        for page in awscall.pages(self._s3, "list_objects_v2", Bucket=self.knowledge_bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                parts = item["Key"][len(prefix):].split("/")
                if len(parts) == 3 and _is_teacher(parts[2]):
                    found.setdefault((parts[0], parts[1]), []).append(parts[2])
        return [KeptWord(f"{prefix}{concept}/{digest}/", concept, tuple(teachers))
                for (concept, digest), teachers in found.items()]

    def read(self, kept: KeptWord) -> tuple[Optional[str], list[Teaching]]:
        """The word a kept record is of (None: none of its objects reads) and its teachings."""
        word, teachings = None, []
        for teacher in kept.teachers:
            try:
                body = json.loads(awscall.call(self._s3, "get_object", Bucket=self.knowledge_bucket,
                                               Key=kept.prefix + teacher, read_body=True)["Body"])
            except (NotFound, ValueError):
                continue
            if isinstance(body, dict) and isinstance(body.get("word"), str):
                word = word or body["word"]
            teachings.append(Teaching(teacher, _moment(body.get("at") if isinstance(body, dict) else None)))
        return word, teachings
