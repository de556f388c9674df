// What waits beside the open concept for the operator's judgment: the pairs a policy review or a sighting set
// aside when no judge gave a verdict. Nothing of them was written into the concept; the panel lists them, read
// from the API when the concept opens (GET …/concepts/{name}/waiting), with a link to each policy named.
import { $, el } from "./dom.js";
import { fail, say } from "./status.js";
import { api } from "./session.js";
import { state } from "./state.js";
import { urlFor } from "./url.js";

const WHY = { no_model: "no model was configured", unusable: "the model's answer was no verdict",
  not_judged: "not judged" };

function describe(pair) {
  const item = el("li");
  const why = WHY[pair.why] || pair.why;
  if (pair.kind === "conflict") {
    const link = el("a", { href: urlFor(pair.policy), text: pair.policy });
    item.append("Judged to contradict the policy ", link, ` (${pair.since}): both are kept and both are recalled. `
      + "Edit one so they agree (its review lifts this), or dismiss.");
  } else if (pair.kind === "policy") {
    const link = el("a", { href: urlFor(pair.policy), text: pair.policy });
    item.append(`Policy `, link, ` (${pair.since}): not yet judged against this text — ${why}.`);
  } else {
    const where = pair.shared ? ` in ${pair.agent}` : "";
    item.append(`A customer's claim${where} (session ${pair.session_id}, ${pair.since}): ${pair.description} — ${why}.`);
    if (pair.body && pair.body !== pair.description) item.append(el("blockquote", { text: pair.body }));
  }
  return item;
}

// Shows the pairs beside `name` (hidden when none; a failure to read them says so in the panel).
export async function showWaiting(name) {
  const panel = $("waiting-panel");
  panel.hidden = true;
  let pairs;
  try {
    pairs = (await api("GET", `/concepts/${encodeURIComponent(name)}/waiting`)).pairs;
  } catch {
    if (state.editor.current?.name !== name) return;  // another concept was opened meanwhile
    $("waiting-count").textContent = "Could not read what waits beside this concept.";
    $("waiting-about").hidden = $("waiting-dismiss").hidden = true;
    $("waiting-list").replaceChildren();
    panel.hidden = false;
    return;
  }
  if (!pairs.length || state.editor.current?.name !== name) return;
  $("waiting-count").textContent = `${pairs.length} waiting for your judgment`;
  $("waiting-about").hidden = $("waiting-dismiss").hidden = false;
  $("waiting-list").replaceChildren(...pairs.map(describe));
  panel.hidden = false;
}

export function hideWaiting() {
  $("waiting-panel").hidden = true;
}

// The operator has judged what waited beside the open concept: dismissed (the concept is not written).
export async function dismissWaiting() {
  const name = state.editor.current?.name;
  if (!name) return;
  try {
    const { dismissed } = await api("DELETE", `/concepts/${encodeURIComponent(name)}/waiting`);
    hideWaiting();
    say(`Dismissed ${dismissed} waiting beside ${name}.`);
  } catch (error) {
    fail(`Could not dismiss what waits beside ${name}`, error, dismissWaiting);
  }
}
