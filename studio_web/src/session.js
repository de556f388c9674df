// A studio page's session, for either page: config.json, the sign-in (signin.js) and its token, and the API call
// for this tenant and agent.
import { request } from "./api.js";
import { TOKEN_KEY, beginSignIn as startSignIn, finishSignIn as completeSignIn } from "./signin.js";
import { show } from "./dom.js";
import { calls, state } from "./state.js";
import { say } from "./status.js";
import { scope } from "./url.js";

// What differs between the two pages' sign-in, said by each page's entry before anything else:
// the key its pending request waits under, and its own callback ("facts" beside the Knowledge page's).
export function useSignIn({ pendingKey, callbackPage = null }) {
  state.session = { pendingKey, callbackPage };
}

export async function loadConfig() {
  try {
    state.config = { ...state.config, ...(await (await fetch("config.json")).json()) };
  } catch { /* the defaults serve a page hosted next to its API */ }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

// The signed-in operator as the API records a writer (`operator:<sub>`), read from the id token's
// claims (the API verifies the token; this only says "you" on the page). Null when unreadable.
export function operatorActor() {
  try {
    const claims = JSON.parse(atob(token().split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
    return typeof claims.sub === "string" ? `operator:${claims.sub}` : null;
  } catch {
    return null;
  }
}

// ------------------------------------------------------------------ sign-in: authorization code + PKCE
// The same code signs in against Cognito's hosted UI on AWS and the local stack's stand-in (signin.js).

function redirectUri(signIn) {
  const page = state.session.callbackPage;
  return page ? new URL(page, signIn.redirectUri).href : signIn.redirectUri;
}

export function beginSignIn() {
  state.leavingOnPurpose = true;
  const signIn = state.config.signIn;
  return startSignIn(signIn, { redirectUri: redirectUri(signIn), pendingKey: state.session.pendingKey });
}

export function finishSignIn() {
  const signIn = state.config.signIn;
  return completeSignIn(signIn, { redirectUri: signIn && redirectUri(signIn), pendingKey: state.session.pendingKey,
                                  failed: calls.signInFailed });
}

// `tenantWide`: the tenant's own resources (its agents), not this agent's. A write is counted (state.writes).
export async function api(method, path, { body, etag, tenantWide } = {}) {
  const tenantBase = `${state.config.apiBase}/tenants/${encodeURIComponent(scope.tenant)}`;
  const base = tenantWide ? tenantBase : `${tenantBase}/agents/${encodeURIComponent(scope.agent)}`;
  const writing = method !== "GET";
  if (writing) {
    state.writes.begun += 1;
    state.writes.open += 1;
  }
  try {
    return await request(base + path, { method, token: token(), body, etag, unauthorized: signIn });
  } finally {
    if (writing) state.writes.open -= 1;
  }
}

// Signed out (no token, or the API refused it): the sign-in view, with what the page kept.
export function signIn() {
  sessionStorage.removeItem(TOKEN_KEY);
  const kept = calls.keepDraft();
  const current = state.editor.current;
  const name = current && (current.name || "the new concept");
  show("signin");
  if (!state.config.signIn) say("Sign-in is not configured for this page (config.json has no signIn).");
  else if (kept) say(`Your session has ended. Your unsaved changes to ${name} are kept in this tab: sign in to go on with them.`);
  else say("");
}
