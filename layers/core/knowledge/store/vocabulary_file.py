"""The vocabulary half of ConceptStore: an agent's vocabulary.yaml (knowledge.format.vocabulary),
read conditionally and written compare-and-swap, each write journaled as knowledge.yaml's is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from knowledge.format.vocabulary import Vocabulary, parse_vocabulary
from knowledge.store.journal import VOCABULARY_CHANGE
from knowledge.store.keys import vocabulary_key
from shared.errors import Conflict, NotFound

VOCABULARY_CONTENT_TYPE = "application/yaml; charset=utf-8"


@dataclass(frozen=True)
class StoredVocabulary:
    data: bytes  # as written: parse_vocabulary reads the bytes (refusing what is not UTF-8)
    etag: str

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


class VocabularyFile:
    """Reads and writes through the store's `_call`, `_metadata` and `_journal`."""

    def get_vocabulary(self: Any, tenant: str, agent: str, *,
                       unless_etag: Optional[str] = None) -> Optional[StoredVocabulary]:
        """The agent's vocabulary.yaml as written (not validated: see `parse_vocabulary`), or None
        when there is none. With `unless_etag`, a file still at that ETag raises NotModified."""
        kwargs = {"IfNoneMatch": unless_etag} if unless_etag else {}
        try:
            answer = self._call("get_object", Bucket=self.bucket, Key=vocabulary_key(tenant, agent),
                                read_body=True, **kwargs)
        except NotFound:
            return None
        return StoredVocabulary(answer["Body"], answer["ETag"])

    def put_vocabulary(self: Any, tenant: str, agent: str, text: str, *, actor: str,
                       if_match: Optional[str] = None) -> tuple[StoredVocabulary, Vocabulary]:
        """Validate (InvalidVocabulary) and write vocabulary.yaml; create-only unless `if_match`
        names the current ETag (Conflict when another writer came first); journaled."""
        vocabulary = parse_vocabulary(text)
        kwargs: dict[str, Any] = {"IfMatch": if_match} if if_match else {"IfNoneMatch": "*"}
        try:
            answer = self._call("put_object", Bucket=self.bucket, Key=vocabulary_key(tenant, agent),
                                Body=text.encode("utf-8"), ContentType=VOCABULARY_CONTENT_TYPE,
                                Metadata=self._metadata(actor, "edit"), **kwargs)
        except (Conflict, NotFound):
            raise Conflict("vocabulary.yaml changed since it was read", None) from None
        self._journal(tenant, agent, VOCABULARY_CHANGE, answer["ETag"])
        return StoredVocabulary(text.encode("utf-8"), answer["ETag"]), vocabulary
