"""Facts: distilled customer memory, human-gated — the sibling loop of `knowledge`.

Idle customer-tagged sessions are distilled into proposals; an operator approves, rejects or
dismisses each; only an approval writes the customer's memory cell. Nothing is applied
automatically. This package stands on the shared floor (`shared`: awscall, deadline, errors,
names, model, telemetry, validation) and on knowledge's turn contract and archive, never on a
knowledge use case.
"""
