"""The tenant's shared scope: stored by the same code as an agent's, under keys no agent's can equal,
with its own change journal, history and restore."""

from __future__ import annotations

import pytest
from helpers.concepts import make_concept

from knowledge.operation.purge import knowledge_kind, tenant_prefixes
from knowledge.store.keys import SHARED, agent_of, agent_prefix, concept_key, journal_prefix, snapshot_key
from shared.errors import InvalidName


@pytest.mark.parametrize("agent", ["shared", "tenants", "loja", "a", "shared-1", "x" * 64])
def test_no_agent_name_spells_the_shared_scope(agent):
    for ours, theirs in ((agent_prefix("loja", SHARED), agent_prefix("loja", agent)),
                         (journal_prefix("loja", SHARED), journal_prefix("loja", agent))):
        assert not ours.startswith(theirs) and not theirs.startswith(ours)
    assert agent_prefix("loja", SHARED) == "tenants/loja/shared/"
    assert journal_prefix("loja", SHARED) == "journal/loja/_shared/"


def test_shared_keys_read_back_as_the_shared_scope_and_are_validated():
    assert concept_key("loja", SHARED, "politica") == "tenants/loja/shared/concepts/politica.md"
    assert agent_of(concept_key("loja", SHARED, "politica")) == ("loja", SHARED)
    assert agent_of(concept_key("loja", "site", "politica")) == ("loja", "site")
    with pytest.raises(InvalidName):
        concept_key("Loja/..", SHARED, "politica")
    with pytest.raises(InvalidName):
        concept_key("loja", SHARED, "../x")


def test_deleting_a_tenants_data_covers_its_shared_scope():
    prefixes = [prefix for _, prefix in tenant_prefixes("loja")]
    assert any(concept_key("loja", SHARED, "p").startswith(p) for p in prefixes)
    assert any(journal_prefix("loja", SHARED).startswith(p) for p in prefixes)
    assert knowledge_kind("knowledge", concept_key("loja", SHARED, "p")) == "concepts"
    assert knowledge_kind("knowledge", snapshot_key("loja", SHARED)) == "snapshots"


def test_a_shared_concept_is_journaled_versioned_and_restorable_apart_from_the_agents(store):
    store.create("loja", "site", make_concept("politica", description="A do agente."), actor="engine")
    first = store.create("loja", SHARED, make_concept("politica", description="A da loja."), actor="operator:ana")
    store.replace("loja", SHARED, make_concept("politica", description="A da loja, nova."), if_match=first.etag,
                  actor="operator:ana", reason="edit")
    assert [c.name for c in store.changes_since("loja", SHARED, 0)] == ["politica", "politica"]
    assert [c.name for c in store.list("loja", SHARED)] == ["politica"]
    assert store.get("loja", "site", "politica").concept.description == "A do agente."
    assert store.agents("loja") == ["site"]  # the shared scope is no agent
    old = [v for v in store.versions("loja", SHARED, "politica")][-1]
    current = store.get("loja", SHARED, "politica")
    store.restore("loja", SHARED, "politica", old.version_id, if_match=current.etag, actor="operator:ana")
    assert store.get("loja", SHARED, "politica").concept.description == "A da loja."
