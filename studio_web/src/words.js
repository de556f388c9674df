// The learned words page: every word recall learned across the agent's concepts, newest first, and
// where each came from (the model, the store's traffic, or an operator), filtered by origin and concept and paged
// by the server's cursor. Words chosen across concepts are removed at once: one new version per
// concept, each word kept in its removed_words so that neither the traffic nor the model learns it
// again; a concept written since the page read it is reported and left alone.
import { $, button, cell, el, show } from "./dom.js";
import { loadList } from "./list.js";
import { api } from "./session.js";
import { state } from "./state.js";
import { fail, say } from "./status.js";

const PAGE = 100;
const FROM = { model: "the model proposed it", traffic: "the store's traffic taught it",
  operator: "an operator added it" };
const HOW = { loaded: "the agent loaded the concept after the customer's words",
  sighting: "extraction saw the concept in the turn", model: "proposed from the concept's own text",
  operator: "added on the concept's page, in its learned words" };
const SLUG = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const key = (row) => `${row.concept}\n${row.word}`;

function filters() {
  const query = new URLSearchParams({ limit: String(PAGE) });
  if ($("words-origin").value) query.set("origin", $("words-origin").value);
  const concept = $("words-concept").value.trim();
  if (concept) query.set("concept", concept);
  return query;
}

// The first page (`more` false) or the next one, with the filters on screen.
async function loadWords(more = false) {
  const concept = $("words-concept").value.trim();
  if (concept && !SLUG.test(concept)) {
    $("words-summary").textContent = "Type a concept's whole name (lowercase words joined by hyphens).";
    return false;
  }
  const query = filters();
  if (more && state.words.next) query.set("cursor", state.words.next);
  let page;
  try {
    page = await api("GET", `/words?${query}`);
  } catch (error) {
    fail("Could not load the learned words", error, () => loadWords(more));
    return false;
  }
  state.words.rows = more ? [...state.words.rows, ...page.words] : page.words;
  state.words.next = page.next;
  // A selection outlives a change of filter (words are chosen across concepts); a word shown again is
  // kept as now read, so that its removal is checked against the concept's version on screen.
  for (const row of page.words) if (state.words.selected.has(key(row))) state.words.selected.set(key(row), row);
  draw(page);
  return true;
}

function draw(page) {
  const body = $("words").tBodies[0];
  body.replaceChildren();
  for (const row of state.words.rows) {
    const line = body.insertRow();
    line.dataset.concept = row.concept;
    line.dataset.word = row.word;
    const pick = el("input", { type: "checkbox", "aria-label": `Select ${row.word} of ${row.concept}` });
    pick.checked = state.words.selected.has(key(row));
    pick.addEventListener("change", () => {
      if (pick.checked) state.words.selected.set(key(row), row);
      else state.words.selected.delete(key(row));
      counted();
    });
    cell(line, pick);
    cell(line, row.word);
    cell(line, el("span", { title: row.description || "" }, row.concept));
    cell(line, el("span", { title: HOW[row.origin] || row.origin }, FROM[row.source] || row.source));
    cell(line, row.source === "traffic" ? String(row.sessions) : "");
    cell(line, row.at);
  }
  $("words-summary").textContent = `${page.total} learned word${page.total === 1 ? "" : "s"} in ${page.concepts} `
    + `concept${page.concepts === 1 ? "" : "s"}, newest first.`;
  $("words-catching-up").hidden = !page.catching_up;
  $("words-catching-up").textContent = page.catching_up
    ? `${page.catching_up} changed concepts are still being read: ask again in a moment for their words.` : "";
  $("words-empty").hidden = state.words.rows.length > 0;
  $("words-more").hidden = !state.words.next;
  counted();
}

function counted() {
  const chosen = state.words.selected.size;
  $("words-remove").disabled = chosen === 0;
  $("words-remove").textContent = chosen ? `Remove ${chosen} selected` : "Remove selected";
}

// What became of each concept, in words: removed, or why not (nothing is half-done silently).
function outcome(answer) {
  const problems = [];
  for (const item of answer.concepts) {
    if (item.status === "changed") problems.push(`${item.concept} was changed since this page read it: nothing `
      + "was removed from it. Its words are shown again as they are now; select them again to remove them.");
    else if (item.status === "gone") problems.push(`${item.concept} was deleted meanwhile.`);
    else if (item.status === "unreadable") problems.push(`${item.concept} does not parse: open it and fix it first.`);
  }
  const concepts = answer.concepts.filter((item) => item.status === "removed").length;
  return { problems, said: `Removed ${answer.removed} word${answer.removed === 1 ? "" : "s"} from ${concepts} `
    + `concept${concepts === 1 ? "" : "s"}: they will not be learned again for them.` };
}

async function removeSelected() {
  const words = [...state.words.selected.values()].map((row) => ({ concept: row.concept, word: row.word,
    etag: row.etag }));
  if (!words.length) return;
  const concepts = new Set(words.map((w) => w.concept)).size;
  if (!confirm(`Remove ${words.length} learned word${words.length === 1 ? "" : "s"} from ${concepts} `
    + `concept${concepts === 1 ? "" : "s"}? They will never be learned again for them.`)) return;
  let answer;
  try {
    answer = await api("POST", "/words/remove", { body: { words } });
  } catch (error) {
    fail("Nothing was removed", error, removeSelected);
    return;
  }
  const { problems, said } = outcome(answer);
  state.words.selected.clear();
  await loadWords();
  const list = $("words-problems");
  list.replaceChildren(...problems.map((text) => el("li", { text })));
  list.hidden = problems.length === 0;
  say(said);
}

export async function showWords() {
  $("words-problems").hidden = true;
  if (!(await loadWords())) return;
  show("words-view");
  $("words-title").focus();
  say("");
}

export function wireWords() {
  $("show-words").addEventListener("click", showWords);
  $("words-origin").addEventListener("change", () => loadWords());
  let typing;
  $("words-concept").addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(loadWords, 300); });
  $("words-more").addEventListener("click", () => loadWords(true));
  $("words-remove").addEventListener("click", removeSelected);
  $("back-from-words").addEventListener("click", async () => { if (await loadList()) $("show-words").focus(); });
}
