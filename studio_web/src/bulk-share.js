// "Move to shared…" on the list's selected rows: each moved to the tenant's shared knowledge as the
// editor's Move does. A dry run first says what the move would do and what it costs: the utility model
// teaches the words of what enters shared knowledge, ten concepts to a call, and the panel says how many
// calls the move queues before the operator confirms it; then each row's outcome is reported.
import { $ } from "./dom.js";
import { recallsShared } from "./list.js";
import { WORDS, act, chosen, finish, report } from "./select.js";
import { state } from "./state.js";
import { say } from "./status.js";
import { inShared } from "./url.js";

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;
const SAID = { ...WORDS, gone: "not in this agent any more", invalid: "does not parse: repair it first",
  name_taken: "shared knowledge has another concept of this name: open it there, or rename this one",
  name_deleted: "a deleted shared concept has this name: restore it there, or rename this one",
  changed_meanwhile: "copied to shared knowledge, but written here meanwhile, so kept here too: compare the two" };

function close() {
  $("move-panel").hidden = true;
  state.list.movePlan = null;
}

// The dry run: nothing is written; the panel says what the move would do and cost.
async function plan() {
  const names = chosen();
  const answer = await act("share", names, { dry_run: true });
  if (!answer) return;
  state.list.movePlan = names;
  const ready = answer.counts.ready || 0;
  report(answer, () => "", SAID);  // the rows that would not move, listed under the bar
  const left = names.length - ready;
  $("move-text").textContent = (ready ? `Moving ${plural(ready, "concept", "concepts")} to shared knowledge `
    + `queues ${plural(answer.model_calls, "model call", "model calls")} to teach their words (ten concepts to `
    + "a call, within the tenant's daily model calls). Each leaves this agent for Deleted concepts, restorable."
    : "None of the selected concepts can move to shared knowledge.")
    + (answer.policies ? ` ${plural(answer.policies, "policy is", "policies are")} also reviewed against the `
      + "concepts of every agent that recalls shared knowledge." : "")
    + (left ? ` ${plural(left, "row cannot move", "rows cannot move")}: listed below.` : "")
    + (ready && recallsShared() !== true ? " This agent does not recall shared knowledge (shared: true in its "
      + "knowledge.yaml), or the page does not know yet: after the move it no longer recalls them." : "");
  $("move-confirm").textContent = `Move ${plural(ready, "concept", "concepts")}`;
  $("move-confirm").hidden = !ready;
  $("move-panel").hidden = false;
  say("");  // the panel says it (role status), not the status line too
}

// The move, of the rows counted: a selection changed since is counted again first.
async function move() {
  const names = chosen();
  const counted = state.list.movePlan || [];
  if (names.length !== counted.length || names.some((name, i) => name !== counted[i])) {
    if (names.length) await plan();
    else close();
    return;
  }
  close();
  const answer = await act("share", names);
  if (!answer) return;
  const text = report(answer, (n) => `${plural(n, "concept", "concepts")} moved to shared knowledge: `
    + `${plural(answer.model_calls, "model call", "model calls")} queued to teach their words.`, SAID);
  const lost = answer.words_not_queued ? ` The words of ${plural(answer.words_not_queued, "concept", "concepts")} `
    + "could not be queued: Teach words in shared knowledge asks for them." : "";
  await finish(text + lost, answer.rows.filter((row) => row.outcome === "not_done").map((row) => row.name));
}

export function wireBulkShare() {
  $("bulk-share").hidden = inShared;  // what is shared already moves nowhere
  $("bulk-share").addEventListener("click", plan);
  $("move-confirm").addEventListener("click", move);
  $("move-cancel").addEventListener("click", () => {
    close();
    $("bulk-outcomes").hidden = true;
    say("Nothing moved.");
  });
}
