// The page's session: config.json, the sign-in (signin.js) and its token, and the API call for this tenant and agent.
import { request } from "./api.js";
import { TOKEN_KEY, beginSignIn as startSignIn, finishSignIn as completeSignIn } from "./signin.js";
import { show } from "./dom.js";
import { current, keepDraft } from "./editor.js";
import { say } from "./status.js";
import { scope } from "./url.js";

export let config = { apiBase: "/api", signIn: null };
const SIGN_IN_KEY = "knowledge-studio-sign-in";
export let leavingOnPurpose = false; // set when the page itself navigates away (sign-in), the draft kept

export async function loadConfig() {
  try {
    config = { ...config, ...(await (await fetch("config.json")).json()) };
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

export function beginSignIn() {
  leavingOnPurpose = true;
  return startSignIn(config.signIn, { redirectUri: config.signIn.redirectUri, pendingKey: SIGN_IN_KEY });
}

export function finishSignIn() {
  return completeSignIn(config.signIn, { redirectUri: config.signIn && config.signIn.redirectUri,
                                         pendingKey: SIGN_IN_KEY, failed: say });
}

export function api(method, path, { body, etag, tenantWide } = {}) {
  const tenantBase = `${config.apiBase}/tenants/${encodeURIComponent(scope.tenant)}`;
  const base = tenantWide ? tenantBase : `${tenantBase}/agents/${encodeURIComponent(scope.agent)}`;
  return request(base + path, { method, token: token(), body, etag, unauthorized: signIn });
}

export function signIn() {
  sessionStorage.removeItem(TOKEN_KEY);
  const kept = keepDraft();
  const name = current && (current.name || "the new concept");
  show("signin");
  if (!config.signIn) say("Sign-in is not configured for this page (config.json has no signIn).");
  else if (kept) say(`Your session has ended. Your unsaved changes to ${name} are kept in this tab: sign in to go on with them.`);
  else say("");
}
