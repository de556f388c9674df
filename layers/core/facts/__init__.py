"""Facts: distilled customer memory, human-gated — the sibling loop of `knowledge`.

Idle customer-tagged sessions are distilled into proposals; an operator approves, rejects or
dismisses each; only an approval writes the customer's memory cell. Nothing is applied
automatically. This package stands on knowledge's platform pieces (awscall, deadline, errors,
names, model, telemetry, validation, the turn archive) and never on a knowledge use case.
"""
