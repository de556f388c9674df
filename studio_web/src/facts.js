// The Facts page: proposals about customers waiting for a decision, stale ones, recent decisions,
// and a customer's memory cell. All state comes from the Facts API; nothing is kept but the
// sign-in token (shared with the Knowledge page in this tab). It stands on the pieces the Knowledge
// page does: dom.js, status.js, session.js (sign-in and the API call), url.js and state.js.

import { ApiError, plainWords } from "./api.js";
import { $, button, el, show, stamp } from "./dom.js";
import { api, beginSignIn, finishSignIn, loadConfig, signIn, token, useSignIn } from "./session.js";
import { register, state } from "./state.js";
import { fail, say, tryAgain } from "./status.js";
import { params, scope } from "./url.js";

const PAGE = 20;
const PAGE_MAX = 100;  // the most one request of the API answers
const LISTS = ["pending", "stale", "recent"];

// The Facts API of this tenant's agent (session.js: the agent's API, signed in).
function factsApi(method, path, body) {
  return api(method, `/facts${path}`, { body });
}

function proposalPath(p, action) {
  return `/proposals/${encodeURIComponent(p.customer_id)}/${encodeURIComponent(p.id)}/${action}`;
}

// ------------------------------------------------------------------ a proposal's card

const ROLES = { user: "Customer", assistant: "Agent", system: "System", tool: "Tool" };

function evidence(p) {
  const box = el("div", { class: "evidence" }, el("h4", { text: "Evidence from the conversation" }));
  for (const item of p.evidence || []) {
    if (item.status === "available") {
      const quote = el("blockquote", { class: "excerpt" });
      quote.append(el("span", { class: "who", text: `${ROLES[item.role] || item.role}: ` }), item.excerpt);
      box.append(quote);
    } else {
      box.append(el("blockquote", { class: "excerpt expired", text: "This message has expired from the session archive." }));
    }
  }
  if (!(p.evidence || []).length) box.append(el("p", { text: "No message is linked." }));
  return box;
}

function details(p) {
  const confidence = p.confidence == null ? "not given" : `${Math.round(p.confidence * 100)}%`;
  const list = el("dl", { class: "meta" });
  for (const [term, value] of [["Confidence", confidence], ["Scope", p.scope], ["Session", p.session_id],
    ["Proposed", stamp(p.proposed_at)]]) {
    list.append(el("div", {}, el("dt", { text: term }), el("dd", { text: value })));
  }
  return list;
}

function card(p, list) {
  const titleId = `${list}-${p.id}-title`;
  const article = el("article", { "aria-labelledby": titleId });
  const title = el("h3", { id: titleId });
  title.append(el("span", { class: "fact-name", text: p.name }));
  if (list === "pending") {
    title.append(": ", el("span", { class: "fact-value", text: p.value }));
    article.append(title, details(p), evidence(p));
    if (p.status === "approving") {
      article.append(el("p", { class: "note", text: "An approval of this was interrupted before it finished: approve again to finish it." }));
    }
  } else {
    const values = el("p", { class: "values" });
    values.append("Proposed: ", el("del", { class: "fact-value", text: p.value }), " — now in memory: ");
    if (p.current_deleted || !p.current) values.append(el("em", { text: "removed" }));
    else values.append(el("strong", { class: "current-value", text: p.current.value }), ` (set by ${originWords(p.current.origin)})`);
    article.append(title, values, details(p), evidence(p));
  }
  const actions = el("div", { class: "actions" });
  if (list === "pending") {
    actions.append(
      button("Approve & save to memory", () => approve(p, article), "approve"),
      button("Reject", () => askReason(p, article), "reject"),
      button("Dismiss — will not be proposed again", () => dismiss(p, article), "dismiss"));
  } else {
    actions.append(button("Dismiss — will not be proposed again", () => dismiss(p, article), "dismiss"));
  }
  actions.append(button("Open this customer's memory", () => openMemory(p.customer_id), "link"));
  for (const b of actions.querySelectorAll("button")) b.setAttribute("aria-describedby", titleId);
  article.append(actions);
  if (list === "pending") article.append(reasonForm(p, article));
  return el("li", { class: "card", "data-id": p.id }, article);
}

function originWords(origin) {
  if (origin === "operator") return "an operator";
  if (origin === "engine") return "the agent";
  if (origin.startsWith("distilled:")) return `an approval (session ${origin.slice(10)})`;
  return origin;
}

function reasonForm(p, article) {
  const form = el("form", { class: "reason", hidden: "" });
  const input = el("input", { maxlength: "500", autocomplete: "off", class: "reason-text" });
  const label = el("label", {}, "Reason (optional, shown with the decision) ", input);
  form.append(label, el("button", { type: "submit", text: "Confirm rejection" }),
    button("Cancel", () => { form.hidden = true; article.querySelector("button.reject").focus(); }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    reject(p, article, input.value.trim());
  });
  form.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    form.hidden = true;
    article.querySelector("button.reject").focus();
  });
  return form;
}

function askReason(p, article) {
  const form = article.querySelector("form.reason");
  form.hidden = false;
  form.querySelector("input").focus();
}

function busy(article, on) {
  for (const b of article.querySelectorAll("button")) b.disabled = on;
}

// After a card leaves its list, focus goes to the card now in its place (or the list's heading),
// once the list is drawn again: the next decision is one key away.
function cardIndex(article) {
  const item = article.closest("li");
  return [...item.parentElement.children].indexOf(item);
}

function focusAt(list, index) {
  const cards = $(`${list}-list`).children;
  const target = cards.length ? cards[Math.min(index, cards.length - 1)].querySelector("button") : $(`${list}-title`);
  target.focus();
}

async function decide(p, article, action, body, done) {
  const list = p.status === "stale" ? "stale" : "pending";
  const index = cardIndex(article);
  busy(article, true);
  try {
    await factsApi("POST", proposalPath(p, action), body);
  } catch (error) {
    busy(article, false);
    if (error instanceof ApiError && error.code === "fact_moved") {
      say(`Nothing was saved: ${p.name} changed for ${p.scope} since it was proposed. The proposal moved to Stale, with both values.`);
      if (await refresh(["stale", list], false, list)) focusAt(list, index);
      return;
    }
    if (error instanceof ApiError && (error.code === "not_pending" || error.code === "conflict")) {
      say(`${p.name}: ${plainWords(error)} The lists were reloaded.`);
      await refresh(LISTS);
      return;
    }
    fail(`Could not ${action} ${p.name}`, error, () => decide(p, article, action, body, done));
    return;
  }
  say(done);
  if (await refresh(["recent", list], false, list)) focusAt(list, index);
}

function approve(p, article) {
  return decide(p, article, "approve", undefined, `Saved to memory: ${p.name} = “${p.value}” for ${p.scope}.`);
}

function reject(p, article, reason) {
  return decide(p, article, "reject", { reason: reason || null },
    `Rejected ${p.name} = “${p.value}”${reason ? ` (${reason})` : ""}: it will not be proposed again.`);
}

function dismiss(p, article) {
  return decide(p, article, "dismiss", undefined, `Dismissed ${p.name} = “${p.value}”: it will not be proposed again.`);
}

// ------------------------------------------------------------------ the lists

function renderList(list, counts) {
  $(`${list}-count`).textContent = `(${counts[list]})`;
  $(`${list}-empty`).hidden = state.facts.shown[list].length > 0;
  $(`${list}-more`).hidden = !state.facts.next[list];
  if (list === "recent") {
    const body = $("recent").tBodies[0];
    body.replaceChildren();
    for (const p of state.facts.shown.recent) {
      const row = body.insertRow();
      const decision = { approved: "Approved, saved to memory", rejected: "Rejected", dismissed: "Dismissed",
        expired: "Expired unanswered" }[p.status] || p.status;
      for (const text of [p.name, p.value, p.scope, decision, p.resolved_by || "", stamp(p.resolved_at),
        p.reason || ""]) row.insertCell().textContent = text;
    }
    $("recent").hidden = state.facts.shown.recent.length === 0;
    return;
  }
  $(`${list}-list`).replaceChildren(...state.facts.shown[list].map((p) => card(p, list)));
}

async function fetchPage(list, cursor = null, limit = PAGE) {
  const query = new URLSearchParams({ state: list, limit: String(limit) });
  if (cursor) query.set("cursor", cursor);
  return factsApi("GET", `/proposals?${query}`);
}

// A list's first `keep` rows again, in as many requests as the API's page allows: a list the
// operator has read far into stays that long when it is drawn again (its place is kept).
async function fetchFirst(list, keep) {
  let page = await fetchPage(list, null, Math.min(PAGE_MAX, keep));
  const rows = page.proposals.slice();
  while (rows.length < keep && page.next) {
    page = await fetchPage(list, page.next, Math.min(PAGE_MAX, keep - rows.length));
    rows.push(...page.proposals);
  }
  return { ...page, proposals: rows };
}

function apply(list, page, more = false) {
  state.facts.shown[list] = more ? state.facts.shown[list].concat(page.proposals) : page.proposals;
  state.facts.next[list] = page.next;
  renderList(list, page.counts);
}

// Every list asked for is fetched before any is drawn again, so the page never changes under
// the operator's hands halfway through. Each keeps as many rows as it showed (`decided`: the list a
// card just left, one fewer), never fewer than a page.
async function refresh(lists, announce = false, decided = null) {
  try {
    const pages = [];
    for (const list of lists) {
      const keep = Math.max(PAGE, state.facts.shown[list].length - (list === decided ? 1 : 0));
      pages.push([list, await fetchFirst(list, keep)]);
    }
    for (const [list, page] of pages) apply(list, page);
    const counts = pages[pages.length - 1][1].counts;
    for (const list of LISTS) $(`${list}-count`).textContent = `(${counts[list]})`;
    if (announce) say(`${counts.pending} pending, ${counts.stale} stale.`);
    return true;
  } catch (error) {
    if (error instanceof ApiError && error.code === "unknown_agent") {
      unknownAgent();
      return false;
    }
    fail("Could not load the proposals", error, () => refresh(lists, announce, decided));
    return false;
  }
}

// A mistyped ?agent=: said as such (the API's rule, the Knowledge studio's), never as an empty queue.
function unknownAgent() {
  $("unknown-agent-text").textContent = `There is no agent “${scope.agent}” in tenant ${scope.tenant}: it has `
    + "neither a knowledge.yaml nor any concept.";
  $("unknown-agent-query").textContent = `?agent=${scope.agent}`;
  say("");
  show("unknown-agent");
  $("unknown-agent-title").focus();
}

async function more(list) {
  try {
    const before = state.facts.shown[list].length;
    apply(list, await fetchPage(list, state.facts.next[list]), true);
    const first = list === "recent" ? $("recent").tBodies[0].rows[before] : $(`${list}-list`).children[before];
    if (first) (first.querySelector("button") || $(`${list}-title`)).focus();
  } catch (error) {
    fail("Could not load more", error, () => more(list));
  }
}

async function showProposals(focus = true) {
  state.facts.customer = null;
  show("proposals-view");
  if (await refresh(LISTS, true) && focus) $("pending-title").focus();
}

// ------------------------------------------------------------------ a customer's memory

function urlFor(customerId) {
  const here = new URLSearchParams(location.search);
  here.delete("customer");
  if (customerId) here.set("customer", customerId);
  return `${location.pathname}?${here}`;
}

function memoryPath(name) {
  const base = `/customers/${encodeURIComponent(state.facts.customer)}/memory`;
  return name ? `${base}/${encodeURIComponent(name)}` : base;
}

async function openMemory(customerId, push = true) {
  let cell = null, unreadable = null;
  try {
    cell = await factsApi("GET", `/customers/${encodeURIComponent(customerId)}/memory`);
  } catch (error) {
    // A cell that does not parse: say so, and offer the two repairs (docs/facts.md).
    if (error instanceof ApiError && error.status === 409 && error.code === "record_unreadable") unreadable = error;
    else {
      fail(`Could not open the memory of ${customerId}`, error, () => openMemory(customerId, push));
      return false;
    }
  }
  state.facts.customer = customerId;
  if (push && location.pathname + location.search !== urlFor(customerId)) history.pushState(null, "", urlFor(customerId));
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
    cell = await factsApi("POST", memoryPath(what), body);
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
    cell = await factsApi("DELETE", `${memoryPath(fact.name)}?revision=${fact.revision}`, { reason: reason || null });
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
    cell = await factsApi("POST", memoryPath("trim"));
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
    saved = await factsApi("PUT", `/customers/${encodeURIComponent(state.facts.customer)}/memory/${encodeURIComponent(name)}`,
      { value, revision, personal_data: confirmed });
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

// ------------------------------------------------------------------ start

// This page's sign-in: its own pending request and callback ("facts" beside the Knowledge page's); a
// return that did not sign in is said on the sign-in view.
useSignIn({ pendingKey: "facts-studio-sign-in", callbackPage: "facts" });
register({ signInFailed: (message) => { show("signin"); say(message); } });

async function start() {
  await loadConfig();
  $("problem-retry").addEventListener("click", tryAgain);
  $("signin-link").addEventListener("click", (event) => { event.preventDefault(); if (state.config.signIn) beginSignIn(); });
  if (await finishSignIn()) return;
  const knowledge = new URLSearchParams({ tenant: scope.tenant });
  if (scope.agent) knowledge.set("agent", scope.agent);
  $("to-knowledge").href = `knowledge?${knowledge}`;
  $("choose-agent").href = $("choose-another-agent").href = `knowledge?${new URLSearchParams({ tenant: scope.tenant })}`;
  $("scope").textContent = scope.agent ? `${scope.tenant} / ${scope.agent}` : scope.tenant;
  if (!token()) return signIn();
  if (!scope.agent) return show("no-agent");
  for (const list of LISTS) $(`${list}-more`).addEventListener("click", () => more(list));
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
  $("back-to-proposals").addEventListener("click", () => {
    history.pushState(null, "", urlFor(null));
    showProposals();
  });
  window.addEventListener("popstate", () => {
    const wanted = new URLSearchParams(location.search).get("customer");
    if (wanted) openMemory(wanted, false);
    else showProposals();
  });
  const wanted = params.get("customer");
  if (wanted) {
    if (await openMemory(wanted, false)) return;
  }
  await showProposals(false);
}

start();
