// Graph: the whole entity graph (its most connected entities, up to the node limit),
// coloured by community with a legend, or the entities around one entity or matching a
// label, up to a depth; a choice of layouts; double click grows a node. The header's
// "N of M entities" counts what is drawn, after every grow.
import { get } from "./api.js";
import { h, showError } from "./dom.js";
import { EntityGraph, LAYOUTS } from "./entitygraph.js";
import { entityDetails } from "./entitypanel.js";

const LIMITS = [100, 300, 1000, 2000, 5000];

export async function renderGraph(params, env) {
  const level = Math.max(0, parseInt(params.get("level") || "0", 10) || 0);
  const limit = LIMITS.includes(Number(params.get("limit"))) ? Number(params.get("limit")) : 1000;
  const depth = Math.min(4, Math.max(1, parseInt(params.get("depth") || "1", 10) || 1));
  const label = params.get("label") || "";
  const focus = params.get("focus") || "";
  const layoutName = LAYOUTS[params.get("layout")] ? params.get("layout") : "force";
  const isolated = params.get("isolated") === "1";
  const data = await get("/v1/web/graph", { level, max_nodes: limit, label: focus ? "" : label, focus, depth, min_degree: isolated ? 0 : 1 });
  let total = data.entities;

  const header = h("p", { class: "muted small", id: "graph-count", "aria-live": "polite" });
  const details = h("section", { class: "panel", id: "entity-details", "aria-live": "polite" },
    h("p", { class: "muted" }, "Click an entity to see it; double click (or + in the list) adds its neighbours."));
  const graph = new EntityGraph({ onSelect: showEntity, onExpand: grow });
  graph.setCommunities(data.communities);
  const legendBox = h("div", { id: "legend-box" });
  const titles = new Map(data.communities.map((c) => [c.id, c.title]));

  function count() {
    const truncated = graph.graph.order < total;
    const why = label || focus ? "" : isolated ? " (the most connected)" : " (those with relations, the most connected first)";
    header.textContent = `${graph.graph.order} of ${total} entities${truncated ? why : ""}, ${graph.graph.size} relations · level ${level} communities · ${data.generation}`;
    legendBox.replaceChildren(graph.legend());
  }

  async function showEntity(id) {
    try { details.replaceChildren(await entityDetails(id, env, { onExpand: grow, communityTitle: (c) => titles.get(c) })); }
    catch (err) { showError(err); }
  }

  async function grow(id) {
    try {
      const res = await get("/v1/web/graph", { level, focus: id, depth: 1, max_nodes: 60 });
      graph.setCommunities(res.communities);
      for (const c of res.communities) titles.set(c.id, c.title);
      total = res.entities;
      const fresh = graph.add(res.nodes, res.edges, id);
      graph.layout();
      count();
      graph.container.dataset.grown = String(Number(graph.container.dataset.grown || 0) + 1);
      if (!fresh.length) showError("All its neighbours are shown already.");
    } catch (err) { showError(err); }
  }

  const go = (changes) => {
    const next = new URLSearchParams({ level, limit, depth, label, focus, layout: layoutName, isolated: isolated ? "1" : "", ...changes });
    for (const [k, v] of [...next]) if (v === "") next.delete(k);
    location.hash = `#graph?${next}`;
  };
  const levelSelect = h("select", { id: "graph-level", "aria-label": "Community level for colours" },
    (data.levels.length ? data.levels : [0]).map((l) => h("option", { value: l, selected: l === level }, `level ${l}`)));
  levelSelect.addEventListener("change", () => go({ level: levelSelect.value }));
  const limitSelect = h("select", { id: "graph-limit", "aria-label": "Node limit" }, LIMITS.map((n) => h("option", { value: n, selected: n === limit }, `${n} nodes`)));
  limitSelect.addEventListener("change", () => go({ limit: limitSelect.value }));
  const depthSelect = h("select", { id: "graph-depth", "aria-label": "Depth around the label or entity" }, [1, 2, 3, 4].map((d) => h("option", { value: d, selected: d === depth }, `depth ${d}`)));
  depthSelect.addEventListener("change", () => go({ depth: depthSelect.value }));
  const layoutSelect = h("select", { id: "graph-layout", "aria-label": "Layout" }, Object.entries(LAYOUTS).map(([k, v]) => h("option", { value: k, selected: k === layoutName }, v)));
  layoutSelect.addEventListener("change", () => { graph.layout(layoutSelect.value); });
  const isolatedBox = h("input", { type: "checkbox", id: "graph-isolated", checked: isolated });
  isolatedBox.addEventListener("change", () => go({ isolated: isolatedBox.checked ? "1" : "" }));
  const labelInput = h("input", { type: "search", id: "graph-label", value: focus ? "" : label, placeholder: "Label filter: entities whose name contains…", "aria-label": "Label filter", autocomplete: "off" });
  const filterForm = h("form", { class: "row", id: "graph-filter", onsubmit: (e) => { e.preventDefault(); go({ label: labelInput.value.trim(), focus: "" }); } },
    labelInput, h("button", { type: "submit", class: "small" }, "Filter"),
    label || focus ? h("button", { type: "button", class: "small secondary", id: "graph-clear", onclick: () => go({ label: "", focus: "" }) }, "Whole graph") : null,
    h("label", { class: "check" }, isolatedBox, "entities without relations"));

  graph.add(data.nodes, data.edges);
  const empty = !data.nodes.length;
  const page = h("div", { class: "stack" },
    h("section", { class: "panel stack" },
      h("div", { class: "row" }, h("h2", {}, focus ? `Around ${data.nodes.find((n) => n.seed)?.name || focus}` : label ? `Entities matching “${label}”` : "The entity graph"),
        levelSelect, limitSelect, depthSelect, layoutSelect,
        h("button", { type: "button", class: "small secondary", "aria-label": "zoom in", onclick: () => graph.zoom(1.5) }, "+"),
        h("button", { type: "button", class: "small secondary", "aria-label": "zoom out", onclick: () => graph.zoom(1 / 1.5) }, "−"),
        h("button", { type: "button", class: "small secondary", onclick: () => graph.fit() }, "Fit")),
      filterForm, header),
    h("div", { class: "grid-graph" },
      h("section", { class: "panel graph-panel" }, empty ? h("p", { class: "muted", id: "graph-empty" }, label ? "No entity this key may read matches that label." : "The graph this key may read is empty.") : graph.container),
      h("div", { class: "stack" }, h("section", { class: "panel" }, h("h3", {}, "Communities"), legendBox), details,
        h("section", { class: "panel" }, h("details", {}, h("summary", {}, "Entities drawn, most connected first"), graph.nodeList)))));
  count();
  if (!empty) {
    // sigma measures its box: lay out and draw once the page is in the document
    requestAnimationFrame(() => {
      graph.mount();
      graph.layout(layoutName);
      performance.mark("graph-ready");  // laid out and drawn (benchmarks/bench_web.py)
      const seed = data.nodes.find((n) => n.seed);
      if (focus && seed) graph.select(seed.id);
    });
    window.addEventListener("hashchange", () => graph.kill(), { once: true });
  }
  return page;
}
