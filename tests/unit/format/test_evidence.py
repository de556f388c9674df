"""The evidence link's one-line encoding: the agent it names only on a shared concept's version, and a
link written before agents were named still read."""

from __future__ import annotations

from datetime import datetime, timezone

from knowledge.format.evidence import EvidenceLink

MOMENT = datetime(2026, 11, 20, 14, 5, 31, 120000, tzinfo=timezone.utc)


def test_a_link_round_trips_with_and_without_the_agent_it_names():
    plain = EvidenceLink("sess_1", "t1", MOMENT, 2, 10, 58)
    named = EvidenceLink("sess_1", "t1", MOMENT, 2, 10, 58, "site-chat")
    assert plain.encode() == "sess_1/t1/20261120T140531.120000Z/2/10-58"
    assert named.encode() == "sess_1/t1/20261120T140531.120000Z/2/10-58/site-chat"
    assert EvidenceLink.decode(plain.encode()) == plain and EvidenceLink.decode(named.encode()) == named


def test_a_named_agent_that_is_not_a_slug_makes_no_link():
    for text in ("sess_1/t1/20261120T140531.120000Z/2/10-58/Site", "sess_1/t1/20261120T140531.120000Z/2/10-58/a/b",
                 "sess_1/t1/20261120T140531.120000Z/2/10-58/../x", "sess_1/t1/20261120T140531.120000Z/2/10-58/"):
        assert EvidenceLink.decode(text) is None, text
    assert EvidenceLink.decode("sess_1/t1/20261120T140531.120000Z/2/10-58/" + "a" * 65) is None
