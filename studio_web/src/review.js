// The review queue: which concepts the engine wrote since this operator last looked, and "Mark all as seen".
import { $, stamp } from "./dom.js";
import { counted, refreshList } from "./list.js";
import { api } from "./session.js";
import { fail, say } from "./status.js";

// Each row the engine wrote since this operator last looked is marked new (kept on the server
// per operator, so it follows them between browsers); the count is in the filter's label and the
// page title. "Mark all as seen" puts back the time the list shown was listed (`as_of`), so a
// write that came after it stays new.
let listedAt = null;
let newCount = 0;

const TITLE = "Knowledge — studio";

// The list just listed: when it was listed, and how many of its agent's concepts are new.
export function showReview(page) {
  listedAt = page.as_of;
  since = page.since;
  counting(page.new || 0);
}

let since = null;

function counting(count) {
  newCount = count;
  document.title = newCount ? `(${newCount > 99 ? "99+" : newCount}) ${TITLE}` : TITLE;
  $("new-count").textContent = String(newCount);
  $("mark-seen").hidden = !newCount;
  $("review-since").textContent = newCount
    ? `${newCount} concept${newCount === 1 ? "" : "s"} the engine or a colleague wrote since ${stamp(since)} ${newCount === 1 ? "is" : "are"} marked new.`
    : `Nothing new from the engine or a colleague since ${stamp(since)}.`;
}

export async function markSeen() {
  const asked = document.activeElement === $("mark-seen");
  let state;
  try {
    state = await api("PUT", "/review", { body: { seen_at: listedAt } });
  } catch (error) {
    fail("Not marked as seen", error, markSeen);
    return;
  }
  undoable = state.undo ? state.seen_at : null;
  $("undo-seen").hidden = !undoable;
  if (!(await refreshList())) return;
  if (asked) $("filter-new").focus();  // the button is gone once nothing is new
  say(`${counted()}. Marked all as seen.${undoable ? " Undo puts the new marks back." : ""}`);
}

// "Undo": what the last "mark all as seen" replaced comes back (once, and not after another mark).
let undoable = null;  // the seen_at that mark stored

export async function undoSeen() {
  if (!undoable) return;
  try {
    await api("POST", "/review/undo", { body: { seen_at: undoable } });
  } catch (error) {
    if (error.status === 409) {
      undoable = null;
      $("undo-seen").hidden = true;
    }
    fail("Not undone", error, error.status === 409 ? null : undoSeen);
    return;
  }
  undoable = null;
  $("undo-seen").hidden = true;
  if (!(await refreshList())) return;
  $("filter-new").focus();
  say(`${counted()}. Undone: ${newCount} concept${newCount === 1 ? " is" : "s are"} new again.`);
}

// One concept reviewed at the version its row shows; the answer's count replaces the one shown.
// Null when it could not be marked (said on the page).
export async function markReviewed(name, writtenAt) {
  try {
    const state = await api("PUT", `/review/concepts/${encodeURIComponent(name)}`, { body: { written_at: writtenAt } });
    counting(state.new);
    return state;
  } catch (error) {
    fail(`${name} was not marked reviewed`, error, () => markReviewed(name, writtenAt));
    return null;
  }
}
