// Tree: the summary tree of the caller's scope as an outline that opens level by level,
// an icicle of the top levels, a node's details, and the path an Ask result's tree walk took.
import { docOf, get } from "./api.js";
import { fill, h, kv, s, showError } from "./dom.js";

const PALETTE = ["#1f5f4a", "#2b6cb0", "#6b46c1", "#b7791f", "#c05621", "#2f855a", "#9b2c2c", "#4a5568"];

// an icicle: the root across the top, each node as wide as the chunks it covers
function icicle(tree, onPick) {
  const byId = new Map(tree.nodes.map((n) => [n.id, n]));
  const root = byId.get(tree.root);
  const depthOf = new Map([[tree.root, 0]]);
  let depth = 0;
  for (const n of tree.nodes) for (const c of n.children) { depthOf.set(c, depthOf.get(n.id) + 1); depth = Math.max(depth, depthOf.get(c)); }
  const W = 1000, rowH = 240 / (depth + 1);
  const svg = s("svg", { class: "icicle", id: "icicle", viewBox: `0 0 ${W} 240`, preserveAspectRatio: "none", role: "img", "aria-label": `Icicle of ${tree.nodes.length} tree nodes` });
  const frag = document.createDocumentFragment();
  const place = (node, x0, x1, d, colour) => {
    const rect = s("rect", { x: x0, y: d * rowH, width: Math.max(0, x1 - x0), height: rowH, fill: colour, "data-id": node.id },
      s("title", {}, `${node.id} · ${node.title} (${node.chunks} chunks)`));
    frag.append(rect);
    if (x1 - x0 > 60) frag.append(s("text", { x: x0 + 3, y: d * rowH + 13 }, (node.title || node.id).slice(0, Math.floor((x1 - x0) / 6.5))));
    const total = node.children.reduce((sum, c) => sum + Math.max(1, byId.get(c).chunks), 0);
    let x = x0;
    node.children.forEach((c, i) => {
      const child = byId.get(c);
      const w = ((x1 - x0) * Math.max(1, child.chunks)) / total;
      place(child, x, x + w, d + 1, d === 0 ? PALETTE[i % PALETTE.length] : colour);
      x += w;
    });
  };
  place(root, 0, W, 0, "#33413b");
  svg.append(frag);
  svg.addEventListener("click", (e) => { const id = e.target.getAttribute && e.target.getAttribute("data-id"); if (id) onPick(id); });
  return svg;
}

export async function renderTree(params, env) {
  const depth = Math.max(1, Math.min(8, parseInt(params.get("depth") || "4", 10)));
  const maxNodes = Math.max(1, Math.min(20000, parseInt(params.get("nodes") || "2500", 10)));
  const tree = await get("/v1/web/tree", { depth, max_nodes: maxNodes });
  const onPath = new Set(env.shared.treePath || []);
  const details = h("section", { class: "panel", id: "node-details", "aria-live": "polite" }, h("p", { class: "muted" }, "Select a node to see its summary, children and documents."));
  const rows = new Map(); // node id -> its row in the outline
  let selected = null;

  async function select(id) {
    if (selected) { const old = rows.get(selected); if (old) old.row.classList.remove("selected"); }
    for (const r of document.querySelectorAll("#icicle rect.selected")) r.classList.remove("selected");
    selected = id;
    const mine = rows.get(id);
    if (mine) mine.row.classList.add("selected");
    const rect = document.querySelector(`#icicle rect[data-id="${CSS.escape(id)}"]`);
    if (rect) rect.classList.add("selected");
    try {
      const node = await get("/v1/tree/node", { id });
      if (selected !== id) return;
      const docs = [...new Set(node.doc_ids)];
      const isLeaf = node.level === 0;
      fill(details,
        h("h2", {}, node.title || node.node_id),
        kv([["node", h("code", {}, node.node_id)], ["level", node.level], ["children", node.children.length], ["chunks covered", node.chunk_ids.length],
          ["documents", docs.length], ["summariser", node.summariser], ["comes from", node.origin ? `${node.origin}${node.label ? ` (named by ${node.label})` : ""}` : "a chunk"], ["heading", (node.heading_path || []).join(" › ")], ["generation", node.generation]]),
        h("h3", {}, isLeaf ? "Passage" : "Summary"), h("pre", { id: "node-text" }, node.text),
        isLeaf ? h("p", {}, h("button", { type: "button", class: "small", onclick: () => env.openPassage(docOf(node.node_id), node.node_id) }, "Open in its page")) : null,
        h("h3", {}, `Documents (${docs.length})`),
        h("ul", { class: "small", id: "node-docs" }, docs.slice(0, 60).map((d) => h("li", {}, h("button", { type: "button", class: "small secondary", onclick: () => env.openPassage(d, null) }, d)))),
        docs.length > 60 ? h("p", { class: "muted small" }, `and ${docs.length - 60} more`) : null,
        isLeaf ? null : h("details", {}, h("summary", {}, `Chunks covered (${node.chunk_ids.length})`),
          h("div", { class: "row small", id: "node-chunks" }, node.chunk_ids.slice(0, 120).map((c) =>
            h("button", { type: "button", class: "small secondary", onclick: () => env.openPassage(docOf(c), c) }, c)))));
    } catch (err) { showError(err); }
  }

  // where a node comes from: the manual's outline, or a cluster (named by a title that
  // covers part of it, or by keyphrases when none covers about half)
  function evidence(node) {
    if (!node.origin) return null;
    const text = node.origin === "outline" ? "outline"
      : node.label === "title" && node.coverage != null ? `cluster · title over ${Math.round(node.coverage * 100)} %`
      : `cluster · ${node.label}`;
    return h("span", { class: `evidence ${node.origin}`, title: "where this node comes from" }, text);
  }

  function rowFor(node) {
    const hasKids = (node.child_count ?? node.children.length) > 0;
    const kids = h("ul", { role: "group", hidden: true });
    const toggle = h("button", { type: "button", class: "toggle", "aria-expanded": "false", "aria-label": `expand ${node.title || node.id}`, disabled: !hasKids }, hasKids ? "▸" : "·");
    const title = h("button", { type: "button", class: "title", title: node.title, "data-id": node.id, onclick: () => select(node.id) }, node.title || node.id);
    const row = h("div", { class: onPath.has(node.id) ? "node-row on-path" : "node-row" }, toggle, h("span", { class: "lvl" }, `L${node.level}`), title, evidence(node));
    const item = h("li", { role: "treeitem", "data-id": node.id, "data-level": node.level }, row, kids);
    const entry = { row, kids, toggle, loaded: false, item };
    rows.set(node.id, entry);
    toggle.addEventListener("click", () => expand(node.id, toggle.getAttribute("aria-expanded") !== "true"));
    title.addEventListener("keydown", (e) => {
      if (e.key === "ArrowRight") { e.preventDefault(); expand(node.id, true); }
      if (e.key === "ArrowLeft") { e.preventDefault(); expand(node.id, false); }
    });
    return item;
  }

  async function expand(id, open) {
    const entry = rows.get(id);
    if (!entry || entry.toggle.disabled) return;
    if (open && !entry.loaded) {
      entry.loaded = true;
      try {
        const res = await get("/v1/tree/children", { id });
        entry.kids.replaceChildren(...res.children.map((c) => rowFor({ id: c.node_id, level: c.level, title: c.title, children: c.children, origin: c.origin, label: c.label, coverage: c.coverage })));
      } catch (err) { entry.loaded = false; showError(err); return; }
    }
    entry.kids.hidden = !open;
    entry.toggle.setAttribute("aria-expanded", open ? "true" : "false");
    entry.toggle.textContent = open ? "▾" : "▸";
  }

  const rootNode = tree.nodes.find((n) => n.id === tree.root);
  const outline = h("ul", { class: "outline", role: "tree", id: "outline", "aria-label": "Summary tree outline" }, rowFor(rootNode));
  const pic = icicle(tree, (id) => select(id));
  for (const id of onPath) { const r = pic.querySelector(`rect[data-id="${CSS.escape(id)}"]`); if (r) r.classList.add("on-path"); }

  const page = h("div", { class: "stack" },
    h("section", { class: "panel" },
      h("div", { class: "row" }, h("h2", {}, "Summary tree"),
        h("span", { class: "muted small", id: "tree-count" }, `${tree.nodes.length} nodes shown${tree.truncated ? " (first of many)" : ""} · ${tree.generation}`),
        onPath.size ? h("span", { class: "small", id: "walk-note" }, `highlighted: the tree walk ${[...onPath].join(" → ")}`) : null),
      pic),
    h("div", { class: "grid-side" }, h("section", { class: "panel outline-wrap" }, outline), details));

  // open the outline along the highlighted walk, level by level
  if (onPath.size) {
    // the walk as it was when the page was drawn: a scope change meanwhile clears the
    // shared one and draws another page, and this one stops asking for its nodes
    const walk = [...env.shared.treePath];
    setTimeout(async () => {
      for (const id of walk.slice(0, -1)) {
        if (!page.isConnected) return;
        await expand(id, true);
      }
      const last = walk[walk.length - 1];
      if (!page.isConnected) return;
      if (rows.has(last)) { rows.get(last).item.scrollIntoView({ block: "nearest" }); }
      select(last);
    }, 0);
  } else setTimeout(() => expand(tree.root, true), 0);
  requestAnimationFrame(() => performance.mark("tree-ready"));
  return page;
}
