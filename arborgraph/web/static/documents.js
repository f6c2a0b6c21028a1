// Documents: the documents this key may read, with their state (indexed; new or
// deleted until the next rebuild); for a key with the write permission, on a server
// started with --docs: add (upload), delete, and rebuild with its progress.
import { get, post, send } from "./api.js";
import { h, showError, visible } from "./dom.js";

const STATES = { indexed: "indexed", new: "new: indexed at the next rebuild", deleted: "deleted: leaves the index at the next rebuild", duplicate: "duplicate: not indexed (the same file and metadata as another)" };
// rows with no page of their own in the index yet
const UNINDEXED = new Set(["new", "duplicate"]);

function progressView(st) {
  const share = st.stages_total ? Math.round((100 * st.stages_done) / st.stages_total) : 0;
  const line = st.state === "running" ? `Rebuilding: ${st.stage ? st.stage.replace(/_/g, " ") : "starting"} (stage ${Math.min(st.stages_done + 1, st.stages_total)} of ${st.stages_total})`
    : st.state === "done" ? (st.unchanged ? `Nothing had changed: ${st.generation} stays (${st.seconds} s).` : st.served ? `Rebuilt in ${st.seconds} s: ${st.generation} is served.` : `Rebuilt in ${st.seconds} s: ${st.generation} is being checked before it is served…`)
    : st.state === "failed" ? `The rebuild failed: ${st.error}`
    : st.state === "interrupted" ? `The last rebuild was interrupted: ${st.error}` : "No rebuild yet.";
  return h("div", { class: "stack" },
    h("progress", { id: "rebuild-progress", max: 100, value: st.state === "done" ? 100 : share, "aria-label": "rebuild progress" }),
    h("p", { id: "rebuild-state", "data-state": st.state, "data-served": st.served ? "1" : "0", class: st.state === "failed" ? "error" : "" }, line),
    st.history && st.history.length ? h("p", { class: "muted small" }, st.history.map((s) => s.stage.replace(/_/g, " ")).join(" → ")) : null);
}

export async function renderDocuments(params, env) {
  const data = await get("/v1/documents");
  const rows = data.documents;
  const counts = rows.reduce((m, r) => ({ ...m, [r.status]: (m[r.status] || 0) + 1 }), {});
  const table = h("table", { id: "doc-table" },
    h("thead", {}, h("tr", {}, ["document", "title", "format", "version", "state", data.writable ? "" : null].filter((c) => c !== null).map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows.map((r) => h("tr", { "data-doc": r.doc_id, "data-status": r.status },
      h("td", {}, UNINDEXED.has(r.status) ? r.doc_id : h("button", { type: "button", class: "small secondary", onclick: () => env.openPassage(r.doc_id, null) }, r.doc_id)),
      h("td", {}, r.title), h("td", {}, r.format), h("td", {}, r.version),
      h("td", {}, h("span", { class: `state state-${r.status}` }, STATES[r.status] || r.status)),
      data.writable ? h("td", {}, r.status === "deleted" ? null : h("button", { type: "button", class: "small secondary danger", "aria-label": `delete ${r.doc_id}`, onclick: () => remove(r.doc_id) }, "Delete")) : null))));

  async function remove(docId) {
    if (!confirm(`Delete ${docId} from the documents folder? It leaves the index at the next rebuild.`)) return;
    try { await send("DELETE", `/v1/documents/${encodeURIComponent(docId)}`); location.reload(); }
    catch (err) { showError(err); }
  }

  const panels = [h("section", { class: "panel" },
    h("h2", {}, `Documents (${rows.length})`),
    h("p", { class: "muted small", id: "doc-counts" }, Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(" · "), ` · ${data.generation}`),
    rows.length ? h("div", { class: "table-wrap" }, table) : h("p", { class: "muted" }, "No document this key may read."))];

  if (data.writable) {
    const file = h("input", { type: "file", id: "upload-file", multiple: true, accept: ".md,.markdown,.txt,.html,.htm,.rst,.pdf" });
    const note = h("p", { class: "small", id: "upload-note", "aria-live": "polite" });
    const upload = async (event) => {
      event.preventDefault();
      if (!file.files.length) { file.focus(); return; }
      const done = [];
      for (const f of file.files) {
        try { await send("PUT", `/v1/documents/${encodeURIComponent(f.name)}`, f); done.push(f.name); }
        catch (err) { note.textContent = visible(`${f.name}: ${err.message}`); note.className = "small error"; return; }
      }
      location.reload();
    };
    const box = h("div", { id: "rebuild-box" });
    const rebuildButton = h("button", { type: "button", id: "rebuild" }, "Rebuild the index");
    let timer = 0;
    const follow = async () => {
      try {
        const st = await get("/v1/rebuild");
        box.replaceChildren(progressView(st));
        rebuildButton.disabled = st.state === "running";
        if (st.state === "running" || (st.state === "done" && !st.served)) timer = setTimeout(follow, 700);
        else if (st.state === "done" && rebuildButton.dataset.started) { rebuildButton.dataset.started = ""; setTimeout(() => location.reload(), 300); }
      } catch (err) { showError(err); }
    };
    rebuildButton.addEventListener("click", async () => {
      try { rebuildButton.dataset.started = "1"; box.replaceChildren(progressView(await post("/v1/rebuild", {}))); clearTimeout(timer); follow(); }
      catch (err) { showError(err); }
    });
    window.addEventListener("hashchange", () => clearTimeout(timer), { once: true });
    follow();
    panels.unshift(h("div", { class: "grid-2" },
      h("section", { class: "panel stack" }, h("h2", {}, "Add documents"),
        h("form", { id: "upload-form", class: "row", onsubmit: upload }, file, h("button", { type: "submit", id: "upload" }, "Add")),
        h("p", { class: "muted small" }, "Markdown, text, HTML, reStructuredText or PDF. A document's frontmatter (acl, version, …) applies as in a build; a name already in the folder is refused."),
        note),
      h("section", { class: "panel stack" }, h("h2", {}, "Rebuild"),
        h("p", { class: "muted small" }, "Runs the build pipeline on the documents folder with the index's own settings (unchanged documents are reused), then serves the new generation once it answers."),
        rebuildButton, box)));
  } else {
    panels.push(h("p", { class: "muted small", id: "read-only-note" }, "This key reads only. Adding, deleting and rebuilding need a key with the write permission (arborgraph keys add --write) on a server started with --docs."));
  }
  return h("div", { class: "stack" }, panels);
}
