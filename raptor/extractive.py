"""The default summariser: no LLM, the manual's own sentences.

For each cluster it picks the sentences that best represent it, with maximal marginal
relevance (MMR) against redundancy and a bonus for key terms not yet covered, until a
token budget is full, from at most a few pages; the chosen sentences are then grouped
by the page they come from, each group under a line naming the page
(:func:`raptor.text.page_line`), pages and sentences in reading order, so that a
summary reads as a short digest of a few pages rather than a mix of sentences.
Relevance is closeness to the cluster's centroid in embedding space: of each sentence's
own vector, or (``sentence_vectors=False``, the cheap default of index builds) of the
vector of the member it comes from, blended with its key-term score, which needs no
embedding at all. Every other line of a summary is a verbatim (up to
whitespace) sentence or list item of a member, so a reader can verify it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from raptor.summary import Cluster, Summary
from raptor.text import clean_label, heading_label, key_terms, SECTION_MARK, page_line, paged_units, terms
from arborgraph.core.text import leans_on_context
from arborgraph.core.leads import Unit, is_summary_sentence, split_units, stands_alone

EmbedFn = Callable[[Sequence[str]], np.ndarray]
CountTokens = Callable[[str], int]

_DUPLICATE_SIM = 0.97
# A sentence that needs the text around it ("See ...", "The table below ...") reads
# badly in a digest: it keeps this share of its key-term score.
_LEANING = 0.3
# Without sentence vectors: term-set overlap above this is a near-duplicate sentence.
_DUPLICATE_JACCARD = 0.8


@dataclass(frozen=True)
class _Candidate:
    member: int
    unit: Unit
    lexical: float
    tokens: int
    page: str = ""


class ExtractiveSummariser:
    """Extractive, embedding-guided summaries within a token budget.

    Parameters
    ----------
    embed : texts -> unit row vectors (the same model as the leaf vectors).
    count_tokens : the tokenizer's count, for the budget.
    max_tokens : budget of one summary text.
    max_sentences_embedded : at most this many sentences per cluster are embedded;
        they are preselected by key-term score, round-robin over members so every
        member is represented. Sentence vectors are memoised per instance, so the
        sentences of lower summaries are not embedded again higher up.
    sentence_vectors : embed the candidate sentences (False: no embedding; relevance
        from the member vectors the cluster carries and the key-term score).
    mmr_lambda : weight of centroid similarity against redundancy.
    term_bonus : weight of newly covered key terms in the MMR score.
    max_pages : sentences come from at most this many pages (each group's page line
        counts against the budget too).
    max_per_page : at most this many sentences under one page line: a digest, not
        the page again.
    """

    name = "extractive"

    def __init__(
        self,
        *,
        embed: EmbedFn,
        count_tokens: CountTokens,
        max_tokens: int = 200,
        max_sentences_embedded: int = 32,
        mmr_lambda: float = 0.7,
        term_bonus: float = 0.15,
        n_key_terms: int = 12,
        n_title_terms: int = 3,
        sentence_vectors: bool = True,
        max_pages: int = 3,
        max_per_page: int = 4,
    ) -> None:
        if max_tokens < 1 or max_sentences_embedded < 1 or max_pages < 1:
            raise ValueError("max_tokens, max_sentences_embedded and max_pages must be positive")
        self.embed = embed
        self.count_tokens = count_tokens
        self.max_tokens = max_tokens
        self.max_sentences_embedded = max_sentences_embedded
        self.mmr_lambda = mmr_lambda
        self.term_bonus = term_bonus
        self.n_key_terms = n_key_terms
        self.n_title_terms = n_title_terms
        self.sentence_vectors = sentence_vectors
        self.max_pages = max_pages
        self.max_per_page = max_per_page
        self._vectors: dict[str, np.ndarray] = {}
        self._tokens: dict[str, int] = {}  # sentences recur in the summaries above
        self.sentences_embedded = 0  # for cost accounting in benchmarks

    def summarise(self, cluster: Cluster) -> Summary:
        texts = [m.text for m in cluster.members]
        weights = dict(key_terms(texts, self.n_key_terms))
        title = self._title(cluster, weights)
        candidates = self._candidates(cluster, weights)
        if not candidates:
            return Summary(title=title, text=self._fallback_text(texts))
        chosen = self._select(cluster, candidates, weights)
        return Summary(title=title, text=self._digest(cluster, chosen))

    # -- steps --------------------------------------------------------------------

    def _title(self, cluster: Cluster, weights: dict[str, float]) -> str:
        label = heading_label([m.heading_path or (m.title,) for m in cluster.members if m.heading_path or m.title])
        label_terms = set(terms(label))
        extra = [t for t in weights if t not in label_terms][: self.n_title_terms]
        if label and extra:
            return f"{label}: {', '.join(extra)}"
        return label or ", ".join(extra) or cluster.node_id

    def _digest(self, cluster: Cluster, chosen: list[_Candidate]) -> str:
        """The chosen sentences grouped by page, pages in reading order."""

        def place(c: _Candidate) -> tuple[int, int, int]:
            return (cluster.members[c.member].position, c.member, c.unit.position)

        groups: dict[str, list[_Candidate]] = {}
        for c in sorted(chosen, key=place):
            groups.setdefault(c.page, []).append(c)
        lines: list[str] = []
        for page, group in groups.items():
            if page:
                lines.append(page_line(self._section(cluster, page, group)))
            lines.extend(c.unit.text for c in group)
        return "\n".join(lines)

    @staticmethod
    def _section(cluster: Cluster, page: str, group: list[_Candidate]) -> str:
        """A group's line: its page, and the section all its sentences come from when
        there is one below the page ("Configuration Reference › Response Rate
        Limiting"), so that a long page's group says what part of it it is from. A
        summary's groups already carry theirs."""
        members = [cluster.members[c.member] for c in group]
        if any(m.level > 0 or not m.heading_path for m in members):
            return page
        shared = [h for h, *rest in zip(*(m.heading_path for m in members)) if all(r == h for r in rest)]
        if len(shared) < 2 or clean_label(shared[0]) != page:
            return page
        return f"{page} {SECTION_MARK} {clean_label(shared[-1])}"

    def _candidates(self, cluster: Cluster, weights: dict[str, float]) -> list[_Candidate]:
        # sentences that read on their own; only when a cluster has none (code and
        # reference tables), any complete sentence rather than a raw opening
        return self._sentences(cluster, weights, strict=True) or self._sentences(cluster, weights, strict=False)

    def _sentences(self, cluster: Cluster, weights: dict[str, float], *, strict: bool) -> list[_Candidate]:
        per_member: list[list[_Candidate]] = []
        seen: set[str] = set()
        for j, member in enumerate(cluster.members):
            found = []
            page = clean_label(member.heading_path[0]) if member.heading_path else ""
            # a summary's units carry the pages its own groups are under; a chunk's, its page
            units = paged_units(member.text, page) if member.level > 0 else [(page, u) for u in split_units(member.text)]
            for page, unit in units:
                if unit.text in seen or not is_summary_sentence(unit):
                    continue
                if strict and not stands_alone(unit, opens_chunk=member.level == 0 and unit.position == 0):
                    continue
                seen.add(unit.text)
                ts = terms(unit.text)
                # floats summed in a fixed order: set order follows the per-process
                # string hash seed, and near-ties then broke differently between builds
                score = sum(weights.get(t, 0.0) for t in dict.fromkeys(ts)) / np.sqrt(1 + len(ts))
                # the opening sentence of a section usually states what it is about
                score += 0.5 if unit.position == 0 else 0.0
                if leans_on_context(unit.text):
                    score *= _LEANING
                found.append(_Candidate(j, unit, float(score), 0, page))
            found.sort(key=lambda c: (-c.lexical, c.unit.position))
            per_member.append(found)
        # round-robin so that every member gets its best sentences considered; tokens
        # are counted only here (the tokenizer took 5 % of the tree's time when every
        # sentence of every member was counted)
        picked: list[_Candidate] = []
        rank = 0
        while len(picked) < self.max_sentences_embedded and any(rank < len(f) for f in per_member):
            for found in per_member:
                if rank < len(found) and len(picked) < self.max_sentences_embedded:
                    tokens = self._count(found[rank].unit.text)
                    if tokens <= self.max_tokens:
                        picked.append(replace(found[rank], tokens=tokens))
            rank += 1
        return picked

    def _count(self, sentence: str) -> int:
        if sentence not in self._tokens:
            self._tokens[sentence] = self.count_tokens(sentence)
        return self._tokens[sentence]

    def _sentence_vectors(self, sentences: list[str]) -> np.ndarray:
        missing = [s for s in dict.fromkeys(sentences) if s not in self._vectors]
        if missing:
            vecs = np.asarray(self.embed(missing), dtype=np.float32)
            self.sentences_embedded += len(missing)
            for s, v in zip(missing, vecs, strict=True):
                self._vectors[s] = v
        return np.stack([self._vectors[s] for s in sentences])

    def _select(self, cluster: Cluster, candidates: list[_Candidate], weights: dict[str, float]) -> list[_Candidate]:
        centroid = np.asarray(cluster.vectors, dtype=np.float64).mean(axis=0)
        norm = np.linalg.norm(centroid)
        centroid = centroid / norm if norm > 0 else centroid
        cand_terms = [set(terms(c.unit.text)) & weights.keys() for c in candidates]
        if self.sentence_vectors:
            vecs = self._sentence_vectors([c.unit.text for c in candidates]).astype(np.float64)
            relevance = vecs @ centroid
            similarity = vecs @ vecs.T
            duplicate = _DUPLICATE_SIM
        else:
            member_sim = np.asarray(cluster.vectors, dtype=np.float64) @ centroid
            relevance = 0.5 * _scaled(member_sim[[c.member for c in candidates]]) + 0.5 * _scaled(
                np.array([c.lexical for c in candidates])
            )
            all_terms = [set(terms(c.unit.text)) for c in candidates]
            similarity = np.array([[_jaccard(a, b) for b in all_terms] for a in all_terms])
            duplicate = _DUPLICATE_JACCARD
        total_weight = sum(weights.values()) or 1.0

        chosen: list[int] = []
        covered: set[str] = set()
        pages: set[str] = set()
        per_page: dict[str, int] = {}
        used = 0
        remaining = set(range(len(candidates)))
        while remaining:
            best, best_score = -1, -np.inf
            for i in sorted(remaining):
                if len(pages) >= self.max_pages and candidates[i].page not in pages:
                    continue
                if per_page.get(candidates[i].page, 0) >= self.max_per_page:
                    continue
                redundancy = float(similarity[i, chosen].max()) if chosen else 0.0
                if redundancy > duplicate:
                    continue
                gain = sum(weights[t] for t in sorted(cand_terms[i] - covered)) / total_weight
                score = self.mmr_lambda * relevance[i] - (1 - self.mmr_lambda) * redundancy + self.term_bonus * gain
                if score > best_score:
                    best, best_score = i, score
            if best < 0:
                break
            remaining.discard(best)
            # word pieces never span the newline that joins two lines: counts add up
            page = candidates[best].page
            cost = candidates[best].tokens + (self._count(page_line(page)) if page and page not in pages else 0)
            if used + cost <= self.max_tokens:
                chosen.append(best)
                used += cost
                covered |= cand_terms[best]
                pages.add(page)
                per_page[page] = per_page.get(page, 0) + 1
        if not chosen:  # every candidate fits alone (filtered above); take the best one
            chosen = [int(np.argmax(relevance))]
        return [candidates[i] for i in chosen]

    def _fallback_text(self, texts: list[str]) -> str:
        """No sentence in the cluster (code or tables only): a verbatim opening, cut to budget."""
        for text in texts:
            words = text.split()
            if not words:
                continue
            cut = len(words)
            while cut > 1 and self.count_tokens(" ".join(words[:cut])) > self.max_tokens:
                cut = max(1, cut * 3 // 4)
            return " ".join(words[:cut])
        raise ValueError("cannot summarise a cluster whose members have no text")


def _scaled(values: np.ndarray) -> np.ndarray:
    lo, hi = float(values.min()), float(values.max())
    return (values - lo) / (hi - lo) if hi > lo else np.ones_like(values, dtype=np.float64)


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0
