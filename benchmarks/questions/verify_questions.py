"""Check the evaluation question set against the bundled sample manual.

Each line of the question file is a JSON object::

    {"id": "lookup-01", "type": "lookup", "question": "...",
     "evidence": [{"text": "...", "page": "examples/sqlite/lang_select.md"}]}

Besides the schema, every evidence string must be a verbatim span of its page:
after normalisation (lowercase, every non-alphanumeric character replaced by a
space, whitespace collapsed) it must occur exactly once in the whole corpus
(all ``examples/sqlite/*.md`` bodies, frontmatter removed, no match across a
page boundary), and that one occurrence must be inside the named page.
Matches are whole-word: "wal" does not match inside "walk".

With ``--index IDX`` the corpus is instead the documents of an Arborgraph index
(any manual): each document's full text as the index stores it, keyed by its
doc id, so ``page`` names a doc id such as ``library/json.html``. Chunks overlap
and are slices of that text, so counting in the documents counts each
occurrence once. ``--min-per-type`` lowers the per-type minimum for a smaller set:
``python.jsonl`` (10 per type, over the first 300 pages of the Python 3.11 docs) is
checked with ``--index IDX --min-per-type 10 benchmarks/questions/python.jsonl``.

The router training files (``*_router.jsonl`` in the same folder) get a
schema check, and must not contain any question of the evaluation set.

Run ``python benchmarks/questions/verify_questions.py [--index IDX] [FILE]``; it exits 1 and
lists the failures if there are any (2 when FILE cannot be read).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from functools import lru_cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_QUESTIONS = Path(__file__).resolve().parent / "sqlite.jsonl"
CORPUS_DIR = REPO_ROOT / "examples" / "sqlite"

TYPES = ("lookup", "drilldown", "relational", "global")
MIN_PER_TYPE = 15
MIN_EVIDENCE, MAX_EVIDENCE = 1, 4
MIN_EVIDENCE_WORDS, MAX_EVIDENCE_WORDS = 5, 25
# A question that repeats this many consecutive words of its evidence is
# copying it rather than asking in other words.
MAX_SHARED_NGRAM = 4
# Distinct pages the evidence must come from, per type.
MIN_PAGES = {"lookup": 1, "drilldown": 1, "relational": 2, "global": 3}
FIELDS = {"id", "type", "question", "evidence"}
EVIDENCE_FIELDS = {"text", "page"}


# re's \w is "str.isalnum() or underscore", so this class is exactly the
# characters that are not alphanumeric.
_NON_ALNUM = re.compile(r"[\W_]+")


def normalize(text: str) -> str:
    """Lowercase, turn every non-alphanumeric character into a space, collapse spaces."""
    return _NON_ALNUM.sub(" ", text.lower()).strip()


def strip_frontmatter(text: str) -> str:
    """The Markdown body of a page: everything after the closing ``---``."""
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end != -1:
            return text[end + 5:]
    return text


@lru_cache(maxsize=4)
def load_corpus(corpus_dir: Path = CORPUS_DIR) -> dict[str, str]:
    """Normalised body of every page, keyed by its repo-relative path."""
    pages = {}
    for path in sorted(corpus_dir.glob("*.md")):
        try:
            key = path.relative_to(REPO_ROOT).as_posix()
        except ValueError:
            key = path.as_posix()
        pages[key] = normalize(strip_frontmatter(path.read_text(encoding="utf-8")))
    return pages


def load_index_corpus(index_dir: Path) -> dict[str, str]:
    """Normalised full text of every document of an Arborgraph index, keyed by doc id."""
    # Imported here so the default check (the sample manual) runs without the package.
    from arborgraph.index.store import open_generation

    docs = open_generation(index_dir).table("documents", ["doc_id", "text"]).to_pylist()
    return {d["doc_id"]: normalize(d["text"]) for d in docs}


def occurrences(needle: str, pages: dict[str, str]) -> Counter[str]:
    """Whole-word occurrences of a normalised string, counted per page."""
    found: Counter[str] = Counter()
    size = len(needle)
    for page, body in pages.items():
        start = body.find(needle)
        while start != -1:
            end = start + size
            # Normalised text is words separated by single spaces, so a whole-word
            # match is one with a space (or the page edge) on both sides.
            if (start == 0 or body[start - 1] == " ") and (end == len(body) or body[end] == " "):
                found[page] += 1
            start = body.find(needle, start + 1)
    return found


def _ngrams(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def _check_record(lineno: int, rec: object, pages: dict[str, str]) -> tuple[str | None, list[str]]:
    where = f"line {lineno}"
    if not isinstance(rec, dict):
        return None, [f"{where}: not a JSON object"]
    fails: list[str] = []
    qid = rec.get("id")
    if isinstance(qid, str) and qid:
        where = f"line {lineno} ({qid})"
    else:
        fails.append(f"{where}: missing or empty id")
        qid = None
    if set(rec) != FIELDS:
        fails.append(f"{where}: fields must be exactly {sorted(FIELDS)}, got {sorted(rec)}")
    qtype = rec.get("type")
    if qtype not in TYPES:
        fails.append(f"{where}: type {qtype!r} is not one of {TYPES}")
    question = rec.get("question")
    if not isinstance(question, str) or not question.strip():
        fails.append(f"{where}: missing question")
        question = ""
    evidence = rec.get("evidence")
    if not isinstance(evidence, list) or not MIN_EVIDENCE <= len(evidence) <= MAX_EVIDENCE:
        fails.append(f"{where}: evidence must be a list of {MIN_EVIDENCE}-{MAX_EVIDENCE} items")
        return qid, fails
    q_ngrams = _ngrams(normalize(question).split(), MAX_SHARED_NGRAM)
    seen_pages = set()
    for i, ev in enumerate(evidence, 1):
        ew = f"{where} evidence {i}"
        if not isinstance(ev, dict) or set(ev) != EVIDENCE_FIELDS:
            fails.append(f"{ew}: must be an object with exactly {sorted(EVIDENCE_FIELDS)}")
            continue
        text, page = ev["text"], ev["page"]
        if not isinstance(text, str) or not isinstance(page, str):
            fails.append(f"{ew}: text and page must be strings")
            continue
        seen_pages.add(page)
        norm = normalize(text)
        nwords = len(norm.split())
        if not MIN_EVIDENCE_WORDS <= nwords <= MAX_EVIDENCE_WORDS:
            fails.append(f"{ew}: {nwords} words, want {MIN_EVIDENCE_WORDS}-{MAX_EVIDENCE_WORDS}: {text!r}")
        if page not in pages:
            fails.append(f"{ew}: page {page!r} is not in the corpus")
            continue
        found = occurrences(norm, pages)
        total = sum(found.values())
        if total == 0:
            fails.append(f"{ew}: not found in the corpus: {text!r}")
        elif found[page] == 0:
            fails.append(f"{ew}: not in {page} but in {sorted(found)}: {text!r}")
        elif total > 1:
            fails.append(f"{ew}: occurs {total} times ({dict(found)}), want exactly once: {text!r}")
        shared = q_ngrams & _ngrams(norm.split(), MAX_SHARED_NGRAM)
        if shared:
            fails.append(f"{ew}: question repeats evidence words {' '.join(sorted(shared)[0])!r}")
    if qtype in MIN_PAGES and len(seen_pages) < MIN_PAGES[qtype]:
        fails.append(f"{where}: a {qtype} question needs evidence from at least "
                     f"{MIN_PAGES[qtype]} different pages, has {len(seen_pages)}")
    return qid, fails


def verify(path: str | Path = DEFAULT_QUESTIONS, corpus_dir: Path = CORPUS_DIR,
           index: Path | None = None, min_per_type: int = MIN_PER_TYPE) -> list[str]:
    """Validate a question file; return the failures (empty when it passes).

    The corpus is the sample manual in ``corpus_dir``, or with ``index`` the
    documents of that Arborgraph index.
    """
    pages = load_index_corpus(Path(index)) if index is not None else load_corpus(Path(corpus_dir))
    if not pages:
        return [f"no pages found in {index if index is not None else corpus_dir}"]
    fails: list[str] = []
    ids: Counter[str] = Counter()
    per_type: Counter[str] = Counter()
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            fails.append(f"line {lineno}: invalid JSON: {exc}")
            continue
        qid, rec_fails = _check_record(lineno, rec, pages)
        fails.extend(rec_fails)
        if qid:
            ids[qid] += 1
        if isinstance(rec, dict) and rec.get("type") in TYPES:
            per_type[rec["type"]] += 1
    fails.extend(f"id {qid!r} used {n} times" for qid, n in sorted(ids.items()) if n > 1)
    for qtype in TYPES:
        if per_type[qtype] < min_per_type:
            fails.append(f"type {qtype!r}: {per_type[qtype]} questions, want at least {min_per_type}")
    return fails


def questions(path: str | Path) -> list[str]:
    """The question texts of a JSONL file, in file order (invalid lines skipped)."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("question"), str):
            out.append(rec["question"])
    return out


def verify_router(path: str | Path, min_per_type: int = 10,
                  exclude: frozenset[str] = frozenset()) -> list[str]:
    """Validate router training data: ``{"id", "type", "question"}`` per line.

    Ids must be unique, types valid, every type present ``min_per_type``
    times, and no question may repeat (after normalisation) within the file
    or appear in ``exclude`` (normalised questions of an evaluation set, so
    the router is never trained on what it is tested with).
    """
    fails: list[str] = []
    ids: Counter[str] = Counter()
    per_type: Counter[str] = Counter()
    seen: dict[str, int] = {}
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            fails.append(f"line {lineno}: invalid JSON: {exc}")
            continue
        if not isinstance(rec, dict) or set(rec) != {"id", "type", "question"}:
            fails.append(f"line {lineno}: want an object with exactly id, type, question")
            continue
        ids[str(rec["id"])] += 1
        if rec["type"] not in TYPES:
            fails.append(f"line {lineno}: type {rec['type']!r} is not one of {TYPES}")
        else:
            per_type[rec["type"]] += 1
        question = rec["question"]
        if not isinstance(question, str) or not question.strip():
            fails.append(f"line {lineno}: empty question")
            continue
        norm = normalize(question)
        if norm in seen:
            fails.append(f"line {lineno}: same question as line {seen[norm]}")
        seen.setdefault(norm, lineno)
        if norm in exclude:
            fails.append(f"line {lineno}: question is also in the evaluation set")
    fails.extend(f"id {qid!r} used {n} times" for qid, n in sorted(ids.items()) if n > 1)
    for qtype in TYPES:
        if per_type[qtype] < min_per_type:
            fails.append(f"type {qtype!r}: {per_type[qtype]} questions, want at least {min_per_type}")
    return fails


def main(argv: list[str] | None = None) -> int:
    """Verify the evaluation set (or the file given) and every ``*_router.jsonl`` beside it."""
    parser = argparse.ArgumentParser(
        description="Check an evaluation question file against the sample manual (or the "
        "documents of an index), and the *_router.jsonl files beside it; exits 1 and lists "
        "the failures if there are any.",
    )
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT_QUESTIONS,
                        help=f"questions JSONL (default: {DEFAULT_QUESTIONS.relative_to(REPO_ROOT)})")
    parser.add_argument("--index", type=Path, default=None,
                        help="check against the documents of this Arborgraph index; pages are doc ids")
    parser.add_argument("--min-per-type", type=int, default=MIN_PER_TYPE,
                        help=f"questions wanted per type (default: {MIN_PER_TYPE})")
    args = parser.parse_args(argv)
    path = args.file
    try:
        path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        parser.error(f"cannot read {path}: {exc}")
    if args.index is not None:
        from arborgraph.core.errors import IndexUnusable

        try:
            fails = verify(path, index=args.index, min_per_type=args.min_per_type)
        except IndexUnusable as exc:
            parser.error(str(exc))
    else:
        fails = verify(path, min_per_type=args.min_per_type)
    report: list[tuple[Path, list[str]]] = [(path, fails)]
    exclude = frozenset(normalize(q) for q in questions(path))
    for router in sorted(path.parent.glob("*_router.jsonl")):
        report.append((router, verify_router(router, exclude=exclude)))
    status = 0
    for file, fails in report:
        for fail in fails:
            print(f"{file.name}: {fail}")
        n = len(questions(file))
        if fails:
            print(f"{file}: {len(fails)} failure(s)", file=sys.stderr)
            status = 1
        else:
            print(f"{file}: {n} questions OK")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
