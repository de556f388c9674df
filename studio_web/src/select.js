// Selecting the list's rows and acting on them in one action: mark reviewed, delete (confirmed, and
// undone in one action), change type (move to shared: bulk-share.js). Each row's outcome comes back
// from the API (POST /concepts/bulk); the page says what was done and names every row that was not.
import { $ } from "./dom.js";
import { api } from "./session.js";
import { calls, state } from "./state.js";
import { fail, say } from "./status.js";

const BULK_MAX = 500;  // knowledge/curation/bulk.py BULK_MAX: beyond it the API refuses the whole action
const DONE = { reviewed: ["reviewed", "unchanged"], delete: ["deleted"], undelete: ["restored"],
  type: ["changed", "unchanged"], share: ["moved", "ready"] };  // ready: a move's dry run
export const WORDS = { reviewed: "already reviewed", unchanged: "unchanged", gone: "gone already", not_deleted: "not deleted",
  changed_meanwhile: "changed by someone else meanwhile (nothing written: reload it)", invalid: "not valid as that type",
  not_done: "not done: the request ran out of time (still selected: act again)" };

// A row's checkbox, before its name (so the columns stay as they are); it stays checked across the
// list's own refreshes.
export function selectBox(concept) {
  const box = document.createElement("input");
  box.type = "checkbox";
  box.className = "select-row";
  box.value = concept.name;
  box.checked = state.list.selected.has(concept.name);
  box.setAttribute("aria-label", `Select ${concept.name}`);
  box.addEventListener("change", () => {
    if (box.checked) state.list.selected.add(concept.name);
    else state.list.selected.delete(concept.name);
    showBar();
  });
  return box;
}

export function chosen() {
  return [...document.querySelectorAll("#concepts tbody input.select-row:checked")].map((box) => box.value);
}

export function showBar() {
  const names = chosen();
  const all = document.querySelectorAll("#concepts tbody input.select-row");
  $("select-all").checked = names.length > 0 && names.length === all.length;
  $("select-all").indeterminate = names.length > 0 && names.length < all.length;
  $("bulk-bar").hidden = names.length === 0;
  $("bulk-count").textContent = `${names.length} selected`;
}

function clear() {
  state.list.selected.clear();
  for (const box of document.querySelectorAll("#concepts tbody input.select-row")) box.checked = false;
  showBar();
}

export async function act(action, names, extra = {}) {
  if (names.length > BULK_MAX) {
    say(`Nothing done: at most ${BULK_MAX} rows per action, and ${names.length} are selected. Select fewer.`);
    return null;
  }
  const rows = names.map((name) => {
    const concept = state.list.concepts.find((c) => c.name === name);
    return action === "reviewed" ? { name, written_at: concept && concept.written_at } : { name };
  });
  say("Working…");
  try {
    return await api("POST", "/concepts/bulk", { body: { action, rows, ...extra } });
  } catch (error) {
    fail("Nothing done", error, () => act(action, names, extra));
    return null;
  }
}

// What the answer says: how many were done, and each row that was not, by name and why (`words`).
export function report(answer, done, words = WORDS) {
  const left = answer.rows.filter((row) => !DONE[answer.action].includes(row.outcome) || row.outcome === "unchanged");
  const count = answer.rows.length - left.length;
  $("bulk-outcomes").replaceChildren(...left.map((row) => {
    const item = document.createElement("li");
    item.textContent = `${row.name}: ${words[row.outcome] || row.outcome}`;
    return item;
  }));
  $("bulk-outcomes").hidden = left.length === 0;
  return `${done(count)}${left.length ? ` ${left.length} left as ${left.length === 1 ? "it was" : "they were"}: listed below.` : ""}`;
}

// `keep`: rows to leave selected (a move the request's time cut short: the rest is one click away).
export async function finish(text, keep = []) {
  clear();
  for (const name of keep) state.list.selected.add(name);
  await calls.refreshList();
  say(text);
}

async function markReviewed() {
  const answer = await act("reviewed", chosen());
  if (!answer) return;
  const text = report(answer, (n) => `${n} marked reviewed.`);
  await finish(`${text} ${answer.review.new} new left.`);
}

async function remove() {
  const names = chosen();
  if (!confirm(`Delete ${names.length} concept${names.length === 1 ? "" : "s"}? Each can be brought back: `
    + "Undo right after, or from Deleted concepts.")) return;
  const answer = await act("delete", names);
  if (!answer) return;
  state.list.undoDelete = answer.rows.filter((row) => row.outcome === "deleted").map((row) => row.name);
  $("bulk-undo").hidden = !state.list.undoDelete.length;
  await finish(report(answer, (n) => `${n} deleted.${n ? " Undo brings them back." : ""}`));
}

async function undoDelete() {
  const names = state.list.undoDelete || [];
  const answer = await act("undelete", names);
  if (!answer) return;
  state.list.undoDelete = null;
  $("bulk-undo").hidden = true;
  await finish(report(answer, (n) => `${n} brought back.`));
}

async function retype() {
  const type = $("bulk-type").value;
  const answer = await act("type", chosen(), { type });
  if (!answer) return;
  await finish(report(answer, (n) => `${n} changed to ${type}.`));
}

export function wireSelection() {
  $("select-all").addEventListener("change", () => {
    for (const box of document.querySelectorAll("#concepts tbody input.select-row")) {
      box.checked = $("select-all").checked;
      if (box.checked) state.list.selected.add(box.value);
      else state.list.selected.delete(box.value);
    }
    showBar();
  });
  $("bulk-reviewed").addEventListener("click", markReviewed);
  $("bulk-delete").addEventListener("click", remove);
  $("bulk-undo").addEventListener("click", undoDelete);
  $("bulk-retype").addEventListener("click", retype);
  $("bulk-clear").addEventListener("click", clear);
}
