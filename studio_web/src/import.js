// Importing from the studio: choose files (a folder's .md concepts, one .md, or an FAQ .csv/.yaml),
// see the dry run (what would be created, changed, skipped, and each invalid row with its line and
// why), confirm, and watch the writes go a window at a time. The API (POST /import,
// knowledge.curation.studio_import) runs the same import as `knowledge import`.
import { plainWords } from "./api.js";
import { $, cell } from "./dom.js";
import { loadList } from "./list.js";
import { api } from "./session.js";
import { state } from "./state.js";
import { scope } from "./url.js";

const SUFFIXES = [".md", ".csv", ".yaml", ".yml"];
// What one request may carry (the API's bounds: studio_import.REQUEST_MAX_BYTES and FILES_MAX).
const REQUEST_MAX_BYTES = 4 * 1024 * 1024;
const FILES_MAX = 1000;
const BODY_MAX_BYTES = 5.5 * 1024 * 1024; // the request as sent, under Lambda's 6 MB
const WINDOW = 100; // concepts written per request: progress moves between two
const WORDS = {
  dry: { created: "would create", changed: "would change", unchanged: "unchanged", skipped: "would skip", refused: "invalid" },
  done: { created: "created", changed: "changed", unchanged: "unchanged", skipped: "skipped", refused: "invalid" },
};

export function wireImport() {
  $("import-open").addEventListener("click", openImport);
  $("import-files").addEventListener("change", (event) => choose(event.target.files));
  $("import-folder").addEventListener("change", (event) => choose(event.target.files));
  $("import-replace").addEventListener("change", () => { if (state.import.chosen && !state.import.busy) dryRun(); });
  $("import-confirm").addEventListener("click", confirmImport);
  $("import-close").addEventListener("click", () => { if (!state.import.busy) $("import-dialog").close(); });
  // Escape closes the dialog, except while writing (what is under way is shown to its end).
  $("import-dialog").addEventListener("cancel", (event) => { if (state.import.busy) event.preventDefault(); });
}

function openImport() {
  state.import.chosen = null;
  for (const id of ["import-files", "import-folder"]) $(id).value = "";
  $("import-replace").checked = false;
  $("import-agent").textContent = `${scope.tenant} / ${scope.agent}`;
  showResult(null);
  $("import-dialog").showModal();
  $("import-files").focus();
}

function tell(text, alarm = false) {
  $("import-message").textContent = text;
  $("import-message").className = alarm ? "problem" : "";
}

function showResult(report, { dry = true, heading = "" } = {}) {
  $("import-result").hidden = !report;
  $("import-confirm").hidden = true;
  $("import-progress").hidden = true;
  tell("");
  if (!report) return;
  $("import-heading").textContent = heading;
  const words = dry ? WORDS.dry : WORDS.done;
  const counts = ["created", "changed", "skipped", "unchanged", "refused"].filter((k) => report[k])
    .map((k) => `${words[k]} ${report[k]}`);
  const ignored = report.ignored.length ? `; ignored ${report.ignored.join(", ")} (neither .md, .csv, .yaml nor .yml)` : "";
  $("import-summary").textContent = (counts.join(", ") || "nothing") + ignored + ".";
  const body = $("import-items").tBodies[0];
  body.replaceChildren();
  // The invalid ones first: each with its file, its line and why; nothing of them is written.
  const order = { refused: 0, skipped: 1, changed: 2, created: 3, unchanged: 4 };
  const items = [...report.items].sort((a, b) => order[a.outcome] - order[b.outcome]);
  for (const item of items) {
    const row = body.insertRow();
    row.dataset.outcome = item.outcome;
    cell(row, words[item.outcome]);
    cell(row, item.name || "—");
    cell(row, item.line ? `${item.source}, line ${item.line}` : item.source);
    cell(row, item.reason || "");
  }
}

async function choose(list) {
  if (state.import.busy) return;
  const files = [...list];
  const taken = files.filter((f) => SUFFIXES.some((s) => f.name.toLowerCase().endsWith(s)));
  const size = taken.reduce((sum, f) => sum + f.size, 0);
  state.import.chosen = null;
  showResult(null);
  if (!taken.length) {
    tell("None of these files can be imported: choose .md concept files, or an FAQ as .csv, .yaml or .yml.", true);
    return;
  }
  if (taken.length > FILES_MAX || size > REQUEST_MAX_BYTES) {
    tell(`These are ${taken.length} files and ${(size / 1048576).toFixed(1)} MB: the studio imports at most `
      + `${FILES_MAX} files and ${REQUEST_MAX_BYTES / 1048576} MB at a time. Choose fewer files, or import them all `
      + `with "knowledge import --agent ${scope.agent} --tenant ${scope.tenant} PATH" (or ImportFunction).`, true);
    return;
  }
  const read = await Promise.all(taken.map(async (f) => ({ name: f.name, text: await f.text() })));
  // What is sent is JSON, which escapes quotes, backslashes and control characters: a Lambda request
  // holds at most 6 MB, so the request itself is measured too.
  const sent = new TextEncoder().encode(JSON.stringify({ files: read })).length;
  if (sent > BODY_MAX_BYTES) {
    tell(`These files make a request of ${(sent / 1048576).toFixed(1)} MB once sent: the studio sends at most `
      + `${(BODY_MAX_BYTES / 1048576).toFixed(1)} MB at a time. Choose fewer files, or import them all with `
      + `"knowledge import --agent ${scope.agent} --tenant ${scope.tenant} PATH" (or ImportFunction).`, true);
    return;
  }
  state.import.chosen = read;
  await dryRun();
}

async function dryRun() {
  tell("Checking what the import would do…");
  let report;
  try {
    report = await api("POST", "/import", { body: { files: state.import.chosen, dry_run: true, replace: $("import-replace").checked } });
  } catch (error) {
    showResult(null);
    tell(`Nothing can be imported: ${plainWords(error)}`, true);
    return;
  }
  showResult(report, { heading: "Dry run: nothing is written yet" });
  const writes = report.created + report.changed;
  $("import-confirm").hidden = !writes;
  $("import-confirm").textContent = `Import ${writes} concept${writes === 1 ? "" : "s"}`;
  if (!writes) tell("There is nothing to write: every concept is already stored, skipped or invalid.");
}

async function confirmImport() {
  state.import.busy = true;
  $("import-confirm").hidden = true;
  const replace = $("import-replace").checked;
  const progress = $("import-progress");
  const done = { created: 0, changed: 0, unchanged: 0, skipped: 0, refused: 0, ignored: [], items: [] };
  let start = 0;
  let total = null;
  progress.hidden = false;
  progress.value = 0;
  try {
    while (start !== null) {
      const report = await api("POST", "/import", { body: { files: state.import.chosen, dry_run: false, replace, start, count: WINDOW } });
      total = report.total;
      for (const key of ["created", "changed", "unchanged", "skipped", "refused"]) done[key] += report[key];
      done.items.push(...report.items);
      done.ignored = report.ignored;
      start = report.next;
      progress.max = total;
      progress.value = start === null ? total : start;
      tell(`Imported ${progress.value} of ${total}…`);
    }
  } catch (error) {
    state.import.busy = false;
    showResult(done, { dry: false, heading: `Stopped after ${done.items.length} of ${total ?? "the"} concepts` });
    tell(`The import stopped: ${plainWords(error)} What is written stays; choose the same files again to go on `
      + "(what is already written comes out unchanged).", true);
    await loadList();
    return;
  }
  state.import.busy = false;
  showResult(done, { dry: false, heading: "Imported" });
  tell(`Done: ${done.created} created, ${done.changed} changed.`);
  state.import.chosen = null;
  await loadList();
}
