"""Creating a concept under a deleted concept's name through the studio API: 409 name_deleted with who
deleted it and when (nothing written), then either undelete or a create with new_history=true."""

from __future__ import annotations

from helpers.studio import ANA, BASE, A, T

NEW = ("---\nname: troca-em-30-dias\ndescription: Trocas em até 30 dias, agora com etiqueta.\ntype: policy\n---\n\n"
       "Trocas em até 30 dias com a etiqueta.\n")


def test_a_deleted_name_is_said_and_nothing_is_written_until_the_operator_chooses(api, store):
    status, _, _ = api("DELETE", f"{BASE}/concepts/troca-em-30-dias")
    assert status == 200
    before = len(store.versions(T, A, "troca-em-30-dias"))
    status, body, _ = api("POST", f"{BASE}/concepts", body={"markdown": NEW})
    assert status == 409 and body["error"]["code"] == "name_deleted"
    assert body["name"] == "troca-em-30-dias" and body["deleted_by"] == f"operator:{ANA['sub']}"
    assert body["deleted_at"].endswith("Z") and "restore" in body["error"]["message"]
    assert len(store.versions(T, A, "troca-em-30-dias")) == before and store.find(T, A, "troca-em-30-dias") is None
    status, created, _ = api("POST", f"{BASE}/concepts", body={"markdown": NEW}, query={"new_history": "true"})
    assert status == 201 and "etiqueta" in store.get(T, A, "troca-em-30-dias").text
    assert store.versions(T, A, "troca-em-30-dias")[0].reason == "created"


def test_restoring_instead_brings_the_deleted_one_back_with_its_history(api, store):
    api("DELETE", f"{BASE}/concepts/troca-em-30-dias")
    status, body, _ = api("POST", f"{BASE}/concepts", body={"markdown": NEW})
    assert status == 409
    status, _, _ = api("POST", f"{BASE}/deleted/troca-em-30-dias/restore")
    assert status == 200 and "em até 30 dias após a entrega" in store.get(T, A, "troca-em-30-dias").text


def test_a_name_never_used_or_of_another_tenant_is_created_or_refused_as_before(api):
    fresh = NEW.replace("troca-em-30-dias", "troca-com-etiqueta")
    status, _, _ = api("POST", f"{BASE}/concepts", body={"markdown": fresh})
    assert status == 201
    status, body, _ = api("POST", f"{BASE}/concepts", body={"markdown": fresh})
    assert status == 409 and body["error"]["code"] == "name_taken"
    status, _, _ = api("POST", f"/tenants/other/agents/{A}/concepts", body={"markdown": fresh})
    assert status == 403
