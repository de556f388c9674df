// The studio page's entry: starts it, registers the callbacks by which a module calls one above it
// (state.js), and wires its controls, Back/Forward and leaving, to the pieces below.
// The page: list, conflicts, edit (CodeMirror), history with diffs and restore, delete and undelete.
// All state comes from the studio HTTP API; the page keeps only the ETag of what it shows, and
// an unsaved edit in the tab's storage while the operator signs in again.
import { dismissWaiting } from "./waiting.js";
import { $ } from "./dom.js";
import { loadAgents } from "./agents.js";
import { deleteCurrent, showDeleted } from "./deleted.js";
import {
  forgetCurrent, goToRelatedClaims, isDirty, keepDraft, mayDiscard, newConcept, openConcept, restoreDraft, save, saveKeys,
  takeDraft,
} from "./editor.js";
import {
  backToList, focusList, loadList, refreshList, showMore, sortBy, triageKeys, useUrlFilters, watchForChanges,
} from "./list.js";
import { counted, wirePages } from "./pages.js";
import { wireBulkShare } from "./bulk-share.js";
import { wireDensity } from "./density.js";
import { wireSelection } from "./select.js";
import { watchBehind } from "./stale.js";
import { wireImport } from "./import.js";
import { wireTeach } from "./teach.js";
import { hideDeletedName, showDeletedName, wireRecreate } from "./recreate.js";
import { markSeen, undoSeen } from "./review.js";
import { beginSignIn, finishSignIn, loadConfig, signIn, token, useSignIn } from "./session.js";
import { register, state } from "./state.js";
import { problemShown, say, showProblem, tryAgain } from "./status.js";
import { NEW, agentUrl, inShared, scope, urlFor, visit, wantedInUrl } from "./url.js";
import { olderVersions, showHistory } from "./versions.js";
import { showShareButtons, wireShare } from "./share.js";
import { wireVocabulary } from "./vocabulary.js";
import { wireWords } from "./words.js";

useSignIn({ pendingKey: "knowledge-studio-sign-in" });
// Where a module calls one above it (state.js says who calls each).
register({
  keepDraft, signInFailed: say, refreshList, counted, loadList, showShareButtons, showDeletedName, hideDeletedName,
});

// Shows what the URL names: a concept, a new one, or the list.
async function follow() {
  const wanted = wantedInUrl();
  if (wanted === NEW) newConcept();
  else if (wanted) {
    if (!(await openConcept(wanted))) {
      const why = problemShown();
      history.replaceState(null, "", urlFor(null));
      await loadList();
      if (why) showProblem(why);
    }
  } else {
    forgetCurrent();
    useUrlFilters();
    await loadList();
  }
}

async function start() {
  await loadConfig();
  $("problem-retry").addEventListener("click", tryAgain);
  $("signin-link").addEventListener("click", (event) => { event.preventDefault(); if (state.config.signIn) beginSignIn(); });
  if (await finishSignIn()) return;
  $("scope").textContent = inShared ? `${scope.tenant} / shared knowledge`
    : scope.agent ? `${scope.tenant} / ${scope.agent}` : scope.tenant;
  $("all-agents").href = agentUrl(null);
  $("all-agents").hidden = !scope.agent;
  const facts = new URLSearchParams({ tenant: scope.tenant });
  if (scope.agent) facts.set("agent", scope.agent);
  $("to-facts").href = `facts?${facts}`;
  $("to-facts").hidden = inShared;  // facts are about one agent's customers
  $("show-vocabulary").hidden = inShared;  // each agent's own vocabulary reads shared concepts too
  $("skip-to-list").addEventListener("click", (event) => { event.preventDefault(); focusList(); });
  if (!token()) return signIn();
  if (!scope.agent) {
    await loadAgents();
    return;
  }
  const statuses = { new: "filter-new", conflict: "filter-conflict", related: "filter-related",
    expired: "filter-expired", not_started: "filter-not-started", stale: "filter-stale", retired: "filter-retired" };
  // One status at a time: new since I last looked, conflicts, related claims waiting, or out of recall.
  for (const [status, id] of Object.entries(statuses)) {
    $(id).addEventListener("change", () => {
      if ($(id).checked) for (const other of Object.values(statuses)) if (other !== id) $(other).checked = false;
      loadList();
    });
  }
  $("mark-seen").addEventListener("click", markSeen);
  $("undo-seen").addEventListener("click", undoSeen);
  $("concepts").addEventListener("keydown", triageKeys);
  // The list's row count is loadList's first argument: a listener must not pass it the event.
  $("filter-type").addEventListener("change", () => loadList());
  useUrlFilters();
  $("related-show").addEventListener("click", goToRelatedClaims);
  $("waiting-dismiss").addEventListener("click", dismissWaiting);
  let typing;
  $("filter-q").addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(loadList, 250); });
  for (const button of document.querySelectorAll("th button[data-sort]")) {
    button.addEventListener("click", () => sortBy(button.dataset.sort));
  }
  $("save").addEventListener("click", () => save());
  window.addEventListener("keydown", saveKeys, { capture: true });
  $("history").addEventListener("click", showHistory);
  $("older-versions").addEventListener("click", olderVersions);
  $("delete").addEventListener("click", deleteCurrent);
  $("back-from-editor").addEventListener("click", async () => {
    if (!mayDiscard("Going back to the list")) return;
    const left = state.editor.current && state.editor.current.name;
    forgetCurrent();
    visit(null);
    await backToList(left);
  });
  $("back-from-deleted").addEventListener("click", async () => { if (await loadList()) $("show-deleted").focus(); });
  $("show-deleted").addEventListener("click", showDeleted);
  wireVocabulary();
  wireWords();
  wireShare();
  $("more").addEventListener("click", showMore);
  wireDensity();
  wireSelection();
  wireBulkShare();
  wirePages();
  wireImport();
  wireTeach();
  wireRecreate();
  watchForChanges();
  watchBehind();
  $("new-concept").addEventListener("click", () => { newConcept(); visit(NEW); });
  $("stale-reload").addEventListener("click", async () => {
    const current = state.editor.current;
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
    const showing = state.editor.current ? state.editor.current.name || NEW : null;
    if (wanted === showing) {
      if (!wanted && !$("list-view").hidden) {  // Back or Forward between two lists
        useUrlFilters();
        await loadList(undefined, { replace: true });
      }
      return;
    }
    if (!mayDiscard("Leaving this concept")) {
      history.pushState(null, "", urlFor(showing));  // stay where the work is
      return;
    }
    const left = showing === NEW ? null : showing;
    if (!wanted && left) {
      forgetCurrent();
      useUrlFilters();
      await backToList(left);
    } else await follow();
  });
  window.addEventListener("beforeunload", (event) => {
    if (state.leavingOnPurpose || !isDirty()) return;
    event.preventDefault();
    event.returnValue = "";  // the browser asks: leave the page with unsaved changes?
  });
  const draft = takeDraft();
  if (draft) return restoreDraft(draft);
  await follow();
  // Signed in (or reloaded) on a list: the keyboard starts on its first concept, not on <body>.
  if (!$("list-view").hidden && document.activeElement === document.body) focusList();
}

start();
