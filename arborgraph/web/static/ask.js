// Ask: a question, a route (auto or forced), the contexts in rank order with why they
// were chosen, and, when the server has an LLM, the streamed answer with its citations.
import { ApiError, docOf, get, post, stream } from "./api.js";
import { fmt, h, kv, showError } from "./dom.js";

const ROUTES = ["auto", "lookup", "tree", "graph", "global"];
let lastResult = null; // kept while the page lives, so coming back to Ask shows it again
// the conversation with the server's LLM: earlier turns go with each new question (a new
// key reloads the page, so no turn outlives the key it was asked with)
const conversation = [];
const MAX_TURNS = 8;
let lastTurn = null; // the answer on screen: it joins the conversation when the next question is asked

// the passage a context stands on: a chunk is its own, derived content cites its first provenance chunk
function passageOf(ctx) {
  if (ctx.kind === "chunk") return [ctx.source, ctx.node_id];
  const chunk = (ctx.provenance || [])[0];
  return chunk ? [docOf(chunk), chunk] : [ctx.source, null];
}

// "tree: L5:0 -> L4:1 -> L2:7 -> chunk" -> ["L5:0", "L4:1", "L2:7", <the context's node>];
// for a key that reads several scopes the trace names the tree's: "tree (acl:team-a): ..."
const WALK = /^tree(?: \(([^)]*)\))?: (.*->.*)$/;
export function treeWalk(ctx) {
  const step = (ctx.trace || []).map((t) => WALK.exec(t)).find(Boolean);
  if (!step) return { path: [], scope: "" };
  return { path: step[2].split(" -> ").map((id) => (id === "chunk" ? ctx.node_id : id)), scope: step[1] || "" };
}

function contextCard(ctx, rank, env, why) {
  const [doc, chunk] = passageOf(ctx);
  const text = h("div", { class: "ctx-text", id: `ctx-text-${rank}` }, ctx.text);
  const walk = treeWalk(ctx);
  return h("li", { class: "ctx", id: `ctx-${rank}`, "data-kind": ctx.kind, "data-source": ctx.source },
    h("div", { class: "ctx-head" },
      h("span", { class: "ctx-rank" }, `[${rank}]`),
      h("span", { class: `badge kind-${ctx.kind}` }, ctx.kind),
      h("b", {}, ctx.source),
      h("span", { class: "muted small" }, `score ${fmt(ctx.score, 4)}`),
      ctx.level !== null && ctx.level !== undefined ? h("span", { class: "muted small" }, `level ${ctx.level}`) : null,
      (ctx.flags || []).length ? h("span", { class: "error small" }, ctx.flags.join(", ")) : null),
    h("div", { class: "ctx-path" }, (ctx.heading_path || []).join(" › ") || ctx.node_id),
    text,
    h("div", { class: "row" },
      h("button", { type: "button", class: "small", "data-open": rank, onclick: () => env.openPassage(doc, chunk) }, "Open passage"),
      h("button", { type: "button", class: "small secondary", "aria-controls": text.id, onclick: (e) => {
        const open = text.classList.toggle("open"); e.target.textContent = open ? "Less" : "More"; } }, "More"),
      walk.path.length ? h("button", { type: "button", class: "small secondary", onclick: () => {
        env.shared.treePath = walk.path; if (walk.scope) env.chooseScope(walk.scope); location.hash = "#tree"; } }, "Show tree walk") : null),
    why && (ctx.trace || []).length ? h("div", { class: "muted small mono ctx-trace" }, ctx.trace.join(" · ")) : null);
}

function routingPanel(res) {
  const r = res.routing;
  return h("section", { class: "panel", id: "routing", "aria-label": "Routing" },
    h("h2", {}, "Why this route"),
    kv([
      ["route", h("b", { id: "route-taken" }, res.route)],
      ["decided", r.forced ? "forced by you" : `auto, confidence ${fmt(r.confidence, 2)}`],
      ["reason", r.reason],
      ["fused with", r.fused_with],
      ["scores", Object.entries(r.scores || {}).map(([k, v]) => `${k} ${fmt(v, 2)}`).join(" · ")],
      ["index", res.mode && res.mode.label],
      ["generation", res.generation],
    ]),
    (res.notes || []).length ? h("ul", { class: "small" }, res.notes.map((n) => h("li", {}, n))) : null,
    res.explain ? h("details", {}, h("summary", {}, "explain(): what each retriever returned, what ranking and the budget did"), h("pre", { id: "explain" }, res.explain)) : null);
}

function answerPanel() {
  const text = h("div", { class: "answer", id: "answer-text", "aria-live": "polite" });
  const cites = h("ol", { class: "small", id: "answer-citations" });
  // the heading shows once a citation is listed: an answer that cites nothing has none
  const heading = h("h3", { hidden: true }, "Citations");
  new MutationObserver(() => { heading.hidden = !cites.children.length; }).observe(cites, { childList: true });
  return { el: h("section", { class: "panel", id: "answer" }, h("h2", {}, "Answer"), text, heading, cites), text, cites };
}

// "[n]" in the answer becomes a button opening context n's passage
function linkCitations(target, answer, contexts, env) {
  target.replaceChildren();
  let last = 0;
  for (const m of answer.matchAll(/\[(\d{1,3})\]/g)) {
    const n = Number(m[1]);
    target.append(answer.slice(last, m.index));
    if (n >= 1 && n <= contexts.length) {
      const [doc, chunk] = passageOf(contexts[n - 1]);
      target.append(h("button", { type: "button", class: "cite", "aria-label": `citation ${n}: open the passage`, onclick: () => env.openPassage(doc, chunk) }, `[${n}]`));
    } else target.append(m[0]);
    last = m.index + m[0].length;
  }
  target.append(answer.slice(last));
}

// without an LLM: the manual's sentences most likely to answer, each opening its passage
function highlightsPanel(highlights, contexts, env) {
  return h("section", { class: "panel", id: "highlights" },
    h("h2", {}, "Answer"),
    h("p", { class: "muted small" }, "The manual's sentences most likely to answer (no LLM wrote this)."),
    h("ol", { class: "highlights" }, highlights.map((hl) => {
      const ctx = contexts[hl.context - 1];
      const [doc, chunk] = ctx ? passageOf(ctx) : [hl.source, hl.node_id];
      return h("li", {}, hl.text, " ",
        h("button", { type: "button", class: "cite", "aria-label": `citation ${hl.context}: open the passage`, onclick: () => env.openPassage(doc, chunk) }, `[${hl.context}]`),
        h("span", { class: "muted small" }, " ", (hl.heading_path || []).join(" › ") || hl.source));
    })));
}

function conversationPanel(env) {
  if (!conversation.length) return null;
  return h("section", { class: "panel", id: "conversation" }, h("h2", {}, `Conversation (${conversation.length} earlier ${conversation.length === 1 ? "turn" : "turns"})`),
    h("ol", { class: "turns" }, conversation.map((t) => {
      const text = h("div", { class: "answer small" });
      linkCitations(text, t.answer, t.contexts, env);
      return h("li", { class: "turn" }, h("p", { class: "turn-q" }, t.question), text);
    })));
}

function showResult(out, res, env, answerText) {
  const contexts = res.contexts || [];
  const why = Boolean(document.getElementById("show-why")?.checked);
  const list = h("ol", { class: "contexts", id: "contexts", "aria-label": "Contexts in rank order" }, contexts.map((c, i) => contextCard(c, i + 1, env, why)));
  const left = h("div", { class: "stack" });
  const earlier = answerText !== undefined ? conversationPanel(env) : null;
  if (earlier) left.append(earlier);
  if (answerText !== undefined) {
    const a = answerPanel();
    linkCitations(a.text, answerText.text, contexts, env);
    for (const c of answerText.citations || []) {
      const [doc, chunk] = passageOf(contexts[c.n - 1]);
      a.cites.append(h("li", { value: c.n }, h("button", { type: "button", class: "cite", onclick: () => env.openPassage(doc, chunk) }, `[${c.n}]`), " ", (c.heading_path || []).join(" › ") || c.source));
    }
    left.append(a.el);
  } else if ((res.highlights || []).length) {
    left.append(highlightsPanel(res.highlights, contexts, env));
  }
  left.append(h("section", { class: "panel" }, h("h2", {}, `Contexts (${contexts.length})`),
    contexts.length ? list : h("p", { class: "muted" }, "Nothing this key may read answers that question.")));
  out.replaceChildren(h("div", { class: "grid-2" }, left, routingPanel(res)));
}

export function renderAsk(params, env) {
  const question = h("textarea", { id: "question", name: "question", rows: 2, required: true, maxlength: 4000, placeholder: "e.g. How does a WAL checkpoint work?" });
  question.value = params.get("q") || env.shared.lastQuestion || "";
  const route = h("select", { id: "route", name: "route" }, ROUTES.map((r) => h("option", { value: r }, r === "auto" ? "auto (router decides)" : r)));
  route.value = ROUTES.includes(params.get("route")) ? params.get("route") : "auto";
  // the form paints at once; the routes this index has not built are greyed out when known
  get("/v1/index").then((info) => {
    for (const option of route.options) option.disabled = option.value !== "auto" && !info.routes.includes(option.value);
    if (route.selectedOptions[0] && route.selectedOptions[0].disabled) route.value = "auto";
    wantAnswer.disabled = !info.answers;
    answerLabel.title = info.answers ? "" : "This server has no LLM (serve --llm-model NAME, or 'local' for the shipped model)";
    if (!info.answers) wantAnswer.checked = false;
  }, (err) => { if (err instanceof ApiError && err.status === 401) window.dispatchEvent(new CustomEvent("arborgraph:unauthorized")); });
  const topK = h("input", { type: "text", inputmode: "numeric", id: "top-k", value: "10", size: 3, "aria-label": "top k" });
  const wantAnswer = h("input", { type: "checkbox", id: "want-answer" });
  const answerLabel = h("label", { class: "check" }, wantAnswer, "Answer with the LLM (as a conversation)");
  // ranker traces on each context only when asked: they explain, they are not the answer
  const why = h("input", { type: "checkbox", id: "show-why" });
  why.addEventListener("change", () => { if (lastResult) showResult(out, lastResult.res, env, lastResult.answer); });
  const newChat = h("button", { type: "button", class: "small secondary", id: "new-conversation", onclick: () => {
    conversation.length = 0; lastTurn = null;
    if (lastResult) showResult(out, lastResult.res, env, lastResult.answer);
  } }, "New conversation");
  newChat.hidden = true;
  wantAnswer.addEventListener("change", () => { newChat.hidden = !wantAnswer.checked; });
  const out = h("div", { id: "ask-result", "aria-live": "polite" });
  const submit = h("button", { type: "submit", id: "ask-submit" }, "Ask");

  async function ask(event) {
    event.preventDefault();
    const q = question.value.trim();
    if (!q) { question.focus(); return; }
    env.shared.lastQuestion = q;
    const body = { question: q, route: route.value, top_k: Math.max(1, Math.min(200, parseInt(topK.value, 10) || 10)), explain: true };
    submit.disabled = true;
    out.replaceChildren(h("p", { class: "muted" }, "Searching…"));
    try {
      if (wantAnswer.checked) {
        if (lastTurn) conversation.push(lastTurn);
        lastTurn = null;
        while (conversation.length > MAX_TURNS) conversation.shift();
        body.history = conversation.map((t) => ({ question: t.question, answer: t.answer }));
        let res = null;
        const answer = { text: "", citations: [] };
        await stream("/v1/query/stream", body, (ev) => {
          if (ev.event === "contexts") { res = ev; showResult(out, res, env, answer); }
          else if (ev.event === "token") { answer.text += ev.text; showResult(out, res, env, answer); }
          else if (ev.event === "citations") { answer.citations = ev.citations; showResult(out, res, env, answer); }
          else if (ev.event === "error") showError(`The answer failed: ${ev.detail}`);
        });
        lastResult = { res, answer };
        if (res && answer.text) lastTurn = { question: q, answer: answer.text, contexts: res.contexts || [] };
      } else {
        const res = await post("/v1/query", body);
        lastResult = { res };
        showResult(out, res, env);
      }
      out.dataset.done = "1";
    } catch (err) {
      out.replaceChildren(h("p", { class: "error", role: "alert" }, err.message));
    } finally {
      submit.disabled = false;
    }
  }

  const form = h("form", { class: "panel stack", id: "ask-form", onsubmit: ask },
    h("label", { for: "question" }, "Question"), question,
    h("div", { class: "row" },
      h("label", { for: "route" }, "Route"), route,
      h("label", { for: "top-k" }, "Top k"), topK,
      answerLabel,
      h("label", { class: "check" }, why, "Why: ranker traces"),
      submit, newChat));
  question.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) form.requestSubmit(); });
  if (lastResult) showResult(out, lastResult.res, env, lastResult.answer);
  const page = h("div", { class: "stack" }, form, out);
  requestAnimationFrame(() => { performance.mark("ask-ready"); question.focus(); });
  return page;
}
