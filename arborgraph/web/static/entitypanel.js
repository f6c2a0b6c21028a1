// An entity's details (Graph and Communities pages): type, aliases, degree, its
// communities, description, mentions opening their passages, strongest relations. A
// field the index leaves empty is left out, never shown as "null".
import { docOf, get } from "./api.js";
import { h, kv } from "./dom.js";

const present = (v) => v !== null && v !== undefined && v !== "" && !(Array.isArray(v) && v.length === 0);

export async function entityDetails(id, env, { onExpand, communityTitle } = {}) {
  const [ent, nb] = await Promise.all([get("/v1/graph/entity", { name: id }), get("/v1/graph/neighbours", { name: id, limit: 10 })]);
  const communities = (ent.communities || []).filter(present);
  return h("div", {},
    h("h2", { id: "entity-name" }, ent.name),
    kv([
      ["type", ent.type],
      ["aliases", present(ent.aliases) ? ent.aliases.filter(present).join(", ") : null],
      ["degree", ent.degree],
      ["communities", communities.length ? communities.map((c) => (communityTitle && communityTitle(c)) || `#${c}`).join(" › ") : null],
      ["description", present(ent.description) ? ent.description : null],
    ].filter(([, v]) => present(v))),
    h("div", { class: "row" },
      onExpand ? h("button", { type: "button", class: "small", id: "expand-entity", onclick: () => onExpand(ent.id) }, "Add its neighbours to the graph") : null,
      h("a", { class: "small", id: "entity-around", href: `#graph?${new URLSearchParams({ focus: ent.id, depth: 2 })}` }, "Its neighbourhood on the Graph page")),
    h("h3", {}, `Mentions (${ent.chunk_ids.length})`),
    h("ul", { class: "small", id: "mentions" }, ent.chunk_ids.slice(0, 30).map((c) => h("li", {}, h("button", { type: "button", class: "small secondary", onclick: () => env.openPassage(docOf(c), c) }, c)))),
    nb.neighbours.length ? h("h3", {}, "Strongest relations") : null,
    h("ul", { class: "small", id: "relations" }, nb.neighbours.map((n) => h("li", {},
      n.direction === "out" ? [h("b", {}, n.phrase || n.relation), ` ${n.name} `] : [`${n.name} `, h("b", {}, n.phrase || n.relation), " this "],
      present(n.chunk_ids) ? h("button", { type: "button", class: "small secondary", onclick: () => env.openPassage(docOf(n.chunk_ids[0]), n.chunk_ids[0]) }, "stated here") : null,
      present(n.sentence) ? h("div", { class: "muted" }, n.sentence) : null))));
}
