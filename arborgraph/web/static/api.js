// The HTTP API as the page uses it: every request carries the tab's key (or none),
// and nothing is cached by the browser, so a response never outlives the key it was for.
const KEY = "arborgraph.key";
const ASKED = "arborgraph.key.asked";

export class ApiError extends Error {
  constructor(status, detail) { super(detail); this.status = status; }
}

const SCOPE = "arborgraph.scope";

export const key = {
  get: () => sessionStorage.getItem(KEY) || "",
  asked: () => sessionStorage.getItem(ASKED) === "1",
  set(value) {
    if (value) sessionStorage.setItem(KEY, value); else sessionStorage.removeItem(KEY);
    sessionStorage.setItem(ASKED, "1");
    sessionStorage.removeItem(SCOPE);  // another key reads other scopes
  },
};

// The access scope the Tree, Graph and Communities pages browse (each scope has its own
// tree and graph); chosen in the header, sent with every exploring request.
export const scope = {
  get: () => sessionStorage.getItem(SCOPE) || "",
  set(value) { if (value) sessionStorage.setItem(SCOPE, value); else sessionStorage.removeItem(SCOPE); },
};
const SCOPED = /^\/v1\/(web|tree|graph)\//;

function headers(json) {
  const h = { Accept: "application/json, application/x-ndjson" };
  if (json) h["Content-Type"] = "application/json";
  const k = key.get();
  if (k) h.Authorization = `Bearer ${k}`;
  return h;
}

async function failure(resp) {
  let detail = `${resp.status} ${resp.statusText}`;
  try { const body = await resp.json(); detail = body.detail || body.title || detail; } catch { /* not JSON */ }
  return new ApiError(resp.status, detail);
}

export async function get(path, params = {}) {
  if (SCOPED.test(path) && scope.get() && !("scope" in params)) params = { ...params, scope: scope.get() };
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ""));
  const url = query.toString() ? `${path}?${query}` : path;
  const resp = await fetch(url, { headers: headers(false), cache: "no-store", credentials: "omit" });
  if (!resp.ok) throw await failure(resp);
  return resp.json();
}

export async function post(path, body) {
  const resp = await fetch(path, { method: "POST", headers: headers(true), body: JSON.stringify(body), cache: "no-store", credentials: "omit" });
  if (!resp.ok) throw await failure(resp);
  return resp.json();
}

// PUT a file as the raw body, or DELETE: the documents page's writes
export async function send(method, path, file = null) {
  const h = headers(false);
  if (file) h["Content-Type"] = "application/octet-stream";
  const resp = await fetch(path, { method, headers: h, body: file, cache: "no-store", credentials: "omit" });
  if (!resp.ok) throw await failure(resp);
  return resp.json();
}

// NDJSON events from /v1/query/stream, handed to onEvent one by one as they arrive.
export async function stream(path, body, onEvent) {
  const resp = await fetch(path, { method: "POST", headers: headers(true), body: JSON.stringify(body), cache: "no-store", credentials: "omit" });
  if (!resp.ok) throw await failure(resp);
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  for (;;) {
    const { value, done } = await reader.read();
    buffered += decoder.decode(value || new Uint8Array(), { stream: !done });
    let cut;
    while ((cut = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, cut).trim();
      buffered = buffered.slice(cut + 1);
      if (line) onEvent(JSON.parse(line));
    }
    if (done) break;
  }
  if (buffered.trim()) onEvent(JSON.parse(buffered));
}

// "doc.md#12" -> "doc.md": chunk ids are the document id, "#", the chunk's number
export const docOf = (chunkId) => chunkId.slice(0, chunkId.lastIndexOf("#") > 0 ? chunkId.lastIndexOf("#") : chunkId.length);
