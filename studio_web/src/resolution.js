// Guided conflict resolution in the editor: the contradiction explained, and keep the record, take
// the new claim or edit both, each an edit of the editor's text the operator reviews (a diff)
// before saving. What the section says and each resolution's text come from conflict.mjs.
import { $ } from "./dom.js";
import { state } from "./state.js";
import { say } from "./status.js";
import {
  BODY_MAX_BYTES, CONTRADICTION_CONFIDENCE, RESOLVED_CONFIDENCE, bodyBytes, editBoth, keepRecord, readConflict,
  splitDocument, takeNewClaim,
} from "./conflict.mjs";

// Claims are a few hundred bytes: a body with less room than this may have had none for a quote.
const ROOM_FOR_A_QUOTE = 4096;

// Why an entry has no quote, said from what the body shows. Consolidation leaves a quote out only
// when the body cannot hold it; a body far from full had room, so the entry was written without one
// (by a consolidation older than quotes, or for a claim with no text of its own) or an edit took it.
export function missingQuote(bytes) {
  const size = `${bytes.toLocaleString("en")} of the ${BODY_MAX_BYTES.toLocaleString("en")} bytes a body holds`;
  if (BODY_MAX_BYTES - bytes < ROOM_FOR_A_QUOTE) {
    return `Its quote was not kept: the body (${size}) had no room for it. Its description stands for the claim.`;
  }
  return `Its quote is not in the section, and not for lack of room (the body has ${size}): the entry was written `
    + "without one — by a consolidation older than quotes, or for a claim with no text beyond its description — "
    + "or an edit removed it. Its description stands for the claim.";
}

// The editor, as the resolutions reach it (state.resolution.editor).
export function initResolution(editor) {
  state.resolution.editor = editor;
  $("conflict-keep").addEventListener("click", () => resolve("keep"));
  $("conflict-take").addEventListener("click", () => resolve("take"));
  $("conflict-both").addEventListener("click", () => resolve("both"));
  $("conflict-undo").addEventListener("click", undo);
  $("conflict-save").addEventListener("click", () => state.resolution.editor.save());
  $("conflict-confidence").textContent = String(RESOLVED_CONFIDENCE);
}

function paragraph(text, tag = "p") {
  const element = document.createElement(tag);
  element.textContent = text;
  return element;
}

function quote(text) {
  const block = document.createElement("blockquote");
  block.append(...text.split(/\n{2,}/).map((part) => paragraph(part)));
  return block;
}

const takeable = (conflict) => conflict.entries.map((entry, index) => ({ entry, index })).filter(({ entry }) => !entry.tooLong);

// Shows what the text's `## Contradiction` section says, or nothing when there is none.
export function showConflict(markdown) {
  closeReview();
  const conflict = readConflict(markdown);
  state.resolution.shown = JSON.stringify(conflict);
  $("conflict").hidden = !conflict;
  $("conflict-refused").textContent = "";
  if (!conflict) return;
  const count = conflict.entries.length;
  const they = count === 1 ? "a later conversation" : `${count || "later"} conversations`;
  $("conflict-why").textContent = `In conflict: ${they} said something the recorded claim does not. Consolidation `
    + `kept the recorded claim, appended what was said under “## Contradiction” and dropped the confidence to `
    + `${CONTRADICTION_CONFIDENCE} (it is ${conflict.confidence ?? "not set"} now). The concept stays in conflict, `
    + "listed under Conflicts and recalled at that confidence, until a version without that section is saved.";
  const recorded = $("conflict-recorded");
  recorded.replaceChildren(paragraph(conflict.description, "strong"), ...quote(conflict.recorded || "(no text)").childNodes);
  $("conflict-new-title").textContent = count === 1 ? "What the later conversation said"
    : `What the later conversations said (${count})`;
  $("conflict-entries").replaceChildren(...conflict.entries.map((entry) => {
    const item = document.createElement("li");
    item.append(paragraph(`Session ${entry.session}, ${entry.date}: ${entry.description}`));
    if (entry.tooLong) item.append(paragraph("Its text was too long to be kept in the body: its version in History links the conversation."));
    else if (entry.cut) item.append(paragraph(missingQuote(bodyBytes(splitDocument(markdown)?.body ?? ""))));
    else item.append(quote(entry.claim));
    return item;
  }));
  $("conflict-other").hidden = !conflict.other.length;
  $("conflict-other").textContent = conflict.other.length
    ? `The section also holds text in no entry's form: ${conflict.other.join(" ")}` : "";
  const choices = takeable(conflict);
  $("conflict-take").disabled = !choices.length;
  $("conflict-choice").hidden = choices.length < 2;
  $("conflict-choices").replaceChildren(...(choices.length < 2 ? [] : choices.map(({ entry, index }, position) => {
    const label = document.createElement("label");
    const radio = document.createElement("input");
    radio.type = "radio";
    radio.name = "conflict-entry";
    radio.value = String(index);
    radio.checked = position === 0;
    label.append(radio, ` Session ${entry.session}, ${entry.date}: ${entry.description}`);
    return label;
  })));
}

function chosen(conflict) {
  const choices = takeable(conflict);
  const picked = document.querySelector("input[name=conflict-entry]:checked");
  const index = picked ? Number(picked.value) : choices.length ? choices[0].index : -1;
  return conflict.entries[index] ? { entry: conflict.entries[index], index } : null;
}

function resolve(kind) {
  const text = state.resolution.editor.text();
  const conflict = readConflict(text);
  $("conflict-refused").textContent = "";
  if (!conflict) {
    $("conflict-refused").textContent = "The text in the editor has no “## Contradiction” section any more: nothing to resolve.";
    return;
  }
  let result;
  let title;
  let what;
  if (kind === "keep") {
    result = keepRecord(text);
    title = "Keep the record";
    what = "The “## Contradiction” section is removed; the recorded claim stays as it is.";
  } else if (kind === "take") {
    const { entry, index } = chosen(conflict) || {};
    if (!entry || entry.tooLong) return;
    result = takeNewClaim(text, index);
    title = "Take the new claim";
    what = `The claim of session ${entry.session} (${entry.date}) replaces the recorded one, and its description the `
      + "concept's; the “## Contradiction” section is removed."
      + (entry.cut ? " Its quote was not kept, so its description is the claim now: check it." : "");
  } else {
    result = editBoth(text);
    title = "Edit both";
    what = "The “## Contradiction” section is removed and every claim is in the body, the recorded one first: "
      + "merge them into one by hand (and the description with them), then save.";
  }
  if (!result.fits) {
    $("conflict-refused").textContent = `${title} would make the body ${result.bytes.toLocaleString("en")} bytes, over `
      + `the ${BODY_MAX_BYTES.toLocaleString("en")} a concept's body holds, so nothing was changed. Shorten the text `
      + "first, or keep one of the claims.";
    return;
  }
  state.resolution.before = text;
  state.resolution.editor.replace(result.markdown);
  $("conflict").hidden = true;
  $("conflict-review").hidden = false;
  $("conflict-review-title").textContent = `Review: ${title}`;
  $("conflict-review-what").textContent = `${what} Provenance is policy and confidence ${RESOLVED_CONFIDENCE}.`;
  if (state.resolution.review) state.resolution.review.destroy();
  state.resolution.review = state.resolution.editor.diff($("conflict-diff"),
    `${title}: the change, against the text before it`, state.resolution.before, result.markdown);
  $("conflict-review-title").focus();
  say(`${title}: review the change, then save. Nothing is saved yet.`);
}

function closeReview() {
  $("conflict-review").hidden = true;
  if (state.resolution.review) state.resolution.review.destroy();
  state.resolution.review = null;
  state.resolution.before = null;
}

// Puts the text back as it was before the resolution (Ctrl/Cmd-Z in the editor does as much).
function undo() {
  const text = state.resolution.before;
  if (text === null) return;
  state.resolution.editor.replace(text);
  showConflict(text);
  $("conflict-title").focus();
  say("Undone: the text is as it was before.");
}

// The editor's text changed: back at the text before the resolution (undone in the editor), the
// guidance comes back; edited by hand outside a review, it follows the section (gone with it).
export function noticeChange(text) {
  if (state.resolution.before !== null) {
    if (text === state.resolution.before) showConflict(text);
  } else if (JSON.stringify(readConflict(text)) !== state.resolution.shown) {
    const picked = document.querySelector("input[name=conflict-entry]:checked");
    showConflict(text);
    const again = picked && document.querySelector(`input[name=conflict-entry][value="${picked.value}"]`);
    if (again) again.checked = true;
  }
}

export function hideConflict() {
  closeReview();
  $("conflict").hidden = true;
}
