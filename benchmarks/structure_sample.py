"""A seeded sample of an index's structures for a blind rating, as JSON or Markdown.

Each item shows what a reader of the web explorer or a notebook sees of one structure,
and nothing about the code or settings that built it. For the tree: a summary node's
name, its summary, its parent's name and the pages it covers. Given several indexes
(``--index A --index B``: today's build and a new one of the same manual), the items
of all of them are shuffled together under neutral ids, and the key (which index each
item came from) goes to a separate file for whoever tallies the ratings.

    python benchmarks/structure_sample.py --index OLD --index NEW --seed 0 \
        --out sheet.md --key key.json [--kinds tree] [--per-index 20]

``--recompute DIR`` (repeatable) adds an index whose digests and names are recomputed
with the code checked out, from its stored tree (:mod:`benchmarks.restructure`): the
same nodes, drawn with the same seed, as the landed code and as this checkout names
them, without a rebuild. Its key says "DIR (recomputed)".

Samplers are registered in :data:`SAMPLERS` by kind: a function from an opened
knowledge base, a seeded ``random.Random`` and a count to a list of items (plain dicts
whose keys are the fields the rater reads, in order).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

Item = dict[str, Any]
Sampler = Callable[[Any, random.Random, int], list[Item]]
PAGES_SHOWN = 5


def tree_items(
    kb: Any, rng: random.Random, count: int, only: frozenset[str] | None = None, multi_page: bool = False
) -> list[Item]:
    """``count`` summary nodes of the public tree (of those in ``only``, when given; of
    those covering two pages or more with ``multi_page``: the nodes a reader moves
    between pages by), drawn uniformly with ``rng``: name, summary, parent's name and
    covered pages (most covered first)."""
    tree = kb.explorer.tree_view().tree
    ids = sorted(
        n.node_id for n in tree.summaries()
        if (only is None or n.node_id in only) and (not multi_page or len(n.doc_ids) >= 2)
    )
    picked = sorted(rng.sample(ids, min(count, len(ids))))
    titles = {doc_id: info.title or doc_id for doc_id, info in kb.index.store.docs.items()}
    items = []
    for node_id in picked:
        node = tree.node(node_id)
        parent = tree.node(node.parents[0]).title if node.parents else "(none: the root)"
        pages = [titles.get(d, d) for d in node.doc_ids[:PAGES_SHOWN]]
        more = len(node.doc_ids) - len(pages)
        items.append({
            "kind": "tree node",
            "name": node.title,
            "parent's name": parent,
            "pages": pages + ([f"... and {more} more"] if more > 0 else []),
            "summary": node.text,
        })
    return items


# kind -> sampler; the communities' sampler is registered beside this one
SAMPLERS: dict[str, Sampler] = {"tree": tree_items}


def changed_nodes(indexes: list[Path]) -> frozenset[str]:
    """The summary nodes of the indexes' trees whose name or summary differ between them
    (nodes of the same id in each; a narrow change is rated on the nodes it changes)."""
    import arborgraph

    seen: dict[str, set[tuple[str, str]]] = {}
    for index in indexes:
        kb = arborgraph.open(index)
        try:
            for node in kb.explorer.tree_view().tree.summaries():
                seen.setdefault(node.node_id, set()).add((node.title, node.text))
        finally:
            kb.close()
    return frozenset(node_id for node_id, versions in seen.items() if len(versions) > 1)


class _Recomputed:
    """An opened index seen with its tree's digests and names recomputed by this
    checkout's code (:func:`benchmarks.restructure.resummarised_tree`): the stored
    tree's shape, today's text. Only ``explorer.tree_view()`` differs from ``kb``."""

    def __init__(self, kb: Any) -> None:
        self._kb = kb
        self.explorer = _RecomputedExplorer(kb)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kb, name)


class _RecomputedExplorer:
    """``kb.explorer`` whose public tree is recomputed (see :class:`_Recomputed`)."""

    def __init__(self, kb: Any) -> None:
        self._kb = kb
        self._view: Any = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kb.explorer, name)

    def tree_view(self) -> Any:
        if self._view is None:
            from types import SimpleNamespace

            from benchmarks.restructure import resummarised_tree

            self._view = SimpleNamespace(tree=resummarised_tree(self._kb.explorer.tree_view().tree, self._kb.engine.count_tokens))
        return self._view


RECOMPUTED = " (recomputed)"


def sample(
    indexes: list[Path], kinds: list[str], per_index: int, seed: int, recompute: list[Path] | None = None,
    changed_only: bool = False, multi_page: bool = False,
) -> tuple[list[Item], dict[str, str]]:
    """Items of every index and kind, shuffled together under neutral ids, and the key
    (item id -> index path; "PATH (recomputed)" for an index of ``recompute``, whose
    structures are recomputed with this checkout's code). ``changed_only``: tree nodes
    only from those whose name or summary differ between the ``indexes``; ``multi_page``:
    only from those covering two pages or more."""
    import arborgraph

    only = changed_nodes(indexes) if changed_only else None

    drawn: list[tuple[Item, str]] = []
    sources = [(index, False) for index in indexes] + [(index, True) for index in recompute or []]
    for index, fresh in sources:
        kb = arborgraph.open(index)
        try:
            view = _Recomputed(kb) if fresh else kb
            for kind in kinds:
                # one generator per (kind, index position): the same nodes are drawn
                # from an index whatever else is sampled beside it
                rng = random.Random(f"{seed}:{kind}")
                label = str(index) + (RECOMPUTED if fresh else "")
                sampler = SAMPLERS[kind]
                if only is None and not multi_page:
                    items = sampler(view, rng, per_index)
                else:
                    items = tree_items(view, rng, per_index, only, multi_page)
                drawn += [(item, label) for item in items]
        finally:
            kb.close()
    random.Random(seed).shuffle(drawn)
    items, key = [], {}
    for n, (item, index) in enumerate(drawn, start=1):
        item_id = f"item-{n:03d}"
        items.append({"id": item_id, **item})
        key[item_id] = index
    return items, key


def markdown(items: list[Item]) -> str:
    lines = [
        "# Structures to rate",
        "",
        "Rate each item from 1 to 5 (5: as useful as a good table-of-contents entry) for its",
        "name, and for its summary where it has one.",
        "",
    ]
    for item in items:
        lines += [f"## {item['id']} ({item['kind']})", ""]
        for field, value in item.items():
            if field in ("id", "kind"):
                continue
            if isinstance(value, list):
                lines.append(f"**{field}:**")
                lines += [f"- {v}" for v in value]
            elif "\n" in str(value):
                lines += [f"**{field}:**", "", "```", str(value), "```"]
            else:
                lines.append(f"**{field}:** {value}")
        lines += ["", "rating — name: _ / summary: _", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, action="append", default=[], help="an index (repeat to mix several)")
    parser.add_argument("--recompute", type=Path, action="append", default=[],
                        help="an index whose digests and names are recomputed with this checkout's code (repeatable)")
    parser.add_argument("--kinds", nargs="+", default=list(SAMPLERS), choices=list(SAMPLERS))
    parser.add_argument("--per-index", type=int, default=20, help="items of each kind drawn from each index")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--format", choices=["md", "json"], default="md")
    parser.add_argument("--out", type=Path, default=None, help="the sheet (default: stdout)")
    parser.add_argument("--key", type=Path, default=None, help="where the key goes (item id -> index)")
    parser.add_argument("--changed-only", action="store_true",
                        help="tree nodes only from those whose name or summary differ between the --index indexes")
    parser.add_argument("--multi-page", action="store_true",
                        help="tree nodes only from those covering two pages or more (the structure above the pages)")
    args = parser.parse_args(argv)
    if args.changed_only and (len(args.index) < 2 or args.kinds != ["tree"]):
        parser.error("--changed-only compares the trees of two or more --index indexes (--kinds tree)")
    if not args.index and not args.recompute:
        parser.error("give at least one --index or --recompute")
    if len(args.index) + len(args.recompute) > 1 and args.key is None:
        parser.error("--key is needed with several indexes: the sheet itself does not say which is which")
    if args.multi_page and args.kinds != ["tree"]:
        parser.error("--multi-page draws tree nodes (--kinds tree)")
    items, key = sample(
        args.index, args.kinds, args.per_index, args.seed, args.recompute, args.changed_only, args.multi_page
    )
    text = markdown(items) if args.format == "md" else json.dumps(items, indent=1, ensure_ascii=False) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text, encoding="utf-8")
    if args.key is not None:
        args.key.write_text(json.dumps(key, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
