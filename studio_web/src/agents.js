// The tenant's agents: the list shown when the page names no agent, or one the tenant does not have.
import { showAgentsConfigProblems } from "./banner.js";
import { $, badge, cell, show } from "./dom.js";
import { api } from "./session.js";
import { fail, say } from "./status.js";
import { SHARED, agentUrl, scope } from "./url.js";

export async function loadAgents() {
  say("Loading…");
  let agents, shared;
  try {
    ({ agents, shared } = await api("GET", "/agents", { tenantWide: true }));
  } catch (error) {
    fail(`Could not load the agents of ${scope.tenant}`, error, loadAgents);
    return false;
  }
  const body = $("agents").tBodies[0];
  body.replaceChildren();
  for (const agent of agents) {
    const row = body.insertRow();
    row.dataset.name = agent.name;
    const link = document.createElement("a");
    link.href = agentUrl(agent.name);
    link.textContent = agent.name;
    const named = cell(row, link);
    if (agent.config_problem) named.append(" ", badge("knowledge.yaml invalid: retrieval off", "conflict"));
    cell(row, String(agent.concepts));
    const conflicts = cell(row, String(agent.conflicts));
    if (agent.conflicts) conflicts.append(" ", badge("to resolve", "conflict"));
    cell(row, String(agent.related));
    const fresh = cell(row, String(agent.new ?? 0));
    if (agent.new) fresh.append(" ", badge("to review", "new"));
  }
  $("shared-link").href = agentUrl(SHARED);
  if (shared) {  // an API older than the page answers no `shared`: the link alone
    const waiting = [shared.conflicts && `${shared.conflicts} to resolve`, shared.new && `${shared.new} new for you`];
    $("shared-counts").textContent = `(${shared.concepts} concept${shared.concepts === 1 ? "" : "s"}`
      + `${waiting.filter(Boolean).map((part) => `, ${part}`).join("")})`;
  }
  $("agents-empty").hidden = agents.length > 0;
  showAgentsConfigProblems(agents);
  const left = agents.reduce((sum, agent) => sum + (agent.catching_up || 0), 0);
  $("agents-catching-up").hidden = !left;
  $("agents-catching-up").textContent = left
    ? `Still catching up on ${left} change${left === 1 ? "" : "s"}: the counts may be behind.` : "";
  $("agents-title").textContent = `Agents of ${scope.tenant}`;
  show("agents-view");
  say(`${agents.length} agent${agents.length === 1 ? "" : "s"}`);
  return true;
}
