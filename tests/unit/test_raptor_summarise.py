"""The extractive summariser and its sentence units, on real manual text."""

from __future__ import annotations

import numpy as np
from raptor_corpus import corpus

from raptor import Cluster, ClusterMember, ExtractiveSummariser
from raptor.text import PAGE_MARK, dominant_path, heading_label, paged_units
from arborgraph.core.leads import is_summary_sentence, normalise_space, split_units


def _sentences(text: str) -> list[str]:
    """A summary's lines other than its page lines."""
    return [line for line in text.split("\n") if not line.startswith(PAGE_MARK)]


def _pages(text: str) -> list[str]:
    return [line[len(PAGE_MARK):] for line in text.split("\n") if line.startswith(PAGE_MARK)]


def _cluster(doc_id: str, node_id: str = "L1:0") -> Cluster:
    c = corpus()
    rows = [i for i, leaf in enumerate(c.leaves) if leaf.doc_id == doc_id]
    members = tuple(ClusterMember(c.leaves[i].chunk_id, c.leaves[i].text, c.leaves[i].heading_path) for i in rows)
    return Cluster(node_id=node_id, level=1, members=members, vectors=c.vectors[rows])


def _summariser(max_tokens: int = 120, max_embedded: int = 16) -> ExtractiveSummariser:
    c = corpus()
    return ExtractiveSummariser(
        embed=c.embed, count_tokens=c.count_tokens, max_tokens=max_tokens, max_sentences_embedded=max_embedded
    )


def test_summary_is_verbatim_sentences_of_members_within_budget() -> None:
    cluster = _cluster("lang_vacuum.md")
    summariser = _summariser(max_tokens=120)
    summary = summariser.summarise(cluster)
    sources = [normalise_space(m.text) for m in cluster.members]
    lines = _sentences(summary.text)
    assert len(lines) >= 2
    for line in lines:
        assert any(line in src for src in sources), line
    assert _pages(summary.text) == ["VACUUM"]
    assert corpus().count_tokens(summary.text) <= 120
    assert len(set(lines)) == len(lines)
    assert "VACUUM" in summary.title
    # the summary is about VACUUM, not a random pick: it names the command
    assert "VACUUM" in summary.text


def test_summary_sentences_are_close_to_the_cluster_centroid() -> None:
    cluster = _cluster("lang_datefunc.md")
    summary = _summariser(max_tokens=80).summarise(cluster)
    c = corpus()
    centroid = cluster.vectors.mean(axis=0)
    centroid /= np.linalg.norm(centroid)
    chosen = c.embed(_sentences(summary.text)) @ centroid
    everything = [u.text for m in cluster.members for u in split_units(m.text) if is_summary_sentence(u)]
    baseline = c.embed(everything) @ centroid
    assert chosen.mean() > np.median(baseline)


def test_number_of_sentences_embedded_is_bounded() -> None:
    cluster = _cluster("lang_datefunc.md", node_id="L1:9")
    summariser = _summariser(max_embedded=10)
    summariser.summarise(cluster)
    assert 0 < summariser.sentences_embedded <= 10
    summariser.summarise(cluster)  # memoised: nothing new to embed
    assert summariser.sentences_embedded <= 10


def test_identical_members_do_not_repeat_sentences() -> None:
    c = corpus()
    leaf = c.leaves[0]
    members = tuple(ClusterMember(f"copy{i}", leaf.text, leaf.heading_path) for i in range(4))
    cluster = Cluster("L1:0", 1, members, np.tile(c.vectors[:1], (4, 1)))
    lines = _summariser(max_tokens=200).summarise(cluster).text.split("\n")
    assert len(lines) == len(set(lines))
    assert len(_pages("\n".join(lines))) == 1


def test_higher_levels_reuse_lower_summary_sentences_verbatim() -> None:
    summariser = _summariser(max_tokens=100)
    low = [summariser.summarise(_cluster(d, f"L1:{i}")) for i, d in enumerate(["lang_upsert.md", "lang_vacuum.md"])]
    c = corpus()
    vectors = c.embed([f"{s.title}\n{s.text}" for s in low])
    members = tuple(ClusterMember(f"L1:{i}", s.text, (), s.title, level=1, position=i) for i, s in enumerate(low))
    top = summariser.summarise(Cluster("L2:0", 2, members, vectors))
    low_pages = {(page, u.text) for s in low for page, u in paged_units(s.text)}
    assert set(paged_units_texts(top.text)) <= low_pages


def paged_units_texts(text: str) -> list[tuple[str, str]]:
    return [(page, u.text) for page, u in paged_units(text)]


def test_sentences_are_grouped_under_their_pages_in_reading_order() -> None:
    c = corpus()
    rows = [i for i, leaf in enumerate(c.leaves) if leaf.doc_id in ("lang_vacuum.md", "lang_upsert.md")]
    # members given out of reading order: the digest puts pages and sentences back in it
    rows = rows[::-1]
    members = tuple(
        ClusterMember(c.leaves[i].chunk_id, c.leaves[i].text, c.leaves[i].heading_path, position=i) for i in rows
    )
    summary = _summariser(max_tokens=200).summarise(Cluster("L1:0", 1, members, c.vectors[rows]))
    pages = _pages(summary.text)
    assert sorted(pages) == ["UPSERT", "VACUUM"] and len(set(pages)) == len(pages)
    first_leaf = {c.leaves[i].heading_path[0]: min(j for j in rows if c.leaves[j].doc_id == c.leaves[i].doc_id) for i in rows}
    assert pages == sorted(pages, key=first_leaf.__getitem__)
    text_of = {c.leaves[i].heading_path[0]: " ".join(normalise_space(c.leaves[j].text) for j in sorted(rows) if c.leaves[j].doc_id == c.leaves[i].doc_id) for i in rows}
    for page, sentence in paged_units_texts(summary.text):
        assert sentence in text_of[page], (page, sentence)
        # reading order within a page: each sentence after the one before it
    for page in pages:
        mine = [s for p, s in paged_units_texts(summary.text) if p == page]
        at = [text_of[page].index(s) for s in mine]
        assert at == sorted(at)


def test_summaries_draw_on_at_most_max_pages_pages() -> None:
    c = corpus()
    members = tuple(ClusterMember(leaf.chunk_id, leaf.text, leaf.heading_path, position=i) for i, leaf in enumerate(c.leaves))
    summariser = ExtractiveSummariser(embed=c.embed, count_tokens=c.count_tokens, max_tokens=300, max_pages=2)
    summary = summariser.summarise(Cluster("L1:0", 1, members, c.vectors))
    assert 1 <= len(_pages(summary.text)) <= 2
    assert c.count_tokens(summary.text) <= 300


def test_code_only_cluster_falls_back_to_a_verbatim_opening() -> None:
    code = "```\nSELECT date('now');\nSELECT time('now');\n```"
    c = corpus()
    cluster = Cluster("L1:0", 1, (ClusterMember("x", code, ("Dates",)),), c.vectors[:1])
    summary = _summariser(max_tokens=50).summarise(cluster)
    assert summary.text in normalise_space(code)
    assert summary.title.startswith("Dates")


def test_split_units_recovers_joined_units() -> None:
    text = (
        "SQLite supports five functions as follows:\n\n1. date(time-value, modifier)\n"
        "2. time(time-value, modifier)\n\nThe date() function returns the date, e.g. 2024-01-01. "
        "It is a\nsoft-wrapped sentence. Fragment without end\n\n| a | b |\n|---|---|\n\n# Heading\n\n"
        "```\ncode here.\n```\n- item one\n- item two has two sentences. The second one."
    )
    units = split_units(text)
    texts = [u.text for u in units]
    assert "It is a soft-wrapped sentence." in texts
    assert "The date() function returns the date, e.g. 2024-01-01." in texts
    assert not any("code here" in t or "| a |" in t or "Heading" in t for t in texts)
    assert [u.text for u in units if u.is_list_item] == [
        "1. date(time-value, modifier)",
        "2. time(time-value, modifier)",
        "- item one",
        "- item two has two sentences.",
    ]
    kept = [u.text for u in units if is_summary_sentence(u)]
    assert "Fragment without end" not in kept
    assert [u.text for u in split_units("\n".join(kept))] == kept


def test_heading_labels() -> None:
    paths = [("UPSERT", "2. Description"), ("UPSERT", "2. Description"), ("UPSERT", "3. Limitations")]
    assert dominant_path(paths) == ("UPSERT", "2. Description")
    assert heading_label(paths) == "UPSERT › Description"
    mixed = [("VACUUM", "a"), ("UPSERT", "b"), ("VACUUM", "c"), ("Transaction",)]
    assert dominant_path(mixed) == ()
    assert heading_label(mixed) == "VACUUM · Transaction · UPSERT"


def test_without_sentence_vectors_nothing_is_embedded_and_summaries_stay_verbatim() -> None:
    c = corpus()

    def no_embedding(texts: object) -> np.ndarray:
        raise AssertionError("sentences were embedded")

    summariser = ExtractiveSummariser(
        embed=no_embedding, count_tokens=c.count_tokens, max_tokens=120, sentence_vectors=False
    )
    cluster = _cluster("lang_vacuum.md")
    summary = summariser.summarise(cluster)
    sources = [normalise_space(m.text) for m in cluster.members]
    lines = _sentences(summary.text)
    assert len(lines) >= 2 and len(set(lines)) == len(lines)
    assert all(any(line in src for src in sources) for line in lines)
    assert c.count_tokens(summary.text) <= 120
    assert "VACUUM" in summary.text
    assert summariser.sentences_embedded == 0


def test_sentences_that_lean_on_their_context_are_recognised() -> None:
    from arborgraph.core.text import leans_on_context

    assert leans_on_context("See How To Corrupt An SQLite Database File for further information.")
    assert leans_on_context("The table below lists a few of the virtual tables.")
    assert leans_on_context("This is how the virtual table tells SQLite that it wants the constraint.")
    assert leans_on_context("The columns are as follows:")
    assert not leans_on_context("A database in SQLite is a single disk file.")
    assert not leans_on_context("Thistle is not a keyword.")


def test_paged_units_read_back_the_pages_of_a_summary() -> None:
    text = "## VACUUM\nThe VACUUM command rebuilds the database file.\n## UPSERT\nUPSERT is a clause added to INSERT."
    assert [(p, u.text) for p, u in paged_units(text, "Default")] == [
        ("VACUUM", "The VACUUM command rebuilds the database file."),
        ("UPSERT", "UPSERT is a clause added to INSERT."),
    ]
    assert [(p, u.position) for p, u in paged_units("A first sentence here.\nA second one here.", "Page")] == [
        ("Page", 0), ("Page", 1)
    ]


def test_a_digest_keeps_only_sentences_that_read_alone() -> None:
    from arborgraph.core.leads import Unit, stands_alone

    def unit(text: str, item: bool = False) -> Unit:
        return Unit(text, 0, item)

    assert stands_alone(unit("A database in SQLite is a single disk file on the host."))
    assert stands_alone(unit("- The journal is deleted when the transaction commits.", item=True))
    # the tail of a sentence cut where its chunk starts
    assert not stands_alone(unit("the commit is present in both branches."), opens_chunk=True)
    assert stands_alone(unit("named keeps track of the serial number of the zone."))
    # options, code, table rows, a dangling colon, a definition without its headword
    assert not stands_alone(unit("- --abbrev=<n> shows the shortest unique prefix.", item=True))
    assert not stands_alone(unit("zone | Specifies the zone in a BIND 9 configuration."))
    assert not stands_alone(unit("allow-update { <address_match_element>; ... }; also-notify [ port <integer> ];"))
    assert not stands_alone(unit("The following options are supported by the command:"))
    assert not stands_alone(unit("Sets the maximum number of simultaneous queries allowed."))
    assert not stands_alone(unit("This has been fixed in the release."))


def test_a_page_group_holds_a_few_sentences() -> None:
    c = corpus()
    summariser = ExtractiveSummariser(embed=c.embed, count_tokens=c.count_tokens, max_tokens=400, max_per_page=2)
    text = summariser.summarise(_cluster("lang_vacuum.md")).text
    assert 1 <= len(_sentences(text)) <= 2, text


def test_a_group_from_one_section_of_a_long_page_names_the_section() -> None:
    c = corpus()
    texts = [
        "Zone transfers running longer than this many minutes are terminated by the server.",
        "Outbound zone transfers making no progress in this many minutes are terminated.",
    ]
    members = tuple(
        ClusterMember(f"c{i}", t, ("8. Configuration Reference", "8.2 Blocks", "8.2.14.12 Zone Transfers"))
        for i, t in enumerate(texts)
    )
    cluster = Cluster(node_id="L1:0", level=1, members=members, vectors=c.vectors[:2])
    summariser = ExtractiveSummariser(embed=c.embed, count_tokens=c.count_tokens, sentence_vectors=False)
    text = summariser.summarise(cluster).text
    assert _pages(text) == ["Configuration Reference › Zone Transfers"], text
    # read back at the level above, the section stays with the page
    assert {page for page, _ in paged_units(text)} == {"Configuration Reference › Zone Transfers"}
