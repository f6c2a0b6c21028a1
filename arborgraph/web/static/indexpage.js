// Index: what `arborgraph inspect` shows, as far as this key may know it.
import { get } from "./api.js";
import { h, kv } from "./dom.js";

export async function renderIndex(params, env) {
  const info = await get("/v1/index");
  const docs = Object.entries(info.documents || {}).sort(([a], [b]) => a.localeCompare(b));
  const stat = (label, value, id) => h("span", { class: "stat", id }, h("b", {}, String(value)), label);
  const mode = info.mode || {};
  return h("div", { class: "stack" },
    h("section", { class: "panel" },
      h("h2", {}, `Index ${info.index_dir}`),
      h("div", {}, stat("documents you can read", docs.length, "stat-docs"), stat("chunks", info.counts.chunks, "stat-chunks"),
        stat("skipped files", info.skipped, "stat-skipped"), stat("warnings", info.warnings, "stat-warnings"), stat("generation", info.generation, "stat-generation")),
      kv([
        ["build mode", mode.llm_model ? `with an LLM (${mode.llm_model})` : "without an LLM (extractive summaries, rule-based graph)"],
        ["embedding", mode.lexical_fallback ? "lexical only (no embedding model)" : mode.embedding],
        ["routes", (info.routes || []).join(", ")],
        ["built", info.built_at], ["arborgraph", info.arborgraph_version], ["schema", info.schema_version],
        ["scopes you can read", (info.scopes || []).map((s) => `${s.scope} (${s.chunks} chunks)`).join(", ")],
      ]),
      info.skipped || info.warnings ? h("p", { class: "muted small" }, "The server gives the number of skipped files and warnings only: their messages name files. `arborgraph inspect` on the index shows them.") : null),
    h("section", { class: "panel" }, h("h2", {}, `Documents (${docs.length})`),
      h("div", { class: "table-wrap" }, h("table", { id: "documents" },
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "document"), h("th", { scope: "col" }, "title"), h("th", { scope: "col" }, "format"), h("th", { scope: "col" }, "version"))),
        h("tbody", {}, docs.map(([id, d]) => h("tr", {}, h("td", {}, h("button", { type: "button", class: "small secondary", onclick: () => env.openPassage(id, null) }, id)), h("td", {}, d.title || ""), h("td", {}, d.format || ""), h("td", {}, d.version || "")))))),
    ),
    timingsPanel(info));
}

// the build's stages in the order they run (others after them)
const STAGES = ["load", "chunk", "contradictions", "contextualise", "embed", "lexical", "dense_index", "tree", "graph", "write"];

// the last full build's stage times; an update's own (it reused documents) beside them
function timingsPanel(info) {
  const full = info.full_build_timings_s || info.timings_s || {};
  const own = info.timings_s || {};
  const same = JSON.stringify(full) === JSON.stringify(own);
  const order = (k) => { const i = STAGES.indexOf(k); return i < 0 ? STAGES.length : i; };
  const rows = Object.keys(full).filter((k) => k !== "total").sort((a, b) => order(a) - order(b) || a.localeCompare(b)).concat("total")
    .filter((k) => k in full || k in own)
    .map((k) => h("tr", {}, h("th", { scope: "row" }, k), h("td", {}, k in full ? full[k].toFixed(1) : ""), same ? null : h("td", {}, k in own ? own[k].toFixed(1) : "")));
  return h("section", { class: "panel" }, h("h2", {}, "Build timings (s)"),
    h("table", { id: "timings" }, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "stage"), h("th", { scope: "col" }, "full build"), same ? null : h("th", { scope: "col" }, `update to ${info.generation}`))), h("tbody", {}, rows)),
    same ? null : h("p", { class: "muted small" }, "This generation was an update that reused unchanged documents: its own times are in the last column."));
}
