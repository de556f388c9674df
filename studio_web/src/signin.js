// Sign-in for both studio pages: the authorization code flow with PKCE (S256), against Cognito's
// hosted UI on AWS and the local stack's stand-in alike. Each page is its own callback and keeps
// its pending request under its own key; the token is shared, so one sign-in serves both pages.

export const TOKEN_KEY = "knowledge-studio-token";

function base64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

// Leave for the sign-in page; `pendingKey` keeps the verifier, the state and the page's query.
export async function beginSignIn(signIn, { redirectUri, pendingKey }) {
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const state = base64url(crypto.getRandomValues(new Uint8Array(16)));
  const challenge = base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  sessionStorage.setItem(pendingKey, JSON.stringify({ verifier, state, search: location.search }));
  const ask = new URLSearchParams({
    response_type: "code", client_id: signIn.clientId, redirect_uri: redirectUri,
    scope: signIn.scope || "openid email", state, code_challenge: challenge, code_challenge_method: "S256",
  });
  location.assign(`${signIn.authorizeUrl}?${ask}`);
}

// Back from the sign-in page with ?code=&state=: trade the code (and our verifier) for a token,
// then start the page again with its original query. False when this is no such return;
// `failed(message)` says why a return did not sign in.
export async function finishSignIn(signIn, { redirectUri, pendingKey, failed }) {
  const back = new URLSearchParams(location.search);
  if (!back.get("code")) return false;
  const pending = JSON.parse(sessionStorage.getItem(pendingKey) || "null");
  sessionStorage.removeItem(pendingKey);
  if (!pending || pending.state !== back.get("state")) {
    failed("Sign-in failed: the answer does not match this page's request. Sign in again.");
    return true;
  }
  let response;
  try {
    response = await fetch(signIn.tokenUrl, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code", client_id: signIn.clientId, code: back.get("code"),
        redirect_uri: redirectUri, code_verifier: pending.verifier,
      }),
    });
  } catch {
    response = null;
  }
  if (!response || !response.ok) {
    failed("Sign-in failed. Sign in again.");
    return true;
  }
  sessionStorage.setItem(TOKEN_KEY, (await response.json()).id_token);
  history.replaceState(null, "", location.pathname + pending.search);
  location.reload();
  return true;
}
