// The loud notice for an agent whose knowledge.yaml does not parse: its retrieval and learning are off
// (a kill switch fails safe) until the file parses again. The list and the agents answers carry
// `config_problem` (checked every 10 s), so the notice comes and goes with the list's own updates.
import { $ } from "./dom.js";
import { scope } from "./url.js";

function where(problem) {
  return problem.line ? `line ${problem.line}` : "the file";
}

function fileOf(agent) {
  return `agents/${scope.tenant}/${agent}/knowledge.yaml`;
}

// On the concept list: the agent's own problem, or nothing.
export function showConfigProblem(problem) {
  const banner = $("config-banner");
  banner.hidden = !problem;
  if (!problem) return;
  $("config-banner-text").textContent = `This agent's knowledge.yaml does not parse (${where(problem)}: `
    + `${problem.message}). Retrieval and learning are off for ${scope.agent}: no concept is recalled into its `
    + "turns and nothing is learned from them.";
  $("config-banner-todo").textContent = `What to do: correct ${where(problem)} of ${fileOf(scope.agent)} and write it `
    + "again (the concepts themselves are untouched). This notice goes away within 10 s of a file that parses.";
}

// On the agents page: every agent with a problem, named.
export function showAgentsConfigProblems(agents) {
  const broken = agents.filter((agent) => agent.config_problem);
  const banner = $("agents-config-banner");
  banner.hidden = !broken.length;
  if (!broken.length) return;
  $("agents-config-banner-text").textContent = `${broken.length === 1 ? "One agent has" : `${broken.length} agents have`} `
    + "a knowledge.yaml that does not parse, so retrieval and learning are off for "
    + `${broken.length === 1 ? "it" : "them"}: `
    + broken.map((agent) => `${agent.name} (${where(agent.config_problem)}: ${agent.config_problem.message})`).join("; ")
    + `. What to do: correct that line of agents/${scope.tenant}/<agent>/knowledge.yaml and write it again; `
    + "this notice goes away within 10 s of a file that parses.";
}
