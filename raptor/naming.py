"""Short names for the tree's summary nodes, without a model.

A name is chosen among two kinds of candidate phrase, both taken from the node's own
leaves so that it is grounded in what the node covers:

- the manual's headings over the node's chunks (its authors' names for their topics);
- noun-like word runs of one to three words from the chunks' prose (code, tables and
  headings left out), with words that behave like verbs in this manual dropped.

Each candidate is scored for the node as the F-beta of its *coverage* (the share of
the node's chunks it occurs in; a heading's: the chunks under it) and its *precision*
(the share of the manual's chunks holding it that the node covers), with coverage
weighing four times precision: a table-of-contents entry names what the whole node
holds, so a phrase precise for a third of it ("Git reset" over pages on branching,
switching and rebasing) loses to one common in all of it and rare elsewhere, as
class-based TF-IDF names topics; a phrase spread over the whole manual ("data",
"file") names nothing. Siblings (the children of one parent) get distinct names: the
best-scored claim their first choice, the others fall back to their next. A section
heading that recurs on many pages ("Overview", "Examples") or under many parents, and a
one-word heading, name a node only with their parent heading before them, so a reader
knows which feature they belong to ("rndc: Commands"). When the best phrase covers
little of the node and no heading covers most of it, a second one that covers much of
the rest joins it ("Write transaction and read locks").
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from arborgraph.core.text import STOPWORDS, SUMMARY_STOPWORDS
from raptor.config import RaptorConfig
from raptor.text import clean_label
from arborgraph.core.leads import is_summary_sentence, split_units
from arborgraph.core.taglines import banner_key, banner_sentences, opening_chunks, page_opening
from raptor.tree import Node, Tree

MAX_WORDS = 6
MAX_PHRASE_WORDS = 3
# A heading on this share of the pages (or more) names page structure, not a topic.
RECURRING_HEADING_SHARE = 0.10
RECURRING_HEADING_PARENTS = 3
BOILERPLATE_HEADING_SHARE = 0.5
# Coverage weighs this many times precision (F-beta): a table-of-contents entry names
# what the whole node holds, and a phrase fitting a part of it misleads ("Git reset"
# for a node on branches, switching and rebasing).
_BETA = 2.0
# A phrase on less of the node than this names a part of it: it keeps a fraction of
# its score, so that it names the node only when nothing covers more.
_MIN_COVERAGE = 0.35
_NARROW = 0.35
# How much a phrase spread over the parent's chunks loses: it tells siblings apart less
# well, but a heading over the whole node still names it ("rndc: Commands").
_PARENT_WEIGHT = 0.5
# Authored headings read better than word runs of equal score.
_HEADING_BONUS = 1.6
# A heading over most of the node is its authors' name for it.
_HEADING_MOST = 0.6
_HEADING_MOST_BONUS = 1.3
# Headings over what a page points to, not over a topic: they name no node.
_NO_TOPIC = frozenset(
    "see also references reference bugs reporting bugs author authors copyright license notes"
    " resources availability colophon footnotes".split(" ")
) | {"see also", "reporting bugs"}
# Each word beyond the first makes a phrase more readable (and more specific).
_LENGTH_BONUS = 0.3
# Below this coverage, the best phrase is joined by a second one.
_PAIR_BELOW = 0.5
_PAIR_SCORE_SHARE = 0.5
# A word followed by an article or preceded by "to"/a modal this often is a verb here.
_VERB_SHARE = 0.3
_CANDIDATES = 12
# Identifiers read worse than words; they name a node only when nothing else does.
_CODE_PENALTY = 0.5
# Two words sharing their first letters are one word to a pair ("reopening and reopened").
_STEM = 5
# A lone word names a group of chunks less clearly than a phrase or a heading.
_SINGLE_WORD = 0.5
_LOWER_WORD = 0.4
_UBIQUITOUS = 0.1
_UBIQUITOUS_MIN = 50
# A lone-word heading takes its parent heading as context when that is this short.
_CONTEXT_WORDS = 2
# Phrases joined into one name are short: two of three words each read as a list.
_PAIR_MAX_WORDS = 3
# The second phrase of a pair adds at least this share of the node to the first's.
_PAIR_GAIN = 0.2

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:[-'][A-Za-z0-9_]+)*")
_BREAK = STOPWORDS | SUMMARY_STOPWORDS | frozenset(
    "also e.g i.e etc called contains contain following follows includes include provides provide"
    " different various existing specific particular certain similar previous entire whole current"
    " actual appropriate necessary possible related respective already still again instead simply"
    " currently automatically really newly"
    # function words that break a run but are not in the stopword lists
    " another unless whether whereas otherwise almost alone along among amongst anyone anything anyway"
    " besides beyond due enough everyone everything except hence indeed instead latter former meanwhile"
    " moreover mostly namely neither nevertheless nobody none nothing perhaps please rather somehow"
    " someone something sometime sometimes somewhere therefore thereby together toward towards whatever"
    " whoever yet usually often always never typically generally normally otherwise least less more most"
    " much many several few".split()
)
# Words as a reader counts them in a name (punctuation and separators dropped).
_READ_WORD = re.compile(r"[A-Za-z0-9][\w'+#.-]*[\w+#]|[A-Za-z0-9]")
# "doesn't", "won't" (and "doesn" before a typographic apostrophe): no part of a name
_CONTRACTION = re.compile(r"n't$|^(?:doesn|don|isn|aren|wasn|weren|won|can|couldn|shouldn|wouldn|didn|hasn|haven)$", re.I)
# participles that point back at the text ("specified variable", "given flag") open no name
_POINTING = frozenset(
    "specified given used described mentioned listed corresponding respective resulting desired above below"
    " said".split()
)
_BEFORE_OBJECT = frozenset("a an the that this these those its their each any".split())
_BEFORE_VERB = frozenset("to will can must should may might cannot would could does do not".split())
# An identifier from code (snake_case, digits inside a word, camelCase) reads badly as a name.
_CODE_LIKE = re.compile(r"_|[a-z][0-9]|[0-9][a-z]|[a-z][A-Z]")
# "Chapter 30 - The smtp transport": the numbering says nothing a name needs
_CHAPTER = re.compile(r"^(?:chapter|section|part|appendix)\s+[\dIVXivx]+[.:]?\s*(?:[-—–:]\s*)?", re.IGNORECASE)
_IDENT = re.compile(r"[a-z][-.][a-z]|[0-9]|\(")


@dataclass(frozen=True)
class _Vocabulary:
    """The candidate phrases of every leaf, as leaf x phrase indicator matrices."""

    phrases: sp.csr_matrix  # leaf x phrase: the leaf's prose holds the phrase
    words: sp.csr_matrix  # leaf x word: the leaf's text holds the word (for grounding)
    phrase_keys: list[str]
    phrase_text: list[str]  # how the manual writes each phrase most often
    phrase_is_heading: np.ndarray
    phrase_is_code: np.ndarray  # holds an identifier
    phrase_is_page: np.ndarray  # a page's title
    phrase_is_lower: np.ndarray  # a plain word, not an acronym ("Fix", "large"; not "CSK", "IPv6")
    phrase_is_ident: np.ndarray  # one word with a hyphen, dot or digit: a command or file name
    phrase_lengths: np.ndarray  # words in each phrase
    word_column: dict[str, int]


def uses_keyphrase_names(config: RaptorConfig, summariser: str) -> bool:
    """Whether summaries by ``summariser`` are named here (``config.naming``)."""
    return config.naming == "keyphrases" or (config.naming == "auto" and summariser == "extractive")


def named(tree: Tree, config: RaptorConfig, summariser: str, only: Collection[str] | None = None) -> Tree:
    """``tree`` with its summaries (or those in ``only``) named by :func:`name_tree`
    when ``config.naming`` says so; otherwise ``tree`` as it is."""
    if not uses_keyphrase_names(config, summariser):
        return tree
    names = name_tree(tree, only=only)
    if not names:
        return tree
    nodes = tuple(replace(n, title=names[n.node_id]) if n.node_id in names else n for n in tree.nodes)
    return Tree(nodes=nodes, root_id=tree.root_id, vectors=tree.vectors)


def name_tree(
    tree: Tree, *, only: Collection[str] | None = None, max_words: int = MAX_WORDS, headings: bool = True
) -> dict[str, str]:
    """Names for the summary nodes of ``tree``: every one, or only those in ``only``
    (the others keep their titles, and the new names avoid their siblings' titles).
    ``headings=False`` names from the chunks' prose alone: for nodes that no heading
    covers well, where a heading would name a small part of the node.

    Deterministic: the same tree gives the same names.
    """
    summaries = [n for n in tree.nodes if n.level > 0]
    targets = [n for n in summaries if only is None or n.node_id in only]
    if not targets:
        return {}
    leaves = tree.leaves()
    vocab = _vocabulary(leaves)
    leaf_row = {leaf.node_id: i for i, leaf in enumerate(leaves)}
    fixed = {n.node_id: n.title for n in summaries if only is not None and n.node_id not in only}
    names: dict[str, str] = {}
    phrase_df = np.asarray(vocab.phrases.sum(axis=0)).ravel()
    covers = _Coverage(summaries, leaf_row, vocab)
    title_of = {n.node_id: n.title for n in summaries}
    for parent, group in _sibling_groups(summaries, targets):
        # a node under two parents, named in its first parent's group, counts here too;
        # and the parent (named first: groups go top down) keeps its name to itself
        taken = {_same(fixed.get(n.node_id) or names[n.node_id]) for n in group if n.node_id in fixed or n.node_id in names}
        if parent:
            taken.add(_same(names.get(parent, title_of[parent])))
        wanted = [n for n in group if n.node_id not in fixed and n.node_id not in names]
        choices = {n.node_id: _candidates(n, vocab, covers, phrase_df, max_words, headings) for n in wanted}
        # the node with the strongest first choice claims it first
        order = sorted(wanted, key=lambda n: (-(choices[n.node_id][0][1] if choices[n.node_id] else 0.0), n.node_id))
        for node in order:
            name = next((c for c, _ in choices[node.node_id] if _same(c) not in taken), None)
            if name is None:
                name = _fallback(node, choices[node.node_id], taken)
            taken.add(_same(name))
            names[node.node_id] = name
    return names


def _sibling_groups(summaries: Sequence[Node], targets: Sequence[Node]) -> list[tuple[str, list[Node]]]:
    """(parent id, its summary children) for each sibling group holding a target, top
    level first ("" for the root's group). A node under several parents is named in
    its first parent's group."""
    by_parent: dict[str, list[Node]] = defaultdict(list)
    for n in summaries:
        for p in n.parents or ("",):
            by_parent[p].append(n)
    seen: set[str] = set()
    groups = []
    for n in sorted(targets, key=lambda n: -n.level):  # stable: node order within a level
        parent = (n.parents or ("",))[0]
        if parent not in seen:
            seen.add(parent)
            groups.append((parent, by_parent[parent]))
    return groups


def _key(name: str) -> str:
    return " ".join(name.lower().split())


def _same(name: str) -> str:
    """A name as siblings and parent compare it: "Expansion item" is "Expansion items"."""
    words = _key(name).split()
    return " ".join([*words[:-1], _singular(words[-1])]) if words else ""


def _length(name: str) -> int:
    return len(_READ_WORD.findall(name))


def _singular(word: str) -> str:
    """A phrase's last word as its key has it: singular and plural are one phrase."""
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


class _Coverage:
    """For each summary node, the chunks of it holding each phrase and each word (one
    sparse product of the node x leaf incidence with the leaf matrices)."""

    def __init__(self, summaries: Sequence[Node], leaf_row: Mapping[str, int], vocab: _Vocabulary) -> None:
        self.row_of = {n.node_id: k for k, n in enumerate(summaries)}
        pairs = sorted({(k, leaf_row[c]) for k, n in enumerate(summaries) for c in n.chunk_ids if c in leaf_row})
        incidence = sp.csr_matrix(
            (np.ones(len(pairs)), ([k for k, _ in pairs], [r for _, r in pairs])),
            shape=(len(summaries), vocab.phrases.shape[0]),
        )
        self.sizes = np.asarray(incidence.sum(axis=1)).ravel()
        self.leaf_rows = [incidence[k].indices for k in range(len(summaries))]
        self.leaf_phrases = vocab.phrases.tocsr()
        self.phrases = (incidence @ vocab.phrases).tocsr()
        self.words = (incidence @ vocab.words).tocsr()

    def phrase_counts(self, node: Node) -> tuple[np.ndarray, np.ndarray, int]:
        """(phrase columns, chunks holding each, the node's chunk count)."""
        k = self.row_of[node.node_id]
        row = self.phrases[k]
        order = np.argsort(row.indices, kind="stable")
        return row.indices[order], row.data[order], int(self.sizes[k])

    def share_in(self, node_id: str, columns: np.ndarray) -> np.ndarray:
        """The share of ``node_id``'s chunks holding each phrase of ``columns``."""
        k = self.row_of[node_id]
        row = self.phrases[k]
        counts = dict(zip(row.indices.tolist(), row.data.tolist()))
        return np.array([counts.get(j, 0.0) for j in columns.tolist()]) / max(self.sizes[k], 1)

    def union_share(self, node: Node, a: int, b: int) -> float:
        """The share of ``node``'s chunks holding phrase ``a`` or phrase ``b``."""
        rows = self.leaf_rows[self.row_of[node.node_id]]
        both = self.leaf_phrases[rows][:, [a, b]]
        return float((np.asarray(both.sum(axis=1)).ravel() > 0).sum()) / max(len(rows), 1)

    def word_columns(self, node: Node) -> set[int]:
        return set(self.words[self.row_of[node.node_id]].indices.tolist())


def _candidates(
    node: Node, vocab: _Vocabulary, covers: _Coverage, phrase_df: np.ndarray, max_words: int, headings: bool = True
) -> list[tuple[str, float]]:
    """The node's name candidates, best first, each at most ``max_words`` words
    (headings among them only with ``headings``)."""
    present, in_node, size = covers.phrase_counts(node)
    if not headings:
        prose = ~vocab.phrase_is_heading[present]
        present, in_node = present[prose], in_node[prose]
    if size == 0 or len(present) == 0:
        return []
    coverage = in_node / size
    precision = in_node / np.maximum(phrase_df[present], 1)
    beta2 = _BETA**2
    score = (1 + beta2) * coverage * precision / np.maximum(beta2 * precision + coverage, 1e-12)
    score *= np.where(coverage >= _MIN_COVERAGE, 1.0, _NARROW)
    score *= 1 + _LENGTH_BONUS * (vocab.phrase_lengths[present] - 1)
    # a phrase on much of what the parent covers ("SQLite" in SQLite's manual) tells
    # none of its children apart; the root (and a tree of one node) has no parent
    if node.parents:
        score *= 1 - _PARENT_WEIGHT * covers.share_in(node.parents[0], present)
    score *= np.where(vocab.phrase_is_heading[present], _HEADING_BONUS, 1.0)
    score *= np.where(vocab.phrase_is_heading[present] & (coverage >= _HEADING_MOST), _HEADING_MOST_BONUS, 1.0)
    score *= np.where(vocab.phrase_is_code[present], _CODE_PENALTY, 1.0)
    # a lone word, heading or not ("Blocks", "Zone"), names a group of chunks vaguely;
    # a lone identifier ("named-checkconf") is specific
    lone = (vocab.phrase_lengths[present] == 1) & ~vocab.phrase_is_ident[present]
    score *= np.where(lone, _SINGLE_WORD, 1.0)
    # a lone common word ("large", "failure") is no name at all; an acronym may be
    score *= np.where(lone & vocab.phrase_is_lower[present] & ~vocab.phrase_is_heading[present], _LOWER_WORD, 1.0)
    # a word of a tenth of the manual ("module", "CMake" in CMake's) names no part of it
    ubiquitous = phrase_df[present] > _ubiquity(vocab)
    score *= np.where(lone & ubiquitous, _LOWER_WORD, 1.0)
    if size > 2:
        # a phrase of one chunk says little about a group of them
        score *= np.where(in_node >= 2, 1.0, 0.2)
    order = present[np.argsort(-score, kind="stable")][: 4 * _CANDIDATES]
    score_of = dict(zip(present.tolist(), score.tolist()))
    cover_of = dict(zip(present.tolist(), coverage.tolist()))
    grounded = _grounding(covers.word_columns(node), vocab)

    out: list[tuple[str, float]] = []
    singles: list[tuple[int, float]] = []
    # headings whose words the chunks do not use ("Description"): the names of last resort
    ungrounded: list[tuple[int, float]] = []
    for j in order.tolist():
        text = _display(vocab, j)
        if _length(text) > max_words:
            continue
        # a heading given its context ("rndc: Commands") is grounded by its own words
        own = vocab.phrase_text[j].rpartition(": ")[2] if vocab.phrase_is_heading[j] else vocab.phrase_text[j]
        if grounded(own) < 0.8:
            if vocab.phrase_is_heading[j]:
                ungrounded.append((j, score_of[j]))
            continue
        singles.append((j, score_of[j]))
        if len(singles) >= _CANDIDATES:
            break
    if not singles:
        return [(_display(vocab, j), s) for j, s in ungrounded[:_CANDIDATES]]
    best, best_score = singles[0]
    # a heading over most of the node names it alone
    whole = any(vocab.phrase_is_heading[j] and cover_of[j] >= _HEADING_MOST for j, _ in singles)
    if cover_of[best] < _PAIR_BELOW and not whole:
        pair = _pair(node, best, best_score, singles[1:], vocab, covers, cover_of, max_words, phrase_df)
        if pair is not None:
            out.append(pair)
    out.extend((_display(vocab, j), s) for j, s in singles)
    return out


def _pair(
    node: Node, best: int, best_score: float, others: list[tuple[int, float]], vocab: _Vocabulary,
    covers: _Coverage, cover_of: Mapping[int, float], max_words: int, phrase_df: np.ndarray,
) -> tuple[str, float] | None:
    """"A and B" when ``best`` covers little of ``node`` and a second candidate, sharing
    no word with it and scoring at least :data:`_PAIR_SCORE_SHARE` of it, covers much
    of the rest; never two page titles (that is a chain of titles, not a name)."""
    words = {w[:_STEM] for w in vocab.phrase_keys[best].split()}
    for j, s in others:
        if s < _PAIR_SCORE_SHARE * best_score:
            break
        other = {w[:_STEM] for w in vocab.phrase_keys[j].split()}
        if other & words or vocab.phrase_is_code[j] or vocab.phrase_is_code[best]:
            continue
        if any(vocab.phrase_lengths[k] == 1 and vocab.phrase_is_lower[k] for k in (best, j)):
            continue  # "Alternative Completion and node": a lone plain word adds nothing
        if phrase_df[j] > _ubiquity(vocab):
            continue  # "Deferred call and CMake": the manual's own subject adds nothing
        if vocab.phrase_is_page[j] and vocab.phrase_is_page[best]:
            continue
        if max(vocab.phrase_lengths[j], vocab.phrase_lengths[best]) > _PAIR_MAX_WORDS:
            continue
        if covers.union_share(node, best, j) < cover_of[best] + _PAIR_GAIN:
            continue
        pair = f"{_display(vocab, best)} and {_lower_first(_display(vocab, j))}"
        if _length(pair) <= max_words:
            return pair, best_score + s
    return None


def _ubiquity(vocab: _Vocabulary) -> float:
    """How many chunks make a phrase the manual's own subject: a tenth of them, in a
    manual of some size (in a slice of a few pages every topic is a tenth)."""
    return max(_UBIQUITOUS * vocab.phrases.shape[0], _UBIQUITOUS_MIN)


def _grounding(present: set[int], vocab: _Vocabulary):  # type: ignore[no-untyped-def]
    """The share of a phrase's content words found in the node's chunk texts
    (``present``: the word columns of those texts)."""

    def share(text: str) -> float:
        content = [w.lower() for w in _WORD.findall(text) if w.lower() not in STOPWORDS]
        if not content:
            return 0.0
        return sum(vocab.word_column.get(w, -1) in present for w in content) / len(content)

    return share


def _display(vocab: _Vocabulary, j: int) -> str:
    return _upper_first(vocab.phrase_text[j])


def _upper_first(text: str) -> str:
    first = text.split(" ", 1)[0]
    # a plain word only: "git-submodule(1)" and "json()" keep their case
    if first.isalpha() and first.islower():
        return text[:1].upper() + text[1:]
    return text


def _lower_first(text: str) -> str:
    words = text.split(" ")
    first = words[0]
    if len(words) > 1 and all(w[:1].isupper() for w in words if w[:1].isalpha() and len(w) > 3):
        return text  # a title-cased heading keeps its case ("Matching Control")
    if first[:1].isupper() and first[1:].islower():
        return text[:1].lower() + text[1:]
    return text


def _fallback(node: Node, choices: list[tuple[str, float]], taken: set[str]) -> str:
    """A name when every candidate is a sibling's: the best one with the next best
    added, else the best one numbered."""
    if len(choices) >= 2:
        for extra, _ in choices[1:]:
            name = f"{choices[0][0]}: {_lower_first(extra)}"
            if _same(name) not in taken and _length(name) <= MAX_WORDS:
                return name
    base = choices[0][0] if choices else "Summary"
    # numbered as a table of contents numbers its parts ("Options (2)"), not by node id
    k = 2
    while _same(f"{base} ({k})") in taken:
        k += 1
    return f"{base} ({k})"


# -- the vocabulary ---------------------------------------------------------------------


def _vocabulary(leaves: Sequence[Node]) -> _Vocabulary:
    lowered_words = [[w.lower() for w in _WORD.findall(leaf.text)] for leaf in leaves]
    verbs = _verb_like(lowered_words)
    keys: dict[str, int] = {}
    plain_keys: list[str] = []
    surface: list[Counter[str]] = []
    is_heading: list[bool] = []
    rows: list[int] = []
    cols: list[int] = []

    def column(key: str, text: str, heading: bool) -> int:
        # a heading's column counts the chunks under it, a phrase's those whose prose
        # says it: the "file" command's page is no heading over every chunk saying "file"
        j = keys.get(("h:" if heading else "p:") + key)
        if j is None:
            j = keys[("h:" if heading else "p:") + key] = len(surface)
            plain_keys.append(key)
            surface.append(Counter())
            is_heading.append(heading)
        surface[j][text] += 1
        return j

    generic = _recurring_headings(leaves)
    boilerplate = _boilerplate_headings(leaves)
    banner = _banner(leaves)
    page_keys = {_key(clean_label(leaf.heading_path[0]).rstrip(".:;,")) for leaf in leaves if leaf.heading_path}
    for i, leaf in enumerate(leaves):
        seen: set[int] = set()
        path = [_CHAPTER.sub("", clean_label(h)).rstrip(".:;,") for h in leaf.heading_path]
        for depth, label in enumerate(path):
            lone = " " not in label and not _IDENT.search(label)
            if depth > 0 and (_key(label) in generic or lone):
                # "Examples" alone names nothing: "UPSERT: Examples" does; a lone word
                # ("Commands") reads better with a short context ("rndc: Commands")
                context = _short_heading(
                    next((h for h in reversed(path[:depth]) if _key(h) not in generic | boilerplate), path[0])
                )
                if _key(label) in generic or len(context.split()) <= _CONTEXT_WORDS:
                    label = f"{context}: {label}"
            if not label or len(label.split()) > MAX_WORDS or not _WORD.search(label):
                continue
            if _key(path[depth]) in _NO_TOPIC or _key(path[depth]) in boilerplate:
                continue
            seen.add(column(_key(label), label, True))
        for run in _prose_runs(leaf.text, banner):
            low = [w.lower() for w in run]
            # each word's part in a key: the last word of a phrase drops a plural "s"
            last = [_singular(w) for w in low]
            usable = [w not in verbs for w in low]
            # an adverb opens no name ("Successfully read"), a participle ends none
            # ("Directories specified"), nor does a lone letter ("-D" leaves one)
            can_open = [
                u and len(w) > 1 and not (len(w) >= 6 and w.endswith("ly")) and w not in _POINTING
                for u, w in zip(usable, low)
            ]
            can_close = [u and len(w) > 1 and not (len(w) >= 5 and w.endswith("ed")) for u, w in zip(usable, low)]
            for n in range(1, MAX_PHRASE_WORDS + 1):
                for start in range(len(run) - n + 1):
                    end = start + n
                    if not (can_open[start] and can_close[end - 1]):
                        continue
                    if n == 1 and (len(low[start]) < 3 or _CODE_LIKE.search(run[start])):
                        continue
                    key = " ".join([*low[start : end - 1], last[end - 1]])
                    seen.add(column(key, " ".join(run[start:end]), False))
        for j in seen:
            rows.append(i)
            cols.append(j)
    phrase_keys = plain_keys
    phrases = sp.csr_matrix(
        (np.ones(len(rows), dtype=np.float64), (rows, cols)), shape=(len(leaves), len(phrase_keys))
    )
    word_column: dict[str, int] = {}
    wrows: list[int] = []
    wcols: list[int] = []
    for i, words_of_leaf in enumerate(lowered_words):
        for w in set(words_of_leaf):
            wrows.append(i)
            wcols.append(word_column.setdefault(w, len(word_column)))
    words = sp.csr_matrix((np.ones(len(wrows)), (wrows, wcols)), shape=(len(leaves), len(word_column)))
    phrase_text = [min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0] for c in surface]
    return _Vocabulary(
        phrases=phrases,
        words=words,
        phrase_keys=phrase_keys,
        phrase_text=phrase_text,
        phrase_is_heading=np.array(is_heading, dtype=bool),
        phrase_is_code=np.array([bool(_CODE_LIKE.search(c.most_common(1)[0][0])) for c in surface], dtype=bool),
        phrase_is_lower=np.array([t[:1].isalpha() and t[1:].islower() for t in phrase_text], dtype=bool),
        phrase_is_page=np.array([h and k in page_keys for k, h in zip(phrase_keys, is_heading)], dtype=bool),
        phrase_is_ident=np.array([bool(_IDENT.search(k)) and " " not in k for k in phrase_keys], dtype=bool),
        phrase_lengths=np.array([k.count(" ") + 1 for k in phrase_keys]),
        word_column=word_column,
    )


def _recurring_headings(leaves: Sequence[Node]) -> set[str]:
    """Section headings (keys) found on at least :data:`RECURRING_HEADING_SHARE` of the
    pages, and on two at least; or under :data:`RECURRING_HEADING_PARENTS` different
    headings (a page holding many manual pages repeats "Options" under each)."""
    pages: dict[str, set[str]] = defaultdict(set)
    parents: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for leaf in leaves:
        doc = leaf.doc_ids[0] if leaf.doc_ids else leaf.node_id
        path = [_key(clean_label(h)) for h in leaf.heading_path]
        pages[doc].update(path[1:])
        for depth in range(1, len(path)):
            parents[path[depth]].add((doc, *path[:depth]))
    counts = Counter(k for keys in pages.values() for k in keys)
    need = max(2.0, RECURRING_HEADING_SHARE * len(pages))
    return {k for k, n in counts.items() if n >= need} | {
        k for k, under in parents.items() if len(under) >= RECURRING_HEADING_PARENTS
    }


def _boilerplate_headings(leaves: Sequence[Node]) -> set[str]:
    """Headings (keys) on half the pages or more, of three pages at least: the site's
    banner ("Exim Internet Mailer"), which names nothing even with a context."""
    pages: dict[str, set[str]] = defaultdict(set)
    for leaf in leaves:
        doc = leaf.doc_ids[0] if leaf.doc_ids else leaf.node_id
        pages[doc].update(_key(clean_label(h)) for h in leaf.heading_path[1:])
    counts = Counter(k for keys in pages.values() for k in keys)
    return {k for k, n in counts.items() if n >= 3 and n >= BOILERPLATE_HEADING_SHARE * len(pages)}


def _short_heading(label: str) -> str:
    """A heading as the context of another: a manual page's name without its tagline
    ("mdig - DNS pipelined lookup utility" -> "mdig")."""
    for sep in (" - ", " — ", " – ", ": "):
        head, found, _ = label.partition(sep)
        if found and 1 <= len(head.split()) <= 3:
            return head.strip()
    return label


def _banner(leaves: Sequence[Node]) -> frozenset[str]:
    """The sentences many pages open with (:func:`arborgraph.core.taglines.banner_sentences`):
    a site's banner names no topic ("Development docs" named a cluster of Celery's module
    pages)."""
    openings = opening_chunks((leaf.doc_ids[0], leaf.text) for leaf in leaves if leaf.doc_ids)  # reading order
    return banner_sentences(page_opening(texts) for texts in openings.values())


def _prose_runs(text: str, banner: frozenset[str] = frozenset()) -> list[list[str]]:
    """Runs of adjacent content words in the prose sentences of ``text`` (a site's
    ``banner`` left out): broken by punctuation and function words, so each run is a
    candidate phrase's home."""
    runs: list[list[str]] = []
    for unit in split_units(text):
        if not is_summary_sentence(unit) or (banner and banner_key(unit.text) in banner):
            continue
        sentence = unit.text
        run: list[str] = []
        last_end = -1
        for m in _WORD.finditer(sentence):
            word = m.group()
            adjacent = last_end >= 0 and sentence[last_end : m.start()].isspace()
            if not adjacent or word.lower() in _BREAK or _CONTRACTION.search(word):
                if run:
                    runs.append(run)
                run = []
            if word.lower() not in _BREAK and not _CONTRACTION.search(word):
                run.append(word)
            last_end = m.end()
        if run:
            runs.append(run)
    return runs


def _verb_like(lowered_words: Sequence[list[str]]) -> frozenset[str]:
    """Words that behave like verbs in this manual (``lowered_words``: each leaf's words,
    lower-cased): often right after "to" or a modal, or right before an article. No
    tagger: the manual's own usage decides."""
    total: Counter[str] = Counter()
    verbish: Counter[str] = Counter()
    for words in lowered_words:
        total.update(words)
        for k, w in enumerate(words):
            if (k > 0 and words[k - 1] in _BEFORE_VERB) or (k + 1 < len(words) and words[k + 1] in _BEFORE_OBJECT):
                verbish[w] += 1
    verbs = {w for w, n in verbish.items() if n >= 2 and n / total[w] >= _VERB_SHARE and not _CODE_LIKE.search(w)}
    # "occurs", "remains": the -s form of a base that follows "to" and modals
    verbs |= {w for w in total if w.endswith("s") and (w[:-1] in verbs or (w.endswith("es") and w[:-2] in verbs))}
    return frozenset(verbs)

