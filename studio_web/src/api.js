// Calling the studio's APIs from either page: one request shape, one reading of the answer,
// and failures said in plain words.

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error && body.error.message) || `HTTP ${status}`);
    this.status = status;
    this.body = body;
    this.code = body && body.error && body.error.code;
  }
}

export class Unreachable extends Error {
  constructor() { super("the service could not be reached"); }
}

// The answer's JSON, or ApiError; a 401 calls `unauthorized` first (the page signs in again).
export async function request(url, { method, token, body, etag, unauthorized }) {
  const headers = { Authorization: `Bearer ${token || ""}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (etag) headers["If-Match"] = etag;
  let response, text;
  try {
    response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    text = await response.text();
  } catch {
    throw new Unreachable();
  }
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch { /* a gateway's own error page: the status says enough */ }
  if (response.status === 401) {
    unauthorized();
    throw new ApiError(401, data);
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

// A failure in plain words, with what the operator can do about it.
export function plainWords(error) {
  if (typeof error === "string") return error;
  if (!(error instanceof ApiError)) return "the studio could not reach the service. Check the connection, then try again.";
  if (error.status >= 500) return `the service could not answer just now (HTTP ${error.status}). Try again in a moment.`;
  if (error.status === 403) return "you are not an operator of this tenant: sign in with an account in its group.";
  return error.message.endsWith(".") ? error.message : `${error.message}.`;
}
