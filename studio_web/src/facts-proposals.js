// The Facts page's proposals: the cards waiting for a decision (approve, reject with a reason,
// dismiss; several at once in facts-bulk.js), pending filtered by fact name and customer, the stale
// ones and the recent decisions (facts-undo.js), each list a page at a time and drawn again as a
// whole after a decision, focus kept on the next card — the card itself, never one of its buttons,
// so a stray Enter decides nothing. Decision keys on a card: a, r, d, x, j, k (never while typing).
import { ApiError, plainWords } from "./api.js";
import { $, button, el, show, stamp } from "./dom.js";
import { pruneSelection, selectBox, toggleSelected, wireBulk } from "./facts-bulk.js";
import { openMemory, originWords } from "./facts-memory.js";
import { renderRecent } from "./facts-undo.js";
import { api } from "./session.js";
import { state } from "./state.js";
import { fail, say } from "./status.js";
import { scope } from "./url.js";

const PAGE = 20;
const PAGE_MAX = 100;  // the most one request of the API answers
const LISTS = ["pending", "stale", "recent"];

function proposalPath(p, action) {
  return `/facts/proposals/${encodeURIComponent(p.customer_id)}/${encodeURIComponent(p.id)}/${action}`;
}

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
  // Focusable itself (not in the Tab order): where focus lands after a decision, and where the keys act.
  const article = el("article", { "aria-labelledby": titleId, tabindex: "-1" });
  const title = el("h3", { id: titleId });
  title.append(el("span", { class: "fact-name", text: p.name }));
  if (list === "pending") {
    title.append(": ", el("span", { class: "fact-value", text: p.value }));
    article.append(selectBox(p, titleId), title, details(p), evidence(p));
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
  const target = cards.length ? cards[Math.min(index, cards.length - 1)].querySelector("article") : $(`${list}-title`);
  target.focus();
}

async function decide(p, article, action, body, done) {
  const list = p.status === "stale" ? "stale" : "pending";
  const index = cardIndex(article);
  busy(article, true);
  try {
    await api("POST", proposalPath(p, action), { body });
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

function renderList(list, page) {
  $(`${list}-count`).textContent = `(${page.counts[list]})`;
  $(`${list}-empty`).hidden = state.facts.shown[list].length > 0;
  $(`${list}-more`).hidden = !state.facts.next[list];
  if (list === "recent") {
    renderRecent(() => refresh(LISTS));
    return;
  }
  $(`${list}-list`).replaceChildren(...state.facts.shown[list].map((p) => card(p, list)));
  if (list === "pending") {
    showGroups(page.groups);
    const { name, customer } = state.facts.filter;
    $("pending-filtered").textContent = name || customer
      ? `Showing ${page.total} of ${page.counts.pending}${name ? ` — ${name}` : ""}${customer ? ` — ${customer}` : ""}` : "";
    pruneSelection();
  }
}

// The fact names and customers pending, with how many each has: choosing one shows that group alone.
function showGroups(groups) {
  for (const [id, kind] of [["filter-name", "names"], ["filter-customer", "customers"]]) {
    const select = $(id);
    const wanted = state.facts.filter[id === "filter-name" ? "name" : "customer"];
    const entries = (groups && groups[kind]) || [];
    if (wanted && !entries.some((g) => g.value === wanted)) entries.push({ value: wanted, count: 0 });
    select.replaceChildren(el("option", { value: "", text: "All" }),
      ...entries.map((g) => el("option", { value: g.value, text: `${g.value} (${g.count})` })));
    select.value = wanted;
  }
}

async function fetchPage(list, cursor = null, limit = PAGE) {
  const query = new URLSearchParams({ state: list, limit: String(limit) });
  if (cursor) query.set("cursor", cursor);
  if (list === "pending") {
    if (state.facts.filter.name) query.set("name", state.facts.filter.name);
    if (state.facts.filter.customer) query.set("customer", state.facts.filter.customer);
  }
  return api("GET", `/facts/proposals?${query}`);
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
  renderList(list, page);
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

export async function showProposals(focus = true) {
  state.facts.customer = null;
  show("proposals-view");
  if (await refresh(LISTS, true) && focus) $("pending-title").focus();
}

// A key typed on a card decides that card; never while the operator types in a field (a reason, a
// customer id), never with a modifier (the browser's and the screen reader's keys stay theirs).
const TYPING = /^(text|search|email|url|tel|number|password)$/;

function typing(target) {
  if (target.isContentEditable || target.tagName === "TEXTAREA" || target.tagName === "SELECT") return true;
  return target.tagName === "INPUT" && TYPING.test(target.type || "text");
}

function onKey(event) {
  if (event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) return;
  const article = event.target.closest("#pending-list article");
  if (!article) return;
  const p = state.facts.shown.pending[cardIndex(article)];
  if (!p) return;
  const act = { a: () => approve(p, article), r: () => askReason(p, article), d: () => dismiss(p, article),
    x: () => toggleSelected(article), j: () => focusAt("pending", cardIndex(article) + 1),
    k: () => focusAt("pending", Math.max(0, cardIndex(article) - 1)) }[event.key];
  if (!act) return;
  event.preventDefault();
  act();
}

function filterBy(kind, value) {
  state.facts.filter[kind] = value;
  state.facts.selected.clear();
  state.facts.shown.pending = [];  // a new filter starts at its first page
  return refresh(["pending"]);
}

// "Show more" under each list; the filters, the bulk actions and the decision keys.
export function wireProposals() {
  for (const list of LISTS) $(`${list}-more`).addEventListener("click", () => more(list));
  $("filter-name").addEventListener("change", (event) => filterBy("name", event.target.value));
  $("filter-customer").addEventListener("change", (event) => filterBy("customer", event.target.value));
  $("pending-list").addEventListener("keydown", onKey);
  wireBulk(() => refresh(LISTS));
}
