// An entity graph drawn by sigma.js (WebGL) over a graphology graph, laid out by
// ForceAtlas2 then noverlap (graphology-library), all vendored under /static/vendor by
// scripts/vendor-web. Labels are sigma's: drawn on a grid, one per cell, the larger
// nodes first, so they never overlap. Colours by community, with a legend the caller
// draws from `legend()`. Click selects, double click grows (the caller's onExpand), hover
// shows a node's neighbours. A list of the shown entities (buttons) makes every node
// reachable by keyboard and gives tests the nodes' screen positions.
import { h, visible } from "./dom.js";

const { Graph } = window.graphology ? { Graph: window.graphology.Graph || window.graphology } : {};
const SigmaClass = window.Sigma && (window.Sigma.Sigma || window.Sigma);
const lib = window.graphologyLibrary;
const drawLabel = SigmaClass && window.Sigma.rendering.drawDiscNodeLabel;

// 12 colours told apart on white and by most colour-blind readers (Tableau 10 + 2)
const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#2f4b7c", "#bab0ac", "#8cd17d"];
const OTHER = "#c8ccc9";
const TOP_LABELLED = 12;
export const LAYOUTS = { force: "Force (ForceAtlas2)", communities: "Grouped by community", circle: "Circle" };

// the page's CSP allows no style attribute: the colour is set through the CSSOM
function swatch(colour) {
  const el = h("span", { class: "swatch", "aria-hidden": "true" });
  el.style.background = colour;
  return el;
}

// a small seeded generator: the same graph is laid out the same way every time
function seeded(seed) {
  let s = seed >>> 0 || 1;
  return () => { s = (s * 1664525 + 1013904223) >>> 0; return s / 4294967296; };
}

export class EntityGraph {
  constructor({ onSelect, onExpand, id = "graph" }) {
    this.onSelect = onSelect; this.onExpand = onExpand;
    this.graph = new Graph({ multi: false, type: "directed" });
    this.colours = new Map();
    this.communityTitles = new Map();
    this.selected = null; this.hovered = null;
    this.labelBoxes = [];
    this.layoutName = "force";
    this.container = h("div", { class: "sigma-box", id, role: "img", "aria-label": "Entities and their relations (the list below names them)" });
    this.nodeList = h("ul", { class: "node-list small", id: `${id}-nodes`, "aria-label": "Entities in the graph" });
    // a double click on the canvas must not select the page's text around it
    this.container.addEventListener("mousedown", (e) => { if (e.detail > 1) e.preventDefault(); });
    this.renderer = null;
  }

  // the canvas needs its box in the page before sigma can measure it
  mount() {
    if (this.renderer || !this.container.isConnected) return;
    this.renderer = new SigmaClass(this.graph, this.container, {
      renderEdgeLabels: false,
      defaultEdgeType: "arrow",
      // sigma keeps at most labelDensity labels per grid cell, the biggest nodes first
      labelDensity: 0.35,
      labelGridCellSize: 110,
      labelRenderedSizeThreshold: 7,
      labelFont: "system-ui, sans-serif",
      labelSize: 12,
      zIndex: true,
      minCameraRatio: 0.05,
      maxCameraRatio: 8,
      defaultDrawNodeLabel: (context, data, settings) => this._label(context, data, settings),
      nodeReducer: (node, data) => this._nodeStyle(node, data),
      edgeReducer: (edge, data) => this._edgeStyle(edge, data),
    });
    this.renderer.on("clickNode", ({ node }) => this.select(node));
    this.renderer.on("doubleClickNode", (event) => { event.preventSigmaDefault(); this.onExpand(event.node); });
    this.renderer.on("enterNode", ({ node }) => { this.hovered = node; this.renderer.refresh({ skipIndexation: true }); });
    this.renderer.on("leaveNode", () => { this.hovered = null; this.renderer.refresh({ skipIndexation: true }); });
    this.renderer.on("beforeRender", () => { this.labelBoxes = []; });
    this.renderer.on("afterRender", () => this._positions());
  }

  // sigma's grid keeps labels sparse; a label that would still cross one drawn before
  // it in this frame (the larger nodes' come first) is left out, unless it is forced
  _label(context, data, settings) {
    if (!data.label) return;
    const size = settings.labelSize;
    context.font = `${settings.labelWeight} ${size}px ${settings.labelFont}`;
    const box = { x: data.x + data.size + 3, y: data.y - size / 2 - 1, w: context.measureText(data.label).width, h: size + 2 };
    const crosses = (b) => box.x < b.x + b.w && b.x < box.x + box.w && box.y < b.y + b.h && b.y < box.y + box.h;
    // a hub's label is offered whatever sigma's grid picked, but never drawn across another;
    // the selected entity's and a filter's matches are always drawn
    const forced = Boolean(data.forceLabel) && !data.hub;
    if (!forced && this.labelBoxes.some(crosses)) return;
    this.labelBoxes.push({ ...box, forced });
    drawLabel(context, data, settings);
  }

  kill() { if (this.renderer) { this.renderer.kill(); this.renderer = null; } }

  _focus() { return this.hovered || this.selected; }

  _nodeStyle(node, data) {
    const focus = this._focus();
    const out = { ...data };
    // what a label filter or focus matched is marked and named; so are the hubs
    if (data.seed) { out.highlighted = true; out.forceLabel = true; out.zIndex = 1; }
    else if (this.topNodes && this.topNodes.has(node)) { out.forceLabel = true; out.hub = true; }
    if (node === this.selected) { out.highlighted = true; out.forceLabel = true; out.zIndex = 2; }
    if (focus && node !== focus && !this.graph.areNeighbors(node, focus)) { out.color = "#e4e7e5"; out.label = ""; out.zIndex = 0; }
    else if (focus) out.zIndex = 1;
    return out;
  }

  _edgeStyle(edge, data) {
    const focus = this._focus();
    if (!focus) return data;
    const [s, t] = this.graph.extremities(edge);
    return s === focus || t === focus ? { ...data, color: "#4a5a52", size: Math.max(1.5, data.size) } : { ...data, hidden: true };
  }

  colour(community) {
    if (community === null || community === undefined) return OTHER;
    return this.colours.get(community) || OTHER;
  }

  // communities: [{id, title, size}] largest first; the first 12 get their own colour
  setCommunities(communities) {
    for (const c of communities) {
      this.communityTitles.set(c.id, c.title || `Community ${c.id}`);
      if (!this.colours.has(c.id) && this.colours.size < PALETTE.length) this.colours.set(c.id, PALETTE[this.colours.size]);
    }
  }

  legend() {
    const counts = new Map();
    this.graph.forEachNode((_, a) => counts.set(a.community, (counts.get(a.community) || 0) + 1));
    const rows = [...this.colours.entries()].filter(([id]) => counts.has(id)).map(([id, colour]) =>
      h("li", { "data-community": id }, swatch(colour), `${this.communityTitles.get(id)} (${counts.get(id)})`));
    const others = [...counts.entries()].filter(([id]) => !this.colours.has(id)).reduce((n, [, k]) => n + k, 0);
    if (others) rows.push(h("li", { "data-community": "other" }, swatch(OTHER), `other or no community (${others})`));
    return h("ul", { class: "legend small", id: "graph-legend", "aria-label": "Colours by community" }, rows);
  }

  // nodes: [{id, name, type, degree, community}], edges: [{source, target, relation, phrase, weight}]
  add(nodes, edges, around = null) {
    const centre = around && this.graph.hasNode(around) ? this.graph.getNodeAttributes(around) : null;
    const rand = seeded(this.graph.order + nodes.length);
    const fresh = [];
    for (const n of nodes) {
      if (this.graph.hasNode(n.id)) continue;
      const angle = rand() * 2 * Math.PI, r = centre ? 2 + rand() * 4 : 10 + rand() * 100;
      this.graph.addNode(n.id, {
        label: n.name, name: n.name, type_: n.type, degree: n.degree || 1, community: n.community ?? null, member: Boolean(n.member), seed: Boolean(n.seed),
        x: (centre ? centre.x : 0) + r * Math.cos(angle), y: (centre ? centre.y : 0) + r * Math.sin(angle),
        size: 3 + Math.min(12, 2 * Math.sqrt(n.degree || 1)), color: this.colour(n.community),
      });
      fresh.push(n.id);
    }
    for (const e of edges) {
      if (!this.graph.hasNode(e.source) || !this.graph.hasNode(e.target) || e.source === e.target) continue;
      if (this.graph.hasEdge(e.source, e.target)) continue;
      this.graph.addEdge(e.source, e.target, { relation: e.relation, phrase: e.phrase, size: Math.min(4, 0.6 + Math.log1p(e.weight || 1)), color: "#b5c0bb" });
    }
    // the most connected entities are labelled whatever the label grid picks
    const ranked = [];
    this.graph.forEachNode((id, a) => ranked.push([id, a.degree]));
    ranked.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    this.topNodes = new Set(ranked.slice(0, TOP_LABELLED).map(([id]) => id));
    return fresh;
  }

  // the chosen layout, then noverlap so no two nodes (and so no two labels' anchors) sit on each other
  layout(name = this.layoutName) {
    this.layoutName = name;
    const g = this.graph;
    if (!g.order) return;
    const rand = seeded(g.order * 31 + g.size);
    if (name === "circle") lib.layout.circular.assign(g, { scale: 100 });
    else if (name === "communities" || !this._laidOut) {
      g.forEachNode((n, a) => g.setNodeAttribute(n, "group", a.community === null ? "none" : String(a.community)));
      lib.layout.circlepack.assign(g, { hierarchyAttributes: ["group"], rng: rand, scale: 100 });
    }
    if (name === "force") {
      const settings = lib.layoutForceAtlas2.inferSettings(g);
      // LinLog mode pulls each community together and pushes communities apart
      lib.layoutForceAtlas2.assign(g, { iterations: g.order > 2000 ? 60 : g.order > 800 ? 100 : 200, settings: { ...settings, linLogMode: true, outboundAttractionDistribution: true, barnesHutOptimize: g.order > 300, gravity: 0.5, scalingRatio: 10, adjustSizes: false } });
    }
    lib.layoutNoverlap.assign(g, { maxIterations: g.order > 800 ? 25 : 80, settings: { margin: 3, ratio: 1.3 } });
    this._laidOut = true;
    this.container.dataset.layout = name;
    this.refresh();
  }

  refresh() {
    if (!this.renderer) return;
    this.renderer.refresh();
    this.renderer.getCamera().animatedReset({ duration: 200 });
    this._list();
  }

  select(id) {
    this.selected = id;
    for (const b of this.nodeList.querySelectorAll("button")) b.classList.toggle("selected", b.dataset.id === id);
    if (this.renderer) this.renderer.refresh({ skipIndexation: true });
    this.container.dataset.selected = id || "";
    if (id) this.onSelect(id);
  }

  zoom(factor) { if (this.renderer) this.renderer.getCamera().animate({ ratio: this.renderer.getCamera().ratio / factor }, { duration: 150 }); }
  fit() { if (this.renderer) this.renderer.getCamera().animatedReset({ duration: 200 }); }

  // the list of shown entities, most connected first (at most 300: a longer list helps nobody)
  _list() {
    const shown = [];
    this.graph.forEachNode((id, a) => shown.push([id, a]));
    shown.sort((a, b) => b[1].degree - a[1].degree || a[1].name.localeCompare(b[1].name));
    this.nodeList.replaceChildren(...shown.slice(0, 300).map(([id, a]) => h("li", {},
      h("button", { type: "button", class: id === this.selected ? "node selected" : "node", "data-id": id, "aria-label": `${a.name} (${a.type_})`,
        onclick: () => this.select(id), ondblclick: () => this.onExpand(id),
        onkeydown: (e) => { if (e.key === "+") { e.preventDefault(); this.onExpand(id); } } },
        swatch(a.color), a.name))));
    this.container.dataset.nodes = String(this.graph.order);
    this.container.dataset.edges = String(this.graph.size);
    this._positions();
  }

  // where each listed node is drawn, in CSS pixels from the canvas's corner
  _positions() {
    if (!this.renderer) return;
    for (const b of this.nodeList.querySelectorAll("button")) {
      if (!this.graph.hasNode(b.dataset.id)) continue;
      const p = this.renderer.graphToViewport(this.graph.getNodeAttributes(b.dataset.id));
      b.dataset.x = p.x.toFixed(1); b.dataset.y = p.y.toFixed(1);
    }
    this.container.dataset.labels = JSON.stringify((this.labelBoxes || []).map((b) => [b.x, b.y, b.w, b.h, b.forced ? 1 : 0].map((v) => Math.round(v))));
    this.container.dataset.rendered = "1";
  }
}

export function edgeSentence(graph, edge) {
  const [s, t] = graph.extremities(edge);
  return visible(`${graph.getNodeAttribute(s, "name")} ${graph.getEdgeAttribute(edge, "phrase") || graph.getEdgeAttribute(edge, "relation")} ${graph.getNodeAttribute(t, "name")}`);
}
