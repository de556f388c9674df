// The concept list: its rows, sorting, filters, paging by cursor, and keeping itself up to date.
import { $, badge, cell, show, stamp } from "./dom.js";
import { openConcept } from "./editor.js";
import { loadAgents } from "./agents.js";
import { showReview } from "./review.js";
import { api, config } from "./session.js";
import { fail, say } from "./status.js";
import { visit } from "./url.js";

let concepts = [];
let sortKey = "written_at";  // last written first: what the engine just learned is on top
const PAGE = 50;  // rows per page; the server pages, the browser holds only what it shows
let nextCursor = null;
let total = 0;
let listScroll = 0;  // where the list was scrolled when a concept was opened from it
let sortDescending = true;

// The sorted column says so to assistive technology (aria-sort) and to the eye (an arrow).
function markSort() {
  for (const button of document.querySelectorAll("th button[data-sort]")) {
    const th = button.closest("th");
    const arrow = button.querySelector(".arrow");
    if (button.dataset.sort === sortKey) {
      th.setAttribute("aria-sort", sortDescending ? "descending" : "ascending");
      arrow.textContent = sortDescending ? "▼" : "▲";
    } else {
      th.removeAttribute("aria-sort");
      arrow.textContent = "";
    }
  }
}

// A column's sort button: the same column again turns the order round; a new one starts
// descending (names ascending).
export function sortBy(key) {
  sortDescending = sortKey === key ? !sortDescending : key !== "name";
  sortKey = key;
  loadList();
}

// Rows as the server sorted them; `more` appends a further page below those shown.
function renderList(rows, more = false) {
  markSort();
  const body = $("concepts").tBodies[0];
  if (!more) body.replaceChildren();
  for (const concept of rows) {
    const row = body.insertRow();
    row.dataset.name = concept.name;
    const open = document.createElement("button");
    open.type = "button";
    open.className = "link";
    open.textContent = concept.name;
    open.addEventListener("click", async () => {
      listScroll = window.scrollY;
      if (await openConcept(concept.name)) visit(concept.name);
    });
    open.dataset.name = concept.name;
    const name = cell(row, open);
    if (concept.new) name.append(badge("new", "new"));
    if (concept.conflict) name.append(badge("conflict", "conflict"));
    if (concept.related) name.append(badge(`${concept.related} related claim${concept.related === 1 ? "" : "s"}`, "related"));
    if (concept.problem) name.append(badge("unreadable", "conflict"));
    if (concept.recall) name.append(badge(RECALL[concept.recall] || concept.recall, "out-of-recall"));
    cell(row, concept.description || "").className = "description";
    cell(row, concept.type || "");
    cell(row, badge(concept.provenance || "?", concept.provenance || "conflict"));
    cell(row, concept.confidence == null ? "" : concept.confidence.toFixed(2));
    cell(row, concept.occurrences ?? "");
    cell(row, stamp(concept.updated_at));
    cell(row, stamp(concept.written_at));
  }
  $("empty").hidden = concepts.length > 0;
  $("more").hidden = !nextCursor;
  $("more").textContent = `Show ${Math.min(PAGE, total - concepts.length)} more (${concepts.length} of ${total} shown)`;
}

export function counted() {
  return concepts.length < total ? `${concepts.length} of ${total} concepts` : `${total} concept${total === 1 ? "" : "s"}`;
}

// Why retrieval leaves a concept out, kept (docs/contract.md: validity in time and staleness).
const RECALL = { expired: "expired", not_started: "not started", stale: "stale" };

function statusOf(wanted) {
  return wanted.fresh ? "new" : wanted.conflict ? "conflict" : wanted.related ? "related"
    : wanted.expired ? "expired" : wanted.notStarted ? "not_started" : wanted.stale ? "stale" : "";
}

function listQuery(wanted, limit, cursor) {
  const query = new URLSearchParams({ sort: wanted.sort, order: wanted.desc ? "desc" : "asc", limit: String(limit) });
  const status = statusOf(wanted);
  if (status) query.set("status", status);
  if (wanted.type) query.set("type", wanted.type);
  if (wanted.q.trim()) query.set("q", wanted.q.trim());
  if (cursor) query.set("cursor", cursor);
  return query;
}

// The next page, below the rows shown: scroll position and focus stay; focus moves to the
// first new row only when it was on the button that asked.
export async function showMore() {
  const asked = document.activeElement === $("more");
  const before = concepts.length;
  try {
    const page = await api("GET", `/concepts?${listQuery(shownFilters, PAGE, nextCursor)}`);
    concepts = concepts.concat(page.concepts);
    nextCursor = page.next;
    total = page.total;
    renderList(page.concepts, true);
    say(counted());
    if (asked) {
      const first = $("concepts").tBodies[0].rows[before];
      (first ? first.querySelector("button.link") : $("filter-q")).focus();
    }
  } catch (error) {
    fail("Could not load more concepts", error, showMore);
  }
}

// The list keeps itself up to date: every `refreshSeconds` (config.json, 30 by default) while
// the list is on screen and the tab visible, one row is asked for (the last written, with the
// agent's count of new ones); when either moved, the rows shown are listed again in place.
let newestShown = null;
const CATCH_UP_MS = 3000;
let watching = null;
// A look answered while the list was being listed (or after it was) is older than the rows shown:
// it is dropped, so an operator's own action (mark all as seen) is never followed by a stale
// "updated" that overwrites what the action said.
let listings = 0;
let listing = 0;

function signature(page) {
  const top = page.concepts[0];
  return `${top ? `${top.name} ${top.etag}` : "none"} ${page.total} ${page.new}`;
}

async function newestWrite() {
  return api("GET", "/concepts?sort=written_at&order=desc&limit=1");
}

export function watchForChanges() {
  clearInterval(watching);
  let looking = false;
  watching = setInterval(async () => {
    if (looking || listing || $("list-view").hidden || document.hidden || !$("problem").hidden) return;
    looking = true;
    const asked = listings;
    try {
      const page = await newestWrite();
      const current = asked === listings && !listing;
      if (current && signature(page) !== newestShown && !$("list-view").hidden) {
        const refreshed = refreshList();
        const mine = listings;  // refreshList has begun its listing: any later one is someone else's
        if (await refreshed && mine === listings) say(`${counted()}. The list was updated with the latest changes.`);
      }
    } catch { /* a missed look is taken again at the next one */ }
    looking = false;
  }, (config.refreshSeconds || 30) * 1000);
}

// The rows shown, listed again in place: as many rows, the focus on the same control (a row's
// button by its concept's name), and that row (else the row at the top of the window) kept where
// it was on screen, whatever was written above it.
export async function refreshList() {
  const focus = document.activeElement;
  const focusedRow = focus && focus.closest && focus.closest("#concepts tbody") ? focus.dataset.name : null;
  const anchor = (focusedRow && rowNamed(focusedRow))
    || [...$("concepts").tBodies[0].rows].find((row) => row.getBoundingClientRect().bottom > 0);
  const top = anchor && { name: anchor.dataset.name, y: anchor.getBoundingClientRect().top };
  if (!(await loadList(concepts.length, { quiet: true }))) return false;
  const again = top && rowNamed(top.name);
  if (again) window.scrollBy(0, again.getBoundingClientRect().top - top.y);
  if (focusedRow) focusRow(focusedRow);
  return true;
}

function rowNamed(name) {
  return [...$("concepts").tBodies[0].rows].find((row) => row.dataset.name === name);
}

// The filters the list on screen was loaded with: a failed load puts the controls back to them,
// so a ticked filter never sits above a list it did not filter.
let shownFilters = { fresh: false, conflict: false, related: false, expired: false, notStarted: false, stale: false,
  type: "", q: "", sort: sortKey, desc: sortDescending };

function filters() {
  return { fresh: $("filter-new").checked, conflict: $("filter-conflict").checked, related: $("filter-related").checked,
    expired: $("filter-expired").checked, notStarted: $("filter-not-started").checked, stale: $("filter-stale").checked,
    type: $("filter-type").value, q: $("filter-q").value, sort: sortKey, desc: sortDescending };
}

function setFilters(wanted) {
  $("filter-new").checked = wanted.fresh;
  $("filter-conflict").checked = wanted.conflict;
  $("filter-related").checked = wanted.related;
  $("filter-expired").checked = wanted.expired;
  $("filter-not-started").checked = wanted.notStarted;
  $("filter-stale").checked = wanted.stale;
  $("filter-type").value = wanted.type;
  $("filter-q").value = wanted.q;
  sortKey = wanted.sort;
  sortDescending = wanted.desc;
  markSort();
}

// `rows`: how many to show at least (returning from a concept shows as many as before); `quiet`
// lists again without saying so (the list keeping itself up to date).
export async function loadList(rows = PAGE, { quiet = false } = {}) {
  listings += 1;
  listing += 1;
  const mine = listings;
  try {
    return await listRows(rows, quiet, () => mine !== listings);
  } finally {
    listing -= 1;
  }
}

// `overtaken()`: a later listing began while this one waited; its answer is the newer, so this one
// renders nothing (two listings answered out of order never leave the older rows on screen).
async function listRows(rows, quiet, overtaken) {
  const wanted = filters();
  const status = statusOf(wanted);
  if (!quiet) say("Loading…");
  // What the list looks for changes against. The default list (last written first, unfiltered)
  // says it itself; any other is preceded by one look, so a write between the two is caught at the
  // next look rather than missed.
  const unfiltered = !status && !wanted.type && !wanted.q.trim() && wanted.sort === "written_at" && wanted.desc;
  const before = unfiltered ? null : await newestWrite().catch(() => null);
  try {
    const page = await api("GET", `/concepts?${listQuery(wanted, Math.min(500, Math.max(PAGE, rows)), null)}`);
    if (overtaken()) return true;
    concepts = page.concepts;
    nextCursor = page.next;
    total = page.total;
    shownFilters = wanted;
    const next = new URLSearchParams(location.search);
    if (status) next.set("status", status); else next.delete("status");
    next.delete("concept");
    next.delete("new");
    history.replaceState(null, "", `${location.pathname}?${next}`);
    showReview(page);
    showCatchingUp(page);
    renderList(concepts);
    show("list-view");
    if (!quiet) say(counted());
    newestShown = unfiltered ? signature(page) : before ? signature(before) : "unknown";
    return true;
  } catch (error) {
    if (overtaken()) return true;  // the later listing says how it went
    if (error.status === 404 && error.body && error.body.error && error.body.error.code === "unknown_agent") {
      await loadAgents();
      say(`${error.message}. Choose one of the tenant's agents below.`);
      return false;
    }
    const filtered = JSON.stringify(wanted) !== JSON.stringify(shownFilters);
    if (filtered && !$("list-view").hidden) setFilters(shownFilters);
    fail(filtered && !$("list-view").hidden ? "The filter was not applied (the list below is unchanged)"
      : "Could not load the concepts", error, () => { setFilters(wanted); return loadList(); });
    return false;
  }
}

// An answer the service gave before reading every change (after bulk writes) says how many it
// has not read: the rows shown may be behind, and the list is asked again shortly to read on.
let catchingUp = null;

function showCatchingUp(page) {
  const left = page.catching_up || 0;
  $("catching-up").hidden = !left;
  $("catching-up").textContent = left
    ? `Still catching up on ${left} change${left === 1 ? "" : "s"}: some rows may be behind; the list updates itself.` : "";
  clearTimeout(catchingUp);
  if (left) {
    catchingUp = setTimeout(() => { if (!$("list-view").hidden && !document.hidden) refreshList(); }, CATCH_UP_MS);
  }
}

// Back to the list as it was left: as many rows, the same scroll position, focus on the concept.
export async function backToList(left) {
  if (!(await loadList(concepts.length))) return;
  window.scrollTo(0, listScroll);
  focusRow(left);
}

// Back on the list, focus returns to the concept the operator came from (or the list's first control).
function focusRow(name) {
  const target = name && [...document.querySelectorAll("#concepts tbody button.link")].find((b) => b.dataset.name === name);
  (target || $("filter-new")).focus();
}
