"""The tests' concepts come from devstack's samples, which the benches (scripts/bench) draw from too."""

from knowledge_dev.samples import make_concept

__all__ = ["make_concept"]
