// Small DOM helpers: elements are built with textContent only (never innerHTML), so no
// text from the index can run as markup.

// Bidi controls (RLO, LRI, ... and the marks) reorder what follows them: a file named
// "rtl\u202egnp.md" would read "rtldm.png". They are shown escaped, as the CLI does.
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
export function visible(text) {
  return String(text).replace(BIDI, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "class") el.className = value;
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(visible(child)));
  }
  return el;
}

// el.replaceChildren(...) would print a null child as the text "null": this skips the
// children a condition left out, and escapes text as h() does
export function fill(el, ...children) {
  el.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false)
    .map((c) => (c instanceof Node ? c : document.createTextNode(visible(c)))));
}

const SVG = "http://www.w3.org/2000/svg";
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, String(value));
  }
  for (const child of children.flat()) if (child !== null && child !== undefined) el.append(child instanceof Node ? child : document.createTextNode(visible(child)));
  return el;
}

export function kv(pairs) {
  return h("dl", { class: "kv" }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== "").flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

const statusBox = () => document.getElementById("status");
let statusTimer = 0;
export function showError(err) {
  const box = statusBox();
  box.textContent = visible(err instanceof Error ? err.message : String(err));
  clearTimeout(statusTimer);
  statusTimer = setTimeout(() => { box.textContent = ""; }, 8000);
}

export const fmt = (x, digits = 3) => (typeof x === "number" ? x.toFixed(digits) : "");
