"""The tree's levels from the manual's outline, clustered only where the outline stops.

Chunks sit under their sections, sections under their pages, pages under their folders
(:func:`raptor.outline.outline`); each of those nodes carries the manual's own title and
a digest of lead sentences (:mod:`raptor.digest`). Where the outline leaves many nodes
side by side (the pages of a flat manual, several manuals in one collection), RAPTOR's
clustering (UMAP or PCA, then a Gaussian mixture) groups them, level by level, up to one
root. A cluster is named by the outline title that covers most of its chunks when one
covers at least half; otherwise by keyphrases (or its LLM summary's title), and its
``label`` says so.

Clustering pages instead of chunks is also what makes the tree cheap: the sample manual
has 290 pages for about 5,000 chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from arborgraph.core.api_pages import before_first_class, class_one_liners
from arborgraph.core.concurrency import run_ordered, workers_for
from arborgraph.core.definitions import opens_with_term, term_one_liners
from arborgraph.core.protocols import ProgressCallback
from raptor.config import RaptorConfig
from raptor.digest import Part, digest
from arborgraph.core.leads import announces_list, opening
from arborgraph.core.taglines import (
    OPENING_CHUNKS,
    banner_key,
    banner_sentences,
    shared_sentences,
    page_opening,
    page_taglines,
    with_tagline,
)
from raptor.outline import OutlineNode, is_generic, outline, plain_title
from raptor.summary import Cluster, ClusterMember, Summariser
from raptor.tree import Leaf, Node

EmbedFn = Callable[[Sequence[str]], np.ndarray]
CountTokens = Callable[[str], int]
GroupLevel = Callable[[np.ndarray, np.ndarray, int], tuple[list[tuple[int, ...]], np.ndarray]]

OUTLINE = "outline"
# A title covering at least this share of a cluster names it; below the second share
# the cluster says it holds more ("Write-Ahead Logging and related pages").
NAMES_CLUSTER = 0.5
NAMES_ALONE = 0.8


@dataclass
class Item:
    """A node while the tree is built: ``children`` and ``parents`` are item indices
    (items ``0 .. n_leaves - 1`` are the leaves); ``tops`` the outline nodes at the top
    of what it covers (for naming a cluster)."""

    level: int
    title: str
    text: str
    lead: str | None
    leaves: list[int]
    children: list[int]
    heading_path: tuple[str, ...]
    doc_ids: tuple[str, ...]
    origin: str
    label: str
    coverage: float | None
    summariser: str | None
    tops: list[int]
    parents: list[int] = field(default_factory=list)
    cluster: int = -1
    kind: str = ""  # an outline node's: folder, page or section


def has_outline(leaves: Sequence[Leaf]) -> bool:
    """Whether the leaves have an outline to build on: more than one page, or one page
    with sections."""
    docs = {leaf.doc_id for leaf in leaves}
    return len(docs) > 1 or len({tuple(leaf.heading_path) for leaf in leaves}) > 1


def outline_items(
    leaves: Sequence[Leaf], vectors: np.ndarray, *, count_tokens: CountTokens, config: RaptorConfig
) -> tuple[list[Item], list[np.ndarray], list[int]]:
    """Items for the leaves and the outline's nodes (children first), their vectors (an
    outline node's: the unit mean of its chunks'), and the items of the outline's tops."""
    items = [
        Item(
            level=0, title=" > ".join(leaf.heading_path), text=leaf.text, lead=None, leaves=[i], children=[],
            heading_path=tuple(leaf.heading_path), doc_ids=(leaf.doc_id,), origin="", label="",
            coverage=None, summariser=None, tops=[],
        )
        for i, leaf in enumerate(leaves)
    ]
    item_vectors = [vectors[i] for i in range(len(leaves))]
    nodes, tops = outline(leaves)
    # each page's title and its first chunks: its tagline, and the site's banner
    pages = [
        (node.title, [leaves[i].text for i in _own_leaves(node, leaves)[:OPENING_CHUNKS]])
        for node in nodes if node.kind == "page"
    ]
    taglines = page_taglines((title, texts) for title, texts in pages if title)
    banner = banner_sentences(page_opening(texts) for _, texts in pages)
    shared = shared_sentences((leaf.doc_id, leaf.text) for leaf in leaves) | banner
    index_of: dict[int, int] = {}
    leads: dict[int, str | None] = {}

    def leaf_opening(i: int, n: int) -> list[str]:
        return _opening(leaves[i].text, n, shared)

    def opening_past_banner(i: int, n: int) -> list[str]:
        return _opening(leaves[i].text, n, banner)

    def leaf_lead(i: int) -> str | None:
        if i not in leads:
            found = leaf_opening(i, 1)
            leads[i] = found[0] if found else None
        return leads[i]

    for node in nodes:
        children = [index_of[id(c)] if isinstance(c, OutlineNode) else c for c in node.items]
        own, parts = _digest_parts(node, children, items, leaves, leaf_lead, leaf_opening, shared)
        if not own:
            # text many pages share (a section included whole in each) opens its own
            # node when the node has no words of its own
            own = _digest_parts(node, children, items, leaves, leaf_lead, opening_past_banner, shared)[0]
        own, parts = _with_entries(node, leaves, own, parts)
        text = digest(own, parts, budget=config.summary_max_tokens, count_tokens=count_tokens) or node.title
        me = len(items)
        title = node.title or node.doc_id
        if node.kind == "page":
            title = with_tagline(title, taglines.get(node.title))
        items.append(
            Item(
                level=1 + max(items[k].level for k in children),
                title=title,
                text=text,
                lead=own[0] if own else next((p.lead for p in parts if p.lead), None),
                leaves=list(node.leaves),
                children=children,
                heading_path=node.heading_path,
                doc_ids=_docs(leaves, node.leaves, node.doc_id if node.kind == "page" else None),
                origin=OUTLINE,
                label="title",
                coverage=1.0,
                summariser=OUTLINE,
                tops=[me],
                kind=node.kind,
            )
        )
        for k in children:
            items[k].parents.append(me)
        item_vectors.append(_unit(vectors[node.leaves].mean(axis=0)))
        index_of[id(node)] = me
    return items, item_vectors, [index_of[id(t)] for t in tops]


# how many more sentences are read past the sentences passed over for an opening
_PAST_SKIPPED = 6


def _opening(text: str, n: int, skipped: frozenset[str]) -> list[str]:
    """The first ``n`` sentences of ``text`` that read on their own
    (:func:`arborgraph.core.leads.opening`), ``skipped`` passed over: the site's banner
    ("For development docs, go here." opened every digest of Celery's module pages), the
    sentences many pages share."""
    found = opening(text, n)
    if not any(banner_key(s) in skipped for s in found):
        return found
    return [s for s in opening(text, n + _PAST_SKIPPED) if banner_key(s) not in skipped][:n]


def _digest_parts(
    node: OutlineNode,
    children: list[int],
    items: list[Item],
    leaves: Sequence[Leaf],
    leaf_lead: Callable[[int], str | None],
    leaf_opening: Callable[[int, int], list[str]],
    shared: frozenset[str] = frozenset(),
) -> tuple[list[str], list[Part]]:
    """What an outline node's digest is made of, in reading order: its opening sentences
    (those of its first chunks, when its own text comes first) and its parts, each with
    its plain heading (the digest sits under the node's title) and lead sentence. A
    chunk of a section too small to be a node is a part under that section's heading. A
    part named for page structure ("Options", "Synopsis", "Examples") has no lead: the
    first sentence under it describes one option or example, not the part; nor has one
    whose lead many pages share (``shared``): it says nothing of this node's part."""
    own: list[str] = []
    parts: list[Part] = []
    subsections = any(isinstance(c, OutlineNode) for c in node.items)
    wanted = 2 if subsections else 3
    opening_run = True  # the node's own text before its first part
    for child, k in zip(node.items, children, strict=True):
        if isinstance(child, OutlineNode):
            opening_run = False
            title = _plain(child)
            lead = items[k].lead
            shared_lead = lead is not None and banner_key(lead) in shared
            parts.append(Part(title, None if _structural(title) or shared_lead else lead))
            continue
        path = tuple(leaves[k].heading_path)
        if node.kind == "folder" or len(path) <= len(node.heading_path) or not path:
            if opening_run and len(own) < wanted:
                more = wanted - len(own)
                own.extend(s for s in leaf_opening(k, more) if s not in own)
                # past a list's announcement the chunks that follow are the list
                opening_run = not announces_list(leaves[k].text, more)
            continue
        opening_run = False
        heading = plain_title(path[-1])
        if not parts or parts[-1].title != heading:
            parts.append(Part(heading, None if _structural(heading) else leaf_lead(k)))
    return own, parts


# an API page's node lists its classes as parts when it documents at least this many
_MIN_CLASSES = 2
# a section's opening that stops at a list lists the entries when it has this many
_MIN_ENTRIES = 2
_OPENING_SENTENCES = 3


def _with_entries(node: OutlineNode, leaves: Sequence[Leaf], own: list[str], parts: list[Part]) -> tuple[list[str], list[Part]]:
    """The digest of a node whose own text is a list of entries, each named before its
    parts: an API reference page's classes (:mod:`arborgraph.core.api_pages`: its own
    words before its first class, the module's docstring, then what each class is; a
    node documenting fewer than :data:`_MIN_CLASSES` keeps its digest), or a list of
    options (:mod:`arborgraph.core.definitions`: a section opening with a term, whose
    opening sentences would gloss options they do not name, lists each with its gloss;
    a section whose opening stops at a list it announces lists the entries after it)."""
    if node.kind == "folder":
        return own, parts
    texts = [(leaves[i].chunk_id, leaves[i].text) for i in node.leaves
             if tuple(leaves[i].heading_path) == tuple(node.heading_path)]
    classes = class_one_liners(texts)
    if len(classes) >= _MIN_CLASSES:
        preface = set(before_first_class(texts))
        return [s for s in own if s in preface], [Part(name, sentence) for name, sentence, _ in classes] + parts
    if opens_with_term(text for _, text in texts):
        entries = term_one_liners(texts)
        if entries:
            return [], [Part(terms, sentence) for terms, sentence, _ in entries] + parts
    if texts and announces_list(texts[0][1], _OPENING_SENTENCES):
        # the opening stopped at a list of named entries: what it is, then its entries
        entries = term_one_liners(texts, announced=True)
        if len(entries) >= _MIN_ENTRIES:
            return own, [Part(terms, sentence) for terms, sentence, _ in entries] + parts
    return own, parts


# parts whose first sentence tells what the part is about, though their name is generic
_TELLING = frozenset({"description", "overview", "introduction", "summary", "purpose", "background", "discussion", "details"})


def _structural(title: str) -> bool:
    return is_generic(title) and " ".join(title.casefold().split()) not in _TELLING


def _plain(node: OutlineNode) -> str:
    """A node's title as its parent's digest lists it: a section by its own heading."""
    return plain_title(node.heading_path[-1]) if node.kind == "section" and node.heading_path else node.title


def fan_out(config: RaptorConfig) -> int:
    """How many children a node above the outline may have: as many as its summary can
    read (a table of contents of up to about fifteen chapters, not five clusters named
    by keyphrases)."""
    return max(config.stop_at, config.max_cluster_tokens // config.summary_max_tokens)


@dataclass(frozen=True)
class Grouping:
    """How clusters above the outline are made: ``group_level(sizes, vectors, level)``
    groups one level (each group's sizes summing to at most 1 where it can), the
    summariser writes (an LLM's) cluster summaries, ``embed`` their vectors."""

    group_level: GroupLevel
    embed: EmbedFn
    count_tokens: CountTokens
    summariser: Summariser
    config: RaptorConfig
    report: ProgressCallback


def cluster_above(
    items: list[Item], item_vectors: list[np.ndarray], tops: list[int], leaf_vectors: np.ndarray, grouping: Grouping
) -> int:
    """Cluster ``tops`` level by level until one node is left (adding the clusters to
    ``items`` and their vectors to ``item_vectors``); the root's item index. A folder
    with more children than :func:`fan_out` gets clusters under it first."""
    outline_parents = _group_wide_nodes(items, item_vectors, leaf_vectors, grouping)
    root = group_until(items, item_vectors, list(tops), leaf_vectors, limit=1, grouping=grouping)[0]
    if outline_parents:
        _relevel(items, root)
    return root


# how many times the fan-out a page's pages (by its navigation) may be before they are grouped
_TOC_FAN_FACTOR = 2


def _group_wide_nodes(items: list[Item], item_vectors: list[np.ndarray], leaf_vectors: np.ndarray, grouping: Grouping) -> bool:
    """Group the children of every folder that has more than :func:`fan_out` of them (a
    folder of 150 manual pages), and the pages under a page by its navigation when it
    has more than twice that many (the 40 chapters of one part), into clusters under it;
    whether any was. A page's sections stay as its author laid them out, however many.

    A page's pages are its author's table of contents: a manual's 19 chapters read
    better as they are than as clusters named by keyphrases, so they are grouped only
    past twice the fan-out (a folder's pages are in it only because they are files)."""
    fan = fan_out(grouping.config)
    changed = False
    for k in range(len(items)):
        node = items[k]
        if node.origin != OUTLINE or node.kind not in ("folder", "page"):
            continue
        if node.kind == "folder":
            inner = [c for c in node.children if items[c].level > 0]
        else:
            inner = [c for c in node.children if items[c].kind == "page"]
        if len(inner) <= (fan if node.kind == "folder" else _TOC_FAN_FACTOR * fan):
            continue
        grouped = group_until(items, item_vectors, inner, leaf_vectors, limit=fan, grouping=grouping)
        for c in grouped:
            items[c].parents = [k]
        for c in inner:
            if c not in grouped:
                items[c].parents = [p for p in items[c].parents if p != k]
        if node.kind == "folder":
            leaves_here = [c for c in node.children if items[c].level == 0]
            node.children = sorted(leaves_here + grouped, key=lambda c: items[c].leaves[0])
        else:  # its own text and sections first, then its pages' groups in reading order
            place = {c: n for n, c in enumerate(inner)}
            own = [c for c in node.children if c not in place]
            node.children = own + sorted(grouped, key=lambda c: _first_place(items, c, place))
        changed = True
    return changed


def _first_place(items: list[Item], k: int, place: dict[int, int]) -> int:
    """The earliest ``place`` of an item at or below cluster ``k``."""
    best = len(place)
    stack = [k]
    while stack:
        current = stack.pop()
        if current in place:
            best = min(best, place[current])
            continue
        stack.extend(items[current].children)
    return best


def _relevel(items: list[Item], root: int) -> None:
    """Every node's level one above its highest child's again, after clusters were put
    between outline nodes (post-order, without recursion)."""
    stack: list[tuple[int, bool]] = [(root, False)]
    done: set[int] = set()
    while stack:
        k, expanded = stack.pop()
        if k in done or items[k].level == 0:
            continue
        if expanded:
            items[k].level = 1 + max(items[c].level for c in items[k].children)
            done.add(k)
            continue
        stack.append((k, True))
        stack.extend((c, False) for c in items[k].children if c not in done)


def group_until(
    items: list[Item], item_vectors: list[np.ndarray], current: list[int], leaf_vectors: np.ndarray, *,
    limit: int, grouping: Grouping,
) -> list[int]:
    """Cluster ``current`` level by level until at most ``limit`` nodes are left (adding
    the clusters to ``items`` and their vectors to ``item_vectors``); those nodes. With
    ``limit`` 1, a level of at most :func:`fan_out` nodes gets one root over it."""
    group_level, embed, count_tokens = grouping.group_level, grouping.embed, grouping.count_tokens
    summariser, config, report = grouping.summariser, grouping.config, grouping.report
    current = list(current)
    total = float(len({i for k in current for i in items[k].leaves}))
    fan = fan_out(config)
    rounds = 1
    extractive = summariser.name == "extractive"
    while len(current) > limit:
        tokens = np.array([count_tokens(items[k].text) for k in current], dtype=np.float64)
        chunks = np.array([len(items[k].leaves) for k in current], dtype=np.float64)
        # A cluster's members must fit the summariser's input, and no cluster may hold
        # more than a third of the collection: else one node holds most of the manual
        # and the tree above the outline says nothing.
        sizes = np.maximum(tokens / config.max_cluster_tokens, chunks / max(total / 3, 1.0))
        if len(current) <= fan:  # few enough: the root goes over them
            groups, labels = [tuple(range(len(current)))], np.zeros(len(current), dtype=int)
            report("raptor.cluster", rounds, None)
        else:
            groups, labels = group_level(sizes, np.stack([item_vectors[k] for k in current]), rounds + 1)
        for pos, label in enumerate(labels):
            items[current[pos]].cluster = int(label)
        members_of = [sorted((current[m] for m in g), key=lambda k: items[k].leaves[0]) for g in groups]
        if all(len(members) == 1 for members in members_of):
            if limit > 1:
                break  # nothing merges: the node keeps its children as they are
            members_of = [sorted(current, key=lambda k: items[k].leaves[0])]  # no merge at all: one root
            groups = [tuple(range(len(current)))]
        texts: list[tuple[str, str] | None] = [None] * len(members_of)
        # a group of one names nothing new: it goes up as it is, unwritten
        written_ones = [n for n, members in enumerate(members_of) if len(members) > 1 or len(members_of) == 1]
        if not extractive:
            clusters = [
                Cluster(
                    # its node id is known once the tree is whole: until then (the
                    # prompt, an error naming it) it is called by what it holds
                    node_id=f"the cluster of {items[members_of[n][0]].title!r} and {len(members_of[n]) - 1} more",
                    level=1 + max(items[k].level for k in members_of[n]),
                    members=tuple(
                        ClusterMember(items[k].title, items[k].text, items[k].heading_path, items[k].title, items[k].level, items[k].leaves[0])
                        for k in members_of[n]
                    ),
                    vectors=np.stack([item_vectors[k] for k in members_of[n]]),
                )
                for n in written_ones
            ]
            summaries = run_ordered(
                summariser.summarise, clusters, workers_for(summariser), stop_on_error=True,
                done=lambda n: report("raptor.summarise", n, len(clusters)),
            )
            for n, summary in zip(written_ones, summaries, strict=True):
                texts[n] = (summary.title, summary.text)
        new: list[int] = []
        for members, written in zip(members_of, texts, strict=True):
            if len(members) == 1 and len(members_of) > 1:
                new.append(members[0])
                continue
            covered = sorted({i for k in members for i in items[k].leaves})
            cluster_tops = sorted({t for k in members for t in items[k].tops})
            best = max(cluster_tops, key=lambda t: (len(items[t].leaves), -t))
            share = len(items[best].leaves) / len(covered)
            parts = [Part(items[k].title, items[k].lead) for k in members]
            text = written[1] if written else digest([], parts, budget=config.summary_max_tokens, count_tokens=count_tokens)
            if share >= NAMES_CLUSTER:
                title = items[best].title if share >= NAMES_ALONE else f"{items[best].title} and related pages"
                label, coverage = "title", round(share, 4)
            else:
                title = written[0] if written else items[best].title  # keyphrases replace it later
                label, coverage = ("summariser" if written else "keyphrases"), None
            me = len(items)
            items.append(
                Item(
                    level=1 + max(items[k].level for k in members),
                    title=title,
                    text=text,
                    lead=next((items[k].lead for k in members if items[k].lead), None),
                    leaves=covered,
                    children=list(members),
                    heading_path=(),
                    doc_ids=_docs_of(items, covered),
                    origin="cluster",
                    label=label,
                    coverage=coverage,
                    summariser=summariser.name if written else "extractive",
                    tops=cluster_tops,
                )
            )
            for k in members:
                items[k].parents.append(me)
            if written and config.summary_vectors != "centroid":
                item_vectors.append(_unit(np.asarray(embed([f"{title}\n{text}"]), dtype=np.float64)[0]))
            else:
                item_vectors.append(_unit(leaf_vectors[covered].mean(axis=0)))
            new.append(me)
        report("raptor.embed", rounds, None)
        if len(new) == len(current):
            break  # nothing merged (every group of one): no level to add
        current = new
        rounds += 1
    return current


def to_nodes(items: list[Item], leaves: Sequence[Leaf], root: int) -> tuple[list[Node], list[int]]:
    """Tree nodes from ``items``, leaves first and then level by level, with ids
    ``L<level>:<n>``; and, for each node, the item it was made from."""
    order = sorted(range(len(items)), key=lambda k: (items[k].level, k))
    ids: dict[int, str] = {}
    counts: dict[int, int] = {}
    for k in order:
        level = items[k].level
        if level == 0:
            ids[k] = leaves[k].chunk_id
        else:
            ids[k] = f"L{level}:{counts.get(level, 0)}"
            counts[level] = counts.get(level, 0) + 1
    nodes = []
    for k in order:
        it = items[k]
        leaf = leaves[k] if it.level == 0 else None
        nodes.append(
            Node(
                node_id=ids[k],
                level=it.level,
                title=it.title,
                text=it.text,
                children=tuple(ids[c] for c in it.children),
                parents=tuple(ids[p] for p in it.parents) if k != root else (),
                chunk_ids=tuple(leaves[i].chunk_id for i in it.leaves),
                doc_ids=it.doc_ids,
                heading_path=it.heading_path,
                summariser=it.summariser,
                cluster=it.cluster if it.parents else -1,
                start=leaf.start if leaf else None,
                end=leaf.end if leaf else None,
                origin=it.origin,
                label=it.label,
                coverage=it.coverage,
            )
        )
    return nodes, order


def _own_leaves(node: OutlineNode, leaves: Sequence[Leaf]) -> list[int]:
    """A page's own chunks: not those of the pages under it by its navigation."""
    return [i for i in node.leaves if leaves[i].doc_id == node.doc_id]


def _docs(leaves: Sequence[Leaf], rows: Sequence[int], own: str | None = None) -> tuple[str, ...]:
    """Documents of ``rows``, ``own`` (a page's own document, above the pages under it)
    first, then the one with most chunks (ties: reading order)."""
    counts: dict[str, int] = {}
    for i in rows:
        counts[leaves[i].doc_id] = counts.get(leaves[i].doc_id, 0) + 1
    return tuple(sorted(counts, key=lambda d: (d != own, -counts[d])))  # stable: reading order on ties


def _docs_of(items: list[Item], rows: Sequence[int]) -> tuple[str, ...]:
    counts: dict[str, int] = {}
    for i in rows:
        doc = items[i].doc_ids[0]
        counts[doc] = counts.get(doc, 0) + 1
    return tuple(sorted(counts, key=lambda d: -counts[d]))


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return (vector / norm if norm > 0 else vector).astype(np.float32)
