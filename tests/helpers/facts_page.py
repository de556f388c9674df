"""The Facts page's demo: Ana's conversation archived and recorded as the extraction path does,
and the facts a scripted distiller proposes from it (the API's and the browser's tests share them);
`turn` and `archive` make and record any turn (the unit tier's session states use them too)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from facts.sessions import record_turn
from knowledge.format.turn import Turn
from knowledge.store.archive import TurnArchive

T, A = "default", "store-support"
KEY = "k" * 48
CUSTOMER = "cust-8842-ana"
CONFIG = "knowledge:\n  extract: false\ndistill:\n  idle_hours: 6\n  min_messages: 3\n  max_proposals: 5\n"
CONVERSATION = [
    [("user", "oi boa tarde, quero trocar o tenis do pedido 48213 ficou apertado, calço 42 normalmente"),
     ("assistant", "Oi! Sinto muito. Posso trocar pelo mesmo modelo no 43, tudo bem?")],
    [("user", "pode ser 43 sim. ah e prefiro pagar no pix sempre, cartao nao uso. meu email é ana.souza@gmail.com"),
     ("assistant", "Perfeito, troca registrada para o 43. Anotei que você prefere Pix.")],
]
SHOE = {"name": "tamanho_calcado", "value": "43", "confidence": 0.8, "evidence": [1, 2]}
PIX = {"name": "pagamento_preferido", "value": "Pix", "confidence": 0.9, "evidence": [2]}


def turn(session: str, index: int, at: datetime, messages, customer: str | None = CUSTOMER) -> Turn:
    return Turn(tenant=T, agent=A, session_id=session, turn_id=f"turn_{index:04d}", completed_at=at,
                messages=[{"role": role, "content": text} for role, text in messages], customer_id=customer)


def archive(s3, sessions_bucket, *turns: Turn) -> None:
    """What the extraction path does per turn: archive it, then record it for Facts."""
    for t in turns:
        TurnArchive(s3, sessions_bucket).put(t)
        record_turn(s3, sessions_bucket, t)


def conversation(s3, sessions_bucket, session: str, customer: str = CUSTOMER, hours_ago: float = 8) -> None:
    """Ana's conversation, begun `hours_ago`, archived and recorded."""
    start = datetime.now(timezone.utc) - timedelta(hours=hours_ago)
    archive(s3, sessions_bucket, *[turn(session, index, start + timedelta(minutes=2 * index), messages, customer)
                                   for index, messages in enumerate(CONVERSATION)])
