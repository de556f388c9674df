"""Learning, one turn at a time: extract (the prompt, the known concepts, the model) -> gates (nothing
the model says is trusted) -> consolidate (same claim, related or contradicting; the model's cost)."""
