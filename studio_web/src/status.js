// Saying things on the studio page: the status line, and a failure in plain words with "Try again".
import { ApiError, plainWords } from "./api.js";
import { $ } from "./dom.js";
import { state } from "./state.js";

// `background`: said by the page itself (a refresh), not in answer to the operator: it never
// replaces a failure on screen, which stays until the operator acts.
export function say(text, { background = false } = {}) {
  if (background && !$("problem").hidden) return;
  if (!background) state.status.spoken += 1;
  $("status").textContent = text;
  if (text && !background) $("problem").hidden = true;  // news replaces an older failure
}

// A failure in plain words (api.js). A 401 says nothing here: the sign-in page has taken over.
export function fail(what, error, retry) {
  if (error && error.status === 401) return;
  state.status.spoken += 1;
  $("status").textContent = "";
  $("problem-text").textContent = `${what}: ${plainWords(error)}`;
  // Asking again helps when the service or the connection failed, not when the answer was no.
  $("problem-retry").hidden = !retry || (error instanceof ApiError && error.status < 500);
  state.status.retry = retry || null;
  $("problem").hidden = false;
}

// "Try again": the failed action once more.
export function tryAgain() {
  const retry = state.status.retry;
  $("problem").hidden = true;
  say("Trying again…");
  if (retry) retry();
}

// The failure on screen (null when none), to be said again after the view changed under it.
export function problemShown() {
  return $("problem").hidden ? null : [$("problem-text").textContent, state.status.retry];
}

export function showProblem(why) {
  $("problem-text").textContent = why[0];
  state.status.retry = why[1];
  $("problem").hidden = false;
}

// How many things the operator's actions have said so far (see `say`).
export function spokenCount() {
  return state.status.spoken;
}
