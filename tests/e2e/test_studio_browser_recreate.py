"""Recreating a deleted concept's name in a real headless Chromium, as an operator does it: delete it,
write a new concept of the same name, save; the studio says a deleted concept had the name, and the
operator restores that one or creates the new one knowingly."""

from __future__ import annotations

from pathlib import Path

from helpers.browser import CHROMIUM, expect
from helpers.paths import ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T, open_concept

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})
NAME = "troca-em-30-dias"
TEXT = f"---\nname: {NAME}\ndescription: Trocas em até 30 dias com etiqueta.\ntype: policy\n---\n\nCom a etiqueta.\n"


def delete_then_write_the_name_again(page):
    open_concept(page, NAME)
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#delete")
    expect(page.locator("#status")).to_have_text('Deleted. Restore it from "Deleted concepts".')
    page.get_by_role("button", name="New concept").click()
    page.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.type(TEXT)
    page.keyboard.press("Control+s")


def test_saving_a_deleted_name_says_so_and_creates_it_only_when_the_operator_chooses_a_new_one(page, store):
    delete_then_write_the_name_again(page)
    notice = page.locator("#deleted-name")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text(f"A deleted concept was named {NAME}")
    expect(notice).to_contain_text("UTC by operator:")
    expect(page.locator("#status")).to_have_text(f"Not saved: a deleted concept was named {NAME}.")
    expect(page.locator("#taken")).to_be_hidden()
    assert store.find(T, A, NAME) is None  # nothing written yet
    page.get_by_role("button", name="Create mine as a new concept").click()
    expect(page.locator("#status")).to_have_text("Saved.")
    expect(notice).to_be_hidden()
    expect(page.locator("#editor-title")).to_have_text(NAME)
    assert "Com a etiqueta." in store.get(T, A, NAME).text


def test_restoring_the_deleted_one_instead_brings_it_back_with_its_history(page, store):
    delete_then_write_the_name_again(page)
    expect(page.locator("#deleted-name")).to_be_visible()
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    page.get_by_role("button", name="Restore the deleted concept").click()
    expect(page.locator("#status")).to_have_text(f"{NAME} is back, with its history. Your new text was not saved.")
    assert asked and "discards them" in asked[0]
    expect(page.locator(".cm-content")).to_contain_text("em até 30 dias após a entrega")
    assert "em até 30 dias após a entrega" in store.get(T, A, NAME).text
    history = store.versions(T, A, NAME)
    assert not history[0].deleted and history[1].deleted and len(history) == 3  # the old version, its delete, back
