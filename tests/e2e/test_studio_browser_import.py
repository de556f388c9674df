"""Importing from the studio page in a real headless Chromium, as an operator does it: choose files,
read the dry run, confirm, watch it finish, find the concepts in the list."""

from __future__ import annotations

from pathlib import Path

from helpers.browser import CHROMIUM, axe_violations, expect
from helpers.paths import ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T, rows, signed_in

PAGE = ROOT / "studio_web" / "dist" / "index.html"
FAQ_CSV = ROOT / "tests" / "data" / "imports" / "faq-loja.csv"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})
GOOD, REFUSED = 18, {35, 36, 37, 40}


def test_an_faq_is_dry_run_then_imported_and_its_invalid_rows_are_shown_with_their_line_and_never_written(
        browser, studio, store, request):
    with signed_in(browser, studio, request) as page:
        before = len(rows(page))
        page.get_by_role("button", name="Import…").click()
        dialog = page.get_by_role("dialog")
        expect(dialog).to_be_visible()
        page.locator("#import-files").set_input_files(str(FAQ_CSV))
        expect(page.locator("#import-heading")).to_have_text("Dry run: nothing is written yet")
        expect(page.locator("#import-summary")).to_have_text(f"would create {GOOD}, invalid {len(REFUSED)}.")
        invalid = page.locator("#import-items tbody tr[data-outcome=refused]")
        expect(invalid).to_have_count(len(REFUSED))
        cells = invalid.evaluate_all("rows => rows.map(r => [...r.cells].map(c => c.textContent))")
        assert {c[2] for c in cells} == {f"faq-loja.csv, line {n}" for n in REFUSED}
        assert any("answer: must not be empty" in c[3] for c in cells)
        assert store.find(T, A, "qual-e-o-prazo-de-entrega-para-o-nordeste") is None  # a dry run writes nothing
        assert axe_violations(page) == []
        page.get_by_role("button", name=f"Import {GOOD} concepts").click()
        expect(page.locator("#import-heading")).to_have_text("Imported", timeout=60_000)
        expect(page.locator("#import-message")).to_have_text(f"Done: {GOOD} created, 0 changed.")
        page.keyboard.press("Escape")
        expect(dialog).to_be_hidden()
        expect(page.locator("#concepts tbody tr")).to_have_count(before + GOOD, timeout=60_000)
        assert "qual-e-o-prazo-de-entrega-para-o-nordeste" in rows(page)
        stored = store.get(T, A, "qual-e-o-prazo-de-entrega-para-o-nordeste")
        assert stored.actor.startswith("operator:") and stored.concept.provenance == "policy"
        assert store.find(T, A, "qual-e-o-regulamento-da-promocao-de-aniversario") is None  # row 40: never written


def test_a_changed_concept_is_skipped_unless_replace_is_ticked_and_then_gets_a_new_version(
        browser, studio, store, request, tmp_path):
    current = store.get(T, A, "troca-em-30-dias")
    path = tmp_path / "troca-em-30-dias.md"
    path.write_text(current.text.replace("em até 30 dias após a entrega, na", "em até 45 dias após a entrega, na"))
    with signed_in(browser, studio, request) as page:
        page.get_by_role("button", name="Import…").click()
        page.locator("#import-files").set_input_files(str(path))
        expect(page.locator("#import-summary")).to_have_text("would skip 1.")
        expect(page.locator("#import-confirm")).to_be_hidden()
        page.get_by_label("Replace concepts of the same name").check()
        expect(page.locator("#import-summary")).to_have_text("would change 1.")
        page.get_by_role("button", name="Import 1 concept").click()
        expect(page.locator("#import-message")).to_have_text("Done: 0 created, 1 changed.", timeout=60_000)
        assert "45 dias" in store.get(T, A, "troca-em-30-dias").text
        assert len(store.versions(T, A, "troca-em-30-dias")) == 2  # the old one restorable


def test_files_beyond_what_one_request_takes_are_refused_on_the_page_with_the_cli_to_use(
        browser, studio, request, tmp_path):
    big = tmp_path / "grande.csv"
    big.write_text("question,answer\n" + "q,a\n" * (5 * 1024 * 1024 // 4))
    with signed_in(browser, studio, request) as page:
        page.get_by_role("button", name="Import…").click()
        page.locator("#import-files").set_input_files(str(big))
        expect(page.locator("#import-message")).to_contain_text("at most 1000 files and 4 MB")
        expect(page.locator("#import-message")).to_contain_text("knowledge import")
        expect(page.locator("#import-result")).to_be_hidden()


def test_files_whose_request_would_pass_what_lambda_takes_once_escaped_are_refused_on_the_page(
        browser, studio, request, tmp_path):
    quoted = tmp_path / "aspas.csv"
    quoted.write_text('"question","answer"\n' + '"a","b"\n' * (3_900_000 // 8))  # 3.9 MB: 6.3 MB as JSON
    with signed_in(browser, studio, request) as page:
        page.get_by_role("button", name="Import…").click()
        page.locator("#import-files").set_input_files(str(quoted))
        expect(page.locator("#import-message")).to_contain_text("once sent: the studio sends at most 5.5 MB")
        expect(page.locator("#import-result")).to_be_hidden()
