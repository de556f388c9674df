// A concept's history: its versions a page at a time, what each was learned from, diffs between them, and restore.
import { $, button, cell, stamp } from "./dom.js";
import { diffEditor, mayDiscard, openConcept } from "./editor.js";
import { api } from "./session.js";
import { state } from "./state.js";
import { fail, say } from "./status.js";

// The open concept's path in the API (state.editor: the concept in the editor).
function conceptPath() {
  return `/concepts/${encodeURIComponent(state.editor.current.name)}`;
}

// "Learned from session X", and on demand the quote, read from the archived turn now (the API
// redacts it); once the archive has expired or been purged, the link says so.
function evidenceCell(row, version) {
  const td = cell(row, "");
  if (!version.evidence) return;
  const learned = document.createElement("span");
  learned.className = "learned";
  learned.textContent = `learned from session ${version.evidence.session_id}`;
  const quote = document.createElement("blockquote");
  quote.className = "excerpt";
  quote.hidden = true;
  const show = button("Show quote", async () => {
    show.disabled = true;
    try {
      const path = `${conceptPath()}/versions/${encodeURIComponent(version.version_id)}/evidence`;
      const evidence = await api("GET", path);
      if (evidence.status === "available") {
        quote.textContent = evidence.excerpt;
        quote.classList.remove("expired");
      } else {
        quote.textContent = "expired: the conversation it was learned from is no longer archived";
        quote.classList.add("expired");
      }
      quote.hidden = false;
      show.remove();
    } catch (error) {
      show.disabled = false;
      fail("Could not read the quote", error, () => show.click());
    }
  });
  show.className = "show-quote";
  td.append(learned, " ", show, quote);
}

function describe(version) {
  return `${stamp(version.time, true)} by ${version.actor || "unknown"} (${version.reason || "no reason"})`;
}

function showDiff(label, before, after) {
  if (state.versions.diff) state.versions.diff.destroy();
  state.versions.diff = diffEditor($("diff"), label, before, after);
  $("diff-label").textContent = label;
  $("diff-same").hidden = before !== after;
  $("diff-panel").hidden = false;
  $("diff-panel").scrollIntoView({ block: "nearest" });
}

// A version's text, read once: a version never changes after it is written, so Changes, View and
// Against current ask the service only for a text not read yet.
function textKey(version) {
  return `${state.editor.current.name}\n${version.version_id}`;
}

async function readVersion(version) {
  const key = textKey(version);
  if (!state.versions.texts.has(key)) {
    const path = `${conceptPath()}/versions/${encodeURIComponent(version.version_id)}`;
    state.versions.texts.set(key, (await api("GET", path)).markdown);
  }
  return state.versions.texts.get(key);
}

// Both texts of a diff in one request when neither was read yet (one round trip, one container).
async function readPair(older, newer) {
  const { texts } = state.versions;
  if (!texts.has(textKey(older)) && !texts.has(textKey(newer))) {
    const path = `${conceptPath()}/versions/${encodeURIComponent(newer.version_id)}/against/${encodeURIComponent(older.version_id)}`;
    const pair = await api("GET", path);
    texts.set(textKey(newer), pair.version.markdown);
    texts.set(textKey(older), pair.against.markdown);
  }
  return Promise.all([readVersion(older), readVersion(newer)]);
}

async function compare(label, older, newer) {
  try {
    const [before, after] = older ? await readPair(older, newer) : ["", await readVersion(newer)];
    showDiff(label, before, after);
    say("");
  } catch (error) {
    fail("Could not compare the versions", error, () => compare(label, older, newer));
  }
}

// History comes a page at a time (a concept confirmed thousands of times still opens at once):
// "Older versions" asks for the next page. Versions older than the bucket's lifecycle rule keeps
// are gone, and the panel says which are kept.
const VERSIONS_PAGE = 50;

async function versionPage(cursor) {
  const query = new URLSearchParams({ limit: String(VERSIONS_PAGE) });
  if (cursor) query.set("cursor", cursor);
  return api("GET", `${conceptPath()}/versions?${query}`);
}

export async function showHistory() {
  const asked = state.editor.current.name;
  if (state.versions.loading === asked) return;  // a second click while the first page is on its way asks nothing more
  state.versions.loading = asked;
  say("Loading the history…");
  let page;
  try {
    page = await versionPage(null);
  } catch (error) {
    fail("Could not load the history", error, showHistory);
    return;
  } finally {
    if (state.versions.loading === asked) state.versions.loading = null;
  }
  if (state.editor.current.name !== asked) return;  // another concept was opened meanwhile
  say("");
  state.versions.shown = [];
  // Kept while the same concept's history is shown again; another concept's texts are let go.
  for (const key of state.versions.texts.keys()) if (!key.startsWith(`${asked}\n`)) state.versions.texts.delete(key);
  $("versions").tBodies[0].replaceChildren();
  addVersions(page);
  const kept = page.kept;
  $("history-kept").textContent = kept
    ? `Older versions are removed by the storage's lifecycle rule: it keeps the newest ${kept.newest} versions and every version of the last ${kept.days} days.`
    : "";
  $("history-panel").hidden = false;
}

export async function olderVersions() {
  const asked = document.activeElement === $("older-versions");
  const before = state.versions.shown.length;
  try {
    addVersions(await versionPage(state.versions.next));
  } catch (error) {
    fail("Could not load older versions", error, olderVersions);
    return false;
  }
  say("");
  const first = $("versions").tBodies[0].rows[before];
  if (asked && first) first.querySelector("button").focus();  // the first of the older rows
  return true;
}

// The version before `version` among those shown, asking for the next page when it is on it.
async function predecessor(version) {
  for (;;) {
    const found = state.versions.shown.slice(state.versions.shown.indexOf(version) + 1).find((v) => !v.deleted);
    if (found || !state.versions.next) return found || null;
    if (!(await olderVersions())) throw new Error("older versions unavailable");
  }
}

function addVersions(page) {
  state.versions.shown = state.versions.shown.concat(page.versions);
  state.versions.next = page.next;
  $("older-versions").hidden = !state.versions.next;
  const body = $("versions").tBodies[0];
  const latest = state.versions.shown.find((v) => v.latest && !v.deleted);
  for (const version of page.versions) {
    const row = body.insertRow();
    row.dataset.versionId = version.version_id;
    cell(row, stamp(version.time, true));
    cell(row, version.actor || "");
    cell(row, version.reason || "");
    cell(row, version.deleted ? "deleted" : `${version.size} B`);
    evidenceCell(row, version);
    const actions = cell(row, "");
    if (!version.deleted) {
      actions.append(button("Changes", async () => {
        let before;
        try {
          before = await predecessor(version);
        } catch {
          return;  // said on screen by olderVersions
        }
        await compare(before
          ? `What the version of ${describe(version)} changed against the one before, of ${describe(before)}`
          : `The first version, of ${describe(version)}: all of it new`, before, version);
      }));
      if (latest && latest !== version) {
        actions.append(button("Against current", () => compare(
          `The current version, of ${describe(latest)}, against the version of ${describe(version)}`, version, latest)));
      }
      const view = async () => {
        try {
          $("version-preview").textContent = await readVersion(version);
          $("version-preview").hidden = false;
          say("");
        } catch (error) {
          fail("Could not read that version", error, view);
        }
      };
      actions.append(button("View", view));
      if (!version.latest) {
        const restore = async () => {
          if (!mayDiscard("Restoring an old version")) return;
          try {
            await api("POST", `${conceptPath()}/versions/${encodeURIComponent(version.version_id)}/restore`,
              { etag: state.editor.current.etag });
            await openConcept(state.editor.current.name);
            say("Restored as a new version.");
          } catch (error) {
            if (error.status === 412) fail("Not restored: someone saved a newer version since you opened it", "reopen the concept to see it, then restore.", null);
            else fail("Not restored", error, restore);
          }
        };
        actions.append(button("Restore", restore));
      }
    }
  }
}
