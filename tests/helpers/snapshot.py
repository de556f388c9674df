"""Asking a retrieval container, a first container that writes the snapshot, and a store whose
policy refuses the snapshot's key: the snapshot's tests (tests/unit/recall) and the studio's list
from it (tests/unit/curation) share them."""

from __future__ import annotations

from helpers.fakes import Events

from knowledge.recall.retrieve import Retriever, RetrieveRequest

T, A = "default", "store-support"
MESSAGES = ["Moro em Campinas, o frete é grátis?", "posso trocar o produto em 30 dias?", "meu CEP é 13083-970",
            "quanto tempo demora o pix?", "oi, tudo bem?", "cadê meu pedido 48213? rastreio"]


def ask(retriever, message=MESSAGES[0]):
    return retriever.retrieve(RetrieveRequest(agent=A, session_id="s1", message=message))


def answers(retriever):
    return [ask(retriever, message) for message in MESSAGES]


def warmed(store, **kwargs):
    """A first container: builds the index from every concept and writes the snapshot."""
    retriever = Retriever(store, Events(), **kwargs)
    ask(retriever)
    assert retriever.counters.get("SnapshotWritten") == 1
    return retriever


class Refusing:
    """The real store behind a policy that does not grant the snapshot's key (403), translated
    by the real adapter code."""

    def __init__(self, store):
        self._store = store

    def _refuse(self, *args, **kwargs):
        from botocore.exceptions import ClientError

        from shared.awscall import translate

        raise translate(ClientError({"Error": {"Code": "AccessDenied"}, "ResponseMetadata": {"HTTPStatusCode": 403}},
                                    "GetObject"))

    get_snapshot = put_snapshot = _refuse

    def __getattr__(self, name):
        return getattr(self._store, name)
