// An interactive node-link view in plain SVG: a seeded force layout, pan (drag the
// background), zoom (wheel, +/-), select (click, Enter), expand a neighbour (double
// click, or the caller's button). Small enough to read, so no graph library is shipped.
import { s } from "./dom.js";

const TYPE_COLOURS = ["#2f855a", "#2b6cb0", "#6b46c1", "#b7791f", "#c05621", "#9b2c2c", "#4a5568", "#0f766e"];

export class GraphView {
  constructor({ onSelect, onExpand }) {
    this.onSelect = onSelect; this.onExpand = onExpand;
    this.nodes = new Map(); this.edges = new Map(); this.types = new Map();
    this.view = { x: 0, y: 0, k: 1 };
    this.svg = s("svg", { class: "graph", id: "graph", role: "group", "aria-label": "Entities and their relations" });
    this.stage = s("g", {});
    this.edgeLayer = s("g", {}); this.nodeLayer = s("g", {});
    this.stage.append(this.edgeLayer, this.nodeLayer);
    this.svg.append(this.stage);
    this.selected = null;
    this._panning();
  }

  colour(type) {
    if (!this.types.has(type)) this.types.set(type, TYPE_COLOURS[this.types.size % TYPE_COLOURS.length]);
    return this.types.get(type);
  }

  add(nodes, edges, around = null) {
    const centre = around && this.nodes.get(around);
    let i = 0;
    for (const n of nodes) {
      if (this.nodes.has(n.id)) continue;
      const angle = (2 * Math.PI * i++) / Math.max(1, nodes.length);
      const r = centre ? 60 : 180 + 40 * Math.sin(i);
      this.nodes.set(n.id, { ...n, x: (centre ? centre.x : 0) + r * Math.cos(angle), y: (centre ? centre.y : 0) + r * Math.sin(angle) });
    }
    for (const e of edges) {
      const k = `${e.source}\u0000${e.target}\u0000${e.relation}`;
      if (!this.edges.has(k) && this.nodes.has(e.source) && this.nodes.has(e.target)) this.edges.set(k, e);
    }
    this.layout(centre ? 120 : 300, centre ? new Set(nodes.map((n) => n.id)) : null);
    this.draw();
  }

  // Fruchterman-Reingold, deterministic: positions start on circles, no randomness
  layout(steps, movable) {
    const list = [...this.nodes.values()];
    const ideal = Math.max(70, 18 * Math.sqrt(list.length)); // more room as the graph grows
    for (let step = 0; step < steps; step++) {
      const t = 12 * (1 - step / steps) + 0.5;
      for (const a of list) { a.dx = 0; a.dy = 0; }
      for (let i = 0; i < list.length; i++) for (let j = i + 1; j < list.length; j++) {
        const a = list[i], b = list[j];
        let dx = a.x - b.x, dy = a.y - b.y; const d2 = dx * dx + dy * dy + 0.01;
        const f = (ideal * ideal) / d2; a.dx += dx * f; a.dy += dy * f; b.dx -= dx * f; b.dy -= dy * f;
      }
      for (const e of this.edges.values()) {
        const a = this.nodes.get(e.source), b = this.nodes.get(e.target);
        const dx = a.x - b.x, dy = a.y - b.y; const d = Math.sqrt(dx * dx + dy * dy) + 0.01;
        const f = d / ideal; a.dx -= dx * f; a.dy -= dy * f; b.dx += dx * f; b.dy += dy * f;
      }
      for (const a of list) {
        if (movable && !movable.has(a.id)) continue;
        a.dx -= a.x * 0.01; a.dy -= a.y * 0.01; // a weak pull to the centre keeps components together
        const d = Math.sqrt(a.dx * a.dx + a.dy * a.dy) + 0.01;
        a.x += (a.dx / d) * Math.min(d, t); a.y += (a.dy / d) * Math.min(d, t);
      }
    }
  }

  draw() {
    this.edgeLayer.replaceChildren(...[...this.edges.values()].map((e) => {
      const a = this.nodes.get(e.source), b = this.nodes.get(e.target);
      return s("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, "stroke-width": Math.min(4, 0.6 + Math.log1p(e.weight || 1)) }, s("title", {}, `${a.name} ${e.phrase || e.relation} ${b.name}${e.sentence ? `: ${e.sentence}` : ""}`));
    }));
    this.nodeLayer.replaceChildren(...[...this.nodes.values()].map((n) => {
      const r = 5 + Math.min(10, Math.sqrt(n.degree || 1));
      const g = s("g", { class: n.id === this.selected ? "node selected" : "node", transform: `translate(${n.x},${n.y})`, tabindex: "0", role: "button", "data-id": n.id, "aria-label": `${n.name} (${n.type})` },
        s("circle", { r, fill: this.colour(n.type) }), s("text", { x: r + 3, y: 4 }, n.name.length > 28 ? `${n.name.slice(0, 27)}…` : n.name));
      g.addEventListener("click", (e) => { e.stopPropagation(); this.select(n.id); });
      g.addEventListener("dblclick", (e) => { e.stopPropagation(); this.onExpand(n.id); });
      g.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); this.select(n.id); }
        if (e.key === "+" || e.key === "x") { e.preventDefault(); this.onExpand(n.id); }
      });
      return g;
    }));
    this.fit();
  }

  select(id) {
    this.selected = id;
    for (const g of this.nodeLayer.children) g.classList.toggle("selected", g.getAttribute("data-id") === id);
    this.onSelect(id);
  }

  fit() {
    const list = [...this.nodes.values()];
    if (!list.length) return;
    const xs = list.map((n) => n.x), ys = list.map((n) => n.y);
    const pad = 60, x0 = Math.min(...xs) - pad, y0 = Math.min(...ys) - pad;
    const w = Math.max(...xs) - x0 + pad * 2, hgt = Math.max(...ys) - y0 + pad;
    this.svg.setAttribute("viewBox", `${x0} ${y0} ${w} ${hgt}`);
    this.base = { x0, y0, w, h: hgt };
    // labels about 11 screen pixels high whatever the graph's extent
    const scale = Math.min((this.svg.clientWidth || 800) / w, (this.svg.clientHeight || 400) / hgt);
    this.nodeLayer.style.fontSize = `${11 / Math.max(0.05, scale)}px`;
    this.view = { x: 0, y: 0, k: 1 };
    this._apply();
  }

  zoom(factor) { this.view.k = Math.max(0.2, Math.min(8, this.view.k * factor)); this._apply(); }

  _apply() {
    const { x, y, k } = this.view;
    const cx = this.base ? this.base.x0 + this.base.w / 2 : 0, cy = this.base ? this.base.y0 + this.base.h / 2 : 0;
    this.stage.setAttribute("transform", `translate(${x + cx * (1 - k)},${y + cy * (1 - k)}) scale(${k})`);
  }

  _panning() {
    let start = null;
    this.svg.addEventListener("pointerdown", (e) => {
      if (e.target.closest && e.target.closest("g.node")) return;
      start = { x: e.clientX, y: e.clientY, vx: this.view.x, vy: this.view.y };
      this.svg.setPointerCapture(e.pointerId);
    });
    this.svg.addEventListener("pointermove", (e) => {
      if (!start || !this.base) return;
      const scale = this.base.w / this.svg.clientWidth;
      this.view.x = start.vx + (e.clientX - start.x) * scale; this.view.y = start.vy + (e.clientY - start.y) * scale;
      this._apply();
    });
    const stop = () => { start = null; };
    this.svg.addEventListener("pointerup", stop); this.svg.addEventListener("pointercancel", stop);
    this.svg.addEventListener("wheel", (e) => { e.preventDefault(); this.zoom(e.deltaY < 0 ? 1.15 : 1 / 1.15); }, { passive: false });
  }
}
