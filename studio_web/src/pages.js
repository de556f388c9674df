// The list's pages: the rows of one page of the server's order at a time (50, and more below as "Show
// more" adds them), where they stand ("Rows 4001–4050 of 5000"), and controls that reach any page in one
// step: First, Previous, a page number, Next, Last. The server pages by offset (the list's `cursor`), so
// a far page costs what the first does; the URL keeps the page (url.js), so a reload, Back and Forward
// show the same rows. What is selected is what is on screen: another page starts with nothing selected.
import { $ } from "./dom.js";
import { calls, state } from "./state.js";
import { say } from "./status.js";
import { PAGE, filtersInUrl, pageInUrl } from "./url.js";

export { PAGE };

// Where a listing of `wanted` starts: `at` when a page control asked for it; else the page the URL
// names while it names these filters (the list refreshing itself, the way back from a concept, a
// reload, Back and Forward); else, a list the operator filtered or sorted anew, the first row.
export function startOf(wanted, at) {
  if (at !== undefined) return at;
  return JSON.stringify(wanted) === JSON.stringify(filtersInUrl()) ? pageInUrl() : 0;
}

function range() {
  const { concepts, offset } = state.list;
  return `${offset + 1}–${offset + concepts.length}`;
}

// What the list says it shows ("12 concepts", "50 of 120 concepts", "rows 101–150 of 5000 concepts").
export function counted() {
  const { concepts, total, shownFilters, offset } = state.list;
  const q = shownFilters.q.trim();
  const all = concepts.length >= total;
  if (q) {
    return `${total} concept${total === 1 ? " matches" : "s match"} “${q}”`
      + `${all ? "" : ` (${offset ? `rows ${range()}` : concepts.length} shown)`}`;
  }
  if (all) return `${total} concept${total === 1 ? "" : "s"}`;
  return offset ? `Rows ${range()} of ${total} concepts` : `${concepts.length} of ${total} concepts`;
}

const pageCount = () => Math.max(1, Math.ceil(state.list.total / PAGE));

// "Show more" and the page controls, as the rows just rendered stand. A page that writes emptied
// (its rows deleted or moved while it was open) gives way to the list's last page.
export function showPages() {
  const { concepts, total, offset, nextCursor } = state.list;
  if (!concepts.length && offset > 0 && total > 0) {
    goTo((pageCount() - 1) * PAGE, { quiet: true, replace: true });
    return;
  }
  $("more").hidden = !nextCursor;
  $("more").textContent = `Show ${Math.min(PAGE, total - offset - concepts.length)} more `
    + `(${offset ? `rows ${range()}` : concepts.length} of ${total} shown)`;
  $("pages").hidden = total <= PAGE && !offset;
  $("page-rows").textContent = concepts.length ? `Rows ${range()} of ${total}` : "";
  $("page-number").value = String(Math.floor(offset / PAGE) + 1);
  $("page-number").max = String(pageCount());
  $("page-count").textContent = `of ${pageCount()}`;
  $("page-first").disabled = $("page-previous").disabled = offset === 0;
  $("page-next").disabled = $("page-last").disabled = !nextCursor;
}

// The list from row `at`. Focus stays on the control used, unless the page reached disables it
// (Next on the last page): then it goes to the page number, never to the page's <body>.
// The page starting at row `at`, nothing selected (what is selected is what is on screen); whether it
// was listed.
export async function goTo(at, options = {}) {
  const from = document.activeElement;
  state.list.selected.clear();
  const listed = await calls.loadList(PAGE, { at, ...options });
  if (from && from.disabled) $("page-number").focus();
  return listed;
}

function jump(event) {
  event.preventDefault();
  const asked = Number($("page-number").value);
  if (!Number.isInteger(asked) || asked < 1) {
    say(`Type a page number from 1 to ${pageCount()}.`);
    return;
  }
  goTo((Math.min(asked, pageCount()) - 1) * PAGE);
}

export function wirePages() {
  $("page-first").addEventListener("click", () => goTo(0));
  $("page-previous").addEventListener("click", () => goTo(Math.max(0, state.list.offset - PAGE)));
  $("page-next").addEventListener("click", () => goTo(state.list.offset + state.list.concepts.length));
  $("page-last").addEventListener("click", () => goTo((pageCount() - 1) * PAGE));
  $("page-form").addEventListener("submit", jump);
}
