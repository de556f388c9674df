// The page's scope (tenant, agent) and the open concept as the URL says them.
import { state } from "./state.js";

export const params = new URLSearchParams(location.search);
export const scope = { tenant: params.get("tenant") || "default", agent: params.get("agent") || "" };
// The tenant's shared knowledge, in an agent's place: what every agent that opts in recalls as its own.
export const SHARED = "_shared";
export const inShared = scope.agent === SHARED;

export const NEW = Symbol("new concept");

export function urlFor(name) {
  const next = new URLSearchParams(location.search);
  next.delete("concept");
  next.delete("new");
  if (name === NEW) next.set("new", "1");
  else if (name) next.set("concept", name);
  return `${location.pathname}?${next}`;
}

export function visit(name) {
  if (location.pathname + location.search !== urlFor(name)) history.pushState(null, "", urlFor(name));
}

export function wantedInUrl() {
  const here = new URLSearchParams(location.search);
  return here.get("new") ? NEW : here.get("concept");
}

// The page for another agent of the tenant (none: the tenant's list of agents), or one of its concepts.
export function agentUrl(name, concept) {
  const next = new URLSearchParams();
  if (scope.tenant !== "default") next.set("tenant", scope.tenant);
  if (name) next.set("agent", name);
  if (concept) next.set("concept", concept);
  return `${location.pathname}?${next}`;
}

// The list's filters and order as the URL keeps them (`status`, `type`, `q`, `sort`, `order`), and its
// page (`page`), so a reload shows the same list and Back/Forward step between lists; the keys in the
// order of the list's own filters (list.js compares the two). Defaults are left out of the URL;
// a value the page does not offer is ignored.
const TYPES = ["fact", "entity", "procedure", "policy", "objection"];
const SORTS = ["written_at", "updated_at", "name", "type", "provenance", "confidence", "occurrences"];
const LIST_KEYS = ["status", "type", "q", "sort", "order", "page"];
export const PAGE = 50;  // rows per page of the list; the URL names a page by its number (`page`, from 1)

export function filtersInUrl() {
  const here = new URLSearchParams(location.search);
  const status = here.get("status");
  const q = (here.get("q") || "").slice(0, 200);
  // Relevance is the order of a search the operator did not sort (list.js), written_at of any other list.
  const sort = SORTS.includes(here.get("sort")) ? here.get("sort") : q.trim() ? "relevance" : "written_at";
  return {
    fresh: status === "new", conflict: status === "conflict", related: status === "related",
    expired: status === "expired", notStarted: status === "not_started", stale: status === "stale",
    retired: status === "retired",
    type: TYPES.includes(here.get("type")) ? here.get("type") : "",
    q, sort, desc: sort === "relevance" || here.get("order") !== "asc",
  };
}

// The first row of the page the URL names (0: the first page, or no page named).
export function pageInUrl() {
  const page = new URLSearchParams(location.search).get("page") || "";
  return /^[1-9][0-9]{0,6}$/.test(page) ? (Number(page) - 1) * PAGE : 0;
}

// The URL of the list with `wanted` (the open concept dropped), at the page shown (state.list.offset).
export function listUrl(wanted, status) {
  const next = new URLSearchParams(location.search);
  for (const key of [...LIST_KEYS, "concept", "new"]) next.delete(key);
  if (status) next.set("status", status);
  if (wanted.type) next.set("type", wanted.type);
  if (wanted.q.trim()) next.set("q", wanted.q.trim());
  if (wanted.sort !== (wanted.q.trim() ? "relevance" : "written_at") || !wanted.desc) {
    next.set("sort", wanted.sort);
    next.set("order", wanted.desc ? "desc" : "asc");
  }
  if (state.list.offset) next.set("page", String(Math.floor(state.list.offset / PAGE) + 1));
  return `${location.pathname}?${next}`;
}
