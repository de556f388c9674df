// The open concept's learned words (its frontmatter's learned_words lines), listed readably beside the
// editor, each with a Remove button that deletes its line in the editor: after Save, the studio records
// the word in removed_words and the engine never learns it again for this concept.
import { $, button } from "./dom.js";

const ENTRY = /^  - \{word: "((?:[^"\\]|\\.)*)", origin: (\w+), sessions: (\d+), at: (\d{4}-\d{2}-\d{2})\}$/;
const ORIGINS = { loaded: "the agent loaded it after the customer's words", sighting: "extraction saw it in the turn",
  model: "proposed by the model" };

// The learned words of a document: [{word, origin, sessions, at, line}] (line: its index in text.split("\n")).
export function learnedWords(text) {
  const lines = text.split("\n");
  const out = [];
  if (lines[0] !== "---") return out;
  let inside = false;
  for (let i = 1; i < lines.length && lines[i] !== "---"; i++) {
    if (/^[A-Za-z_]/.test(lines[i])) inside = lines[i].startsWith("learned_words:");
    else if (inside) {
      const found = ENTRY.exec(lines[i]);
      if (found) out.push({ word: found[1].replace(/\\(.)/g, "$1"), origin: found[2], sessions: Number(found[3]),
        at: found[4], line: i });
    }
  }
  return out;
}

// The document without the learned word's line (and without the field once it holds none).
export function withoutWord(text, word) {
  const entry = learnedWords(text).find((e) => e.word === word);
  if (!entry) return text;
  const lines = text.split("\n");
  lines.splice(entry.line, 1);
  if (learnedWords(lines.join("\n")).length === 0) {
    const header = lines.findIndex((l) => l.startsWith("learned_words:"));
    if (header > 0 && !/^  - /.test(lines[header + 1] || "")) lines.splice(header, 1);
  }
  return lines.join("\n");
}

// Lists the words of `text` in the panel; `replace(newText)` puts an edit in the editor (unsaved).
export function showLearned(text, replace) {
  const panel = $("learned-panel");
  if (!panel) return;
  const words = learnedWords(text);
  panel.hidden = words.length === 0;
  const list = $("learned-list");
  list.replaceChildren();
  for (const entry of words) {
    const item = document.createElement("li");
    const what = document.createElement("span");
    const sessions = entry.origin === "model" ? "" : `, ${entry.sessions} sessions`;
    what.textContent = `${entry.word} — ${ORIGINS[entry.origin] || entry.origin}${sessions}, ${entry.at}`;
    const remove = button("Remove", () => replace(withoutWord(text, entry.word)));
    remove.setAttribute("aria-label", `Remove the learned word ${entry.word}`);
    item.append(what, " ", remove);
    list.append(item);
  }
}
