// The Facts page's many-at-once: pending cards chosen with their "Select" box (or "Select all
// shown": only cards drawn on the page, at most 50, so nothing is decided that nobody had on
// screen), decided in one action, each proposal by its own compare-and-swap, each outcome listed.
// The lists are drawn again by the caller's `refresh` (facts-proposals.js), handed in, not imported.
import { ApiError } from "./api.js";
import { $, el } from "./dom.js";
import { api } from "./session.js";
import { state } from "./state.js";
import { fail, say } from "./status.js";

export const BULK_MAX = 50;  // the API's most per action
const DONE = { approve: "approved", reject: "rejected", dismiss: "dismissed" };
const VERB = { approve: "Approved", reject: "Rejected", dismiss: "Dismissed" };

// The outcome of one proposal, in words (never more than the API said; a value is the operator's own screen).
function outcomeWords(o, action) {
  if (o.ok) return action === "approve" ? "saved to memory" : `${DONE[action]}: will not be proposed again`;
  if (o.outcome === "fact_moved") return "not saved: the customer's fact changed since it was proposed (moved to Stale)";
  return `not ${DONE[action]}: ${o.message || o.outcome}`;
}

// The "Select" box of a pending card; its state lives in state.facts.selected.
export function selectBox(p, titleId) {
  const box = el("input", { type: "checkbox", class: "select", "aria-describedby": titleId });
  box.checked = state.facts.selected.has(p.id);
  box.addEventListener("change", () => choose(p, box.checked, box));
  return el("label", { class: "select" }, box, " Select");
}

function choose(p, on, box) {
  if (on && state.facts.selected.size >= BULK_MAX) {
    box.checked = false;
    say(`At most ${BULK_MAX} proposals in one action: decide these first.`);
    return;
  }
  if (on) state.facts.selected.set(p.id, p);
  else state.facts.selected.delete(p.id);
  showSelection();
}

// Keep only chosen cards still on screen (a list drawn again may have lost some), then say how many.
export function pruneSelection() {
  const shown = new Set(state.facts.shown.pending.map((p) => p.id));
  for (const id of [...state.facts.selected.keys()]) if (!shown.has(id)) state.facts.selected.delete(id);
  showSelection();
}

export function toggleSelected(article) {
  const box = article.querySelector("input.select");
  if (!box) return;
  box.checked = !box.checked;
  box.dispatchEvent(new Event("change"));
}

function showSelection() {
  const count = state.facts.selected.size;
  const shown = state.facts.shown.pending.length;
  $("bulk-count").textContent = `${count} selected`;
  for (const id of ["bulk-approve", "bulk-reject", "bulk-dismiss"]) $(id).disabled = count === 0 || state.facts.deciding;
  const all = $("select-all");
  all.checked = count > 0 && count === Math.min(shown, BULK_MAX);
  all.indeterminate = count > 0 && !all.checked;
}

// "Select all shown": the first 50 cards drawn (what the operator can scroll through), or none.
function selectAll(on) {
  state.facts.selected.clear();
  if (on) for (const p of state.facts.shown.pending.slice(0, BULK_MAX)) state.facts.selected.set(p.id, p);
  for (const box of $("pending-list").querySelectorAll("input.select")) {
    const id = box.closest("li").dataset.id;
    box.checked = state.facts.selected.has(id);
  }
  showSelection();
  const shown = state.facts.shown.pending.length;
  if (on && shown > BULK_MAX) say(`${BULK_MAX} of the ${shown} shown are selected: at most ${BULK_MAX} in one action.`);
}

function showOutcomes(action, answer, chosen) {
  const named = new Map(chosen.map((p) => [p.id, p.name]));
  const ok = answer.outcomes.filter((o) => o.ok).length;
  const total = answer.outcomes.length;
  $("bulk-result-title").textContent = `${VERB[action]} ${ok} of ${total} in one action`;
  $("bulk-outcomes").replaceChildren(...answer.outcomes.map((o) => el("li", { class: o.ok ? "ok" : "lost" },
    el("span", { class: "fact-name", text: o.name || named.get(o.id) || o.id }), ` for ${o.customer_id}: ${outcomeWords(o, action)}`)));
  $("bulk-result").hidden = false;
}

async function decideSelected(action, refresh) {
  const chosen = [...state.facts.selected.values()];
  if (!chosen.length) return;
  const body = { action, items: chosen.map((p) => ({ customer_id: p.customer_id, id: p.id })) };
  if (action === "reject") body.reason = $("bulk-reason").value.trim() || null;
  state.facts.deciding = true;
  showSelection();
  let answer;
  try {
    answer = await api("POST", "/facts/proposals/bulk", { body });
  } catch (error) {
    state.facts.deciding = false;
    showSelection();
    if (error instanceof ApiError && error.code === "not_found") {
      say(`Nothing was decided: ${error.message}`);
      await refresh();
      return;
    }
    fail(`Could not ${action} the ${chosen.length} selected`, error, () => decideSelected(action, refresh));
    return;
  }
  state.facts.deciding = false;
  state.facts.selected.clear();
  $("bulk-reason").value = "";
  showOutcomes(action, answer, chosen);
  const lost = answer.outcomes.length - answer.outcomes.filter((o) => o.ok).length;
  const why = lost ? `; ${lost} not: see why below the buttons` : "";
  say(`${VERB[action]} ${answer.outcomes.length - lost} of ${answer.outcomes.length}${why}.`);
  await refresh();
  // Focus goes to what happened, never onto another action: a stray Enter decides nothing.
  $("bulk-result-title").focus();
}

export function wireBulk(refresh) {
  $("select-all").addEventListener("change", (event) => selectAll(event.target.checked));
  for (const action of ["approve", "reject", "dismiss"]) {
    $(`bulk-${action}`).addEventListener("click", () => decideSelected(action, refresh));
  }
  showSelection();
}
