// The Facts page's Recent: decisions newest first, those taken in one action under one heading, and
// the way back — "Undo approval" (the memory cell as before it, unless the fact changed since, which
// is said) and "Reopen" (a reject or dismiss lifted). Either puts the proposal back in Pending. After
// forget-customer Recent no longer holds the customer's rows; an undo already on screen is answered
// `gone`, said in words. The lists are drawn again by the caller's `refresh`, handed in.
import { ApiError, plainWords } from "./api.js";
import { $, button, el, stamp } from "./dom.js";
import { api } from "./session.js";
import { state } from "./state.js";
import { fail, say } from "./status.js";

const DECISION = { approved: "Approved, saved to memory", rejected: "Rejected", dismissed: "Dismissed",
  expired: "Expired unanswered" };
const COLUMNS = 8;

function undoPath(p) {
  return `/facts/proposals/${encodeURIComponent(p.customer_id)}/${encodeURIComponent(p.id)}/undo`;
}

function batchHeading(rows, first) {
  const row = el("tr", { class: "batch" });
  const what = (DECISION[first.status] || first.status).split(",")[0];
  row.append(el("th", { colspan: String(COLUMNS), scope: "colgroup",
    text: `One action: ${what} ${rows} by ${first.resolved_by || "?"}, ${stamp(first.resolved_at)}` }));
  return row;
}

export function renderRecent(refresh) {
  const body = $("recent").tBodies[0];
  body.replaceChildren();
  const rows = state.facts.shown.recent;
  rows.forEach((p, index) => {
    if (p.batch && rows[index - 1]?.batch !== p.batch) {
      body.append(batchHeading(rows.filter((r) => r.batch === p.batch).length, p));
    }
    const row = body.insertRow();
    if (p.batch) row.className = "in-batch";
    for (const text of [p.name, p.value, p.scope, DECISION[p.status] || p.status, p.resolved_by || "",
      stamp(p.resolved_at), p.reason || ""]) row.insertCell().textContent = text;
    const actions = row.insertCell();
    const label = p.can_undo ? "Undo approval" : p.can_reopen ? "Reopen" : null;
    if (label) {
      const b = button(label, () => undo(p, refresh), "undo");
      b.setAttribute("aria-label", `${label}: ${p.name} for ${p.scope}`);
      actions.append(b);
    }
  });
  $("recent").hidden = rows.length === 0;
}

async function undo(p, refresh) {
  const reopening = p.status !== "approved";
  let back;
  try {
    back = await api("POST", undoPath(p));
  } catch (error) {
    if (error instanceof ApiError && ["cannot_undo", "gone", "not_pending", "conflict"].includes(error.code)) {
      say(`Could not ${reopening ? "reopen" : "undo"} ${p.name} for ${p.scope}: ${plainWords(error)}`);
      await refresh();
      $("recent-title").focus();
      return;
    }
    fail(`Could not ${reopening ? "reopen" : "undo"} ${p.name}`, error, () => undo(p, refresh));
    return;
  }
  say(reopening
    ? `Reopened ${p.name} = “${p.value}” for ${p.scope}: it is pending again and may be proposed again.`
    : `Undone: ${p.name} for ${p.scope} is pending again, and the customer's memory is as before the approval.`);
  await refresh();
  // Focus stays with the decisions, never on an action the operator did not choose.
  $("recent-title").focus();
  return back;
}
