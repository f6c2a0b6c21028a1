import { h } from "./dom.js";
export async function renderDocuments() { return h("section", { class: "panel" }, "Documents"); }
