// The Facts page's entry: proposals about customers waiting for a decision, stale ones, recent
// decisions (facts-proposals.js; many at once in facts-bulk.js, undone from Recent in
// facts-undo.js), and a customer's memory cell (facts-memory.js). All state comes from the Facts
// API; nothing is kept but the sign-in token (shared with the Knowledge page in this tab). It
// stands on the pieces the Knowledge page does: dom.js, status.js, session.js (sign-in and the API
// call), url.js and state.js.
import { $, show } from "./dom.js";
import { customerUrl, openMemory, wireMemory } from "./facts-memory.js";
import { showProposals, wireProposals } from "./facts-proposals.js";
import { beginSignIn, finishSignIn, loadConfig, signIn, token, useSignIn } from "./session.js";
import { register, state } from "./state.js";
import { say, tryAgain } from "./status.js";
import { params, scope } from "./url.js";

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
  wireProposals();
  wireMemory();
  $("back-to-proposals").addEventListener("click", () => {
    history.pushState(null, "", customerUrl(null));
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
