// The open concept's learned words (its frontmatter's learned_words lines), listed readably beside the
// editor. Each has a Remove button that deletes its line in the editor: after Save, the studio records
// the word in removed_words and the engine never learns it again for this concept. An operator adds a
// word customers use for it (`origin: operator`) the same way: a line in the editor, kept by Save.
import { $, button } from "./dom.js";
import { say } from "./status.js";

const ENTRY = /^  - \{word: "((?:[^"\\]|\\.)*)", origin: (\w+), sessions: (\d+), at: (\d{4}-\d{2}-\d{2})\}$/;
const ORIGINS = { loaded: "the agent loaded it after the customer's words", sighting: "extraction saw it in the turn",
  model: "proposed by the model", operator: "added by an operator" };
const TRAFFIC = new Set(["loaded", "sighting"]);
// knowledge/format/learned_words.py's limits and word rule (the save checks them again).
const LEARNED_MAX = 24;
const WORD_MAX = 40;
const PHRASE_WORDS = 3;
const WORD = /^\p{L}+(?:['-]\p{L}+)*$/u;

// The frontmatter's lines and its closing "---" (-1 when the text has no frontmatter).
function front(text) {
  const lines = text.split("\n");
  if (lines[0] !== "---") return { lines, end: -1 };
  const end = lines.indexOf("---", 1);
  return { lines, end };
}

// [start, end) of a top-level field's lines (its own line and the indented ones under it), or null.
function field(lines, end, name) {
  const start = lines.findIndex((line, i) => i > 0 && i < end && (line === `${name}:` || line.startsWith(`${name}: `)
    || line.startsWith(`${name}:\t`)));
  if (start < 0) return null;
  let stop = start + 1;
  while (stop < end && !/^[A-Za-z_]/.test(lines[stop])) stop++;
  return [start, stop];
}

// How two words are compared (format/learned_words.py's fold_word): lowercase, without accents, single spaces.
export function fold(word) {
  return word.toLowerCase().normalize("NFKD").replace(/\p{M}/gu, "").split(/\s+/).filter(Boolean).join(" ");
}

// The learned words of a document: [{word, origin, sessions, at, line}] (line: its index in text.split("\n")).
export function learnedWords(text) {
  const { lines, end } = front(text);
  const out = [];
  if (end < 0) return out;
  let inside = false;
  for (let i = 1; i < end; i++) {
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

// One YAML scalar of a removed_words list, as written (double- or single-quoted, or plain).
function scalar(item) {
  const text = item.trim();
  if (text.startsWith('"') && text.endsWith('"') && text.length > 1) return text.slice(1, -1).replace(/\\(.)/g, "$1");
  if (text.startsWith("'") && text.endsWith("'") && text.length > 1) return text.slice(1, -1).replace(/''/g, "'");
  return text;
}

const quoted = (word) => `"${word.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;

// The document's removed_words ([] when it has none), and the lines they are on.
function removedWords(lines, end) {
  const at = field(lines, end, "removed_words");
  if (!at) return { words: [], at: null };
  const head = lines[at[0]].slice("removed_words:".length).trim();
  if (head.startsWith("[")) {
    const inner = head.replace(/^\[/, "").replace(/\]\s*$/, "");
    const items = inner.match(/"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^,]+/g) || [];
    return { words: items.map(scalar).filter(Boolean), at, flow: true };
  }
  const words = lines.slice(at[0] + 1, at[1]).map((l) => /^\s*-\s+(.*)$/.exec(l)).filter(Boolean).map((m) => scalar(m[1]));
  return { words, at, flow: false };
}

// Why `word` cannot be a learned word (format/learned_words.py's word_problem, in plain words), or "".
export function wordProblem(word) {
  if (!word) return "Type the word or short phrase customers use.";
  if (word.length > WORD_MAX) return `A learned word is at most ${WORD_MAX} characters.`;
  const parts = word.split(" ");
  if (parts.length > PHRASE_WORDS) return `A learned word is at most ${PHRASE_WORDS} words: keep the phrase short.`;
  if (!parts.every((part) => WORD.test(part))) {
    return "Use letters only (a hyphen or an apostrophe inside a word is fine): no digits, signs or punctuation, "
      + "so no phone, e-mail or order number.";
  }
  return "";
}

// The operator's word, as stored: lowercase, single spaces.
export function tidy(typed) {
  return typed.normalize("NFC").trim().toLowerCase().split(/\s+/).filter(Boolean).join(" ");
}

// The document with `word` added as the operator's (`today`: YYYY-MM-DD) and taken out of removed_words:
// {text, unremoved} (unremoved: it was a removed word), or {problem} in plain words.
export function withWord(text, typed, today) {
  const word = tidy(typed);
  const problem = wordProblem(word);
  if (problem) return { problem };
  const { lines, end } = front(text);
  if (end < 0) return { problem: "The text has no frontmatter (the lines between two ---) to add the word to." };
  const learned = learnedWords(text);
  const same = learned.find((e) => fold(e.word) === fold(word));
  if (same) return { problem: `“${same.word}” is already a learned word of this concept.` };
  if (learned.length >= LEARNED_MAX) return { problem: `A concept holds at most ${LEARNED_MAX} learned words: remove one first.` };
  // Taken out of removed_words first (the two lists never share a word), then added, so the indexes hold.
  const removed = removedWords(lines, end);
  const unremoved = removed.words.some((w) => fold(w) === fold(word));
  if (unremoved) {
    const kept = removed.words.filter((w) => fold(w) !== fold(word));
    const replacement = kept.length ? [`removed_words: [${kept.map(quoted).join(", ")}]`] : [];
    lines.splice(removed.at[0], removed.at[1] - removed.at[0], ...replacement);
  }
  const closing = lines.indexOf("---", 1);
  const entry = `  - {word: ${quoted(word)}, origin: operator, sessions: 0, at: ${today}}`;
  const at = field(lines, closing, "learned_words");
  if (at && lines[at[0]].trim() === "learned_words:") {
    let last = at[1];
    while (last > at[0] + 1 && !lines[last - 1].trim()) last--;  // after its last entry, not a blank line
    lines.splice(last, 0, entry);
  } else {
    if (at) lines.splice(at[0], at[1] - at[0]);  // `learned_words: []`, or a form the panel does not read
    const next = field(lines, lines.indexOf("---", 1), "removed_words");
    lines.splice(next ? next[0] : lines.indexOf("---", 1), 0, "learned_words:", entry);
  }
  return { text: lines.join("\n"), unremoved, word };
}

const today = () => new Date().toISOString().slice(0, 10);  // the day in UTC, as the engine dates its words

// What the panel edits: the editor's text now, and how to put an edit in it (unsaved).
const open = { text: "", replace: null };

function add(event) {
  event.preventDefault();
  const input = $("learned-word");
  const done = withWord(open.text, input.value, today());
  const problem = $("learned-problem");
  problem.textContent = done.problem || "";
  problem.hidden = !done.problem;
  input.setAttribute("aria-invalid", done.problem ? "true" : "false");
  if (done.problem) return;
  input.value = "";
  open.replace(done.text);
  say(`Added “${done.word}”${done.unremoved ? " and took it out of the removed words" : ""}: save to keep it.`);
}

// Lists the words of `text` in the panel; `replace(newText)` puts an edit in the editor (unsaved).
export function showLearned(text, replace) {
  const panel = $("learned-panel");
  if (!panel) return;
  open.text = text;
  open.replace = replace;
  const form = $("learned-add");
  if (form && !form.dataset.wired) {
    form.dataset.wired = "1";
    form.addEventListener("submit", add);
    $("learned-word").addEventListener("input", () => {
      $("learned-problem").hidden = true;
      $("learned-word").setAttribute("aria-invalid", "false");
    });
  }
  const words = learnedWords(text);
  panel.hidden = front(text).end < 0;
  $("learned-none").hidden = words.length > 0;
  const list = $("learned-list");
  list.hidden = words.length === 0;
  list.replaceChildren();
  for (const entry of words) {
    const item = document.createElement("li");
    const what = document.createElement("span");
    const sessions = TRAFFIC.has(entry.origin) ? `, ${entry.sessions} sessions` : "";
    what.textContent = `${entry.word} — ${ORIGINS[entry.origin] || entry.origin}${sessions}, ${entry.at}`;
    const remove = button("Remove", () => replace(withoutWord(text, entry.word)));
    remove.setAttribute("aria-label", `Remove the learned word ${entry.word}`);
    item.append(what, " ", remove);
    list.append(item);
  }
}
