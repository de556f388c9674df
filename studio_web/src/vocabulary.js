// The agent's vocabulary (vocabulary.yaml): what its customers write, read as the words the store
// writes. Read, edited as text and saved by ETag; a refusal names its line, which is selected in
// the text; a starter for Brazilian retail can be copied in, then edited like the rest.
import { request } from "./api.js";
import { $, show } from "./dom.js";
import { loadList } from "./list.js";
import { api, signIn, token } from "./session.js";
import { state } from "./state.js";
import { fail, say } from "./status.js";

function describe(file) {
  if (file.yaml === null) return "This agent has no vocabulary yet: retrieval reads its customers' words as written.";
  if (file.problem) return `Not in force — retrieval runs without it until it is fixed: ${file.problem.message}`;
  return `${file.readings} readings, ${file.phrases} phrases, in force: retrieval reads customers' messages through them.`;
}

function showErrors(message, line) {
  const list = $("vocabulary-errors");
  list.replaceChildren();
  const text = $("vocabulary-text");
  text.removeAttribute("aria-invalid");
  if (!message) return;
  const item = document.createElement("li");
  item.textContent = message;
  if (line) item.dataset.line = String(line);
  list.append(item);
  text.setAttribute("aria-invalid", "true");
  if (line) selectLine(text, line);
}

// Puts the cursor on a line of the text (from 1) and scrolls it into view.
function selectLine(text, line) {
  const lines = text.value.split("\n");
  const start = lines.slice(0, line - 1).reduce((at, part) => at + part.length + 1, 0);
  const end = start + (lines[line - 1] || "").length;
  text.focus();
  text.setSelectionRange(start, end);
  const height = text.scrollHeight / Math.max(lines.length, 1);
  text.scrollTop = Math.max(0, (line - 3) * height);
}

function shown(file) {
  state.vocabulary = { etag: file.etag, yaml: file.yaml };
  $("vocabulary-text").value = file.yaml || "";
  $("vocabulary-state").textContent = describe(file);
  showErrors(file.problem && file.problem.message, file.problem && file.problem.line);
}

export async function showVocabulary() {
  let file;
  try {
    file = await api("GET", "/vocabulary");
  } catch (error) {
    fail("Could not load the vocabulary", error, showVocabulary);
    return;
  }
  show("vocabulary-view");
  shown(file);
  say("");
  $("vocabulary-title").focus();
}

export async function saveVocabulary() {
  const text = $("vocabulary-text").value;
  try {
    const file = await api("PUT", "/vocabulary", { body: { yaml: text }, etag: state.vocabulary.etag || undefined });
    shown(file);
    say("Vocabulary saved: retrieval reads it from its next refresh.");
  } catch (error) {
    if (error.status === 422 && error.body && error.body.error) {
      showErrors(error.body.error.message, error.body.line);
      say("Not saved: the vocabulary has a problem (below).");
    } else if (error.status === 412) {
      fail("Not saved: someone saved the vocabulary since you opened it. Your text is still here; copy it, "
        + "then reopen the vocabulary", error);
    } else fail("Not saved", error, saveVocabulary);
  }
}

export async function useStarter() {
  const text = $("vocabulary-text");
  if (text.value.trim() && !confirm("Replace the text here with the retail starter? Nothing is saved until you save.")) return;
  try {
    const starter = await request(`${state.config.apiBase}/vocabulary-starters/varejo-br`,
      { method: "GET", token: token(), unauthorized: signIn });
    text.value = starter.yaml;
    showErrors(null);
    say("The retail starter is in the text: edit it for this store, then save.");
  } catch (error) {
    fail("Could not load the starter", error, useStarter);
  }
}

export function wireVocabulary() {
  $("show-vocabulary").addEventListener("click", showVocabulary);
  $("vocabulary-save").addEventListener("click", saveVocabulary);
  $("vocabulary-starter").addEventListener("click", useStarter);
  $("back-from-vocabulary").addEventListener("click", async () => {
    if ($("vocabulary-text").value !== (state.vocabulary.yaml || "") && !confirm("Leave the vocabulary without saving?")) return;
    if (await loadList()) $("show-vocabulary").focus();
  });
}
