// The page's scope (tenant, agent) and the open concept as the URL says them.

export const params = new URLSearchParams(location.search);
export const scope = { tenant: params.get("tenant") || "default", agent: params.get("agent") || "" };

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

// The page for another agent of the tenant (none: the tenant's list of agents).
export function agentUrl(name) {
  const next = new URLSearchParams();
  if (scope.tenant !== "default") next.set("tenant", scope.tenant);
  if (name) next.set("agent", name);
  return `${location.pathname}?${next}`;
}
