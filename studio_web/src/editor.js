// The concept editor: CodeMirror, the open concept and its unsaved work, save with its validation, stale and name conflicts.
import { EditorView, basicSetup } from "codemirror";
import { Decoration, lineNumbers } from "@codemirror/view";
import { EditorState, StateField } from "@codemirror/state";
import { unifiedMergeView } from "@codemirror/merge";
import { markdown } from "@codemirror/lang-markdown";
import { yamlFrontmatter } from "@codemirror/lang-yaml";
import { lintGutter, setDiagnostics } from "@codemirror/lint";
import { $, show } from "./dom.js";
import { api } from "./session.js";
import { readConflict, splitDocument } from "./conflict.mjs";
import { hideConflict, initResolution, noticeChange, showConflict } from "./resolution.js";
import { calls, state } from "./state.js";
import { fail, say } from "./status.js";
import { showLearned } from "./learned.js";
import { hideWaiting, showWaiting } from "./waiting.js";
import { NEW, scope, urlFor, visit } from "./url.js";

const DRAFT_KEY = "knowledge-studio-draft";
const NEW_CONCEPT = `---
name: new-concept
description: One line that states the concept on its own.
type: fact
---

What is true, for the agent to use. Link a neighbour as [[its-name]].
`;

// What the line under the title says: of a stored concept (only an observed one has anything to
// promote), and of one not created yet.
const PROMOTE_HINT = "Promote observed to policy by editing the provenance line.";
const NEW_HINT = "Fields you leave out are filled in: provenance policy, no sources.";

function storedHint(markdown) {
  const parts = splitDocument(markdown);
  const provenance = parts && /^provenance:[ \t]*["']?([a-z]+)/m.exec(parts.front);
  return provenance && provenance[1] === "observed" ? PROMOTE_HINT : "";
}

// The editor holds no concept any more (it was deleted or moved): it leaves the page at once, so a
// list that then fails to load leaves its problem on screen, never the text of a concept that is gone.
export function forgetCurrent() {
  state.editor.current = null;
  $("editor-view").hidden = true;
}

// ------------------------------------------------------------------ unsaved work

// The text in the editor now.
function editorText() {
  return state.editor.view.state.doc.toString();
}

export function isDirty() {
  const { current, view, savedText } = state.editor;
  return Boolean(current && view && !$("editor-view").hidden && editorText() !== savedText);
}

function markDirty() {
  $("dirty").hidden = !isDirty();
}

// Asks before unsaved work is thrown away; true when it may go.
export function mayDiscard(what) {
  if (!isDirty()) return true;
  const name = state.editor.current.name || "the new concept";
  return confirm(`You have unsaved changes to ${name}. ${what} discards them. Discard them?`);
}

// The draft outlives a sign-in in this tab only (sessionStorage), and is taken back once.
export function keepDraft() {
  if (!isDirty()) return false;
  sessionStorage.setItem(DRAFT_KEY, JSON.stringify({
    tenant: scope.tenant, agent: scope.agent, name: state.editor.current.name, etag: state.editor.current.etag,
    text: editorText(),
  }));
  return true;
}

export function takeDraft() {
  const draft = JSON.parse(sessionStorage.getItem(DRAFT_KEY) || "null");
  sessionStorage.removeItem(DRAFT_KEY);
  return draft && draft.tenant === scope.tenant && draft.agent === scope.agent ? draft : null;
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
  create: (initial) => relatedDecorations(initial.doc),  // CodeMirror's state, not the page's
  update: (decorations, transaction) => (transaction.docChanged ? relatedDecorations(transaction.state.doc) : decorations),
  provide: (field) => EditorView.decorations.from(field),
});

function showRelatedNote(count) {
  $("related-note").hidden = !count;
  $("related-count").textContent = `${count} related claim${count === 1 ? " was" : "s were"}`;
}

export function goToRelatedClaims() {
  const view = state.editor.view;
  const lines = relatedLines(view.state.doc);
  if (!lines.length) return;
  const last = lines[lines.length - 1];
  view.dispatch({ selection: { anchor: lines[0].from, head: last.to }, scrollIntoView: true });
  view.focus();
}

function ensureEditor() {
  if (state.editor.view) return state.editor.view;
  state.editor.view = new EditorView({
    parent: $("editor"),
    extensions: [
      basicSetup,
      yamlFrontmatter({ content: markdown() }),
      lintGutter(),
      relatedField,
      EditorView.lineWrapping,
      EditorView.contentAttributes.of({ "aria-label": "Concept markdown" }),
      EditorView.updateListener.of((update) => {
        if (update.docChanged) {
          markDirty(); noticeChange(update.state.doc.toString()); showLearned(update.state.doc.toString(), replaceText);
        }
      }),
    ],
  });
  initResolution({ text: editorText, replace: replaceText, save: () => save(), diff: diffEditor });
  return state.editor.view;
}

// One change the operator can undo (Ctrl/Cmd-Z) as a step of its own: a user event the history
// never joins to the change before it, however soon after.
function replaceText(text) {
  const view = state.editor.view;
  view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text }, userEvent: "resolve.conflict" });
  markDirty();
}

function setText(text) {
  const view = ensureEditor();
  view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
  view.dispatch(setDiagnostics(view.state, []));
}

// The save's errors in the order of the lines they are on (the API gives them in field order); those
// of the whole document, with no line, first. One on a line is a button that takes the editor there.
function showErrors(errors) {
  const list = $("errors");
  list.replaceChildren();
  const view = ensureEditor();
  const diagnostics = [];
  const inLineOrder = errors.map((error, at) => ({ error, at }))
    .sort((a, b) => (a.error.line || 0) - (b.error.line || 0) || a.at - b.at).map(({ error }) => error);
  for (const error of inLineOrder) {
    const item = document.createElement("li");
    const text = `${error.field}${error.line ? ` (line ${error.line})` : ""}: ${error.message}`;
    if (error.line && error.line <= view.state.doc.lines) {
      const line = view.state.doc.line(error.line);
      diagnostics.push({ from: line.from, to: line.to, severity: "error", message: `${error.field}: ${error.message}` });
      const jump = document.createElement("button");
      jump.type = "button";
      jump.className = "link";
      jump.textContent = text;
      jump.addEventListener("click", () => goToLine(error.line));
      item.append(jump);
    } else {
      item.textContent = text;
    }
    list.append(item);
  }
  view.dispatch(setDiagnostics(view.state, diagnostics));
}

function goToLine(number) {
  const view = ensureEditor();
  if (number > view.state.doc.lines) return;
  const line = view.state.doc.line(number);
  view.dispatch({ selection: { anchor: line.to }, scrollIntoView: true });
  view.focus();
}

function resetPanels() {
  $("errors").replaceChildren();
  $("taken").hidden = true;
  calls.hideDeletedName();
  $("related-note").hidden = true;
  hideWaiting();
  $("stale").hidden = true;
  $("history-panel").hidden = true;
  $("version-preview").hidden = true;
  $("diff-panel").hidden = true;
  $("words-pending-note").hidden = true;
  hideConflict();
}

// Loads a concept into the editor; true when it is shown.
export async function openConcept(name) {
  say("Loading…");
  try {
    const concept = await api("GET", `/concepts/${encodeURIComponent(name)}`);
    state.editor.current = { name: concept.name, etag: concept.etag };
    resetPanels();
    show("editor-view");
    $("editor-title").textContent = concept.name;
    $("editor-meta").textContent = storedHint(concept.markdown);
    $("history").disabled = $("delete").disabled = false;
    calls.showShareButtons(concept.name);
    state.editor.savedText = concept.markdown;
    setText(concept.markdown);
    showRelatedNote(concept.related);
    $("words-pending-note").hidden = !concept.words_pending;
    showLearned(concept.markdown, replaceText);
    showConflict(concept.markdown);
    showWaiting(concept.name);  // beside the text, read after it: the editor is usable at once
    say("");
    state.editor.view.focus();
    return true;
  } catch (error) {
    fail(`Could not open ${name}`, error, async () => { if (await openConcept(name)) visit(name); });
    return false;
  }
}

export function newConcept() {
  state.editor.current = { name: null, etag: null };
  resetPanels();
  show("editor-view");
  $("editor-title").textContent = "New concept";
  $("editor-meta").textContent = NEW_HINT;
  $("history").disabled = $("delete").disabled = true;
  calls.showShareButtons(null);
  state.editor.savedText = NEW_CONCEPT;  // the untouched template is nobody's work
  setText(NEW_CONCEPT);
  say("");
  state.editor.view.focus();
}

// Back in the editor after a sign-in, with the text the expired session could not save. The
// ETag is the one the edit started from: a version saved meanwhile is still caught as stale.
export async function restoreDraft(draft) {
  if (draft.name) {
    if (!(await openConcept(draft.name))) return;
    state.editor.current.etag = draft.etag;
  } else {
    newConcept();
  }
  history.replaceState(null, "", urlFor(draft.name || NEW));
  setText(draft.text);
  showConflict(draft.text);
  markDirty();
  say("Signed in again. Your unsaved changes are back in the editor: save them when ready.");
}

// Ctrl/Cmd-S saves the open draft wherever focus is on the page (after Remove on a learned word, or
// a click on History, focus is no longer in the editor): listened for on the window before any
// element sees the key, so the browser's "Save page as…" never opens while a concept is open.
export function saveKeys(event) {
  if (event.key.toLowerCase() !== "s" || !(event.ctrlKey || event.metaKey) || event.altKey || event.shiftKey) return;
  if (!state.editor.current || $("editor-view").hidden) return;
  event.preventDefault();
  if (!event.repeat) save();
}

// `newHistory`: create it even though a deleted concept had the name (recreate.js).
export async function save(etagOverride, { newHistory = false } = {}) {
  if (!state.editor.current) return;
  const text = editorText();
  $("errors").replaceChildren();
  $("taken").hidden = true;
  calls.hideDeletedName();
  if (!state.editor.current.name && text === NEW_CONCEPT) {
    say("Nothing saved: the template is unchanged. Write the concept (its name first), then save.");
    return;
  }
  say("Saving…");
  try {
    const { current } = state.editor;
    const saved = current.name
      ? await api("PUT", `/concepts/${encodeURIComponent(current.name)}`, { body: { markdown: text }, etag: etagOverride || current.etag })
      : await api("POST", newHistory ? "/concepts?new_history=true" : "/concepts", { body: { markdown: text } });
    const unchanged = state.editor.current.name && saved.etag === state.editor.current.etag;  // read after the wait
    const resolved = readConflict(state.editor.savedText || "") && !readConflict(saved.markdown);
    state.editor.current = { name: saved.name, etag: saved.etag };
    $("editor-title").textContent = saved.name;
    $("editor-meta").textContent = storedHint(saved.markdown);  // created: nothing is filled in any more
    $("history").disabled = $("delete").disabled = false;
    calls.showShareButtons(saved.name);
    $("stale").hidden = true;
    state.editor.savedText = saved.markdown;
    setText(saved.markdown);
    history.replaceState(null, "", urlFor(saved.name));
    showRelatedNote(saved.related);
    showConflict(saved.markdown);
    say(unchanged ? "No changes to save: nothing was written."
      : resolved ? "Saved. The concept is no longer in conflict." : "Saved.");
  } catch (error) {
    if (error.status === 422) {
      showErrors(error.body.errors || [{ field: "document", message: error.message }]);
      say("Not saved: fix the marked lines.");
    } else if (error.status === 412 && error.body && error.body.current) {
      showStale(state.editor.savedText, error.body.current.markdown, text);
      $("stale").hidden = false;
      $("stale").dataset.etag = error.body.current.etag;
      say("Not saved: a newer version exists.");
    } else if (error.status === 409 && error.code === "name_deleted") {
      calls.showDeletedName(error.body);
      say(`Not saved: a deleted concept was named ${error.body.name}.`);
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

// ------------------------------------------------------------------ diffs

// A unified, line-level diff of two whole documents (frontmatter included), read-only.
export function diffEditor(parent, label, before, after) {
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
function showStale(base, theirs, mine) {
  for (const view of state.editor.staleViews) view.destroy();
  state.editor.staleViews = [
    diffEditor($("stale-theirs"), "What they saved, against the version you started from", base, theirs),
    diffEditor($("stale-mine"), "What you have, against the version you started from", base, mine),
  ];
  $("stale-theirs-same").hidden = base !== theirs;
  $("stale-mine-same").hidden = base !== mine;
}
