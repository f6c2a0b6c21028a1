"""raptor.outline and raptor.digest on small hand-made collections: what becomes a node,
what it is called, and what its digest says."""

from __future__ import annotations

from dataclasses import replace

from raptor.digest import Part, digest
from arborgraph.core.leads import lead_sentence
from raptor.outline import OutlineNode, is_generic, outline
from raptor.tree import Leaf


def words(text: str) -> int:
    return len(text.split())


def leaf(n: int, doc: str, *path: str, text: str | None = None) -> Leaf:
    return Leaf(chunk_id=f"{doc}#{n}", doc_id=doc, text=text or f"Chunk {n} of {doc} says something plain here.", heading_path=path)


def tree_of(nodes: list[OutlineNode]) -> dict[str, OutlineNode]:
    return {n.title: n for n in nodes}


def test_sections_pages_and_their_titles() -> None:
    leaves = [
        leaf(0, "wal.md", "Write-Ahead Logging"),
        leaf(1, "wal.md", "Write-Ahead Logging", "1. Overview"),
        leaf(2, "wal.md", "Write-Ahead Logging", "1. Overview"),
        leaf(3, "wal.md", "Write-Ahead Logging", "2. How WAL Works"),
        leaf(4, "wal.md", "Write-Ahead Logging", "2. How WAL Works", "2.1. Checkpointing"),
        leaf(5, "wal.md", "Write-Ahead Logging", "2. How WAL Works", "2.1. Checkpointing"),
        leaf(6, "wal.md", "Write-Ahead Logging", "2. How WAL Works", "2.2. Concurrency"),  # one chunk
        leaf(7, "vacuum.md", "VACUUM"),
    ]
    nodes, tops = outline(leaves)
    by_title = tree_of(nodes)
    assert [t.title for t in tops] == ["Write-Ahead Logging", "VACUUM"]
    assert [t.kind for t in tops] == ["page", "page"]
    # numbers dropped; a generic heading says whose it is; a one-chunk section is no node
    # (a one-word heading too: "Checkpointing" alone could be any feature's)
    assert set(by_title) == {
        "Write-Ahead Logging", "Write-Ahead Logging: Overview", "How WAL Works", "How WAL Works: Checkpointing", "VACUUM"
    }
    works = by_title["How WAL Works"]
    assert works.leaves == [3, 4, 5, 6]
    # its items in reading order: its own chunk, the subsection node, the lone chunk
    assert [i if isinstance(i, int) else i.title for i in works.items] == [3, "How WAL Works: Checkpointing", 6]
    assert by_title["Write-Ahead Logging"].leaves == list(range(7))
    # children come before their parents
    order = {id(n): k for k, n in enumerate(nodes)}
    for n in nodes:
        for item in n.items:
            if isinstance(item, OutlineNode):
                assert order[id(item)] < order[id(n)]


def test_a_one_word_heading_is_qualified_by_the_nearest_real_title() -> None:
    leaves = [leaf(k, "pg_resetwal.md", "pg_resetwal", "Description of the tool") for k in range(2)]
    leaves += [leaf(k, "pg_resetwal.md", "pg_resetwal", "Options") for k in range(2, 4)]
    leaves += [leaf(k, "pg_resetwal.md", "pg_resetwal", "Options", "See also") for k in range(4, 6)]
    nodes, _ = outline(leaves)
    titles = {n.title for n in nodes}
    assert "pg_resetwal: Options" in titles
    assert "pg_resetwal: See also" in titles  # "Options" is generic too: the page names it


def test_a_heading_on_many_pages_is_generic() -> None:
    leaves = []
    for p in range(4):
        leaves += [leaf(k, f"cmd{p}.md", f"Command {p}", "Exit Codes Explained") for k in range(2)]
        leaves += [leaf(2 + k, f"cmd{p}.md", f"Command {p}", f"What command {p} does") for k in range(2)]
    nodes, _ = outline(leaves)
    titles = {n.title for n in nodes}
    assert "Command 2: Exit Codes Explained" in titles
    assert "What command 2 does" in titles
    assert not is_generic("What command 2 does")


def test_a_section_holding_only_one_subsection_is_that_subsection() -> None:
    leaves = [leaf(k, "a.md", "Page", "Part One", "The Only Subsection") for k in range(3)] + [
        leaf(3, "a.md", "Page", "Part Two Has Prose"), leaf(4, "a.md", "Page", "Part Two Has Prose")
    ]
    nodes, tops = outline(leaves)
    page = tops[0]
    assert [i.title for i in page.items if isinstance(i, OutlineNode)] == ["The Only Subsection", "Part Two Has Prose"]
    assert "Part One" not in {n.title for n in nodes}


def test_folders_group_pages_and_an_index_page_names_its_folder() -> None:
    leaves = [
        leaf(0, "guide/index.md", "The User Guide"), leaf(1, "guide/install.md", "Installing"),
        leaf(2, "ref/a.md", "A Reference"), leaf(3, "ref/b.md", "B Reference"), leaf(4, "top.md", "Top Page"),
    ]
    _, tops = outline(leaves)
    assert [(t.kind, t.title) for t in tops] == [("folder", "The User Guide"), ("folder", "ref"), ("page", "Top Page")]
    assert tops[1].leaves == [2, 3]


def test_a_page_without_title_is_named_by_its_file() -> None:
    nodes, tops = outline([leaf(0, "docs/zone_transfer.txt"), leaf(1, "docs/zone_transfer.txt")])
    assert tops[0].title == "zone transfer" and len(nodes) == 1


def test_deep_outlines_do_not_recurse_out_of_stack() -> None:
    path = tuple(f"Heading {k}" for k in range(1500))
    nodes, tops = outline([leaf(0, "deep.md", *path), leaf(1, "deep.md", *path)])
    assert len(tops) == 1 and tops[0].leaves == [0, 1]


def test_a_digest_is_whole_sentences_in_reading_order_within_its_budget() -> None:
    parts = [Part("How WAL Works", "The rollback journal copies pages aside before it writes."),
             Part("Checkpointing", "A checkpoint moves the WAL's content back into the database."),
             Part("Concurrency", None), Part("Performance", "Readers never block writers in WAL mode at all.")]
    text = digest(["WAL is a journal mode of SQLite."], parts, budget=32, count_tokens=words)
    lines = text.splitlines()
    assert lines[0] == "WAL is a journal mode of SQLite."
    assert lines[1] == "How WAL Works: The rollback journal copies pages aside before it writes."
    assert lines[-1].startswith("Also: ") and "Concurrency" in lines[-1]
    assert sum(words(line) for line in lines) <= 32
    assert all(line.endswith(".") for line in lines)


def test_the_lead_sentence_skips_code_and_announcements() -> None:
    text = "```\nPRAGMA journal_mode=WAL;\n```\nThis is shown below:\n\nThe WAL file grows until a checkpoint runs."
    assert lead_sentence(text) == "The WAL file grows until a checkpoint runs."
    assert lead_sentence("```\ncode only\n```") is None


def test_a_lead_never_points_back_at_text_the_reader_has_not_seen() -> None:
    # each of these was a digest line a blind rater marked down
    assert lead_sentence("In the last form, the option resets the index to the given tree.") is None
    assert lead_sentence("Therefore the value is kept in the configuration file.") is None
    assert lead_sentence("These two parameters control the hold timer of the session.") is None
    assert lead_sentence("to reset the current branch, run the command with --hard.") is None
    text = "Therefore it is kept.\n\nThe hold timer bounds how long a session waits for a keepalive."
    assert lead_sentence(text) == "The hold timer bounds how long a session waits for a keepalive."


def test_a_digest_lists_page_structure_parts_by_title_only() -> None:
    from raptor.outline_tree import _structural

    assert _structural("Options") and _structural("See also") and _structural("EXAMPLES")
    assert not _structural("DESCRIPTION") and not _structural("How WAL Works")
    assert lead_sentence("The strftime() function also takes a format string as its first argument.") is None
    assert lead_sentence("We said this tutorial shows what plumbing does for you.") is None


def nav_leaf(n: int, doc: str, up: tuple[str, ...] = (), following: str | None = None, *headings: str) -> Leaf:
    title = doc.removesuffix(".html").replace("-", " ").title()
    return Leaf(chunk_id=f"{doc}#{n}", doc_id=doc, text=f"Chunk {n} of {doc} says something plain here.",
                heading_path=(title, *headings), nav_up=up, nav_next=following)


def shape(node: OutlineNode) -> list[object]:
    return [node.title, [shape(c) for c in node.items if isinstance(c, OutlineNode)]]


def test_pages_nest_under_their_navigations_page_above_in_reading_order() -> None:
    # files sort a-guide, b-install, c-start, d-tune: the manual reads guide, start,
    # install, tune; "install" names a page above it that is not in the collection
    # first, then its chapter
    leaves = [
        nav_leaf(0, "a-guide.html", (), "c-start.html"),
        nav_leaf(1, "b-install.html", ("missing.html", "c-start.html"), "d-tune.html"),
        nav_leaf(2, "b-install.html", ("missing.html", "c-start.html"), "d-tune.html"),
        nav_leaf(3, "c-start.html", ("a-guide.html",), "b-install.html", "Why start"),
        nav_leaf(4, "c-start.html", ("a-guide.html",), "b-install.html", "Why start"),
        nav_leaf(5, "d-tune.html", ("a-guide.html",), None),
    ]
    nodes, tops = outline(leaves)
    assert [shape(t) for t in tops] == [["A Guide", [["C Start", [["Why start", []], ["B Install", []]]], ["D Tune", []]]]]
    start = next(n for n in nodes if n.title == "C Start")
    # its own section first, then the page under it; every leaf below it is covered
    assert [i.title if isinstance(i, OutlineNode) else i for i in start.items] == ["Why start", "B Install"]
    assert start.leaves == [1, 2, 3, 4]
    assert tops[0].leaves == list(range(6))


def test_a_loop_of_up_links_leaves_its_pages_without_parents() -> None:
    leaves = [
        nav_leaf(0, "a.html", ("b.html",)), nav_leaf(1, "b.html", ("a.html",)), nav_leaf(2, "c.html", ("b.html",)),
    ]
    nodes, tops = outline(leaves)
    # the loop is cut at the first page in the collection's order: a keeps no parent
    assert [shape(t) for t in tops] == [["A", [["B", [["C", []]]]]]]
    assert sorted(i for t in tops for i in t.leaves) == [0, 1, 2]


def test_next_links_alone_order_the_pages() -> None:
    leaves = [nav_leaf(0, "a.html", (), None), nav_leaf(1, "b.html", (), "a.html"), nav_leaf(2, "c.html", (), "b.html")]
    _, tops = outline(leaves)
    assert [t.title for t in tops] == ["C", "B", "A"]
    plain = [Leaf(chunk_id=x.chunk_id, doc_id=x.doc_id, text=x.text, heading_path=x.heading_path) for x in leaves]
    assert [t.title for t in outline(plain)[1]] == ["A", "B", "C"]  # without navigation: the collection's order


def test_a_title_drops_its_chapter_appendix_or_section_number_only() -> None:
    from raptor.outline import plain_title

    assert [plain_title(t) for t in (
        "Chapter 12. MATE", "Appendix A. Wireshark Messages", "Part III. Server Administration",
        "A.2. Packet Details Messages", "F.21. isn", "2.1. Foo", "Chapter 3. 3D plots",
    )] == ["MATE", "Wireshark Messages", "Server Administration", "Packet Details Messages", "isn", "Foo", "3D plots"]
    # words that only look like a number stay
    assert [plain_title(t) for t in ("A tutorial", "Chapter one", "3D graphics", "Part 2 of it", "Appendix")] == [
        "A tutorial", "Chapter one", "3D graphics", "Part 2 of it", "Appendix"
    ]


def test_navigation_that_skips_over_folders_loses_to_them() -> None:
    # a site's one index of all its source listings, folders below it: the folders stay
    leaves = [
        nav_leaf(0, "src/index.html"),
        nav_leaf(1, "src/ex/assoc/basic.html", ("src/index.html",)),
        nav_leaf(2, "src/ex/assoc/proxied.html", ("src/index.html",)),
        nav_leaf(3, "src/ex/tree/adjacency.html", ("src/index.html",)),
        nav_leaf(4, "src/ex/tree/nested.html", ("src/index.html",)),
        nav_leaf(5, "src/guide.html", ("src/index.html",)),  # in the same folder: under it
        nav_leaf(6, "other/page.html"),
    ]
    nodes, _ = outline(leaves)
    index = next(n for n in nodes if n.doc_id == "src/index.html")
    assert [i.doc_id for i in index.items if isinstance(i, OutlineNode)] == ["src/guide.html"]
    assert {n.title for n in nodes if n.kind == "folder"} >= {"assoc", "tree"}


def test_siblings_told_apart_only_by_their_numbers_keep_them() -> None:
    leaves = [nav_leaf(0, "changes.html")]
    for n, version in enumerate(("1.4", "1.3", "1.2"), start=1):
        leaves.append(replace(nav_leaf(n, f"changelog_{version}.html", ("changes.html",)), heading_path=(f"{version} Changelog",)))
    leaves.append(replace(nav_leaf(4, "faq.html", ("changes.html",)), heading_path=("2. Questions",)))
    _, tops = outline(leaves)
    assert [c.title for c in tops[0].items if isinstance(c, OutlineNode)] == [
        "1.4 Changelog", "1.3 Changelog", "1.2 Changelog", "Questions"
    ]


def test_a_chapter_saying_what_it_covers_opens_its_digest() -> None:
    from arborgraph.core.leads import opening

    # a DocBook chapter's abstract: its first sentence says what the chapter is about;
    # the second leans on it ("them"), the third on the sentence before it
    abstract = (
        "This chapter covers a number of basic services that are common to many Unix systems. "
        "All administrators should be familiar with them."
    )
    assert opening(abstract) == ["This chapter covers a number of basic services that are common to many Unix systems."]
    later = "As a consequence, this chapter is more particularly targeting professional administrators today."
    assert opening(later) == [] and lead_sentence(later) is None
    # a section that only says where it went says nothing of a topic
    assert lead_sentence("This section has moved to the chapter on declarative mapping of classes.") is None
    assert lead_sentence("This option sets the size of the page cache in kibibytes.") is None
