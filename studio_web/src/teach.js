// "Teach words…" on the concepts page: the model's customer words for every concept of the agent (or of
// shared knowledge) that has none yet. A dry run first says what it would ask and what it costs in model
// calls; confirming queues the batched jobs (ten concepts to a call), answered off the request path,
// within the tenant's daily model calls: what the budget cannot pay today waits for the next day.
import { $ } from "./dom.js";
import { api } from "./session.js";
import { fail, say } from "./status.js";

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

async function plan() {
  say("Counting the concepts without model words…");
  let answer;
  try {
    answer = await api("POST", "/words/propose", { body: { dry_run: true } });
  } catch (error) {
    fail("Could not count the concepts to teach", error, plan);
    return;
  }
  say("");
  const nothing = answer.concepts === 0;
  $("teach-text").textContent = nothing
    ? `Every concept has the model's words already (${answer.taught_already}).`
    : `${plural(answer.concepts, "concept has", "concepts have")} no model words yet: asking for them costs `
      + `${plural(answer.calls, "model call", "model calls")} (ten concepts to a call), within the tenant's daily `
      + "model calls; what they cannot pay today waits for the next day.";
  $("teach-confirm").textContent = `Teach ${plural(answer.concepts, "concept", "concepts")}`;
  $("teach-confirm").hidden = nothing;
  $("teach-panel").hidden = false;
}

async function confirm() {
  $("teach-confirm").disabled = true;
  try {
    const answer = await api("POST", "/words/propose", { body: { dry_run: false } });
    $("teach-text").textContent = answer.queued === answer.concepts
      ? `Queued: the words of ${plural(answer.queued, "concept", "concepts")} arrive in the next minutes `
        + "(a concept waiting for the budget says “words pending”)."
      : `Only ${answer.queued} of ${answer.concepts} were queued: try again.`;
    $("teach-confirm").hidden = answer.queued === answer.concepts;
  } catch (error) {
    fail("Could not queue the words", error, confirm);
  } finally {
    $("teach-confirm").disabled = false;
  }
}

export function wireTeach() {
  $("teach-open").addEventListener("click", plan);
  $("teach-confirm").addEventListener("click", confirm);
  $("teach-close").addEventListener("click", () => { $("teach-panel").hidden = true; });
}
