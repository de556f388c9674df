// The Facts page's memory view: one customer's memory cell — its facts, edited, added and removed
// (a removal kept with its reason), personal data said before it is saved, and the repairs of a cell
// that does not parse. The proposals' cards open it (facts-proposals.js).
import { ApiError, plainWords } from "./api.js";
import { $, button, el, show, stamp } from "./dom.js";
import { api } from "./session.js";
import { state } from "./state.js";
import { fail, say } from "./status.js";
import { scope } from "./url.js";

// Who set a fact, in words.
export function originWords(origin) {
  if (origin === "operator") return "an operator";
  if (origin === "engine") return "the agent";
  if (origin.startsWith("distilled:")) return `an approval (session ${origin.slice(10)})`;
  return origin;
}

// The page's address with this customer's memory open (null: the proposals).
export function customerUrl(customerId) {
  const here = new URLSearchParams(location.search);
  here.delete("customer");
  if (customerId) here.set("customer", customerId);
  return `${location.pathname}?${here}`;
}

function memoryPath(name) {
  const base = `/facts/customers/${encodeURIComponent(state.facts.customer)}/memory`;
  return name ? `${base}/${encodeURIComponent(name)}` : base;
}

export async function openMemory(customerId, push = true) {
  let cell = null, unreadable = null;
  try {
    cell = await api("GET", `/facts/customers/${encodeURIComponent(customerId)}/memory`);
  } catch (error) {
    // A cell that does not parse: say so, and offer the two repairs (docs/facts.md).
    if (error instanceof ApiError && error.status === 409 && error.code === "record_unreadable") unreadable = error;
    else {
      fail(`Could not open the memory of ${customerId}`, error, () => openMemory(customerId, push));
      return false;
    }
  }
  state.facts.customer = customerId;
  if (push && location.pathname + location.search !== customerUrl(customerId)) history.pushState(null, "", customerUrl(customerId));
  if (unreadable) renderUnreadable(customerId, unreadable);
  else renderMemory(cell);
  show("memory-view");
  $("memory-title").focus();
  return true;
}

function renderUnreadable(customerId, error) {
  $("memory-title").textContent = `Memory of ${scope.tenant}:${customerId}`;
  $("memory-repair-text").textContent = plainWords(error);
  $("memory-reset-confirm").value = "";
  $("memory-repair").hidden = false;
  $("memory-over-full").hidden = $("memory-facts").hidden = true;
}

async function repair(what, body, done) {
  let cell;
  try {
    cell = await api("POST", memoryPath(what), { body });
  } catch (error) {
    fail(what === "restore" ? "Could not restore this memory" : "Could not reset this memory", error,
      () => repair(what, body, done));
    return;
  }
  renderMemory(cell);
  $("memory-title").focus();
  say(done(cell));
}

// "Remove": the row asks why (optional, kept with the removal), Enter removes, Escape keeps the fact.
function askRemoval(row, fact) {
  const input = el("input", { maxlength: "500", autocomplete: "off", class: "remove-reason" });
  const label = el("label", {}, `Why remove ${fact.name}? (optional, kept with the removal) `, input);
  const cancel = () => {
    renderRowActions(row, fact);
    row.querySelector("button.remove").focus();
  };
  const form = el("form", { class: "remove-fact" }, label, el("button", { type: "submit", text: "Remove" }),
    button("Cancel", cancel));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    removeFact(fact, input.value.trim());
  });
  form.addEventListener("keydown", (event) => {
    if (event.key === "Escape") cancel();
  });
  row.cells[4].replaceChildren(form);
  input.focus();
}

async function removeFact(fact, reason = "") {
  let cell;
  try {
    cell = await api("DELETE", `${memoryPath(fact.name)}?revision=${fact.revision}`, { body: { reason: reason || null } });
  } catch (error) {
    if (error instanceof ApiError && error.status === 412) {
      const now = error.body && error.body.current;
      await openMemory(state.facts.customer, false);
      fail(`${fact.name} was not removed`,
        `someone changed this fact after you opened it: it now reads “${now ? now.value : "(removed)"}”.`);
      return;
    }
    fail(`Could not remove ${fact.name}`, error, () => removeFact(fact, reason));
    return;
  }
  renderMemory(cell);
  $("memory-title").focus();
  say(`Removed ${fact.name} from ${state.facts.customer}'s memory.`);
}

async function trimMemory() {
  let cell;
  try {
    cell = await api("POST", memoryPath("trim"));
  } catch (error) {
    fail("Could not remove the facts not served", error, trimMemory);
    return;
  }
  renderMemory(cell);
  $("memory-title").focus();
  say(`Removed ${cell.removed} facts that were not served; ${cell.stored} remain.`);
}

function renderRowActions(row, fact) {
  const edit = button("Edit", () => editRow(row, fact));
  edit.setAttribute("aria-label", `Edit ${fact.name}`);
  const remove = button("Remove", () => askRemoval(row, fact), "remove");
  remove.setAttribute("aria-label", `Remove ${fact.name}`);
  row.cells[4].replaceChildren(edit, " ", remove);
}

function renderRemovals(removals) {
  const body = $("memory-removed").tBodies[0];
  body.replaceChildren();
  for (const removal of removals) {
    const row = body.insertRow();
    for (const text of [removal.name, removal.by, stamp(removal.at), removal.reason || ""]) row.insertCell().textContent = text;
  }
  $("memory-removed-section").hidden = removals.length === 0;
}

function renderMemory(cell) {
  hidePersonalData();
  $("memory-repair").hidden = true;
  $("memory-facts").hidden = false;
  $("memory-over-full").hidden = !cell.problem;
  $("memory-over-full-text").textContent = cell.problem ? `${cell.problem}.` : "";
  $("memory-title").textContent = `Memory of ${cell.scope}`;
  const body = $("memory").tBodies[0];
  body.replaceChildren();
  for (const fact of cell.facts) {
    const row = body.insertRow();
    row.dataset.name = fact.name;
    row.insertCell().textContent = fact.name;
    row.insertCell().textContent = fact.value;
    row.insertCell().textContent = originWords(fact.origin);
    row.insertCell().textContent = stamp(fact.at);
    row.insertCell();
    renderRowActions(row, fact);
  }
  $("memory").hidden = cell.facts.length === 0;
  $("memory-empty").hidden = cell.facts.length > 0;
  renderRemovals(cell.removals || []);
}

function editRow(row, fact) {
  const cell = row.cells[1];
  const input = el("input", { maxlength: "500", autocomplete: "off", "aria-label": `New value of ${fact.name}` });
  input.value = fact.value;
  const form = el("form", { class: "inline-edit" }, input, el("button", { type: "submit", text: "Save" }),
    button("Cancel", () => openMemory(state.facts.customer, false)));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    saveFact(fact.name, input.value.trim(), fact.revision, [], input);
  });
  cell.replaceChildren(form);
  row.cells[4].replaceChildren();
  input.focus();
  input.select();
}

// Personal data in a value (the write path's redaction rules, checked by the API): said before anything
// is saved, with "Save it anyway" when the operator may confirm it (never for card data).
function hidePersonalData() {
  $("personal-data").hidden = true;
  state.facts.keepPersonalData = null;
}

function warnPersonalData(name, error, retry, input) {
  $("problem").hidden = true;
  $("personal-data-text").textContent = `${name}: ${plainWords(error)}`;
  const canConfirm = Boolean(error.body && error.body.can_confirm);
  $("personal-data-keep").hidden = !canConfirm;
  state.facts.keepPersonalData = canConfirm ? retry : null;
  $("personal-data-change").onclick = () => {
    hidePersonalData();
    input.focus();
  };
  $("personal-data").hidden = false;
  (canConfirm ? $("personal-data-keep") : $("personal-data-change")).focus();
}

async function saveFact(name, value, revision, confirmed = [], input = $("add-fact-value")) {
  let saved;
  try {
    saved = await api("PUT", `/facts/customers/${encodeURIComponent(state.facts.customer)}/memory/${encodeURIComponent(name)}`,
      { body: { value, revision, personal_data: confirmed } });
  } catch (error) {
    if (error instanceof ApiError && error.code === "personal_data") {
      const kinds = (error.body && error.body.kinds) || [];
      warnPersonalData(name, error, () => saveFact(name, value, revision, kinds, input), input);
      return false;
    }
    if (error instanceof ApiError && error.status === 412) {
      const now = error.body && error.body.current;
      await openMemory(state.facts.customer, false);
      fail(`Nothing was saved for ${name}`,
        `someone changed this fact after you opened it: it now reads “${now ? now.value : "(removed)"}”. Edit it again if it still needs your change.`);
      return;
    }
    fail(`Could not save ${name}`, error, () => saveFact(name, value, revision, confirmed, input));
    return false;
  }
  hidePersonalData();
  if (input === $("add-fact-value")) { $("add-fact-name").value = ""; input.value = ""; }
  await openMemory(state.facts.customer, false);
  say(`Saved ${saved.name} = “${saved.value}” to ${state.facts.customer}'s memory.`);
  return true;
}

// The memory view's controls: open a customer's, add a fact, "Save it anyway", and the repairs.
export function wireMemory() {
  $("open-memory").addEventListener("submit", (event) => {
    event.preventDefault();
    const id = $("open-memory-id").value.trim();
    if (id) openMemory(id);
  });
  $("add-fact").addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = $("add-fact-name").value.trim();
    await saveFact(name, $("add-fact-value").value.trim(), null);
  });
  $("personal-data-keep").addEventListener("click", () => {
    if (state.facts.keepPersonalData) state.facts.keepPersonalData();
  });
  $("memory-trim").addEventListener("click", trimMemory);
  $("memory-restore").addEventListener("click", () => repair("restore", undefined,
    (cell) => `Restored ${state.facts.customer}'s memory to its last readable version (${cell.stored} fact${cell.stored === 1 ? "" : "s"}).`));
  $("memory-reset").addEventListener("submit", (event) => {
    event.preventDefault();
    repair("reset", { confirm: $("memory-reset-confirm").value.trim() }, () => `${state.facts.customer}'s memory was reset to empty.`);
  });
}
