// A concept in conflict, read and resolved: the one place the page reads the `## Contradiction`
// section consolidation appends (docs/contract.md) and writes the three resolutions as text.
// Pure: no DOM, so node's test runner reads it as is (studio_web/test/conflict.test.mjs; hence .mjs).

// A resolution is the operator's word: provenance policy and the confidence a concept written by
// hand gets (HAND_DEFAULTS in knowledge/curation/documents.py; the browser test holds the two equal).
export const RESOLVED_PROVENANCE = "policy";
export const RESOLVED_CONFIDENCE = 0.95;
export const BODY_MAX_BYTES = 16 * 1024; // knowledge/format/concept.py BODY_MAX_BYTES
export const CONTRADICTION_CONFIDENCE = 0.4;

const SECTION = /^## (Related claims|Contradiction)[ \t]*$/;
const ANY_HEADING = /^## /;
// The head consolidation writes (claims._entries): "Session <id> (<date>): <description>".
const ENTRY = /^Session (\S+) \((\d{4}-\d{2}-\d{2})\): ([\s\S]*)$/;
// Its last fallback, when not even the description fitted in the body.
const TOO_LONG = /^an? [a-z]+ claim too long to append\.$/;
const FIELDS = ["name", "description", "type", "provenance", "confidence"];

export function bodyBytes(body) {
  return new TextEncoder().encode(body).length;
}

// The frontmatter (through its closing `---` line) and the body after the blank line; null when
// the text is no concept document.
export function splitDocument(markdown) {
  const match = /^---\n[\s\S]*?\n---\n/.exec(markdown);
  if (!match) return null;
  return { front: match[0], body: markdown.slice(match[0].length).replace(/^\n/, "") };
}

function sections(body) {
  // primary, related, contradiction and what follows it, each the lines of that part.
  const lines = body.split("\n");
  const parts = { primary: [], related: [], contradiction: [], after: [] };
  let into = "primary";
  for (const line of lines) {
    const heading = SECTION.exec(line);
    if (heading) into = heading[1] === "Contradiction" ? "contradiction" : "related";
    else if (into === "contradiction" && ANY_HEADING.test(line)) into = "after";
    else if (into === "related" && ANY_HEADING.test(line)) into = "after";
    parts[into].push(line);
  }
  const text = (part) => part.join("\n").trim();
  return { primary: text(parts.primary), related: text(parts.related), contradiction: parts.contradiction,
    after: text(parts.after), inConflict: parts.contradiction.length > 0 };
}

function paragraphs(lines) {
  const found = [];
  let current = [];
  for (const line of lines) {
    if (line.trim() === "") {
      if (current.length) found.push(current);
      current = [];
    } else current.push(line);
  }
  if (current.length) found.push(current);
  return found;
}

// A quote's lines start with `>`; a line without it inside the paragraph is a lazy continuation.
const quoted = (paragraph) => /^>( |$)/.test(paragraph[0]);
const unquote = (paragraph) => paragraph.map((line) => line.replace(/^> ?/, "")).join("\n");

// The entries of a `## Contradiction` section (its heading line first). An entry is its head
// paragraph and the quote under it; a quote that is missing (cut for room) leaves `claim` null.
function entries(lines) {
  const found = [];
  const other = [];
  for (const paragraph of paragraphs(lines.slice(1))) {
    const head = ENTRY.exec(paragraph.join("\n"));
    const last = found[found.length - 1];
    if (head) {
      const description = head[3].replace(/\s*\n\s*/g, " ").trim();
      found.push({ session: head[1], date: head[2], description, claim: null, tooLong: TOO_LONG.test(description) });
    } else if (quoted(paragraph) && last && last.claim === null && !last.tooLong) {
      last.claim = unquote(paragraph).trim();
    } else if (quoted(paragraph) && last && last.claim !== null) {
      last.claim = `${last.claim}\n\n${unquote(paragraph).trim()}`;
    } else {
      other.push(paragraph.join("\n"));
    }
  }
  for (const entry of found) entry.cut = entry.claim === null;
  return { entries: found, other };
}

function field(front, key) {
  const match = new RegExp(`^${key}:[ \\t]*(.*)$`, "m").exec(front);
  if (!match) return null;
  const value = match[1].trim();
  if (value.startsWith('"')) {
    try { return JSON.parse(value); } catch { return value; }
  }
  if (value.startsWith("'")) return value.slice(1, -1).replace(/''/g, "'");
  return value;
}

// What the editor explains: null when the text has no `## Contradiction` section.
export function readConflict(markdown) {
  const doc = splitDocument(markdown);
  if (!doc) return null;
  const parts = sections(doc.body);
  if (!parts.inConflict) return null;
  const { entries: found, other } = entries(parts.contradiction);
  return {
    description: field(doc.front, "description") || "",
    recorded: parts.primary,
    related: parts.related,
    confidence: field(doc.front, "confidence"),
    provenance: field(doc.front, "provenance"),
    entries: found,
    other,
  };
}

// YAML reads these as something other than text (knowledge/format/concept.py _YAML_WORDS).
const YAML_WORDS = new Set(["y", "n", "yes", "no", "true", "false", "on", "off", "null", "~",
  ".nan", ".inf", "-.inf", "+.inf", "nan", "inf"]);

function scalar(text) {
  const plain = /^[\p{L}][^\n"'\\#:`]*$/u.test(text) && !/\s$/.test(text) && !YAML_WORDS.has(text.toLowerCase());
  return plain ? text : JSON.stringify(text);
}

function setField(front, key, value) {
  const line = new RegExp(`^${key}:.*$`, "m");
  if (line.test(front)) return front.replace(line, () => `${key}: ${value}`);
  // Absent (a hand-written file): after the field that comes before it in the format's order.
  const lines = front.split("\n");
  for (let i = FIELDS.indexOf(key) - 1; i >= 0; i--) {
    const at = lines.findIndex((text) => text.startsWith(`${FIELDS[i]}:`));
    if (at >= 0) {
      lines.splice(at + 1, 0, `${key}: ${value}`);
      return lines.join("\n");
    }
  }
  return front;
}

function resolved(doc, primary, parts, description) {
  let front = setField(doc.front, "provenance", RESOLVED_PROVENANCE);
  front = setField(front, "confidence", String(RESOLVED_CONFIDENCE));
  if (description !== undefined) front = setField(front, "description", scalar(description));
  const body = [primary, parts.related, parts.after].filter(Boolean).join("\n\n") + "\n";
  const bytes = bodyBytes(body);
  return { markdown: `${front}\n${body}`, bytes, fits: bytes <= BODY_MAX_BYTES, body };
}

// Keep the record: the section goes, the recorded claim stays as it is.
export function keepRecord(markdown) {
  const doc = splitDocument(markdown);
  const parts = sections(doc.body);
  return resolved(doc, parts.primary, parts);
}

// Take the new claim: the entry's claim (its description when its quote was cut) becomes the
// body's claim and its description the concept's.
export function takeNewClaim(markdown, index) {
  const doc = splitDocument(markdown);
  const parts = sections(doc.body);
  const entry = entries(parts.contradiction).entries[index];
  if (!entry || entry.tooLong) throw new Error("no such claim to take");
  return resolved(doc, entry.claim || entry.description, parts, entry.description);
}

// Edit both: the section goes and every claim is in the body, the recorded one first, for the
// operator to merge by hand. Text in the section that is no entry is kept too.
export function editBoth(markdown) {
  const doc = splitDocument(markdown);
  const parts = sections(doc.body);
  const { entries: found, other } = entries(parts.contradiction);
  const claims = found.filter((entry) => !entry.tooLong).map((entry) => entry.claim || entry.description);
  return resolved(doc, [parts.primary, ...claims, ...other].filter(Boolean).join("\n\n"), parts);
}
