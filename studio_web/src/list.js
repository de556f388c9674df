// The concept list: its rows, sorting, filters, its pages (pages.js), and keeping itself up to date.
import { $, badge, cell, show, stamp } from "./dom.js";
import { openConcept } from "./editor.js";
import { loadAgents } from "./agents.js";
import { showConfigProblem } from "./banner.js";
import { markReviewed, showReview } from "./review.js";
import { api, operatorActor } from "./session.js";
import { showQueryNote } from "./querynote.js";
import { PAGE, counted, showPages, startOf } from "./pages.js";
import { selectBox, showBar } from "./select.js";
import { listedNow } from "./stale.js";
import { state } from "./state.js";
import { plainWords } from "./api.js";
import { fail, say, spokenCount } from "./status.js";
import { SHARED, agentUrl, filtersInUrl, inShared, listUrl, visit } from "./url.js";

function searching() {
  return !state.list.sortChosen && $("filter-q").value.trim() !== "";
}

// The sorted column says so to assistive technology (aria-sort) and to the eye (an arrow).
function markSort() {
  for (const button of document.querySelectorAll("th button[data-sort]")) {
    const th = button.closest("th");
    const arrow = button.querySelector(".arrow");
    if (button.dataset.sort === state.list.sortKey && !searching()) {
      th.setAttribute("aria-sort", state.list.sortDescending ? "descending" : "ascending");
      arrow.textContent = state.list.sortDescending ? "▼" : "▲";
    } else {
      th.removeAttribute("aria-sort");
      arrow.textContent = "";
    }
  }
}

// A column's sort button: the same column again turns the order round; a new one starts
// descending (names ascending).
export function sortBy(key) {
  const list = state.list;
  list.sortDescending = list.sortKey === key && !searching() ? !list.sortDescending : key !== "name";
  list.sortKey = key;
  list.sortChosen = true;
  loadList();
}

// Why and by whom the current version was written, in words ("merged by the engine", "edited by you").
const REASONS = { created: "created", confirmed: "confirmed", merged: "merged", kept_beside: "kept beside",
  contradiction: "contradiction", edit: "edited", restore: "restored", purged: "purged",
  words_removed: "learned words removed" };

function writtenWhy(concept) {
  const who = !concept.written_by ? "" : concept.written_by === "engine" ? "the engine"
    : concept.written_by === operatorActor() ? "you" : concept.written_by;
  const why = REASONS[concept.reason] || "written";
  return who ? `${why} by ${who}` : concept.reason ? why : "";
}

// A new row's mark: the badge, and "Mark reviewed" (r from the row), which takes it out of this
// operator's queue at the version shown.
function newMark(concept) {
  const mark = document.createElement("span");
  mark.className = "triage";
  mark.append(badge("new", "new"));
  const reviewed = document.createElement("button");
  reviewed.type = "button";
  reviewed.className = "mark-reviewed";
  reviewed.textContent = "Mark reviewed";
  reviewed.setAttribute("aria-label", `Mark reviewed: ${concept.name}`);
  reviewed.setAttribute("aria-keyshortcuts", "r");
  reviewed.addEventListener("click", () => reviewRow(concept.name));
  mark.append(reviewed);
  return mark;
}

// One concept reviewed: its mark goes, the count follows, and focus moves on to the next new row
// (else stays on this row's name), so a queue is worked through from the keyboard.
async function reviewRow(name) {
  const concept = state.list.concepts.find((c) => c.name === name);
  const row = rowNamed(name);
  if (!concept || !concept.new || !row) return;
  const answer = await markReviewed(name, concept.written_at);
  if (!answer) return;
  concept.new = false;
  // The count this page just changed is no news for the list's watch to announce over this answer.
  const newest = state.list.newestShown;
  if (newest && newest !== "unknown") state.list.newestShown = newest.replace(/ \d+$/, ` ${answer.new}`);
  const mark = row.querySelector(".triage");
  const next = nextNewRow(row);
  if (mark) mark.remove();
  const target = next || row;
  target.querySelector("button.link").focus();
  say(`${name} marked reviewed. ${answer.new ? `${answer.new} new left${next ? `: on to ${next.dataset.name}` : ""}.` : "Nothing new left."}`);
}

function nextNewRow(row) {
  let next = row.nextElementSibling;
  while (next && !next.querySelector(".triage")) next = next.nextElementSibling;
  return next;
}

// Keyboard triage in the list: j and k move to the next and previous concept, n to the next new one,
// r marks the focused one reviewed; only while focus is in the list's rows, so they never take a
// letter typed elsewhere (the hint above the list says them).
export function triageKeys(event) {
  if (event.ctrlKey || event.metaKey || event.altKey || event.shiftKey) return;
  const row = event.target.closest && event.target.closest("#concepts tbody tr");
  if (!row) return;
  let target = null;
  if (event.key === "j") target = row.nextElementSibling;
  else if (event.key === "k") target = row.previousElementSibling;
  else if (event.key === "n") target = nextNewRow(row);
  else if (event.key === "r") {
    event.preventDefault();
    reviewRow(row.dataset.name);
    return;
  } else return;
  event.preventDefault();
  if (target) target.querySelector("button.link").focus();
}

// Whether this agent recalls the tenant's shared knowledge, as its last list said (null: no list yet).
export const recallsShared = () => (state.list.sharedRecalled === undefined ? null : state.list.sharedRecalled !== null);

// What the scope of the list is: the tenant's shared knowledge, or what of it this agent also recalls.
function showShared(page) {
  state.list.sharedRecalled = page.shared_recalled ?? null;
  const line = $("shared-line");
  line.replaceChildren();
  if (inShared) {
    line.append("Shared knowledge of the tenant: every agent that opts in (shared: true) recalls these as its own, "
      + "and an agent's own concept of a name wins. Copy or move an agent's concept here from its editor.");
  } else if (page.shared_recalled != null) {
    const link = document.createElement("a");
    link.href = agentUrl(SHARED);
    link.textContent = `${page.shared_recalled} shared concept${page.shared_recalled === 1 ? "" : "s"}`;
    line.append("This agent also recalls ", link, " of the tenant beside these; a row marked “overrides shared” "
      + "is recalled in place of the shared concept of its name.");
  }
  line.hidden = !line.childNodes.length;
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
      state.list.listScroll = window.scrollY;
      if (await openConcept(concept.name)) visit(concept.name);
    });
    open.dataset.name = concept.name;
    open.title = concept.name;  // cut with an ellipsis in compact rows
    if (concept.match) open.replaceChildren(marked(concept.name, concept.match.name_marks));
    const name = cell(row, selectBox(concept));
    name.append(open);
    if (concept.new) name.append(newMark(concept));
    if (concept.scope === "shared") name.append(badge("shared", "shared"));
    if (concept.shadows_shared) name.append(badge("overrides shared", "shared"));
    if (concept.conflict) name.append(badge("conflict", "conflict"));
    if (concept.related) name.append(badge(`${concept.related} related claim${concept.related === 1 ? "" : "s"}`, "related"));
    if (concept.problem) name.append(badge("unreadable", "conflict"));
    if (concept.recall) name.append(badge(RECALL[concept.recall] || concept.recall, "out-of-recall"));
    if (concept.words_pending) name.append(badge("words pending", "pending"));
    const described = cell(row, concept.match && concept.match.source === "description"
      ? marked(concept.match.snippet, concept.match.marks) : concept.description || "");
    described.className = "description";
    described.title = concept.match && concept.match.source === "body" ? concept.match.snippet : concept.description || "";
    if (concept.match && concept.match.source === "body") {  // found in the text only: where, below
      const snippet = document.createElement("span");
      snippet.className = "snippet";
      snippet.append(marked(concept.match.snippet, concept.match.marks));
      described.append(snippet);
    }
    cell(row, concept.type || "");
    cell(row, badge(concept.provenance || "?", concept.provenance || "conflict"));
    cell(row, concept.confidence == null ? "" : concept.confidence.toFixed(2));
    cell(row, concept.occurrences ?? "");
    cell(row, stamp(concept.updated_at, false, true));
    const written = cell(row, stamp(concept.written_at, false, true));
    const why = document.createElement("span");
    why.className = "why";
    why.textContent = written.title = writtenWhy(concept);
    written.append(why);
  }
  $("empty").hidden = state.list.concepts.length > 0;
  showPages();
  showBar();
}

// Text with the ranges the server marked as matched in <mark>, every piece as text (never as HTML).
function marked(text, ranges) {
  const out = document.createDocumentFragment();
  let at = 0;
  for (const [start, end] of ranges) {
    if (start < at || end <= start || end > text.length) continue;
    out.append(text.slice(at, start));
    const mark = document.createElement("mark");
    mark.textContent = text.slice(start, end);
    out.append(mark);
    at = end;
  }
  out.append(text.slice(at));
  return out;
}

// Why retrieval leaves a concept out, kept (docs/contract.md: validity in time and staleness).
const RECALL = { expired: "expired", not_started: "not started", stale: "stale", retired: "retired" };

function statusOf(wanted) {
  return wanted.fresh ? "new" : wanted.conflict ? "conflict" : wanted.related ? "related"
    : wanted.expired ? "expired" : wanted.notStarted ? "not_started" : wanted.stale ? "stale"
      : wanted.retired ? "retired" : "";
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
  const before = state.list.concepts.length;
  try {
    const page = await api("GET", `/concepts?${listQuery(state.list.shownFilters, PAGE, state.list.nextCursor)}`);
    state.list.concepts = state.list.concepts.concat(page.concepts);
    state.list.nextCursor = page.next;
    state.list.total = page.total;
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
// A look answered while the list was being listed (or after it was) is older than the rows shown:
// it is dropped (state.list.listings), so an operator's own action (mark all as seen) is never
// followed by a stale "updated" that overwrites what the action said.

function signature(page) {
  const top = page.concepts[0];
  return `${top ? `${top.name} ${top.etag}` : "none"} ${page.total} ${page.new}`;
}

async function newestWrite() {
  return api("GET", "/concepts?sort=written_at&order=desc&limit=1");
}

export function watchForChanges() {
  clearInterval(state.list.watching);
  let looking = false;
  state.list.watching = setInterval(async () => {
    if (looking || state.list.listing || $("list-view").hidden || document.hidden || !$("problem").hidden) return;
    looking = true;
    const asked = state.list.listings;
    try {
      const page = await newestWrite();
      showConfigProblem(page.config_problem);
      const current = asked === state.list.listings && !state.list.listing;
      if (!current) {
        // A list was listed meanwhile: it is the newer one, and says itself whether it is current.
      } else if (signature(page) !== state.list.newestShown && !$("list-view").hidden) {
        const before = spokenCount();  // an action's answer said during the refresh is newer news: it stays
        const refreshed = refreshList();
        const mine = state.list.listings;  // refreshList has begun its listing: any later one is someone else's
        if (await refreshed && mine === state.list.listings && spokenCount() === before) {
          say(`${counted()}. The list was updated with the latest changes.`, { background: true });
        }
      } else {
        markCurrent(page.as_of);
      }
    } catch (error) {
      // A missed look is taken again at the next one, and said: a list that looks current while
      // the service is down would mislead.
      if (error.status !== 401) markBehind(error);
    }
    looking = false;
  }, (state.config.refreshSeconds || 30) * 1000);
}

// Whether the list on screen is known to be current: it says when it could not be checked, and
// since when it is as shown.
function markCurrent(asOf) {
  state.list.currentAt = asOf || state.list.currentAt;
  $("list-stale").hidden = true;
}

function markBehind(error) {
  $("list-stale").textContent = `This list may be out of date: it could not be updated since ${stamp(state.list.currentAt, true)} `
    + `(${plainWords(error).replace(/\.$/, "")}). It is checked again every ${state.config.refreshSeconds || 30} s.`;
  $("list-stale").hidden = false;
}

// The rows shown, listed again in place: as many rows, the focus on the same control (a row's
// button by its concept's name), and that row (else the row at the top of the window) kept where
// it was on screen, whatever was written above it.
export async function refreshList() {
  const focus = document.activeElement;
  const focusedRow = focus && focus.closest && focus.closest("#concepts tbody") ? focus.dataset.name : null;
  const anchor = (focusedRow && rowNamed(focusedRow))
    || [...$("concepts").tBodies[0].rows].find((row) => row.getBoundingClientRect().bottom > 0);
  // The row's name, not the row, is what stays put: a row grown taller (a new mark, a longer line)
  // would move its name within it.
  const place = (row) => (row.querySelector("button.link") || row).getBoundingClientRect().top;
  const top = anchor && { name: anchor.dataset.name, y: place(anchor) };
  if (!(await loadList(state.list.concepts.length, { quiet: true }))) return false;
  const again = top && rowNamed(top.name);
  if (again) window.scrollBy(0, place(again) - top.y);
  if (focusedRow) focusRow(focusedRow);
  return true;
}

function rowNamed(name) {
  return [...$("concepts").tBodies[0].rows].find((row) => row.dataset.name === name);
}

// The filters the controls say. The list on screen keeps those it was loaded with
// (state.list.shownFilters): a failed load puts the controls back to them, so a ticked filter never
// sits above a list it did not filter.
function filters() {
  return { fresh: $("filter-new").checked, conflict: $("filter-conflict").checked, related: $("filter-related").checked,
    expired: $("filter-expired").checked, notStarted: $("filter-not-started").checked, stale: $("filter-stale").checked,
    retired: $("filter-retired").checked,
    type: $("filter-type").value, q: $("filter-q").value, sort: searching() ? "relevance" : state.list.sortKey,
    desc: searching() ? true : state.list.sortDescending };
}

function setFilters(wanted) {
  $("filter-new").checked = wanted.fresh;
  $("filter-conflict").checked = wanted.conflict;
  $("filter-related").checked = wanted.related;
  $("filter-expired").checked = wanted.expired;
  $("filter-not-started").checked = wanted.notStarted;
  $("filter-stale").checked = wanted.stale;
  $("filter-retired").checked = wanted.retired;
  $("filter-type").value = wanted.type;
  $("filter-q").value = wanted.q;
  state.list.sortKey = wanted.sort === "relevance" ? "written_at" : wanted.sort;
  state.list.sortDescending = wanted.sort === "relevance" ? true : wanted.desc;
  state.list.sortChosen = wanted.q.trim() ? wanted.sort !== "relevance" : wanted.sort !== "written_at" || !wanted.desc;
  markSort();
}

// The URL says the list shown. A list the operator asked for is a new history entry (Back returns to
// the one before); refining a search, a list that updates itself, or one shown in place of a concept
// replaces the entry.
function keepInUrl(wanted, status, quiet) {
  const target = listUrl(wanted, status);
  const here = new URLSearchParams(location.search);
  if (location.pathname + location.search === target) return;
  const was = filtersInUrl();
  const refining = was.q.trim() && wanted.q.trim() && JSON.stringify({ ...was, q: "" }) === JSON.stringify({ ...wanted, q: "" });
  if (quiet || refining || here.has("concept") || here.has("new")) history.replaceState(null, "", target);
  else history.pushState(null, "", target);
}

// The controls set to what the URL says (a reload, Back or Forward), before the list is loaded.
export function useUrlFilters() {
  setFilters(filtersInUrl());
}

// `rows`: how many to show at least (returning from a concept shows as many as before); `quiet`
// lists again without saying so (the list keeping itself up to date).
// `replace`: the URL's history entry is replaced rather than added (keepInUrl); `at`: the first row (pages.js).
export async function loadList(rows = PAGE, { quiet = false, replace = false, at } = {}) {
  state.list.listings += 1;
  state.list.listing += 1;
  const mine = state.list.listings;
  try {
    return await listRows(rows, { quiet, replace, at }, () => mine !== state.list.listings);
  } finally {
    state.list.listing -= 1;
  }
}

// `overtaken()`: a later listing began while this one waited (a filter changed since, Back twice);
// its answer is the newer, so this one renders nothing (two listings answered out of order never
// leave the older rows on screen).
async function listRows(rows, { quiet, replace, at }, overtaken) {
  const wanted = filters();
  const status = statusOf(wanted);
  const start = startOf(wanted, at);
  const spokenBefore = spokenCount();  // a refresh never talks over what an action said meanwhile
  if (!quiet) say("Loading…");
  // What the list looks for changes against. The default list (last written first, unfiltered)
  // says it itself; any other is preceded by one look, so a write between the two is caught at the
  // next look rather than missed.
  const unfiltered = !start && !status && !wanted.type && !wanted.q.trim() && wanted.sort === "written_at" && wanted.desc;
  const before = unfiltered ? null : await newestWrite().catch(() => null);
  try {
    const page = await api("GET", `/concepts?${listQuery(wanted, Math.min(500, Math.max(PAGE, rows)), start)}`);
    if (overtaken()) return true;
    // The list updating itself while the operator opened a concept meanwhile: the concept stays.
    if (quiet && $("list-view").hidden) return false;
    state.list.concepts = page.concepts;
    state.list.nextCursor = page.next;
    state.list.total = page.total;
    state.list.shownFilters = wanted;
    state.list.offset = start;
    keepInUrl(wanted, status, quiet || replace);
    showReview(page);
    showConfigProblem(page.config_problem);
    showShared(page);
    showQueryNote(page, loadList);
    markCurrent(page.as_of);
    listedNow(page);
    const caughtUp = showCatchingUp(page);
    renderList(state.list.concepts);
    show("list-view");
    if (!quiet || (caughtUp && spokenCount() === spokenBefore)) say(counted(), { background: quiet });  // the count said while catching up was short
    state.list.newestShown = unfiltered ? signature(page) : before ? signature(before) : "unknown";
    return true;
  } catch (error) {
    if (overtaken()) return true;  // the later listing says how it went
    if (error.status === 404 && error.body && error.body.error && error.body.error.code === "unknown_agent") {
      await loadAgents();
      say(`${error.message}. Choose one of the tenant's agents below.`);
      return false;
    }
    const filtered = JSON.stringify(wanted) !== JSON.stringify(state.list.shownFilters);
    if (filtered && !$("list-view").hidden) {
      setFilters(state.list.shownFilters);
      history.replaceState(null, "", listUrl(state.list.shownFilters, statusOf(state.list.shownFilters)));
    }
    fail(filtered && !$("list-view").hidden ? "The filter was not applied (the list below is unchanged)"
      : "Could not load the concepts", error, () => { setFilters(wanted); return loadList(); });
    return false;
  }
}

// An answer the service gave before reading every change (after bulk writes) says how many it
// has not read: the rows shown may be behind, and the list is asked again shortly to read on.
const CATCH_UP_MS = 3000;

// Whether this answer is the first to have read every change after one that had not.
function showCatchingUp(page) {
  const left = page.catching_up || 0;
  const caughtUp = !left && !$("catching-up").hidden;
  $("catching-up").hidden = !left;
  $("catching-up").textContent = left
    ? `Still catching up on ${left} change${left === 1 ? "" : "s"}: some rows may be behind; the list updates itself.` : "";
  clearTimeout(state.list.catchingUp);
  if (left) {
    state.list.catchingUp = setTimeout(() => {
      if (!$("list-view").hidden && !document.hidden) refreshList();
    }, CATCH_UP_MS);
  }
  return caughtUp;
}

// Back to the list as it was left: as many rows, the same scroll position, focus on the concept.
export async function backToList(left) {
  if (!(await loadList(state.list.concepts.length))) return;
  window.scrollTo(0, state.list.listScroll);
  focusRow(left);
}

// The skip link and a fresh page: the list's first concept (the view's own start when no list is shown).
export function focusList() {
  const first = document.querySelector("#concepts tbody button.link");
  if (!$("list-view").hidden) (first || $("filter-new")).focus();
  else $("main").focus();
}

// Back on the list, focus returns to the concept the operator came from (or the list's first control).
function focusRow(name) {
  const target = name && [...document.querySelectorAll("#concepts tbody button.link")].find((b) => b.dataset.name === name);
  (target || $("filter-new")).focus();
}
