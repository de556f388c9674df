// The review queue: which concepts the engine wrote since this operator last looked, and "Mark all as seen".
import { $, stamp } from "./dom.js";
import { api } from "./session.js";
import { calls, state } from "./state.js";
import { fail, say } from "./status.js";

// Each row the engine wrote since this operator last looked is marked new (kept on the server
// per operator, so it follows them between browsers); the count is in the filter's label and the
// page title. "Mark all as seen" puts back the time the list shown was listed (`as_of`), so a
// write that came after it stays new. What it knows is in state.review.
const TITLE = "Knowledge — studio";

// The list just listed: when it was listed, and how many of its agent's concepts are new.
export function showReview(page) {
  state.review.listedAt = page.as_of;
  state.review.since = page.since;
  counting(page.new || 0);
}

function counting(count) {
  state.review.newCount = count;
  const { newCount, since } = state.review;
  document.title = newCount ? `(${newCount > 99 ? "99+" : newCount}) ${TITLE}` : TITLE;
  $("new-count").textContent = String(newCount);
  $("mark-seen").hidden = !newCount;
  $("review-since").textContent = newCount
    ? `${newCount} concept${newCount === 1 ? "" : "s"} the engine or a colleague wrote since ${stamp(since)} ${newCount === 1 ? "is" : "are"} marked new.`
    : `Nothing new from the engine or a colleague since ${stamp(since)}.`;
}

export async function markSeen() {
  const asked = document.activeElement === $("mark-seen");
  let answer;
  try {
    answer = await api("PUT", "/review", { body: { seen_at: state.review.listedAt } });
  } catch (error) {
    fail("Not marked as seen", error, markSeen);
    return;
  }
  state.review.undoable = answer.undo ? answer.seen_at : null;
  $("undo-seen").hidden = !state.review.undoable;
  if (!(await calls.refreshList())) return;
  if (asked) $("filter-new").focus();  // the button is gone once nothing is new
  say(`${calls.counted()}. Marked all as seen.${state.review.undoable ? " Undo puts the new marks back." : ""}`);
}

// "Undo": what the last "mark all as seen" replaced comes back (once, and not after another mark).
export async function undoSeen() {
  if (!state.review.undoable) return;
  try {
    await api("POST", "/review/undo", { body: { seen_at: state.review.undoable } });
  } catch (error) {
    if (error.status === 409) {
      state.review.undoable = null;
      $("undo-seen").hidden = true;
    }
    fail("Not undone", error, error.status === 409 ? null : undoSeen);
    return;
  }
  state.review.undoable = null;
  $("undo-seen").hidden = true;
  if (!(await calls.refreshList())) return;
  $("filter-new").focus();
  const { newCount } = state.review;
  say(`${calls.counted()}. Undone: ${newCount} concept${newCount === 1 ? " is" : "s are"} new again.`);
}

// One concept reviewed at the version its row shows; the answer's count replaces the one shown.
// Null when it could not be marked (said on the page).
export async function markReviewed(name, writtenAt) {
  try {
    const answer = await api("PUT", `/review/concepts/${encodeURIComponent(name)}`, { body: { written_at: writtenAt } });
    counting(answer.new);
    return answer;
  } catch (error) {
    fail(`${name} was not marked reviewed`, error, () => markReviewed(name, writtenAt));
    return null;
  }
}
