"""The learning ledger in SESSIONS_BUCKET: which distinct sessions taught which word for which concept
(the pending candidates of knowledge.learning.taught), and in which turn each session first loaded a
concept. Every object expires with the bucket's lifecycle rule, as the turn archive does, so a word
that never reaches its threshold is forgotten with the turns that taught it.

Keys (the concept and the session validated, the word never in a key — its hash is):

    {tenant}/{agent}/learning/words/{concept}/{sha256(term)[:16]}/{session_id}   {"word", "signal"}
    {tenant}/{agent}/learning/loaded/{session_id}/{concept}                      {"turn_id"}

A session's marker is written create-only, so a redelivered or replayed turn finds its own session
there and counts nothing twice.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Optional

from shared import awscall
from shared.errors import Conflict, NotFound
from shared.names import check_slug, is_session_id

SIGNALS = ("loaded", "sighting")
# Sessions listed per word: far more than any threshold needs.
LIST_MAX = 1000


def _session(session_id: str) -> str:
    if not is_session_id(session_id):
        raise ValueError("session_id: letters, digits, '.', '_', ':', '-'; at most 128")
    return session_id


class WordLedger:
    def __init__(self, s3: Any, bucket: str):
        self._s3, self.bucket = s3, bucket

    @staticmethod
    def _agent(tenant: str, agent: str) -> str:
        return f"{check_slug('tenant', tenant)}/{check_slug('agent', agent)}/learning/"

    def _word_prefix(self, tenant: str, agent: str, concept: str, term: str) -> str:
        digest = hashlib.sha256(term.encode("utf-8")).hexdigest()[:16]
        return f"{self._agent(tenant, agent)}words/{check_slug('concept', concept)}/{digest}/"

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

    def add(self, tenant: str, agent: str, concept: str, term: str, word: str, session_id: str,
            signal: str) -> Optional[int]:
        """Record that `session_id` taught `word` (index term `term`) for `concept`: the number of
        distinct sessions that have taught it when this session is new, None when it was counted
        already (a redelivery, a replay, another turn of the same session)."""
        if signal not in SIGNALS:
            raise ValueError(f"signal must be one of {', '.join(SIGNALS)}")
        prefix = self._word_prefix(tenant, agent, concept, term)
        body = json.dumps({"word": word, "signal": signal}, ensure_ascii=False).encode()
        if not awscall.succeeds(Conflict, self._s3, "put_object", Bucket=self.bucket,
                                Key=prefix + _session(session_id), Body=body, ContentType="application/json",
                                IfNoneMatch="*"):
            return None
        return self.sessions(tenant, agent, concept, term)

    def sessions(self, tenant: str, agent: str, concept: str, term: str) -> int:
        prefix = self._word_prefix(tenant, agent, concept, term)
        answer = awscall.call(self._s3, "list_objects_v2", Bucket=self.bucket, Prefix=prefix, MaxKeys=LIST_MAX)
        return len(answer.get("Contents", []))
