// Communities: the graph's communities by level with their reports, one community's
// entities and relations as an interactive graph (sigma.js), an entity's mentions linking to their
// passages, and a search for an entity by name.
import { docOf, get } from "./api.js";
import { fill, fmt, h, kv, showError } from "./dom.js";
import { EntityGraph } from "./entitygraph.js";
import { entityDetails } from "./entitypanel.js";

export async function renderCommunities(params, env) {
  const level = Math.max(0, parseInt(params.get("level") || "0", 10) || 0);
  const data = await get("/v1/web/communities", { level });
  const report = h("section", { class: "panel", id: "community-report" }, h("p", { class: "muted" }, "Choose a community to see its report and its entities."));
  const entityPanel = h("section", { class: "panel", id: "entity-details", "aria-live": "polite" }, h("p", { class: "muted" }, "Select an entity in the graph (click, or Tab to it and press Enter). Double click or press + to add its neighbours."));
  const graphBox = h("div", { id: "graph-box" }, h("p", { class: "muted" }, "The chosen community's entities and relations appear here."));
  let graph = null;
  let current = null;

  async function expandNeighbours(id) {
    try {
      const res = await get("/v1/web/graph", { focus: id, depth: 1, max_nodes: 40, level });
      graph.setCommunities(res.communities);
      graph.add(res.nodes.map((n) => ({ ...n, member: n.community === current })), res.edges, id);
      graph.layout();
      count();
    } catch (err) { showError(err); }
  }

  async function showEntity(id) {
    try { entityPanel.replaceChildren(await entityDetails(id, env, { onExpand: expandNeighbours })); }
    catch (err) { showError(err); }
  }

  let counter = null;
  let members = 0;
  // members of the open community, and the neighbours grown from them, counted apart
  const count = () => {
    if (!counter) return;
    let inside = 0;
    graph.graph.forEachNode((_, a) => { if (a.member) inside += 1; });
    const outside = graph.graph.order - inside;
    counter.textContent = `${inside} of ${members} members shown${outside ? `, ${outside} neighbours outside it` : ""}, ${graph.graph.size} relations`;
  };

  async function openCommunity(id, selectEntity = null) {
    current = id;
    for (const b of document.querySelectorAll("#community-list button")) b.setAttribute("aria-current", String(Number(b.dataset.id) === id));
    try {
      const [com, net] = await Promise.all([get(`/v1/graph/communities/${id}`), get(`/v1/web/communities/${id}/graph`, { max_nodes: 40 })]);
      if (current !== id) return;
      const r = com.report;
      fill(report,
        h("h2", { id: "report-title" }, r ? r.title : `Community ${id}`),
        kv([["community", id], ["level", com.level], ["members", com.members.length], ["rank", r ? fmt(r.rank, 2) : ""], ["parent", com.parent], ["sub-communities", com.children.length]]),
        r ? h("p", {}, r.summary) : h("p", { class: "muted" }, "No report for this community."),
        r && r.findings.length ? h("ol", { class: "small" }, r.findings.map((f) => h("li", {}, f.text, " ",
          f.chunk_ids.slice(0, 3).map((c) => h("button", { type: "button", class: "small secondary", onclick: () => env.openPassage(docOf(c), c) }, c))))) : null,
        com.children.length ? h("div", { class: "row small" }, "Sub-communities:", com.children.slice(0, 20).map((c) => h("button", { type: "button", class: "small secondary", onclick: () => openCommunity(c) }, String(c)))) : null);
      if (graph) graph.kill();
      graph = new EntityGraph({ onSelect: showEntity, onExpand: expandNeighbours });
      members = net.members;
      graph.setCommunities([{ id, title: r ? r.title : "", size: net.members }]);
      counter = h("span", { class: "muted", id: "graph-count" });
      fill(graphBox,
        h("div", { class: "row small" }, counter,
          h("button", { type: "button", class: "small secondary", "aria-label": "zoom in", onclick: () => graph.zoom(1.5) }, "+"),
          h("button", { type: "button", class: "small secondary", "aria-label": "zoom out", onclick: () => graph.zoom(1 / 1.5) }, "−"),
          h("button", { type: "button", class: "small secondary", onclick: () => graph.fit() }, "Fit")),
        graph.container,
        h("details", { class: "small" }, h("summary", {}, "Entities drawn (select with Tab and Enter; + adds neighbours)"), graph.nodeList));
      graph.add(net.nodes.map((n) => ({ ...n, community: id, member: true })), net.edges);
      graph.mount();
      graph.layout("force");
      count();
      if (selectEntity) {
        if (!graph.graph.hasNode(selectEntity)) { // not among the most connected: add it with its neighbours
          const ent = await get("/v1/graph/entity", { name: selectEntity });
          graph.add([{ id: ent.id, name: ent.name, type: ent.type, degree: ent.degree, community: id, member: true }], []);
          await expandNeighbours(ent.id);
        }
        graph.select(selectEntity);
      }
    } catch (err) { showError(err); }
  }

  const levelSelect = h("select", { id: "level", "aria-label": "Community level" }, data.levels.map((l) => h("option", { value: l, selected: l === level }, `level ${l}`)));
  levelSelect.addEventListener("change", () => { location.hash = `#communities?level=${levelSelect.value}`; });
  const list = h("ul", { class: "list", id: "community-list" }, data.communities.map((c) =>
    h("li", {}, h("button", { type: "button", "data-id": c.id, onclick: () => openCommunity(c.id) },
      h("b", {}, c.title || `Community ${c.id}`), h("div", { class: "muted small" }, `#${c.id} · level ${c.level} · ${c.size} entities${c.rank !== null ? ` · rank ${fmt(c.rank, 1)}` : ""}`)))));

  const search = h("input", { type: "search", id: "entity-search", placeholder: "Find an entity by name", "aria-label": "Find an entity by name", autocomplete: "off" });
  const hits = h("ul", { class: "list small", id: "entity-hits" });
  let timer = 0;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    const q = search.value.trim();
    if (!q) { hits.replaceChildren(); return; }
    timer = setTimeout(async () => {
      try {
        const res = await get("/v1/web/entities", { q, limit: 12 });
        if (search.value.trim() !== q) return;
        hits.replaceChildren(...(res.entities.length ? res.entities.map((e) => h("li", {}, h("button", { type: "button", "data-id": e.id, onclick: () => pickEntity(e.id) }, h("b", {}, e.name), ` ${e.type} · degree ${e.degree}`)))
          : [h("li", { class: "muted" }, "No entity of that name that this key may read.")]));
      } catch (err) { showError(err); }
    }, 200);
  });

  async function pickEntity(id) {
    try {
      const ent = await get("/v1/graph/entity", { name: id });
      const home = ent.communities[ent.communities.length - 1];
      if (home !== undefined) await openCommunity(home, ent.id);
      else showEntity(ent.id);
    } catch (err) { showError(err); }
  }

  // leaving the page stops its renderer (a live one would still measure its detached box)
  window.addEventListener("hashchange", () => { if (graph) graph.kill(); }, { once: true });
  return h("div", { class: "grid-side" },
    h("div", { class: "stack" },
      h("section", { class: "panel stack" }, search, hits),
      h("section", { class: "panel" }, h("div", { class: "row" }, h("h2", {}, "Communities"), levelSelect),
        h("p", { class: "muted small" }, `${data.communities.length} at level ${level} · ${data.generation}`), list)),
    h("div", { class: "stack" }, h("section", { class: "panel" }, graphBox), h("div", { class: "grid-2" }, report, entityPanel)));
}
