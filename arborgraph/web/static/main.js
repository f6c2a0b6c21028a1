// The single page: tabs in the URL hash (#ask, #tree, #graph, #communities, #documents, #index), the key
// asked once per tab, and the passage viewer every page shares.
import { ApiError, get, key, scope } from "./api.js";
import { h, showError, visible } from "./dom.js";
import { renderAsk } from "./ask.js";
import { renderTree } from "./tree.js";
import { renderCommunities } from "./communities.js";
import { renderGraph } from "./graphpage.js";
import { renderDocuments } from "./documents.js";
import { renderIndex } from "./indexpage.js";

const PAGES = { ask: renderAsk, tree: renderTree, graph: renderGraph, communities: renderCommunities, documents: renderDocuments, index: renderIndex };
// what one page hands another within this tab (e.g. the tree walk of an Ask result);
// it lives in memory only and is dropped with the page when the key changes
export const shared = { treePath: [], lastQuestion: "" };

function parseHash() {
  const [name, query] = (location.hash.replace(/^#/, "") || "ask").split("?");
  return { name: PAGES[name] ? name : "ask", params: new URLSearchParams(query || "") };
}

let rendering = 0;
async function route() {
  const { name, params } = parseHash();
  for (const tab of document.querySelectorAll(".tabs a")) {
    tab.setAttribute("aria-selected", tab.id === `tab-${name}` ? "true" : "false");
  }
  const main = document.getElementById("main");
  const mine = ++rendering;
  main.replaceChildren(h("p", { class: "muted" }, "Loading…"));
  try {
    const view = await PAGES[name](params, { openPassage, shared, chooseScope });
    if (mine === rendering) main.replaceChildren(view);
  } catch (err) {
    if (mine !== rendering) return;
    main.replaceChildren(h("div", { class: "panel" }, h("p", { class: "error" }, err.message)));
    if (err instanceof ApiError && err.status === 401) window.dispatchEvent(new CustomEvent("arborgraph:unauthorized"));
  }
}

function askKey(message = "") {
  const dialog = document.getElementById("key-dialog");
  document.getElementById("key-error").textContent = message;
  document.getElementById("key-input").value = "";
  if (!dialog.open) dialog.showModal();
}

function setupKey() {
  const dialog = document.getElementById("key-dialog");
  const form = document.getElementById("key-form");
  form.addEventListener("submit", (event) => {
    const choice = event.submitter ? event.submitter.value : "key";
    const value = choice === "anonymous" ? "" : document.getElementById("key-input").value.trim();
    key.set(value);
    // a new key starts from a fresh page: nothing fetched under the old key survives
    location.reload();
  });
  dialog.addEventListener("cancel", (event) => { if (!key.asked()) event.preventDefault(); });
  document.getElementById("change-key").addEventListener("click", () => askKey());
  window.addEventListener("arborgraph:unauthorized", () => askKey("That key was not accepted: enter another, or browse anonymously."));
  document.getElementById("who").textContent = key.get() ? "key in use" : "anonymous";
}

export async function openPassage(docId, chunkId) {
  const dialog = document.getElementById("doc-dialog");
  const title = document.getElementById("doc-title");
  const meta = document.getElementById("doc-meta");
  const body = document.getElementById("doc-body");
  title.textContent = visible(docId);
  meta.textContent = "Loading…";
  body.replaceChildren();
  if (!dialog.open) dialog.showModal();
  try {
    const doc = await get(`/v1/documents/${encodeURIComponent(docId)}`, chunkId ? { chunk: chunkId } : {});
    title.textContent = visible(doc.title || doc.doc_id);
    meta.textContent = visible([doc.doc_id, doc.version ? `version ${doc.version}` : "", doc.stale ? "stale" : "", `${doc.passages.length} passages`, doc.generation].filter(Boolean).join(" · "));
    let cited = null;
    for (const p of doc.passages) {
      const el = h("section", { class: p.chunk_id === doc.cited ? "passage cited" : "passage", "data-chunk": p.chunk_id, tabindex: p.chunk_id === doc.cited ? "0" : null },
        h("span", { class: "where" }, `${p.heading_path.join(" › ")}  (${p.chunk_id})`), p.text);
      if (p.chunk_id === doc.cited) cited = el;
      body.append(el);
    }
    if (cited) { cited.scrollIntoView({ block: "center" }); cited.focus({ preventScroll: true }); }
  } catch (err) {
    meta.textContent = "";
    body.replaceChildren(h("p", { class: "error" }, err.message));
  }
}

function setupDialogs() {
  const dialog = document.getElementById("doc-dialog");
  document.getElementById("doc-close").addEventListener("click", () => dialog.close());
  dialog.addEventListener("click", (event) => { if (event.target === dialog) dialog.close(); });
}

// Which of the caller's scopes the exploring pages show: with more than one (a key that
// reads a restricted document as well as the public ones), a choice in the header,
// the largest by default (the most specific one may hold a single document).
async function setupScope() {
  const pick = document.getElementById("scope-pick");
  const select = document.getElementById("scope");
  let scopes = [];
  try { scopes = (await get("/v1/index")).scopes || []; } catch { /* the page shows the error */ }
  if (scopes.length < 2) { scope.set(""); pick.hidden = true; return; }
  const names = scopes.map((s) => s.scope);
  if (!names.includes(scope.get())) scope.set([...scopes].sort((a, b) => b.chunks - a.chunks)[0].scope);
  select.replaceChildren(...scopes.map((s) => h("option", { value: s.scope, selected: s.scope === scope.get() }, `${s.scope} (${s.chunks} chunks)`)));
  // a walk highlighted in one scope's tree names nodes of that tree only
  select.addEventListener("change", () => { scope.set(select.value); shared.treePath = []; route(); });
  pick.hidden = false;
}

// another page picks the scope (the tree walk of an Ask result is in its own scope's tree)
function chooseScope(value) {
  const select = document.getElementById("scope");
  if (![...select.options].some((o) => o.value === value)) return;
  scope.set(value);
  select.value = value;
}

// A service without keys serves everyone as the anonymous caller: the page opens as that
// caller, with no key dialog and no "Change key" (no key could be accepted).
async function takesKeys() {
  try { return (await get("/v1/web/access")).keys; } catch { return true; /* unknown: ask, as before */ }
}

setupKey();
setupDialogs();
window.addEventListener("hashchange", route);
takesKeys().then((keyed) => {
  if (!keyed) {
    if (key.get()) key.set("");  // a key kept in this tab from another server: not sent here
    document.getElementById("change-key").hidden = true;
    document.getElementById("who").textContent = "anonymous (this server takes no keys)";
  }
  if (keyed && !key.asked()) askKey();
  else setupScope().then(route);
});
