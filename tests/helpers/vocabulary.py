"""The demo agent's vocabulary (devstack/knowledge_dev/demo/vocabulary.yaml), for the tests that
measure the furniture store: its readings are its data, not the engine's (issue 24)."""

from __future__ import annotations

import functools

from helpers.paths import DEMO
from knowledge.format.vocabulary import parse_vocabulary
from knowledge.recall.lexicon import Lexicon, lexicon_for

DEMO_VOCABULARY = DEMO / "vocabulary.yaml"


@functools.lru_cache(maxsize=1)
def demo_lexicon() -> Lexicon:
    return lexicon_for(parse_vocabulary(DEMO_VOCABULARY.read_bytes()).pairs(), None)
