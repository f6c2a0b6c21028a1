"""Retrieval over a RAPTOR tree. Pure functions: the caller computes query scores.

* :func:`collapsed_search` ranks nodes of every level together and fills a budget.
* :func:`traverse` drills down: it picks entry nodes high in the tree, descends
  through the best children with a beam, and returns one overview summary followed by
  the leaf chunks that carry the details, ranked by their own score plus the score of
  the selected subtree they sit in. Leaves outside the beam still compete on their own
  score, so a strong hit elsewhere is not lost to an early wrong turn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from arborgraph.core.ordering import top_k_indices
from arborgraph.core.results import Context
from raptor.tree import Node, Tree

CountTokens = Callable[[str], int]

_RRF_K = 60


def collapsed_search(
    tree: Tree, node_scores: Mapping[str, float], budget_tokens: int, count_tokens: CountTokens
) -> list[Context]:
    """Rank all scored nodes (any level) by score and keep those that fit the budget.

    Nodes missing from ``node_scores`` are not considered. Ties go to tree order.
    """
    ranked = sorted(
        (nid for nid in node_scores if nid in tree), key=lambda nid: (-node_scores[nid], tree.position(nid))
    )
    out: list[Context] = []
    used = 0
    for rank, nid in enumerate(ranked, start=1):
        node = tree.node(nid)
        cost = count_tokens(node.text)
        if used + cost > budget_tokens:
            continue
        used += cost
        out.append(node_context(node, float(node_scores[nid]), [f"tree:collapsed rank {rank} (level {node.level})"]))
    return out


def traverse(
    tree: Tree,
    query_vec: np.ndarray,
    node_vectors: np.ndarray,
    *,
    lexical_scores: Mapping[str, float] | np.ndarray | None = None,
    beam: int = 50,
    budget_tokens: int,
    count_tokens: CountTokens,
    subtree_weight: float = 1.0,
    path_decay: float = 0.5,
    overview_level: int = 1,
    anchors: int = 3,
    neighbours: int = 3,
    neighbour_pool: int = 80,
    max_leaves: int | None = None,
    node_tokens: Callable[[Node], int] | None = None,
    leaf_tokens: np.ndarray | None = None,
    leaf_pool: np.ndarray | None = None,
    read_leaves: Callable[[np.ndarray], np.ndarray] | None = None,
    leaf_sample: np.ndarray | None = None,
) -> list[Context]:
    """Drill-down retrieval: an overview summary first, then leaf chunks.

    A node's cost against ``budget_tokens`` is ``count_tokens(node.text)``, or
    ``node_tokens(node)`` when given (e.g. a chunk's count stored at index time); a
    leaf's is ``leaf_tokens[i]`` when given, ``i`` its place among the leaves in reading
    order (the walk weighs thousands of leaves against the budget).

    Scoring: each node gets a within-level score in [0, 1] (cosine to ``query_vec``,
    fused by reciprocal rank with ``lexical_scores`` where given, by node id or as an
    array with one score per row of the tree, then min-max scaled per level). Descent starts at the root's children: at each level the ``beam``
    nodes with the best *path score* (own score + ``path_decay`` x best selected
    parent's path score) are selected. Leaves are ranked by own score +
    ``subtree_weight`` x (scaled path score of their best selected parent), so the
    leaves of the chosen subtrees come first but an outside leaf with a high own
    score can still make it. The overview is the best selected node at
    ``overview_level`` (1 = the most specific summary).

    Drill-down evidence sits in runs of neighbouring chunks of one section, so each of
    the ``anchors`` best leaves is followed by its neighbours in reading order (up to
    ``neighbours`` chunks either side, same document, best first) before the rest of
    the ranking; only neighbours among the ``neighbour_pool`` best leaves are pulled
    forward, so an unrelated neighbour does not displace a good hit. The result always ends in leaf chunks; the overview is dropped if the
    budget cannot hold it and one leaf. ``max_leaves`` stops after that many leaves
    (callers that cut the list further need not pay for the tail).

    ``leaf_pool`` (tree rows of leaves) makes the leaf ranking approximate, for trees
    too large to score every leaf per question: only the leaves of the chosen subtrees,
    the pool (e.g. an approximate nearest-neighbour search's hits) and the best leaves
    by lexical score are scored and ranked; a leaf's rank among all leaves by cosine,
    which the fusion needs, is its rank among those, or the rank a fixed sample of
    leaves (:func:`rank_sample_rows`) implies when that is lower. None scores every leaf
    (exact). With a pool, ``read_leaves`` (tree rows -> their vectors) reads the leaves'
    vectors instead of ``node_vectors`` (whose summaries' rows are still read), and
    ``leaf_sample`` gives the sample's vectors when the caller keeps them.
    """
    if beam < 1 or anchors < 0 or neighbours < 0 or neighbour_pool < 0:
        raise ValueError("beam must be at least 1; anchors and neighbours not negative")
    vectors = np.asarray(node_vectors, dtype=np.float32)
    if vectors.shape[0] != len(tree):
        raise ValueError("node_vectors must have one row per tree node")
    query = _unit(np.asarray(query_vec, dtype=np.float32))
    lexical_rows = _lexical_rows(tree, lexical_scores)
    arrays = tree.arrays()
    own_rows = np.zeros(len(tree))
    # exact: one product over every row; pooled: the summaries' rows only, level by level
    every = (vectors @ query).astype(np.float64) if leaf_pool is None else None
    for level, rows in arrays.level_rows.items():
        if every is not None:
            own_rows[rows] = _scaled(every[rows], lexical_rows[rows])
        elif level > 0:
            own_rows[rows] = _scaled(_dense_of(vectors, rows, query), lexical_rows[rows])
    no_rows = np.zeros(0, dtype=np.int64)

    # path scores and best selected parents, by row (summaries only): the descent below
    # weighs every summary of a level at once
    path = np.zeros(len(tree))
    best_parent = np.full(len(tree), -1, dtype=np.int64)
    root_row = tree.position(tree.root_id)
    selected: dict[int, list[str]] = {tree.root.level: [tree.root_id]}
    # Every node selected so far: a node's parents sit at higher levels, though not
    # always at the next one (an outline tree's pages hold sections of any depth).
    chosen = np.zeros(len(tree), dtype=bool)
    chosen[root_row] = True
    for level in range(tree.root.level - 1, 0, -1):
        rows = arrays.level_rows.get(level, no_rows)
        child, parent = arrays.links.get(level, (no_rows, no_rows))
        open_link = chosen[parent]
        child, parent = child[open_link], parent[open_link]
        if len(child):
            # per child, its chosen parent with the best (path score, node id)
            order = np.lexsort((arrays.id_rank[parent], path[parent], child))
            child, parent = child[order], parent[order]
            last = np.r_[child[1:] != child[:-1], True]
            best_parent[child[last]] = parent[last]
        has_parent = best_parent[rows] >= 0
        path[rows] = own_rows[rows] + path_decay * np.where(has_parent, path[np.maximum(best_parent[rows], 0)], 0.0)
        top = rows[top_k_indices(path[rows], beam)]  # the head only: a level of 35,000 keeps 50
        selected[level] = [tree.nodes[row].node_id for row in top.tolist()]
        chosen[top] = True

    depth = max(tree.root.level - 1, 1)
    scale = sum(path_decay**i for i in range(depth)) or 1.0
    # a leaf's parents: level-1 summaries in a clustered tree, sections and pages of
    # any level in an outline tree
    level1 = chosen.copy()
    if chosen.sum() > 1:
        level1[root_row] = False
    # a leaf's boost is the path score of its best selected parent (vectorised: a tree
    # has thousands of leaves and this runs per question)
    all_leaves = arrays.level_rows.get(0, no_rows)
    parent_path = np.where(level1, path, -np.inf)
    link_leaf, link_parent = tree.leaf_parent_rows()
    best = np.full(len(all_leaves), -np.inf)
    np.maximum.at(best, link_leaf, parent_path[link_parent])
    if leaf_pool is None:
        leaf_rows, own = all_leaves, own_rows[all_leaves]
    else:
        # places among the leaves: the chosen subtrees' leaves, the pool, the lexical head
        pool = np.asarray(leaf_pool, dtype=np.int64)
        at = np.minimum(np.searchsorted(all_leaves, pool), max(len(all_leaves) - 1, 0))
        pooled = at[all_leaves[at] == pool] if len(all_leaves) else at[:0]
        places = np.union1d(
            np.union1d(np.flatnonzero(best > -np.inf), pooled),
            _lexical_head(lexical_rows[all_leaves], _LEXICAL_HEAD),
        )
        leaf_rows = all_leaves[places]
        read = read_leaves if read_leaves is not None else (lambda rows: vectors[rows])
        sample = leaf_sample if leaf_sample is not None else read(rank_sample_rows(tree))
        own = _pooled_leaf_scores(read(leaf_rows), sample, len(all_leaves), query, lexical_rows[all_leaves],
                                  np.searchsorted(all_leaves, leaf_rows))
        best = best[places]
    boost = np.where(best > -np.inf, best / scale, 0.0)
    total = own + subtree_weight * boost
    # with a budget, room for leaves it skips: the tail is never reached, so only the
    # head is sorted. Ties by position are ties by tree row (leaf_rows ascend).
    head = len(total) if max_leaves is None else max(neighbour_pool, anchors, 10 * max_leaves)
    order = top_k_indices(total, head)
    # the ranking as arrays (a head of thousands of leaves per question): a leaf's
    # node, id and context are made only when it is taken
    ranked_rows = leaf_rows[order]
    ranked_places = (order if leaf_pool is None else places[order]).astype(np.int64)
    ranked_scores = total[order].tolist()
    sequence, neighbour_of = _expand_anchors(tree, ranked_places, anchors, neighbours, neighbour_pool)
    costs = np.asarray(leaf_tokens)[ranked_places].tolist() if leaf_tokens is not None else None

    def cost_of(node: Node) -> int:
        return node_tokens(node) if node_tokens is not None else count_tokens(node.text)

    def leaf_cost(k: int) -> int:
        return costs[k] if costs is not None else cost_of(tree.nodes[int(ranked_rows[k])])

    leaf_parents: dict[str, str] = {}

    def parent_of(nid: str) -> str | None:
        """The best selected parent on the walk's path (leaves: once asked for)."""
        if nid in leaf_parents:
            return leaf_parents[nid]
        row = tree.position(nid)
        return tree.nodes[best_parent[row]].node_id if row != root_row and best_parent[row] >= 0 else None

    def leaf_parent(nid: str) -> str | None:
        rows_ = [tree.position(p) for p in tree.node(nid).parents if p in tree]
        pool = [r for r in rows_ if level1[r]]
        if not pool:
            return None
        parent = tree.nodes[max(pool, key=lambda r: (path[r], tree.nodes[r].node_id))].node_id
        leaf_parents[nid] = parent
        return parent

    overview = _overview(tree, selected, path, overview_level)
    out: list[Context] = []
    used = 0
    if overview is not None:
        node = tree.node(overview)
        cost = cost_of(node)
        first_leaf = leaf_cost(sequence[0]) if sequence else 0
        # the overview's trace runs through summaries only: best_parent has them all
        if cost + first_leaf <= budget_tokens:
            used = cost
            out.append(node_context(node, float(path[tree.position(overview)]), [_trace(overview, parent_of, "overview")]))
    leaves_added = 0
    for k in sequence:
        if max_leaves is not None and leaves_added >= max_leaves:
            break
        cost = leaf_cost(k)
        if used + cost > budget_tokens:
            continue
        used += cost
        leaves_added += 1
        node = tree.nodes[int(ranked_rows[k])]
        nid = node.node_id
        route = _trace(nid, parent_of, "chunk") if leaf_parent(nid) else "tree: leaf outside the beam"
        anchor = neighbour_of.get(k)
        trace = [route] + ([f"tree: next to {tree.nodes[int(ranked_rows[anchor])].node_id}"] if anchor is not None else [])
        out.append(node_context(node, ranked_scores[k], trace))
    if leaves_added == 0 and sequence:
        # Never summaries alone: the best leaf goes in even if it overflows the budget.
        k = sequence[0]
        node = tree.nodes[int(ranked_rows[k])]
        leaf_parent(node.node_id)
        ctx = node_context(node, ranked_scores[k], [_trace(node.node_id, parent_of, "chunk")])
        ctx.flags.append("over_budget")
        out = [ctx]
    return out


# -- helpers ---------------------------------------------------------------------


def _expand_anchors(
    tree: Tree, places: np.ndarray, anchors: int, radius: int, pool: int
) -> tuple[list[int], dict[int, int]]:
    """A leaf ranking reordered: each anchor is followed by its reading-order neighbours
    that are among the ``pool`` best leaves, best first.

    ``places`` are the ranked leaves' places among the tree's leaves (reading order),
    best first; the result is positions in ``places`` in their new order, and each
    pulled-forward neighbour's position -> its anchor's."""
    n = len(places)
    if anchors == 0 or radius == 0:
        return list(range(n)), {}
    leaves = _Leaves(tree, tree.arrays().level_rows.get(0, np.zeros(0, dtype=np.int64)))  # in reading order
    plausible = {place: k for k, place in enumerate(places[:pool].tolist())}
    out: list[int] = []
    placed: set[int] = set()
    neighbour_of: dict[int, int] = {}
    for anchor in range(min(anchors, n)):
        if anchor in placed:
            continue
        out.append(anchor)
        placed.add(anchor)
        i = int(places[anchor])
        doc = leaves[i].doc_ids
        # among the pool, the order by position is the order by score (ties by row)
        near = sorted(
            plausible[j]
            for j in range(max(0, i - radius), min(len(leaves), i + radius + 1))
            if j != i and j in plausible and plausible[j] not in placed and leaves[j].doc_ids == doc
        )
        for k in near:
            out.append(k)
            placed.add(k)
            neighbour_of[k] = anchor
    rest = np.ones(n, dtype=bool)
    rest[list(placed)] = False
    out.extend(np.flatnonzero(rest).tolist())
    return out, neighbour_of


class _Leaves(Sequence[Node]):
    """A tree's leaves in reading order, read where they are (no list per question)."""

    def __init__(self, tree: Tree, rows: np.ndarray) -> None:
        self._nodes, self._rows = tree.nodes, rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i: int) -> Node:  # type: ignore[override]
        return self._nodes[int(self._rows[i])]


# the approximate leaf ranking: leaves drawn in by lexical score alone, and the fixed
# sample of leaves whose cosines place a pooled leaf among all of them
_LEXICAL_HEAD = 1000
_RANK_SAMPLE = 2048


def _unit(query: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(query))
    return query / norm if norm > 0 else query


def _dense_of(vectors: np.ndarray, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Cosines of ``rows`` (float64); a run of consecutive rows is read as a slice, which
    a memory-mapped array serves without copying the rows first."""
    if not len(rows):
        return np.zeros(0)
    if int(rows[-1]) - int(rows[0]) + 1 == len(rows):
        block = vectors[int(rows[0]) : int(rows[-1]) + 1]
    else:
        block = vectors[rows]
    return (block @ query).astype(np.float64)


def _lexical_rows(tree: Tree, lexical: "Mapping[str, float] | np.ndarray | None") -> np.ndarray:
    if isinstance(lexical, np.ndarray):
        rows = np.asarray(lexical, dtype=np.float64)
        if rows.shape != (len(tree),):
            raise ValueError("lexical scores given as an array need one per tree node")
        return rows
    rows = np.zeros(len(tree))
    for nid, value in (lexical or {}).items():
        if nid in tree:
            rows[tree.position(nid)] = value
    return rows


def _scaled(dense: np.ndarray, lexical: np.ndarray) -> np.ndarray:
    """One level's within-level scores in [0, 1]: cosine, fused by reciprocal rank with
    the lexical scores where any is positive, then min-max scaled."""
    if not len(dense):
        return dense
    raw = _rrf(dense, lexical) if (lexical > 0).any() else dense
    lo, hi = float(raw.min()), float(raw.max())
    return (raw - lo) / (hi - lo) if hi > lo else np.ones_like(raw)


def _best_first_order(scores: np.ndarray) -> np.ndarray:
    """Positions by descending score, ties by position: a stable sort's order.

    Scores a float32 holds exactly (cosines from float32 vectors, BM25 from a float32
    index) are ordered by one integer key each (the score's bits, made to sort as the
    floats do, then the position): every key differs, and a sort of integers is faster
    than a stable one of floats (35,000 summaries of a level: about a quarter). Other
    scores are sorted stably as they are."""
    as32 = (scores + 0.0).astype(np.float32)  # + 0.0: -0.0 equals 0.0 and must tie with it
    if not np.array_equal(as32, scores):
        return np.argsort(-scores, kind="stable")
    bits = as32.view(np.int32).astype(np.int64)
    ordered = np.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)  # ascending as the floats are
    shift = max(len(scores).bit_length(), 1)
    # a stable sort, though every key differs: numpy's default integer sort gave a wrong
    # order on an emulated AVX2 CPU (qemu-x86_64 -cpu Haswell), its stable sort did not
    return np.argsort(((0x7FFFFFFF - ordered) << shift) | np.arange(len(scores)), kind="stable")


def _dense_ranks(dense: np.ndarray) -> np.ndarray:
    """1-based ranks by descending score, ties by position."""
    ranks = np.empty(len(dense))
    ranks[_best_first_order(dense)] = np.arange(1, len(dense) + 1)
    return ranks


def _lexical_bonus(lexical: np.ndarray) -> np.ndarray:
    """Each row's reciprocal-rank share from its lexical score (0 where not positive).

    Ranks break ties by position. Only the positive scores are ranked: they come before
    every other row, so their ranks among themselves are their ranks among all (a level
    of 200,000 leaves has a few thousand)."""
    bonus = np.zeros(len(lexical))
    positive = np.flatnonzero(lexical > 0)
    if positive.size:
        ranked = positive[_best_first_order(lexical[positive])]
        bonus[ranked] = 1.0 / (_RRF_K + np.arange(1, ranked.size + 1))
    return bonus


def _lexical_bonus_of(lexical: np.ndarray, places: np.ndarray) -> np.ndarray:
    """:func:`_lexical_bonus` of the rows at ``places`` alone, with the scores compared
    as float32 (the BM25 scores a walk is given are): each positive score and its row
    make one integer key, best score first and ties by row, and a row's rank is the
    number of keys up to its own. The wanted keys alone are sorted and every key placed
    among them: no sort of all the scores (200,000 leaves: several times faster)."""
    positive = np.flatnonzero(lexical > 0)
    bonus = np.zeros(len(places))
    own = lexical[places] > 0
    if not positive.size or not own.any():
        return bonus
    shift = max(int(len(lexical)).bit_length(), 1)

    def keys(rows: np.ndarray) -> np.ndarray:
        bits = lexical[rows].astype(np.float32).view(np.int32).astype(np.int64)  # positive floats: order kept
        return ((0x7F800000 - bits) << shift) | rows

    # each key's place among the wanted keys (sorted), counted: a wanted key's rank is
    # the number of keys at or before its place, itself included
    wanted = keys(places[own])
    order = np.argsort(wanted, kind="stable")  # see _best_first_order
    at = np.searchsorted(wanted[order], keys(positive), side="left")
    ranks = np.empty(len(wanted))
    ranks[order] = np.cumsum(np.bincount(at, minlength=len(wanted) + 1))[: len(wanted)]
    bonus[own] = 1.0 / (_RRF_K + ranks)
    return bonus


def _rrf(dense: np.ndarray, lexical: np.ndarray) -> np.ndarray:
    """Reciprocal-rank fusion of two score vectors (zero lexical scores add nothing)."""
    return 1.0 / (_RRF_K + _dense_ranks(dense)) + _lexical_bonus(lexical)


def _lexical_head(lexical: np.ndarray, n: int) -> np.ndarray:
    """Positions of the ``n`` best positive lexical scores (all of them when fewer),
    ascending; of equal scores at the cut, the lower positions."""
    positive = np.flatnonzero(lexical > 0)
    return np.sort(positive[top_k_indices(lexical[positive], n)])


def rank_sample_rows(tree: Tree) -> np.ndarray:
    """The tree rows of the fixed sample of leaves a pooled walk places a leaf's cosine
    among (evenly spaced in reading order: the same for every question)."""
    leaves = tree.arrays().level_rows.get(0, np.zeros(0, dtype=np.int64))
    if not len(leaves):
        return leaves
    return leaves[np.unique(np.linspace(0, len(leaves) - 1, min(len(leaves), _RANK_SAMPLE)).astype(np.int64))]


def _pooled_leaf_scores(
    vectors: np.ndarray, sample_vectors: np.ndarray, n: int, query: np.ndarray, lexical: np.ndarray, places: np.ndarray,
) -> np.ndarray:
    """Within-level scores of some leaves (their ``vectors``; ``places`` among the ``n``
    leaves, whose ``lexical`` scores are all given) as :func:`_scaled` would give them
    over every leaf, estimated from these leaves and a fixed sample of all of them.

    A leaf's rank by cosine among all leaves is at least its rank among these (exact
    for the best hits, which they hold) and about the share of the sample above it
    times the number of leaves; the larger of the two is taken. The lexical ranks are
    exact (every leaf's lexical score is known). The scale's floor is the fusion's
    least value, the last cosine rank's share; without lexical scores, the least
    cosine seen."""
    dense = (vectors @ query).astype(np.float64) if len(vectors) else np.zeros(0)
    if not len(dense):
        return dense
    sample = np.sort((sample_vectors @ query).astype(np.float64)) if len(sample_vectors) else dense
    if not (lexical > 0).any():
        lo, hi = float(min(sample.min(), dense.min())), float(dense.max())
        return (dense - lo) / (hi - lo) if hi > lo else np.ones_like(dense)
    above = len(sample) - np.searchsorted(sample, dense, side="right")
    ranks = np.maximum(_dense_ranks(dense), 1.0 + np.floor(above * (n / len(sample))))
    raw = 1.0 / (_RRF_K + ranks) + _lexical_bonus_of(lexical, places)
    lo, hi = 1.0 / (_RRF_K + n), float(raw.max())
    return np.clip((raw - lo) / (hi - lo), 0.0, 1.0) if hi > lo else np.ones_like(raw)


def _overview(tree: Tree, selected: Mapping[int, list[str]], path: np.ndarray, level: int) -> str | None:
    summary_levels = [lv for lv in selected if lv >= 1]
    if not summary_levels:
        return None
    target = min(max(level, min(summary_levels)), max(summary_levels))
    pool = selected[target]
    return max(pool, key=lambda nid: (path[tree.position(nid)], -tree.position(nid))) if pool else None


def _trace(node_id: str, parent_of: Callable[[str], str | None], tail: str) -> str:
    chain = [node_id]
    while (parent := parent_of(chain[-1])) is not None:
        chain.append(parent)
    chain.reverse()
    if tail == "chunk":
        chain[-1] = "chunk"
    return "tree: " + " -> ".join(chain)


SUMMARY_SOURCE = "tree"  # a summary's source: the tree it belongs to, not one of its pages


def node_context(node: Node, score: float, trace: list[str]) -> Context:
    """A tree node as a result context: a leaf as a chunk of its page; a summary as
    what it is, a node of the tree (``source`` "tree", ``heading_path`` ["Tree root" or
    "Tree level N", its title]): one member's page and headings would misname a digest
    of many pages. Its member passages stay in ``provenance``."""
    if node.is_leaf:
        source, where = (node.doc_ids[0] if node.doc_ids else ""), list(node.heading_path)
    else:
        place = "Tree root" if not node.parents else f"Tree level {node.level}"
        source, where = SUMMARY_SOURCE, [place, *([node.title] if node.title else [])]
    return Context(
        text=node.text,
        source=source,
        heading_path=where,
        kind="chunk" if node.is_leaf else "summary",
        score=score,
        node_id=node.node_id,
        start=node.start,
        end=node.end,
        level=node.level,
        provenance=list(node.chunk_ids),
        trace=trace,
        extra={} if node.is_leaf else {"title": node.title, "summariser": node.summariser},
    )
