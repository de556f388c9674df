// Copy or move the open concept to the tenant's shared knowledge, which every agent that opts in
// (`shared: true`) recalls as its own. What is stored is what is copied: unsaved work is saved first.
import { $ } from "./dom.js";
import { forgetCurrent, isDirty } from "./editor.js";
import { loadList, recallsShared } from "./list.js";
import { api } from "./session.js";
import { state } from "./state.js";
import { fail, say } from "./status.js";
import { SHARED, agentUrl, inShared, visit } from "./url.js";

// The buttons of a stored agent concept (not of a new one, nor in the shared scope itself).
export function showShareButtons(name) {
  $("copy-to-shared").hidden = $("move-to-shared").hidden = inShared || !name;
  $("shared-note").hidden = true;
}

// `name`: the shared concept to link to (null: the shared list).
function note(text, name) {
  $("shared-note-text").textContent = text;
  $("shared-note-link").href = agentUrl(SHARED, name);
  $("shared-note-link").textContent = name ? "Open it in shared knowledge" : "Open shared knowledge";
  $("shared-note").hidden = false;
}

async function share(move) {
  const current = state.editor.current;
  const name = current && current.name;
  if (!name) return;
  if (isDirty()) {
    say(`Save or undo your changes first: the saved version of ${name} is what goes to shared knowledge.`);
    return;
  }
  // An agent that does not recall shared knowledge would recall the moved concept no more.
  if (move && recallsShared() !== true && !window.confirm(`This agent does not recall shared knowledge (shared: true `
      + `in its knowledge.yaml), or the page does not know yet: after the move it no longer recalls ${name}. Move it?`)) {
    say(`Not moved: ${name} stays in this agent.`);
    return;
  }
  say(move ? "Moving…" : "Copying…");
  let answer;
  try {
    answer = await api("POST", `/concepts/${encodeURIComponent(name)}/share`, { body: { move } });
  } catch (error) {
    const not = `Not ${move ? "moved" : "copied"}`;
    if (error.status === 409 && error.code === "name_deleted") {
      note(`${not}: shared knowledge has a deleted concept named ${name}. Restore it there, or rename this one.`, null);
      say(`${not}: a deleted shared concept is named ${name}.`);
    } else if (error.status === 409 && error.body && error.body.name) {
      note(`${not}: shared knowledge already has a concept named ${name}.`, name);
      say(`${not}: shared knowledge already has ${name}.`);
    } else {
      fail(`Could not ${move ? "move" : "copy"} ${name} to shared knowledge`, error, () => share(move));
    }
    return;
  }
  if (!answer.moved) {
    note(move ? `Copied, not moved: ${name} was written here since it was copied, so this agent keeps it. `
      + "Compare the two, then delete this one if it should go."
      : `Copied to shared knowledge: the agents that opt in recall it; this agent still recalls its own ${name}.`, name);
    say(`Copied ${name} to shared knowledge${move ? ", not moved" : ""}.`);
    return;
  }
  forgetCurrent();
  visit(null);
  const moved = `Moved ${name} to shared knowledge: every agent that opts in recalls it now. `
    + "Its own copy is in Deleted concepts, restorable.";
  if (!(await loadList())) {
    // Beside the failure the list left on screen, which stays (not over what else the list said).
    if (!$("problem").hidden) $("status").textContent = moved;
    return;
  }
  say(moved);
}

export function wireShare() {
  $("copy-to-shared").addEventListener("click", () => share(false));
  $("move-to-shared").addEventListener("click", () => share(true));
}
