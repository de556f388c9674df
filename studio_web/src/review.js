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
  newCount = page.new || 0;
  document.title = newCount ? `(${newCount > 99 ? "99+" : newCount}) ${TITLE}` : TITLE;
  $("new-count").textContent = String(newCount);
  $("mark-seen").hidden = !newCount;
  $("review-since").textContent = newCount
    ? `${newCount} concept${newCount === 1 ? "" : "s"} the engine wrote since ${stamp(page.since)} ${newCount === 1 ? "is" : "are"} marked new.`
    : `Nothing new from the engine since ${stamp(page.since)}.`;
}

export async function markSeen() {
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
