// Copy or move the open concept to the tenant's shared knowledge, which every agent that opts in
// (`shared: true`) recalls as its own. What is stored is what is copied: unsaved work is saved first.
import { $ } from "./dom.js";
import { current, forgetCurrent, isDirty } from "./editor.js";
import { backToList } from "./list.js";
import { api } from "./session.js";
import { fail, say } from "./status.js";
import { SHARED, agentUrl, inShared, visit } from "./url.js";

// The buttons of a stored agent concept (not of a new one, nor in the shared scope itself).
export function showShareButtons(name) {
  $("copy-to-shared").hidden = $("move-to-shared").hidden = inShared || !name;
  $("shared-note").hidden = true;
}

function note(text, name) {
  $("shared-note-text").textContent = text;
  $("shared-note-link").href = agentUrl(SHARED, name);
  $("shared-note").hidden = false;
}

async function share(move) {
  const name = current && current.name;
  if (!name) return;
  if (isDirty()) {
    say(`Save or undo your changes first: the saved version of ${name} is what goes to shared knowledge.`);
    return;
  }
  say(move ? "Moving…" : "Copying…");
  try {
    await api("POST", `/concepts/${encodeURIComponent(name)}/share`, { body: { move } });
  } catch (error) {
    if (error.status === 409 && error.body && error.body.name) {
      note(`Not ${move ? "moved" : "copied"}: shared knowledge already has a concept named ${name}.`, name);
      say(`Not ${move ? "moved" : "copied"}: shared knowledge already has ${name}.`);
    } else {
      fail(`Could not ${move ? "move" : "copy"} ${name} to shared knowledge`, error, () => share(move));
    }
    return;
  }
  if (!move) {
    note(`Copied to shared knowledge: the agents that opt in recall it; this agent still recalls its own ${name}.`,
      name);
    say(`Copied ${name} to shared knowledge.`);
    return;
  }
  forgetCurrent();
  visit(null);
  await backToList(null);
  say(`Moved ${name} to shared knowledge: every agent that opts in recalls it now, this one too if it opts in. `
    + "Its own copy is in Deleted concepts, restorable.");
}

export function wireShare() {
  $("copy-to-shared").addEventListener("click", () => share(false));
  $("move-to-shared").addEventListener("click", () => share(true));
}
