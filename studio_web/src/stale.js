// The list that knows it is stale. While the list is on screen and the tab visible, every `behindSeconds`
// (config.json, 3 by default) the page asks how many concepts were written since the rows shown were
// listed (GET /changes?since=<their as_of>), and says "N changes since you opened it — show" without
// waiting for the list's own refresh (list.js, every 30 s). The service answers from the change journal
// its list reads anyway (knowledge.curation.behind): however many lists are open, a few seconds' looks
// cost it one listing of the journal between them, and no concept is read.
// This tab's own writes are not behind it: a look that overlapped one is dropped, and each is followed
// by the list listed again, which moves `since` past it.
import { $ } from "./dom.js";
import { goTo } from "./pages.js";
import { api } from "./session.js";
import { calls, state } from "./state.js";
import { say } from "./status.js";

// The list was just listed (list.js): its rows are current as of the answer's `as_of`.
export function listedNow(page) {
  state.behind.since = page.as_of || null;
  $("behind-cue").hidden = true;
}

export function watchBehind() {
  $("behind-show").addEventListener("click", showChanges);
  clearInterval(state.behind.timer);
  state.behind.timer = setInterval(look, (state.config.behindSeconds || 3) * 1000);
}

async function look() {
  const { since } = state.behind;
  if (!since || state.behind.looking || state.list.listing || state.writes.open || $("list-view").hidden
    || document.hidden) return;
  const begun = state.writes.begun;
  state.behind.looking = true;
  try {
    const answer = await api("GET", `/changes?${new URLSearchParams({ since })}`);
    // Listed again meanwhile, or this tab wrote: what was counted may be in the rows, or the tab's own.
    const moved = since !== state.behind.since || begun !== state.writes.begun || state.writes.open;
    if (!moved && !state.list.listing && !$("list-view").hidden) cue(answer);
  } catch {
    // Asked again at the next look; the list's own watch says when the service cannot be reached.
  } finally {
    state.behind.looking = false;
  }
}

function cue({ changes, more }) {
  $("behind-text").textContent = `${more ? "More than " : ""}${changes} change${changes === 1 ? "" : "s"} `
    + "since you opened it —";
  $("behind-cue").hidden = !changes;
}

// "show": the rows listed again (as many as shown), and the operator taken to their top, where the
// default order puts what was just written. On a later page of that order what was written is on the
// first page, so "show" goes there (nothing selected, as on any other page); in any other order the
// page on screen is listed again in place.
async function showChanges() {
  $("behind-cue").hidden = true;
  const { shownFilters, offset } = state.list;
  const newestFirst = shownFilters.sort === "written_at" && shownFilters.desc && !shownFilters.q.trim();
  if (!(await (newestFirst && offset > 0 ? goTo(0, { quiet: true }) : calls.refreshList()))) return;
  (document.querySelector("#concepts tbody button.link") || $("filter-new")).focus();
  say(`${calls.counted()}. The list was updated with the latest changes.`);
}
