// The `## Contradiction` section as the page reads and resolves it (src/conflict.mjs), edge cases
// included: run by tests/e2e/test_studio_browser_conflicts.py with `node --test`.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  BODY_MAX_BYTES, RESOLVED_CONFIDENCE, editBoth, keepRecord, readConflict, splitDocument, takeNewClaim,
} from "../src/conflict.mjs";

const FRONT = `---
name: prazo-reembolso-pix
description: Pix refunds are paid back within 2 business days.
type: fact
provenance: observed
confidence: 0.4
sources: ["sess_aa10", "sess_bb20"]
occurrences: 2
created_at: 2026-09-01T10:00:00Z
updated_at: 2026-09-20T17:30:00Z
---
`;
const RECORDED = "Refunds of purchases paid with Pix are sent back within\n2 business days after the return is approved.";

function doc(...sections) {
  return `${FRONT}\n${[RECORDED, ...sections].join("\n\n")}\n`;
}

const ONE = doc("## Contradiction", "Session sess_cc30 (2026-10-02): Pix refunds take 7 days.\n\n> Pix refunds take up to 7\n>\n> business days.");
const TWO = doc("## Contradiction",
  "Session sess_cc30 (2026-10-02): Pix refunds take 7 days.\n\n> Pix refunds take up to 7 business days.",
  "Session sess_dd40 (2026-10-05): Pix refunds: same day.\n\n> Pix refunds are paid the same day.");

test("a concept with no Contradiction section is not in conflict", () => {
  assert.equal(readConflict(doc()), null);
  assert.equal(readConflict(doc("## Related claims", "Session s1 (2026-10-01): also true.")), null);
  assert.equal(readConflict("no frontmatter at all"), null);
  assert.equal(readConflict(doc("### Contradiction", "text")), null); // another heading level is text
});

test("an entry is read as its session, date, description and quoted claim", () => {
  const conflict = readConflict(ONE);
  assert.equal(conflict.description, "Pix refunds are paid back within 2 business days.");
  assert.equal(conflict.recorded, RECORDED);
  assert.equal(conflict.confidence, "0.4");
  assert.deepEqual(conflict.entries, [{ session: "sess_cc30", date: "2026-10-02", description: "Pix refunds take 7 days.",
    claim: "Pix refunds take up to 7\n\nbusiness days.", tooLong: false, cut: false }]);
});

test("an entry whose quote was cut (or an old one written without) has its description and no claim", () => {
  const conflict = readConflict(doc("## Contradiction", "Session sess_bb20 (2026-09-20): Pix refunds take up to 7 business days after the\nreturned product reaches the warehouse."));
  const [entry] = conflict.entries;
  assert.equal(entry.description, "Pix refunds take up to 7 business days after the returned product reaches the warehouse.");
  assert.equal(entry.claim, null);
  assert.equal(entry.cut, true);
  const taken = takeNewClaim(doc("## Contradiction", "Session sess_bb20 (2026-09-20): Seven days."), 0);
  assert.match(taken.markdown, /\n---\n\nSeven days\.\n$/); // the description stands for the claim
});

test("an entry too long to append cannot be taken, and Edit both leaves it out", () => {
  const text = doc("## Contradiction", "Session sess_cc30 (2026-10-02): a contradicting claim too long to append.");
  const [entry] = readConflict(text).entries;
  assert.equal(entry.tooLong, true);
  assert.throws(() => takeNewClaim(text, 0));
  assert.equal(splitDocument(editBoth(text).markdown).body, `${RECORDED}\n`);
});

test("a quote cut mid-way, with a lazy line, and text that is no entry are all kept", () => {
  const conflict = readConflict(doc("## Contradiction", "An operator's note.",
    "Session sess_cc30 (2026-10-02): Seven days.\n\n> Pix refunds take up\nto 7 days"));
  assert.equal(conflict.entries[0].claim, "Pix refunds take up\nto 7 days");
  assert.deepEqual(conflict.other, ["An operator's note."]);
  const both = splitDocument(editBoth(doc("## Contradiction", "An operator's note.",
    "Session sess_cc30 (2026-10-02): Seven days.\n\n> Seven days.")).markdown).body;
  assert.equal(both, `${RECORDED}\n\nSeven days.\n\nAn operator's note.\n`);
});

test("Keep the record removes the section and sets provenance policy and the resolved confidence", () => {
  const kept = keepRecord(ONE);
  assert.equal(kept.markdown, FRONT.replace("provenance: observed", "provenance: policy")
    .replace("confidence: 0.4", `confidence: ${RESOLVED_CONFIDENCE}`) + `\n${RECORDED}\n`);
  assert.equal(readConflict(kept.markdown), null);
});

test("Take the new claim takes the chosen entry's claim and description", () => {
  const taken = takeNewClaim(TWO, 1);
  assert.match(taken.markdown, /^description: "Pix refunds: same day\."$/m); // a colon: quoted
  assert.equal(splitDocument(taken.markdown).body, "Pix refunds are paid the same day.\n");
  assert.equal(readConflict(taken.markdown), null);
  assert.match(takeNewClaim(TWO, 0).markdown, /^description: Pix refunds take 7 days\.$/m);
});

test("Related claims above the section stay where they are", () => {
  const text = doc("## Related claims", "Session s1 (2026-10-01): Also by TED.\n\n> Also by TED.",
    "## Contradiction", "Session sess_cc30 (2026-10-02): Seven days.\n\n> Seven days.");
  assert.equal(readConflict(text).recorded, RECORDED);
  assert.equal(splitDocument(keepRecord(text).markdown).body,
    `${RECORDED}\n\n## Related claims\n\nSession s1 (2026-10-01): Also by TED.\n\n> Also by TED.\n`);
  assert.equal(splitDocument(takeNewClaim(text, 0).markdown).body,
    "Seven days.\n\n## Related claims\n\nSession s1 (2026-10-01): Also by TED.\n\n> Also by TED.\n");
});

test("Edit both puts every claim in the body, the recorded one first", () => {
  assert.equal(splitDocument(editBoth(TWO).markdown).body,
    `${RECORDED}\n\nPix refunds take up to 7 business days.\n\nPix refunds are paid the same day.\n`);
});

test("a result over the body's 16 KB says it does not fit", () => {
  const long = "x".repeat(BODY_MAX_BYTES - 10);
  const text = `${FRONT}\n${long}\n\n## Contradiction\n\nSession s (2026-10-02): Seven days.\n\n> Pix refunds take up to 7 days.\n`;
  const both = editBoth(text);
  assert.equal(both.fits, false);
  assert.ok(both.bytes > BODY_MAX_BYTES);
  assert.equal(keepRecord(text).fits, true);
  assert.equal(takeNewClaim(text, 0).fits, true);
});

test("a description YAML would misread is quoted; an absent line is added in the format's order", () => {
  const text = `---\nname: a\ndescription: A.\ntype: fact\n---\n\nA.\n\n## Contradiction\n\nSession s (2026-10-02): yes\n\n> B.\n`;
  const taken = takeNewClaim(text, 0).markdown;
  assert.match(taken, /^name: a\ndescription: "yes"\ntype: fact\nprovenance: policy\nconfidence: 0.95\n---\n\nB\.\n$/m);
});
