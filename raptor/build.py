"""Build a RAPTOR tree: cluster a level, summarise each cluster, embed, repeat."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from arborgraph.core.processes import available_cores
from arborgraph.core.concurrency import run_ordered, workers_for
from arborgraph.core.protocols import ProgressCallback, no_progress
from raptor.config import RaptorConfig
from raptor.naming import named, uses_keyphrase_names
from raptor.pool import Deferred, TreePool
from raptor.summary import Cluster, ClusterMember, Summariser
from raptor.text import dominant_path
from raptor.tree import Leaf, Node, PageNavigation, Tree, ordered_union

# A picture, not a clustering: half of the clustering's UMAP epochs draw the same
# neighbourhoods at half the cost.
_LAYOUT_EPOCHS = 100

EmbedFn = Callable[[Sequence[str]], np.ndarray]
CountTokens = Callable[[str], int]


@dataclass
class _Draft:
    """A node while the tree is being built (parents and cluster are filled in later)."""

    node_id: str
    level: int
    title: str
    text: str
    tokens: int
    heading_path: tuple[str, ...]
    chunk_ids: tuple[str, ...]
    doc_ids: tuple[str, ...]
    children: tuple[str, ...] = ()
    parents: list[str] = field(default_factory=list)
    summariser: str | None = None
    cluster: int = -1
    start: int | None = None
    end: int | None = None


def build_tree(
    leaves: Sequence[Leaf],
    leaf_vectors: np.ndarray,
    *,
    embed: EmbedFn,
    count_tokens: CountTokens,
    summariser: Summariser,
    config: RaptorConfig,
    progress: ProgressCallback | None = None,
) -> Tree:
    """Build the summary tree over ``leaves``; always returns a tree with one summary root.

    ``leaf_vectors`` are the leaves' unit vectors (row i for leaf i). Summaries are
    written by ``summariser`` (called exactly once per summary node); their vectors
    are embedded with ``embed`` (:func:`summary_vector_text`), or are the mean of
    their children's vectors (``config.summary_vectors``, see :func:`summary_vectors`).
    Summary nodes are then named (``config.naming``, see :func:`raptor.naming.named`).

    With ``config.outline`` (the default) and leaves that have an outline (more than
    one page, or sections), the lower levels are the manual's own sections, pages and
    folders, and only the outline's top nodes are clustered (:mod:`raptor.outline_tree`).
    Otherwise levels are clustered with :class:`RaptorClusterer` until a level has at most
    ``config.stop_at`` nodes whose text fits ``config.max_cluster_tokens`` (or ``config.max_levels`` is reached);
    then one root summarises that level. Progress stages: ``raptor.cluster``,
    ``raptor.summarise`` (per summary), ``raptor.embed`` (per level), ``raptor.layout``.
    With :func:`tree_workers` above one, helper processes refine global clusters and
    lay out the leaves beside the build; the tree is the same.
    """
    report = progress or no_progress
    vectors = _check_inputs(leaves, leaf_vectors)
    if config.outline:
        from raptor.outline_tree import has_outline

        if has_outline(leaves):
            return _outline_tree(
                leaves, vectors, embed=embed, count_tokens=count_tokens, summariser=summariser,
                config=config, report=report,
            )
    with _pool(tree_workers(config, len(leaves)), _uses_umap(config, len(leaves))) as pool:
        drafts, root, all_vectors, layout_job = _build_levels(
            leaves, vectors, embed=embed, count_tokens=count_tokens, summariser=summariser,
            config=config, report=report, pool=pool,
        )
        leaf_coords = layout_job.result() if layout_job is not None else _leaf_layout(vectors, config)
    layout = _place(leaf_coords, drafts)
    report("raptor.layout", 1, 1)
    nodes = tuple(
        Node(
            node_id=d.node_id,
            level=d.level,
            title=d.title,
            text=d.text,
            children=d.children,
            parents=tuple(d.parents),
            chunk_ids=d.chunk_ids,
            doc_ids=d.doc_ids,
            heading_path=d.heading_path,
            summariser=d.summariser,
            cluster=d.cluster if d.parents else -1,
            umap_x=float(layout[i, 0]),
            umap_y=float(layout[i, 1]),
            start=d.start,
            end=d.end,
        )
        for i, d in enumerate(drafts)
    )
    label = "keyphrases" if uses_keyphrase_names(config, summariser.name) else "summariser"
    nodes = tuple(replace(n, origin="cluster", label=label) if n.level > 0 else n for n in nodes)
    tree = Tree(nodes=nodes, root_id=root.node_id, vectors=np.vstack(all_vectors))
    return named(tree, config, summariser.name)


@dataclass(frozen=True)
class ChunkTree:
    """A tree built from chunks, and what an update of a previous tree redid."""

    tree: Tree
    updated: bool  # a previous tree was updated (not built again from scratch)
    summaries_redone: int


def tree_from_chunks(
    chunks: Sequence[Any],
    chunk_vectors: np.ndarray | None,
    *,
    embed: EmbedFn,
    count_tokens: CountTokens,
    summariser: Summariser,
    config: RaptorConfig,
    previous: Tree | None = None,
    drift_threshold: float = 0.25,
    progress: ProgressCallback | None = None,
    navigation: Mapping[str, PageNavigation] | None = None,
) -> ChunkTree:
    """The tree of ``chunks`` (``ingest.models.Chunk``s), one leaf each; without
    ``chunk_vectors`` the leaves are embedded by ``embed`` from their context text.
    ``navigation`` gives a document's place by its own navigation (pages above it,
    page after it), by doc_id: the outline nests pages by it.

    Given the ``previous`` tree (same settings, other chunks), a clustered tree is
    updated in place: new leaves join their nearest clusters and only the summaries
    above changed leaves are redone, unless the change passes ``drift_threshold`` (then
    a full build). An outline tree is built again: its outline costs nothing to redo
    (no model call, centroid vectors), and a page's nodes come out the same when the
    page did; what it counts as redone are the summaries that differ from the previous
    tree's.
    """
    pages = navigation or {}
    leaves = [Leaf.from_chunk(c, pages.get(c.doc_id, ((), None))) for c in chunks]
    leaf_vectors = chunk_vectors if chunk_vectors is not None else embed([c.context_text() for c in chunks])
    if previous is not None and not config.outline:
        from raptor.update import update_tree  # raptor.update builds on this module

        tree, update = update_tree(
            previous, leaves, leaf_vectors, embed=embed, count_tokens=count_tokens,
            summariser=summariser, config=config, drift_threshold=drift_threshold, progress=progress,
        )
        return ChunkTree(tree, updated=not update.full_rebuild, summaries_redone=update.summaries_redone)
    tree = build_tree(
        leaves, leaf_vectors, embed=embed, count_tokens=count_tokens,
        summariser=summariser, config=config, progress=progress,
    )
    kept = {(n.chunk_ids, n.title, n.text) for n in previous.summaries()} if previous is not None else set()
    redone = sum((n.chunk_ids, n.title, n.text) not in kept for n in tree.summaries())
    return ChunkTree(tree, updated=previous is not None, summaries_redone=redone)


def hashing_embed(dim: int = 256) -> EmbedFn:
    """Lexical stand-in vectors (hashed stemmed terms) for lexical-only builds.

    With no embedding model the tree still needs vectors to cluster and to pick
    representative sentences; hashed bag-of-words vectors give a sound, deterministic
    lexical geometry. They are never mixed with model vectors.
    """
    import hashlib

    from arborgraph.core.text import analyse

    def embed(texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for token in analyse(text):
                h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=4).digest(), "little")
                out[i, h % dim] += 1.0 if (h >> 31) & 1 else -1.0
            norm = np.linalg.norm(out[i])
            if norm > 0:
                out[i] /= norm
            else:
                out[i, 0] = 1.0
        return out

    return embed


def _outline_tree(
    leaves: Sequence[Leaf],
    vectors: np.ndarray,
    *,
    embed: EmbedFn,
    count_tokens: CountTokens,
    summariser: Summariser,
    config: RaptorConfig,
    report: ProgressCallback,
) -> Tree:
    """The tree over the manual's outline, clustered above it (see :func:`build_tree`)."""
    from raptor.naming import name_tree
    from raptor.outline_tree import Grouping, cluster_above, outline_items, to_nodes

    items, item_vectors, tops = outline_items(leaves, vectors, count_tokens=count_tokens, config=config)

    def group(sizes: np.ndarray, member_vectors: np.ndarray, level: int) -> tuple[list[tuple[int, ...]], np.ndarray]:
        return _group_level(sizes, member_vectors, budget=1.0, config=config, level=level, report=report)

    root = cluster_above(items, item_vectors, tops, vectors, Grouping(group, embed, count_tokens, summariser, config, report))
    nodes, order = to_nodes(items, leaves, root)
    coords = np.zeros((len(nodes), 2))
    coords[: len(leaves)] = _outline_layout(items, item_vectors, tops, vectors, config)
    position = {n.node_id: i for i, n in enumerate(nodes)}
    for i in range(len(leaves), len(nodes)):  # level by level: children are placed first
        coords[i] = coords[[position[c] for c in nodes[i].children]].mean(axis=0)
    report("raptor.layout", 1, 1)
    placed = [replace(n, umap_x=float(coords[i, 0]), umap_y=float(coords[i, 1])) for i, n in enumerate(nodes)]
    tree = Tree(nodes=tuple(placed), root_id=nodes[order.index(root)].node_id, vectors=np.stack([item_vectors[k] for k in order]))
    unnamed = [n.node_id for n in placed if n.label == "keyphrases"]
    names = name_tree(tree, only=unnamed, headings=False) if unnamed else {}
    if not names:
        return tree
    renamed = tuple(replace(n, title=names[n.node_id]) if n.node_id in names else n for n in tree.nodes)
    return Tree(nodes=renamed, root_id=tree.root_id, vectors=tree.vectors)


def tree_workers(config: RaptorConfig, n_leaves: int) -> int:
    """Processes a build over ``n_leaves`` leaves runs on (``config.workers``, see there)."""
    if config.workers is not None:
        return config.workers
    return available_cores() if n_leaves >= config.umap_min_points else 1


def _uses_umap(config: RaptorConfig, n_leaves: int) -> bool:
    return config.reducer == "umap" or (config.reducer == "auto" and n_leaves >= config.umap_min_points)


@contextlib.contextmanager
def _pool(workers: int, umap: bool) -> Iterator[TreePool | None]:
    if workers < 2:
        yield None
        return
    # Helpers import UMAP (~4 s) as they start, while this process runs the first
    # global UMAP pass, so they are ready to fit mixtures when it is done.
    with TreePool(workers, imports=("raptor.cluster", "umap.umap_") if umap else ("raptor.cluster",)) as pool:
        yield pool


def _build_levels(
    leaves: Sequence[Leaf],
    vectors: np.ndarray,
    *,
    embed: EmbedFn,
    count_tokens: CountTokens,
    summariser: Summariser,
    config: RaptorConfig,
    report: ProgressCallback,
    pool: TreePool | None,
) -> tuple[list[_Draft], _Draft, list[np.ndarray], Deferred | None]:
    """Every node of the tree level by level (leaves first), its root, every level's
    vectors, and the leaves' layout if a helper was given it (None: not computed)."""
    order = {leaf.chunk_id: i for i, leaf in enumerate(leaves)}
    doc_rank = {leaf.doc_id: i for i, leaf in reversed(list(enumerate(leaves)))}

    drafts: list[_Draft] = [
        _Draft(
            node_id=leaf.chunk_id,
            level=0,
            title=" > ".join(leaf.heading_path),
            text=leaf.text,
            # the chunker's count when known: tokenising every leaf again cost ~5 % of the tree
            tokens=leaf.tokens if leaf.tokens is not None else count_tokens(leaf.text),
            heading_path=tuple(leaf.heading_path),
            chunk_ids=(leaf.chunk_id,),
            doc_ids=(leaf.doc_id,),
            start=leaf.start,
            end=leaf.end,
        )
        for leaf in leaves
    ]
    all_vectors = [vectors]
    current = list(range(len(drafts)))  # indices into drafts of the level being grouped
    current_vectors = vectors
    layout_job: Deferred | None = None
    level = 1
    while True:
        if len(current) == 1 and level > 1:
            break  # the last level has one node: it is the root
        groups, labels = _group_level(
            np.array([drafts[i].tokens for i in current], dtype=np.float64), current_vectors,
            config=config, level=level, report=report, pool=pool,
        )
        for pos, label in enumerate(labels):
            drafts[current[pos]].cluster = int(label)
        if pool is not None and layout_job is None:
            # The layout needs only the leaves. Handed to a helper now, after the first
            # clustering (which the helpers speed up), it is drawn while this process
            # writes the first level's summaries.
            layout_job = pool.defer(_leaf_layout, vectors, config)

        children_of = [[drafts[current[m]] for m in members] for members in groups]
        clusters = [
            Cluster(
                node_id=f"L{level}:{n}",
                level=level,
                members=tuple(
                    ClusterMember(
                        c.node_id, c.text, c.heading_path, c.title if c.level > 0 else "", c.level, order[c.chunk_ids[0]]
                    )
                    for c in children
                ),
                vectors=current_vectors[list(members)],
            )
            for n, (members, children) in enumerate(zip(groups, children_of, strict=True))
        ]
        # A level's summaries depend only on the level below: an LLM summariser
        # (``concurrency`` > 1) writes them at once; others run in order, one by one.
        summaries = run_ordered(
            summariser.summarise, clusters, workers_for(summariser), stop_on_error=True,
            done=lambda n: report("raptor.summarise", n, len(groups)),
        )
        new_drafts: list[_Draft] = []
        for cluster, children, summary in zip(clusters, children_of, summaries, strict=True):
            node_id = cluster.node_id
            chunk_ids = ordered_union([c.chunk_ids for c in children], order)
            new_drafts.append(
                _Draft(
                    node_id=node_id,
                    level=level,
                    title=summary.title,
                    text=summary.text,
                    tokens=count_tokens(summary.text),
                    heading_path=dominant_path([c.heading_path for c in children]),
                    chunk_ids=chunk_ids,
                    doc_ids=_docs_by_coverage(chunk_ids, leaves, order, doc_rank),
                    children=tuple(c.node_id for c in children),
                    summariser=summariser.name,
                )
            )
            for c in children:
                c.parents.append(node_id)

        level_vectors = summary_vectors(
            [summary_vector_text(d.title, d.text, config, summariser.name) for d in new_drafts],
            [current_vectors[list(members)] for members in groups],
            mode=config.summary_vectors,
            summariser=summariser.name,
            embed=embed,
        )
        if level_vectors.shape != (len(new_drafts), vectors.shape[1]):
            raise ValueError(
                f"embed returned shape {level_vectors.shape} for {len(new_drafts)} texts; "
                f"expected (n, {vectors.shape[1]}) like the leaf vectors"
            )
        report("raptor.embed", level, None)
        current = list(range(len(drafts), len(drafts) + len(new_drafts)))
        drafts.extend(new_drafts)
        all_vectors.append(level_vectors)
        current_vectors = level_vectors
        if len(groups) == 1:
            break
        level += 1

    return drafts, drafts[current[0]], all_vectors, layout_job


def _check_inputs(leaves: Sequence[Leaf], leaf_vectors: np.ndarray) -> np.ndarray:
    if not leaves:
        raise ValueError("cannot build a tree over no leaves")
    vectors = np.asarray(leaf_vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(leaves):
        raise ValueError(f"leaf_vectors must have shape ({len(leaves)}, dim), got {vectors.shape}")
    if not np.all(np.isfinite(vectors)):
        raise ValueError("leaf_vectors contain NaN or infinite values")
    ids = [leaf.chunk_id for leaf in leaves]
    if len(set(ids)) != len(ids):
        dup = next(i for i, c in Counter(ids).items() if c > 1)
        raise ValueError(f"duplicate chunk id {dup!r}")
    for leaf in leaves:
        if not leaf.text.strip():
            raise ValueError(f"leaf {leaf.chunk_id!r} has no text")
        if leaf.chunk_id.startswith("L") and ":" in leaf.chunk_id and leaf.chunk_id[1:].split(":")[0].isdigit():
            raise ValueError(f"chunk id {leaf.chunk_id!r} collides with summary node ids 'L<level>:<n>'")
    return _unit_rows(vectors)


def summary_vector_text(title: str, text: str, config: RaptorConfig, summariser: str) -> str:
    """What a summary's vector is embedded from (``summary_vectors="embed"``): its title
    and text, or its text alone when its name is given after the build
    (:func:`raptor.naming.uses_keyphrase_names`) and the title is only a draft."""
    return text if uses_keyphrase_names(config, summariser) else f"{title}\n{text}"


def summary_vectors(
    texts: Sequence[str], children: Sequence[np.ndarray], *, mode: str, summariser: str, embed: EmbedFn
) -> np.ndarray:
    """Unit vectors of new summaries: ``embed(texts)``, or (mode "centroid", or "auto"
    with the extractive summariser) the mean of each summary's children's vectors."""
    if mode == "centroid" or (mode == "auto" and summariser == "extractive"):
        return _unit_rows(np.stack([np.asarray(c, dtype=np.float64).mean(axis=0) for c in children]))
    return _unit_rows(np.asarray(embed(list(texts)), dtype=np.float32))


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; rows that already are (within 1e-4) are kept as given."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if np.all(np.abs(norms - 1.0) <= 1e-4):
        return vectors.astype(np.float32, copy=False)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def _group_level(
    tokens: np.ndarray,
    vectors: np.ndarray,
    *,
    budget: float | None = None,
    config: RaptorConfig,
    level: int,
    report: ProgressCallback,
    pool: TreePool | None = None,
) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Clusters of one level (member positions) and each node's primary cluster;
    ``tokens`` are the members' sizes against ``budget`` (by default their text
    lengths against ``config.max_cluster_tokens``)."""
    n = len(tokens)
    budget = config.max_cluster_tokens if budget is None else budget
    fits = tokens.sum() <= budget
    if (n <= config.stop_at and fits) or level >= config.max_levels or n == 1:
        report("raptor.cluster", level, None)
        return [tuple(range(n))], np.zeros(n, dtype=int)
    # imported here: scikit-learn's import (about 1.5 s) is paid only by builds that
    # cluster, not by tree updates that place new leaves in existing clusters
    from raptor.cluster import RaptorClusterer

    clusterer = RaptorClusterer(
        n_components=config.reduce_dims,
        reducer=config.reducer,
        umap_min_points=config.umap_min_points,
        threshold=config.membership_threshold,
        max_clusters=config.max_clusters,
        bic_patience=config.bic_patience,
        local_pass=config.local_pass,
        max_cluster_size=budget,
        random_state=config.seed + 1000 * level,
    ).fit(vectors, sizes=tokens, runner=pool)
    report("raptor.cluster", level, None)
    groups = list(clusterer.clusters_)
    labels = clusterer.labels_
    if len(groups) >= n and level > 1:
        # No merge happened (every node alone): group neighbours in reading order so the
        # tree still narrows; summaries are small, so pairs always fit the budget.
        groups = _group_in_order(tokens, budget)
        labels = np.zeros(n, dtype=int)
        for g, members in enumerate(groups):
            labels[list(members)] = g
    return groups, labels


def _group_in_order(tokens: np.ndarray, budget: float) -> list[tuple[int, ...]]:
    groups: list[list[int]] = [[]]
    acc = 0.0
    for i, t in enumerate(tokens):
        if groups[-1] and acc + t > budget and len(groups[-1]) >= 2:
            groups.append([])
            acc = 0.0
        groups[-1].append(i)
        acc += float(t)
    return [tuple(g) for g in groups]


def _docs_by_coverage(
    chunk_ids: Sequence[str], leaves: Sequence[Leaf], order: dict[str, int], doc_rank: dict[str, int]
) -> tuple[str, ...]:
    """Documents covered, the one with most chunks first (ties: reading order)."""
    counts = Counter(leaves[order[c]].doc_id for c in chunk_ids)
    return tuple(sorted(counts, key=lambda d: (-counts[d], doc_rank[d])))


def _leaf_layout(leaf_vectors: np.ndarray, config: RaptorConfig) -> np.ndarray:
    """2-D coordinates of the leaves (for the layout plot), seeded like the clustering:
    UMAP or PCA, as the clustering would choose. Laying out the summaries as points of
    their own, at UMAP's full epoch count, cost 15-20 % of the tree build for a plot."""
    n = leaf_vectors.shape[0]
    coords = np.zeros((n, 2))
    if n >= 3:
        from raptor.cluster import reduce_dims

        # one BLAS thread, as in the clustering: the same bits whatever the core count
        with threadpool_limits(limits=1):
            leaf_coords, _ = reduce_dims(
                leaf_vectors.astype(np.float64),
                2,
                reducer=config.reducer,
                umap_min_points=config.umap_min_points,
                n_neighbors=15,
                metric="cosine",
                random_state=config.seed,
                n_epochs=_LAYOUT_EPOCHS,
            )
        coords[:, : leaf_coords.shape[1]] = leaf_coords
    return coords


def _outline_layout(
    items: Sequence[Any], item_vectors: Sequence[np.ndarray], tops: Sequence[int], leaf_vectors: np.ndarray,
    config: RaptorConfig,
) -> np.ndarray:
    """2-D coordinates of the leaves of an outline tree: the outline's top nodes (pages,
    folders) laid out as :func:`_leaf_layout` lays out points, each leaf at its top
    node's point, spread around it by a PCA of the leaf vectors. Laying out thousands of
    chunks with UMAP was a third of the outline tree's time; the picture a reader wants
    of it is where its pages lie."""
    from raptor.cluster import reduce_dims

    top_coords = _leaf_layout(np.stack([item_vectors[k] for k in tops]), config)
    with threadpool_limits(limits=1):
        spread, _ = reduce_dims(
            leaf_vectors.astype(np.float64), 2, reducer="pca", umap_min_points=config.umap_min_points,
            n_neighbors=15, metric="cosine", random_state=config.seed,
        )
    coords = np.zeros((leaf_vectors.shape[0], 2))
    coords[:, : spread.shape[1]] = spread
    scale = float(np.std(top_coords)) or 1.0
    coords *= 0.1 * scale / (float(np.std(coords)) or 1.0)
    for top, point in zip(tops, top_coords, strict=True):
        coords[items[top].leaves] += point
    return coords


def _place(leaf_coords: np.ndarray, drafts: Sequence[_Draft]) -> np.ndarray:
    """2-D coordinates of every node: leaves as laid out, every summary at the mean of
    its children, so it is drawn among what it covers (as
    :func:`raptor.update.update_tree` places them)."""
    n = leaf_coords.shape[0]
    coords = np.zeros((len(drafts), 2))
    coords[:n] = leaf_coords
    position = {d.node_id: i for i, d in enumerate(drafts)}
    for i in range(n, len(drafts)):  # drafts come level by level: children first
        coords[i] = coords[[position[c] for c in drafts[i].children]].mean(axis=0)
    return coords
