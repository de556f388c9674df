// The studio page: list, conflicts, edit (CodeMirror), history with diffs and restore, delete and undelete.
// All state comes from the studio HTTP API; the page keeps only the ETag of what it shows, and
// an unsaved edit in the tab's storage while the operator signs in again.
import { EditorView, basicSetup } from "codemirror";
import { Decoration, keymap, lineNumbers } from "@codemirror/view";
import { EditorState, StateField } from "@codemirror/state";
import { unifiedMergeView } from "@codemirror/merge";
import { markdown } from "@codemirror/lang-markdown";
import { yamlFrontmatter } from "@codemirror/lang-yaml";
import { lintGutter, setDiagnostics } from "@codemirror/lint";
import { ApiError, plainWords, request } from "./api.js";
import { TOKEN_KEY, beginSignIn as startSignIn, finishSignIn as completeSignIn } from "./signin.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const scope = { tenant: params.get("tenant") || "default", agent: params.get("agent") || "" };
const DRAFT_KEY = "knowledge-studio-draft";
const NEW_CONCEPT = `---
name: new-concept
description: One line that states the concept on its own.
type: fact
---

What is true, for the agent to use. Link a neighbour as [[its-name]].
`;

let config = { apiBase: "/api", signIn: null };
const SIGN_IN_KEY = "knowledge-studio-sign-in";
let concepts = [];
let sortKey = "written_at";  // last written first: what the engine just learned is on top
const PAGE = 50;  // rows per page; the server pages, the browser holds only what it shows
let nextCursor = null;
let total = 0;
let listScroll = 0;  // where the list was scrolled when a concept was opened from it
let sortDescending = true;
let editor = null;
let current = null; // { name, etag } of the version in the editor; name null for a new concept
let savedText = null; // the text as loaded or last saved: anything else in the editor is unsaved work
let leavingOnPurpose = false; // set when the page itself navigates away (sign-in), the draft kept
let diffView = null;

function say(text) {
  $("status").textContent = text;
  if (text) $("problem").hidden = true;  // news replaces an older failure
}

// A failure in plain words (api.js). A 401 says nothing here: the sign-in page has taken over.
function fail(what, error, retry) {
  if (error && error.status === 401) return;
  $("status").textContent = "";
  $("problem-text").textContent = `${what}: ${plainWords(error)}`;
  // Asking again helps when the service or the connection failed, not when the answer was no.
  $("problem-retry").hidden = !retry || (error instanceof ApiError && error.status < 500);
  retryAction = retry || null;
  $("problem").hidden = false;
}

let retryAction = null;

// ------------------------------------------------------------------ unsaved work

function isDirty() {
  return Boolean(current && editor && !$("editor-view").hidden && editor.state.doc.toString() !== savedText);
}

function markDirty() {
  $("dirty").hidden = !isDirty();
}

// Asks before unsaved work is thrown away; true when it may go.
function mayDiscard(what) {
  if (!isDirty()) return true;
  const name = current.name || "the new concept";
  return confirm(`You have unsaved changes to ${name}. ${what} discards them. Discard them?`);
}

// The draft outlives a sign-in in this tab only (sessionStorage), and is taken back once.
function keepDraft() {
  if (!isDirty()) return false;
  sessionStorage.setItem(DRAFT_KEY, JSON.stringify({
    tenant: scope.tenant, agent: scope.agent, name: current.name, etag: current.etag, text: editor.state.doc.toString(),
  }));
  return true;
}

function takeDraft() {
  const draft = JSON.parse(sessionStorage.getItem(DRAFT_KEY) || "null");
  sessionStorage.removeItem(DRAFT_KEY);
  return draft && draft.tenant === scope.tenant && draft.agent === scope.agent ? draft : null;
}

// ------------------------------------------------------------------ the open concept is in the URL

function urlFor(name) {
  const next = new URLSearchParams(location.search);
  next.delete("concept");
  next.delete("new");
  if (name === NEW) next.set("new", "1");
  else if (name) next.set("concept", name);
  return `${location.pathname}?${next}`;
}

function visit(name) {
  if (location.pathname + location.search !== urlFor(name)) history.pushState(null, "", urlFor(name));
}

function wantedInUrl() {
  const here = new URLSearchParams(location.search);
  return here.get("new") ? NEW : here.get("concept");
}

const NEW = Symbol("new concept");

function show(view) {
  for (const id of ["signin", "agents-view", "list-view", "deleted-view", "editor-view"]) $(id).hidden = id !== view;
}

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

// ------------------------------------------------------------------ sign-in: authorization code + PKCE
// The same code signs in against Cognito's hosted UI on AWS and the local stack's stand-in (signin.js).

function beginSignIn() {
  leavingOnPurpose = true;
  return startSignIn(config.signIn, { redirectUri: config.signIn.redirectUri, pendingKey: SIGN_IN_KEY });
}

function finishSignIn() {
  return completeSignIn(config.signIn, { redirectUri: config.signIn && config.signIn.redirectUri,
                                         pendingKey: SIGN_IN_KEY, failed: say });
}

function api(method, path, { body, etag, tenantWide } = {}) {
  const tenantBase = `${config.apiBase}/tenants/${encodeURIComponent(scope.tenant)}`;
  const base = tenantWide ? tenantBase : `${tenantBase}/agents/${encodeURIComponent(scope.agent)}`;
  return request(base + path, { method, token: token(), body, etag, unauthorized: signIn });
}

function signIn() {
  sessionStorage.removeItem(TOKEN_KEY);
  const kept = keepDraft();
  const name = current && (current.name || "the new concept");
  show("signin");
  if (!config.signIn) say("Sign-in is not configured for this page (config.json has no signIn).");
  else if (kept) say(`Your session has ended. Your unsaved changes to ${name} are kept in this tab: sign in to go on with them.`);
  else say("");
}

// ------------------------------------------------------------------ the list

function badge(text, kind) {
  const span = document.createElement("span");
  span.className = `badge ${kind}`;
  span.textContent = text;
  return span;
}

function cell(row, content) {
  const td = row.insertCell();
  if (content instanceof Node) td.append(content);
  else td.textContent = content;
  return td;
}

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

function stamp(text) {
  return text ? text.replace("T", " ").replace("Z", "").slice(0, 16) : "";
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

function counted() {
  return concepts.length < total ? `${concepts.length} of ${total} concepts` : `${total} concept${total === 1 ? "" : "s"}`;
}

function statusOf(wanted) {
  return wanted.fresh ? "new" : wanted.conflict ? "conflict" : wanted.related ? "related" : "";
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
async function showMore() {
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

// The review queue: each row the engine wrote since this operator last looked is marked new
// (kept on the server per operator, so it follows them between browsers); the count is in the
// filter's label and the page title. "Mark all as seen" puts back the time the list shown was
// listed (`as_of`), so a write that came after it stays new.
let listedAt = null;
let newCount = 0;

const TITLE = "Knowledge — studio";

function showReview(page) {
  newCount = page.new || 0;
  document.title = newCount ? `(${newCount > 99 ? "99+" : newCount}) ${TITLE}` : TITLE;
  $("new-count").textContent = String(newCount);
  $("mark-seen").hidden = !newCount;
  $("review-since").textContent = newCount
    ? `${newCount} concept${newCount === 1 ? "" : "s"} the engine wrote since ${stamp(page.since)} UTC ${newCount === 1 ? "is" : "are"} marked new.`
    : `Nothing new from the engine since ${stamp(page.since)} UTC.`;
}

async function markSeen() {
  const asked = document.activeElement === $("mark-seen");
  try {
    await api("PUT", "/review", { body: { seen_at: listedAt } });
  } catch (error) {
    fail("Not marked as seen", error, markSeen);
    return;
  }
  if (!(await refreshList())) return;
  if (asked) $("filter-new").focus();  // the button is gone once nothing is new
  say(`${counted()}. Marked all as seen.`);
}

// The list keeps itself up to date: every `refreshSeconds` (config.json, 30 by default) while
// the list is on screen and the tab visible, one row is asked for (the last written, with the
// agent's count of new ones); when either moved, the rows shown are listed again in place.
let newestShown = null;
let watching = null;

function signature(page) {
  const top = page.concepts[0];
  return `${top ? `${top.name} ${top.etag}` : "none"} ${page.total} ${page.new}`;
}

async function newestWrite() {
  return api("GET", "/concepts?sort=written_at&order=desc&limit=1");
}

function watchForChanges() {
  clearInterval(watching);
  let looking = false;
  watching = setInterval(async () => {
    if (looking || $("list-view").hidden || document.hidden || !$("problem").hidden) return;
    looking = true;
    try {
      const page = await newestWrite();
      if (signature(page) !== newestShown && !$("list-view").hidden && await refreshList()) {
        say(`${counted()}. The list was updated with the latest changes.`);
      }
    } catch { /* a missed look is taken again at the next one */ }
    looking = false;
  }, (config.refreshSeconds || 30) * 1000);
}

// The rows shown, listed again in place: as many rows, the focus on the same control (a row's
// button by its concept's name), and that row (else the row at the top of the window) kept where
// it was on screen, whatever was written above it.
async function refreshList() {
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
let shownFilters = { fresh: false, conflict: false, related: false, type: "", q: "", sort: sortKey, desc: sortDescending };

function filters() {
  return { fresh: $("filter-new").checked, conflict: $("filter-conflict").checked, related: $("filter-related").checked,
    type: $("filter-type").value, q: $("filter-q").value, sort: sortKey, desc: sortDescending };
}

function setFilters(wanted) {
  $("filter-new").checked = wanted.fresh;
  $("filter-conflict").checked = wanted.conflict;
  $("filter-related").checked = wanted.related;
  $("filter-type").value = wanted.type;
  $("filter-q").value = wanted.q;
  sortKey = wanted.sort;
  sortDescending = wanted.desc;
  markSort();
}

// `rows`: how many to show at least (returning from a concept shows as many as before); `quiet`
// lists again without saying so (the list keeping itself up to date).
async function loadList(rows = PAGE, { quiet = false } = {}) {
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
    concepts = page.concepts;
    nextCursor = page.next;
    total = page.total;
    shownFilters = wanted;
    const next = new URLSearchParams(location.search);
    if (status) next.set("status", status); else next.delete("status");
    next.delete("concept");
    next.delete("new");
    history.replaceState(null, "", `${location.pathname}?${next}`);
    listedAt = page.as_of;
    showReview(page);
    renderList(concepts);
    show("list-view");
    if (!quiet) say(counted());
    newestShown = unfiltered ? signature(page) : before ? signature(before) : "unknown";
    return true;
  } catch (error) {
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

// Back to the list as it was left: as many rows, the same scroll position, focus on the concept.
async function backToList(left) {
  if (!(await loadList(concepts.length))) return;
  window.scrollTo(0, listScroll);
  focusRow(left);
}

// Back on the list, focus returns to the concept the operator came from (or the list's first control).
function focusRow(name) {
  const target = name && [...document.querySelectorAll("#concepts tbody button.link")].find((b) => b.dataset.name === name);
  (target || $("filter-new")).focus();
}

// ------------------------------------------------------------------ the editor

// The section consolidation keeps beside an operator's body (`## Related claims`, up to a
// `## Contradiction` or the end): tinted, so the claims waiting to be folded in are seen.
const RELATED_HEADING = /^## Related claims[ \t]*$/;
const NEXT_SECTION = /^## Contradiction[ \t]*$/;

function relatedLines(doc) {
  const lines = [];
  let inside = false;
  for (let number = 1; number <= doc.lines; number++) {
    const line = doc.line(number);
    if (RELATED_HEADING.test(line.text)) inside = true;
    else if (NEXT_SECTION.test(line.text)) inside = false;
    if (inside) lines.push(line);
  }
  return lines;
}

function relatedDecorations(doc) {
  return Decoration.set(relatedLines(doc).map((line) => Decoration.line({
    class: RELATED_HEADING.test(line.text) ? "cm-related-claims cm-related-heading" : "cm-related-claims",
  }).range(line.from)));
}

const relatedField = StateField.define({
  create: (state) => relatedDecorations(state.doc),
  update: (decorations, transaction) => (transaction.docChanged ? relatedDecorations(transaction.state.doc) : decorations),
  provide: (field) => EditorView.decorations.from(field),
});

function showRelatedNote(count) {
  $("related-note").hidden = !count;
  $("related-count").textContent = `${count} related claim${count === 1 ? " was" : "s were"}`;
}

function goToRelatedClaims() {
  const lines = relatedLines(editor.state.doc);
  if (!lines.length) return;
  const last = lines[lines.length - 1];
  editor.dispatch({ selection: { anchor: lines[0].from, head: last.to }, scrollIntoView: true });
  editor.focus();
}

function ensureEditor() {
  if (editor) return editor;
  editor = new EditorView({
    parent: $("editor"),
    extensions: [
      basicSetup,
      yamlFrontmatter({ content: markdown() }),
      lintGutter(),
      relatedField,
      EditorView.lineWrapping,
      keymap.of([{ key: "Mod-s", preventDefault: true, run: () => { save(); return true; } }]),
      EditorView.contentAttributes.of({ "aria-label": "Concept markdown" }),
      EditorView.updateListener.of((update) => { if (update.docChanged) markDirty(); }),
    ],
  });
  return editor;
}

function setText(text) {
  const view = ensureEditor();
  view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
  view.dispatch(setDiagnostics(view.state, []));
}

function showErrors(errors) {
  const list = $("errors");
  list.replaceChildren();
  const view = ensureEditor();
  const diagnostics = [];
  for (const error of errors) {
    const item = document.createElement("li");
    item.textContent = `${error.field}${error.line ? ` (line ${error.line})` : ""}: ${error.message}`;
    list.append(item);
    if (error.line && error.line <= view.state.doc.lines) {
      const line = view.state.doc.line(error.line);
      diagnostics.push({ from: line.from, to: line.to, severity: "error", message: `${error.field}: ${error.message}` });
    }
  }
  view.dispatch(setDiagnostics(view.state, diagnostics));
}

function resetPanels() {
  $("errors").replaceChildren();
  $("taken").hidden = true;
  $("related-note").hidden = true;
  $("stale").hidden = true;
  $("history-panel").hidden = true;
  $("version-preview").hidden = true;
  $("diff-panel").hidden = true;
}

// Loads a concept into the editor; true when it is shown.
async function openConcept(name) {
  say("Loading…");
  try {
    const concept = await api("GET", `/concepts/${encodeURIComponent(name)}`);
    current = { name: concept.name, etag: concept.etag };
    resetPanels();
    show("editor-view");
    $("editor-title").textContent = concept.name;
    $("editor-meta").textContent = "Promote observed to policy by editing the provenance line.";
    $("history").disabled = $("delete").disabled = false;
    savedText = concept.markdown;
    setText(concept.markdown);
    showRelatedNote(concept.related);
    say("");
    editor.focus();
    return true;
  } catch (error) {
    fail(`Could not open ${name}`, error, async () => { if (await openConcept(name)) visit(name); });
    return false;
  }
}

function newConcept() {
  current = { name: null, etag: null };
  resetPanels();
  show("editor-view");
  $("editor-title").textContent = "New concept";
  $("editor-meta").textContent = "Fields you leave out are filled in: provenance policy, no sources.";
  $("history").disabled = $("delete").disabled = true;
  savedText = NEW_CONCEPT;  // the untouched template is nobody's work
  setText(NEW_CONCEPT);
  say("");
  editor.focus();
}

// Back in the editor after a sign-in, with the text the expired session could not save. The
// ETag is the one the edit started from: a version saved meanwhile is still caught as stale.
async function restoreDraft(draft) {
  if (draft.name) {
    if (!(await openConcept(draft.name))) return;
    current.etag = draft.etag;
  } else {
    newConcept();
  }
  history.replaceState(null, "", urlFor(draft.name || NEW));
  setText(draft.text);
  markDirty();
  say("Signed in again. Your unsaved changes are back in the editor: save them when ready.");
}

// Shows what the URL names: a concept, a new one, or the list.
async function follow() {
  const wanted = wantedInUrl();
  if (wanted === NEW) newConcept();
  else if (wanted) {
    if (!(await openConcept(wanted))) {
      const why = $("problem").hidden ? null : [$("problem-text").textContent, retryAction];
      history.replaceState(null, "", urlFor(null));
      await loadList();
      if (why) {
        $("problem-text").textContent = why[0];
        retryAction = why[1];
        $("problem").hidden = false;
      }
    }
  } else {
    current = null;
    await loadList();
  }
}

async function save(etagOverride) {
  if (!current) return;
  const text = editor.state.doc.toString();
  $("errors").replaceChildren();
  $("taken").hidden = true;
  if (!current.name && text === NEW_CONCEPT) {
    say("Nothing saved: the template is unchanged. Write the concept (its name first), then save.");
    return;
  }
  say("Saving…");
  try {
    const saved = current.name
      ? await api("PUT", `/concepts/${encodeURIComponent(current.name)}`, { body: { markdown: text }, etag: etagOverride || current.etag })
      : await api("POST", "/concepts", { body: { markdown: text } });
    const unchanged = current.name && saved.etag === current.etag;
    current = { name: saved.name, etag: saved.etag };
    $("editor-title").textContent = saved.name;
    $("history").disabled = $("delete").disabled = false;
    $("stale").hidden = true;
    savedText = saved.markdown;
    setText(saved.markdown);
    history.replaceState(null, "", urlFor(saved.name));
    showRelatedNote(saved.related);
    say(unchanged ? "No changes to save: nothing was written." : "Saved.");
  } catch (error) {
    if (error.status === 422) {
      showErrors(error.body.errors || [{ field: "document", message: error.message }]);
      say("Not saved: fix the marked lines.");
    } else if (error.status === 412 && error.body && error.body.current) {
      showStale(savedText, error.body.current.markdown, text);
      $("stale").hidden = false;
      $("stale").dataset.etag = error.body.current.etag;
      say("Not saved: a newer version exists.");
    } else if (error.status === 409 && error.body && error.body.name) {
      $("taken-name").textContent = error.body.name;
      $("taken").hidden = false;
      $("taken").dataset.name = error.body.name;
      say(`Not saved: a concept named ${error.body.name} already exists.`);
    } else if (error.status === 412) {
      say("Not saved: the concept was deleted meanwhile. Restore it from \"Deleted concepts\", or create it anew.");
    } else {
      fail("Not saved (your text is still in the editor)", error, () => save(etagOverride));
    }
  }
}

// ------------------------------------------------------------------ history, delete, undelete

function button(text, onClick) {
  const element = document.createElement("button");
  element.type = "button";
  element.textContent = text;
  element.addEventListener("click", onClick);
  return element;
}

// "Learned from session X", and on demand the quote, read from the archived turn now (the API
// redacts it); once the archive has expired or been purged, the link says so.
function evidenceCell(row, version) {
  const td = cell(row, "");
  if (!version.evidence) return;
  const learned = document.createElement("span");
  learned.className = "learned";
  learned.textContent = `learned from session ${version.evidence.session_id}`;
  const quote = document.createElement("blockquote");
  quote.className = "excerpt";
  quote.hidden = true;
  const show = button("Show quote", async () => {
    show.disabled = true;
    try {
      const path = `/concepts/${encodeURIComponent(current.name)}/versions/${encodeURIComponent(version.version_id)}/evidence`;
      const evidence = await api("GET", path);
      if (evidence.status === "available") {
        quote.textContent = evidence.excerpt;
        quote.classList.remove("expired");
      } else {
        quote.textContent = "expired: the conversation it was learned from is no longer archived";
        quote.classList.add("expired");
      }
      quote.hidden = false;
      show.remove();
    } catch (error) {
      show.disabled = false;
      fail("Could not read the quote", error, () => show.click());
    }
  });
  show.className = "show-quote";
  td.append(learned, " ", show, quote);
}

function describe(version) {
  return `${version.time.replace("T", " ").slice(0, 19)} by ${version.actor || "unknown"} (${version.reason || "no reason"})`;
}

// A unified, line-level diff of two whole documents (frontmatter included), read-only.
function diffEditor(parent, label, before, after) {
  return new EditorView({
    parent,
    doc: after,
    extensions: [
      lineNumbers(),
      EditorView.lineWrapping,
      EditorState.readOnly.of(true),
      EditorView.editable.of(false),
      EditorView.contentAttributes.of({ "aria-label": label }),
      yamlFrontmatter({ content: markdown() }),
      unifiedMergeView({ original: before, mergeControls: false, collapseUnchanged: { margin: 2, minSize: 4 } }),
    ],
  });
}

// The stale save, three ways: from the version the operator started from, what the other
// writer saved and what the operator has, each as a diff against that common start.
let staleViews = [];
function showStale(base, theirs, mine) {
  for (const view of staleViews) view.destroy();
  staleViews = [
    diffEditor($("stale-theirs"), "What they saved, against the version you started from", base, theirs),
    diffEditor($("stale-mine"), "What you have, against the version you started from", base, mine),
  ];
  $("stale-theirs-same").hidden = base !== theirs;
  $("stale-mine-same").hidden = base !== mine;
}

function showDiff(label, before, after) {
  if (diffView) diffView.destroy();
  diffView = diffEditor($("diff"), label, before, after);
  $("diff-label").textContent = label;
  $("diff-same").hidden = before !== after;
  $("diff-panel").hidden = false;
  $("diff-panel").scrollIntoView({ block: "nearest" });
}

async function readVersion(version) {
  return (await api("GET", `/concepts/${encodeURIComponent(current.name)}/versions/${encodeURIComponent(version.version_id)}`)).markdown;
}

async function compare(label, older, newer) {
  try {
    const [before, after] = await Promise.all([older ? readVersion(older) : "", readVersion(newer)]);
    showDiff(label, before, after);
    say("");
  } catch (error) {
    fail("Could not compare the versions", error, () => compare(label, older, newer));
  }
}

// History comes a page at a time (a concept confirmed thousands of times still opens at once):
// "Older versions" asks for the next page. Versions older than the bucket's lifecycle rule keeps
// are gone, and the panel says which are kept.
let versionsShown = [];
let versionsNext = null;
const VERSIONS_PAGE = 50;

async function versionPage(cursor) {
  const query = new URLSearchParams({ limit: String(VERSIONS_PAGE) });
  if (cursor) query.set("cursor", cursor);
  return api("GET", `/concepts/${encodeURIComponent(current.name)}/versions?${query}`);
}

async function showHistory() {
  let page;
  try {
    page = await versionPage(null);
  } catch (error) {
    fail("Could not load the history", error, showHistory);
    return;
  }
  say("");
  versionsShown = [];
  $("versions").tBodies[0].replaceChildren();
  addVersions(page);
  const kept = page.kept;
  $("history-kept").textContent = kept
    ? `Older versions are removed by the storage's lifecycle rule: it keeps the newest ${kept.newest} versions and every version of the last ${kept.days} days.`
    : "";
  $("history-panel").hidden = false;
}

async function olderVersions() {
  const asked = document.activeElement === $("older-versions");
  const before = versionsShown.length;
  try {
    addVersions(await versionPage(versionsNext));
  } catch (error) {
    fail("Could not load older versions", error, olderVersions);
    return false;
  }
  say("");
  const first = $("versions").tBodies[0].rows[before];
  if (asked && first) first.querySelector("button").focus();  // the first of the older rows
  return true;
}

// The version before `version` among those shown, asking for the next page when it is on it.
async function predecessor(version) {
  for (;;) {
    const found = versionsShown.slice(versionsShown.indexOf(version) + 1).find((v) => !v.deleted);
    if (found || !versionsNext) return found || null;
    if (!(await olderVersions())) throw new Error("older versions unavailable");
  }
}

function addVersions(page) {
  versionsShown = versionsShown.concat(page.versions);
  versionsNext = page.next;
  $("older-versions").hidden = !versionsNext;
  const body = $("versions").tBodies[0];
  const latest = versionsShown.find((v) => v.latest && !v.deleted);
  for (const version of page.versions) {
    const row = body.insertRow();
    row.dataset.versionId = version.version_id;
    cell(row, version.time.replace("T", " ").slice(0, 19));
    cell(row, version.actor || "");
    cell(row, version.reason || "");
    cell(row, version.deleted ? "deleted" : `${version.size} B`);
    evidenceCell(row, version);
    const actions = cell(row, "");
    if (!version.deleted) {
      actions.append(button("Changes", async () => {
        let before;
        try {
          before = await predecessor(version);
        } catch {
          return;  // said on screen by olderVersions
        }
        await compare(before
          ? `What the version of ${describe(version)} changed against the one before, of ${describe(before)}`
          : `The first version, of ${describe(version)}: all of it new`, before, version);
      }));
      if (latest && latest !== version) {
        actions.append(button("Against current", () => compare(
          `The current version, of ${describe(latest)}, against the version of ${describe(version)}`, version, latest)));
      }
      const view = async () => {
        try {
          $("version-preview").textContent = await readVersion(version);
          $("version-preview").hidden = false;
          say("");
        } catch (error) {
          fail("Could not read that version", error, view);
        }
      };
      actions.append(button("View", view));
      if (!version.latest) {
        const restore = async () => {
          if (!mayDiscard("Restoring an old version")) return;
          try {
            await api("POST", `/concepts/${encodeURIComponent(current.name)}/versions/${encodeURIComponent(version.version_id)}/restore`, { etag: current.etag });
            await openConcept(current.name);
            say("Restored as a new version.");
          } catch (error) {
            if (error.status === 412) fail("Not restored: someone saved a newer version since you opened it", "reopen the concept to see it, then restore.", null);
            else fail("Not restored", error, restore);
          }
        };
        actions.append(button("Restore", restore));
      }
    }
  }
}

async function deleteCurrent() {
  if (!confirm(`Delete ${current.name}? It can be restored from "Deleted concepts".`)) return;
  await removeCurrent();
}

async function removeCurrent() {
  try {
    await api("DELETE", `/concepts/${encodeURIComponent(current.name)}`);
  } catch (error) {
    fail(`Not deleted: ${current.name} is still there`, error, removeCurrent);
    return;
  }
  current = null;
  visit(null);
  await loadList();
  say("Deleted. Restore it from \"Deleted concepts\".");
}

async function showDeleted() {
  let deleted;
  try {
    deleted = (await api("GET", "/deleted")).deleted;
  } catch (error) {
    fail("Could not load the deleted concepts", error, showDeleted);
    return;
  }
  const body = $("deleted").tBodies[0];
  body.replaceChildren();
  for (const item of deleted) {
    const row = body.insertRow();
    row.dataset.name = item.name;
    cell(row, item.name);
    cell(row, item.deleted_at.replace("T", " ").slice(0, 19));
    cell(row, item.deleted_by || "unknown");
    const actions = cell(row, "");
    const undelete = async () => {
      try {
        await api("POST", `/deleted/${encodeURIComponent(item.name)}/restore`);
      } catch (error) {
        fail(`Not restored: ${item.name} is still deleted`, error, undelete);
        return;
      }
      await loadList();
      say(`${item.name} is back.`);
    };
    const preview = button("Preview", () => previewDeleted(item.name));
    preview.setAttribute("aria-label", `Preview ${item.name}`);
    const restore = button("Restore", undelete);
    restore.setAttribute("aria-label", `Restore ${item.name}`);
    actions.append(preview, " ", restore);
  }
  $("deleted-preview").hidden = true;
  $("deleted-empty").hidden = deleted.length > 0;
  show("deleted-view");
  $("deleted-title").focus();
  say("");
}

// What a deleted concept held, and who deleted it when: read before deciding to restore it.
async function previewDeleted(name) {
  let item;
  try {
    item = await api("GET", `/deleted/${encodeURIComponent(name)}`);
  } catch (error) {
    fail(`Could not show what ${name} held`, error, () => previewDeleted(name));
    return;
  }
  say("");
  $("deleted-preview-title").textContent = item.name;
  $("deleted-preview-who").textContent =
    `Deleted by ${item.deleted_by || "someone unknown"} on ${item.deleted_at.replace("T", " ").slice(0, 19)} UTC. It held:`;
  $("deleted-preview-text").textContent = item.markdown;
  $("deleted-preview").hidden = false;
  $("deleted-preview-title").focus();
}

// ------------------------------------------------------------------ the tenant's agents

function agentUrl(name) {
  const next = new URLSearchParams();
  if (scope.tenant !== "default") next.set("tenant", scope.tenant);
  if (name) next.set("agent", name);
  return `${location.pathname}?${next}`;
}

async function loadAgents() {
  say("Loading…");
  let agents;
  try {
    agents = (await api("GET", "/agents", { tenantWide: true })).agents;
  } catch (error) {
    fail(`Could not load the agents of ${scope.tenant}`, error, loadAgents);
    return false;
  }
  const body = $("agents").tBodies[0];
  body.replaceChildren();
  for (const agent of agents) {
    const row = body.insertRow();
    row.dataset.name = agent.name;
    const link = document.createElement("a");
    link.href = agentUrl(agent.name);
    link.textContent = agent.name;
    cell(row, link);
    cell(row, String(agent.concepts));
    const conflicts = cell(row, String(agent.conflicts));
    if (agent.conflicts) conflicts.append(" ", badge("to resolve", "conflict"));
    cell(row, String(agent.related));
  }
  $("agents-empty").hidden = agents.length > 0;
  $("agents-title").textContent = `Agents of ${scope.tenant}`;
  show("agents-view");
  say(`${agents.length} agent${agents.length === 1 ? "" : "s"}`);
  return true;
}

// ------------------------------------------------------------------ start

async function start() {
  try {
    config = { ...config, ...(await (await fetch("config.json")).json()) };
  } catch { /* the defaults serve a page hosted next to its API */ }
  $("problem-retry").addEventListener("click", () => {
    const retry = retryAction;
    $("problem").hidden = true;
    say("Trying again…");
    if (retry) retry();
  });
  $("signin-link").addEventListener("click", (event) => { event.preventDefault(); if (config.signIn) beginSignIn(); });
  if (await finishSignIn()) return;
  $("scope").textContent = scope.agent ? `${scope.tenant} / ${scope.agent}` : scope.tenant;
  $("all-agents").href = agentUrl(null);
  $("all-agents").hidden = !scope.agent;
  if (!token()) return signIn();
  if (!scope.agent) {
    await loadAgents();
    return;
  }
  const statuses = { new: "filter-new", conflict: "filter-conflict", related: "filter-related" };
  // One status at a time: new since I last looked, conflicts, or related claims waiting.
  for (const [status, id] of Object.entries(statuses)) {
    $(id).checked = params.get("status") === status;
    $(id).addEventListener("change", () => {
      if ($(id).checked) for (const other of Object.values(statuses)) if (other !== id) $(other).checked = false;
      loadList();
    });
  }
  $("mark-seen").addEventListener("click", markSeen);
  $("filter-type").addEventListener("change", loadList);
  $("related-show").addEventListener("click", goToRelatedClaims);
  let typing;
  $("filter-q").addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(loadList, 250); });
  for (const button of document.querySelectorAll("th button[data-sort]")) {
    button.addEventListener("click", () => {
      sortDescending = sortKey === button.dataset.sort ? !sortDescending : button.dataset.sort !== "name";
      sortKey = button.dataset.sort;
      loadList();
    });
  }
  $("save").addEventListener("click", () => save());
  $("history").addEventListener("click", showHistory);
  $("older-versions").addEventListener("click", olderVersions);
  $("delete").addEventListener("click", deleteCurrent);
  $("back-from-editor").addEventListener("click", async () => {
    if (!mayDiscard("Going back to the list")) return;
    const left = current && current.name;
    current = null;
    visit(null);
    await backToList(left);
  });
  $("back-from-deleted").addEventListener("click", async () => { if (await loadList()) $("show-deleted").focus(); });
  $("show-deleted").addEventListener("click", showDeleted);
  $("more").addEventListener("click", showMore);
  watchForChanges();
  $("new-concept").addEventListener("click", () => { newConcept(); visit(NEW); });
  $("stale-reload").addEventListener("click", async () => {
    if (current && current.name && await openConcept(current.name)) say("Loaded the newer version.");
  });
  $("taken-open").addEventListener("click", async () => {
    const name = $("taken").dataset.name;
    if (!mayDiscard(`Opening ${name}`)) return;
    if (await openConcept(name)) visit(name);
  });
  $("stale-overwrite").addEventListener("click", () => save($("stale").dataset.etag));
  // Back and Forward move between the list and concepts; unsaved work is asked about first.
  window.addEventListener("popstate", async () => {
    const wanted = wantedInUrl();
    const showing = current ? current.name || NEW : null;
    if (wanted === showing) return;
    if (!mayDiscard("Leaving this concept")) {
      history.pushState(null, "", urlFor(showing));  // stay where the work is
      return;
    }
    const left = showing === NEW ? null : showing;
    if (!wanted && left) {
      current = null;
      await backToList(left);
    } else await follow();
  });
  window.addEventListener("beforeunload", (event) => {
    if (leavingOnPurpose || !isDirty()) return;
    event.preventDefault();
    event.returnValue = "";  // the browser asks: leave the page with unsaved changes?
  });
  const draft = takeDraft();
  if (draft) return restoreDraft(draft);
  await follow();
}

start();
